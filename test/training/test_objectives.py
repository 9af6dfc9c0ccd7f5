"""Objectives on a real tiny model: per-sample padding and normalisation, the Stage II JSD by hand, on-policy states."""

from __future__ import annotations

import math

import pytest
import torch

from wamdiff2_ros.data.tokenized import TokenizedDataset
from wamdiff2_ros.model.forward import diffusion_forward
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.training.dataset import collate

B = 4


@pytest.fixture(scope="module")
def qa_and_plan(make_config, tmp_path_factory):
    """A random tiny model and a batch of one short QA answer and one long plan (as cached training rows)."""
    cfg = make_config(tmp_path_factory.mktemp("obj") / "run", stage="adapt", block_size=B)
    vla = init_model("tiny", seed=0, block_size=B)
    rows = TokenizedDataset.build(cfg.data, vla, cfg.data.cache_dir, progress=False).rows
    qa = min((r for r in rows if r["task"] == "understanding"), key=lambda r: r["response_ids"].shape[0])
    plan = next(r for r in rows if r["task"] == "planning")
    assert qa["response_ids"].shape[0] + B <= plan["response_ids"].shape[0]  # really a short and a long answer
    return vla, [qa, plan]


def _log_softmax(row: list[float]) -> list[float]:
    z = max(row) + math.log(sum(math.exp(v - max(row)) for v in row))
    return [v - z for v in row]


def test_diffusion_objective_pads_and_normalises_per_sample(qa_and_plan):
    """The batched Stage I loss == the mean of each sample's loss computed ALONE, at its own padded length."""
    from wamdiff2_ros.training.objectives import diffusion_objective, noisy_responses

    vla, rows = qa_and_plan
    prompts, responses = collate(rows)
    loss, _ = diffusion_objective(vla, (prompts, responses), B, torch.Generator().manual_seed(5))
    clean, noisy, t, masked, lengths = noisy_responses(vla, responses, B, torch.Generator().manual_seed(5))
    assert lengths.tolist() == [-(-r.shape[0] // B) * B for r in responses]  # each its own multiple of B
    per_sample = []
    with torch.no_grad():
        for b, prompt in enumerate(prompts):
            n = int(lengths[b])
            logits = diffusion_forward(vla, [prompt], clean[b : b + 1, :n], noisy[b : b + 1, :n], block_size=B)[0]
            total = sum(-_log_softmax(logits[j].tolist())[int(clean[b, j])] / float(t[b, j])
                        for j in range(n) if masked[b, j])
            per_sample.append(total / n)
    assert loss.item() == pytest.approx(sum(per_sample) / 2, rel=1e-4)


def test_distill_objective_equals_hand_jsd(qa_and_plan, tmp_path):
    """Stage II default (JSD only, teacher at B/2): the loss equals the JSD written out token by token."""
    from wamdiff2_ros.training.objectives import distill_objective, noisy_responses

    student, rows = qa_and_plan
    teacher = init_model("tiny", seed=1, block_size=B // 2)
    prompts, responses = collate(rows)
    loss, metrics = distill_objective(student, teacher, (prompts, responses), B, B // 2,
                                      generator=torch.Generator().manual_seed(7))
    clean, noisy, _, masked, lengths = noisy_responses(student, responses, B, torch.Generator().manual_seed(7))
    with torch.no_grad():
        s_logits = diffusion_forward(student, prompts, clean, noisy, block_size=B)
        t_logits = diffusion_forward(teacher, prompts, clean, noisy, block_size=B // 2)
    per_sample = []
    for b in range(2):
        total = 0.0
        for j in range(int(lengths[b])):
            if not masked[b, j]:
                continue
            p = [math.exp(v) for v in _log_softmax(s_logits[b, j].tolist())]
            q = [math.exp(v) for v in _log_softmax(t_logits[b, j].tolist())]
            m = [(a + c) / 2 for a, c in zip(p, q, strict=True)]
            kl_t = sum(c * math.log(c / mm) for c, mm in zip(q, m, strict=True) if c > 0)
            kl_s = sum(a * math.log(a / mm) for a, mm in zip(p, m, strict=True) if a > 0)
            total += 0.5 * kl_t + 0.5 * kl_s
        per_sample.append(total / int(lengths[b]))
    assert loss.item() == pytest.approx(sum(per_sample) / 2, rel=1e-4)
    assert metrics["jsd"] == pytest.approx(loss.item(), rel=1e-6)  # CE weight 0 by default, as the reference


def test_rollout_is_the_students_own_decode(qa_and_plan):
    """The rollout's answers are what an independent decode of the student (the other engine) produces."""
    from wamdiff2_ros.decoding import DecodeConfig, generate
    from wamdiff2_ros.training.rollout import answer_ids, student_rollout

    vla, rows = qa_and_plan
    prompts, _ = collate(rows)
    vla.model.train()
    got = student_rollout(vla, prompts, B, max_new_tokens=12, engine="fast")
    assert vla.model.training  # mode restored
    config = DecodeConfig(block_size=B, max_new_tokens=12, engine="reference")
    for prompt, answer in zip(prompts, got, strict=True):
        result = generate(vla.with_block_size(B), dict(prompt), config)
        assert torch.equal(answer, answer_ids(vla, result.tokens[0]))
        assert int(answer[-1]) == vla.end_token_id
    vla.model.eval()


def test_engine_trains_on_the_students_rollout_every_k_steps(make_config, tmp_path, monkeypatch):
    """On-policy Stage II: steps 0, 2, ... feed the student's decode of the current weights; the others the data."""
    from wamdiff2_ros.model.loader import load_model
    from wamdiff2_ros.training import objectives
    from wamdiff2_ros.training.engine import train
    from wamdiff2_ros.training.rollout import student_rollout

    start = tmp_path / "start"
    init_model("tiny", seed=0, block_size=B).save(start)
    cfg = make_config(tmp_path / "run", stage="distill_block", block_size=B, init=str(start), teacher=str(start),
                      steps=3, batch_size=2, rollout_every=2, rollout_max_tokens=8)
    assert cfg.on_policy and cfg.effective_teacher_block_size == B // 2 and cfg.diffusion_weight == 0.0
    seen = []
    real = objectives.distill_objective

    def spy(student, teacher, batch, *args, **kwargs):
        seen.append(([p["input_ids"].clone() for p in batch[0]], [r.clone() for r in batch[1]]))
        return real(student, teacher, batch, *args, **kwargs)

    monkeypatch.setattr(objectives, "distill_objective", spy)
    result = train(cfg)
    assert [r["on_policy"] for r in result.history] == [1.0, 0.0, 1.0]
    student0 = load_model(start, block_size=B)  # the weights at step 0
    prompts0 = [{"input_ids": ids} for ids in seen[0][0]]
    rows = TokenizedDataset.build(cfg.data, student0, cfg.data.cache_dir, progress=False).rows
    by_prompt = {tuple(r["input_ids"][0].tolist()): r for r in rows}
    full = [{k: v for k, v in by_prompt[tuple(p["input_ids"][0].tolist())].items()
             if k in ("input_ids", "attention_mask", "mm_token_type_ids", "position_ids", "pixel_values",
                      "image_grid_thw")} for p in prompts0]
    expected = student_rollout(student0, full, B, max_new_tokens=8, engine="reference")
    assert all(torch.equal(a, b) for a, b in zip(seen[0][1], expected, strict=True))
    data_answers = [by_prompt[tuple(ids[0].tolist())]["response_ids"] for ids in seen[1][0]]
    assert all(torch.equal(a, b) for a, b in zip(seen[1][1], data_answers, strict=True))  # off-policy step


def test_training_config_chooses_the_prompt_format(make_config, tmp_path):
    """prompt_format: reference trains on the reference's wording and saves it with the checkpoint."""
    import json

    from wamdiff2_ros.model.loader import load_model
    from wamdiff2_ros.training.engine import train

    cfg = make_config(tmp_path / "ref", stage="ar", block_size=1, steps=2, prompt_format="reference")
    result = train(cfg)
    assert json.loads((result.output_dir / "config.json").read_text())["prompt_format"] == "reference"
    reloaded = load_model(result.output_dir)
    assert reloaded.prompt_format == "reference"
    rows = TokenizedDataset.build(cfg.data, reloaded, cfg.data.cache_dir, progress=False).rows
    plan = next(r for r in rows if r["task"] == "planning")
    text = reloaded.tokenizer.decode(plan["input_ids"][0])
    assert "Here is a front-view images from a driving vehicle:<|vision_start|>" in text
    assert "predict the optimal driving action for the next 4 seconds with 8 new waypoints." in text
    # the same data under today's format is another cache, with today's wording
    ours = TokenizedDataset.build(cfg.data, init_model("tiny", seed=0), cfg.data.cache_dir, progress=False).rows
    ours_plan = next(r for r in ours if r["task"] == "planning")
    assert "front-view image from" in init_model("tiny").tokenizer.decode(ours_plan["input_ids"][0])
