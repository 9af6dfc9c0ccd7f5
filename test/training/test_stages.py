"""Smoke runs of every stage on a tiny synthetic set: the loss goes down and the checkpoint reloads."""

from __future__ import annotations

import json
import math

import pytest
import torch

from wamdiff2_ros.data.tokenized import TokenizedDataset
from wamdiff2_ros.model.loader import load_model
from wamdiff2_ros.training.engine import evaluation_loss, load_teacher, train


def _rows(cfg, vla):
    return TokenizedDataset.build(cfg.data, vla, cfg.data.cache_dir, progress=False).rows


def _mean_loss(cfg, vla, rows, teacher=None, seeds=4):
    """The stage's loss on ``rows`` averaged over a few fixed noise draws (the per-sample 1/t loss is noisy)."""
    return sum(evaluation_loss(cfg, vla, rows, teacher, seed=s) for s in range(seeds)) / seeds


def _check_trained(cfg, result, teacher=None, drop=0.98, loss_cfg=None):
    """Loss on the training rows (fixed noise draws) fell, and the saved model reloads with the same weights."""
    from wamdiff2_ros.training.engine import load_student

    out = result.output_dir
    assert (out / "model.safetensors").is_file() and (out / "train_log.csv").is_file() and (out / "loss.png").is_file()
    reloaded = load_model(out, block_size=cfg.block_size)
    assert reloaded.block_size == cfg.block_size
    for (name, a), b in zip(result.vla.model.state_dict().items(), reloaded.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    start = load_student(cfg, torch.device("cpu"))
    rows = _rows(cfg, reloaded)
    before = _mean_loss(loss_cfg or cfg, start, rows, teacher)
    after = _mean_loss(loss_cfg or cfg, reloaded, rows, teacher)
    print(f"{cfg.stage} B={cfg.block_size}: loss {before:.4f} -> {after:.4f} ({after / before:.3f})")
    assert after < drop * before, (before, after)
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["finished"] and summary["steps"] == cfg.steps


@pytest.fixture(scope="module")
def ladder(tmp_path_factory, make_config):
    """Stage 0 (AR), stage I (B=4) from it, and a B=4 teacher trained further: shared by the later stages' tests."""
    root = tmp_path_factory.mktemp("ladder")
    ar_cfg = make_config(root / "ar", stage="ar", block_size=1, steps=12)
    ar = train(ar_cfg)
    b4_cfg = make_config(root / "b4", stage="adapt", block_size=4, init=str(root / "ar"), steps=10)
    b4 = train(b4_cfg)
    train(make_config(root / "b4t", stage="adapt", block_size=4, init=str(root / "b4"), steps=10))
    return {"root": root, "ar": (ar_cfg, ar), "b4": (b4_cfg, b4), "teacher": str(root / "b4t")}


def test_stage0_ar_learns_and_reloads(ladder):
    cfg, result = ladder["ar"]
    _check_trained(cfg, result)
    tasks = json.loads((result.output_dir / "train_summary.json").read_text())["tasks"]
    assert set(tasks) == {"planning", "perception", "understanding"}  # multi-task data


def test_stage1_adaptation_starts_from_previous_stage(ladder):
    cfg, result = ladder["b4"]
    assert cfg.init == str(ladder["root"] / "ar")
    _check_trained(cfg, result)
    assert json.loads((result.output_dir / "config.json").read_text())["block_size"] == 4


def test_stage1_with_certainty_forcing(ladder, make_config):
    import dataclasses

    root = ladder["root"]
    cfg = make_config(root / "b8c", stage="adapt", block_size=8, init=str(root / "b4"), steps=20, lr=1e-3,
                      certainty_weight=0.5)
    result = train(cfg)
    # the masked-diffusion part falls; the sharpening term may cost some of it, so the total only has to fall
    _check_trained(cfg, result, loss_cfg=dataclasses.replace(cfg, certainty_weight=0.0))
    _check_trained(cfg, result, drop=1.0)
    assert all(r["certainty"] >= 0 for r in result.history) and result.history[-1]["certainty"] > 0
    assert all(r["loss"] >= r["diffusion"] for r in result.history)  # the entropy term is added


def test_stage2_block_distillation_on_policy(ladder, make_config):
    """Stage II as the reference: on-policy every 2 steps, JSD only, the teacher at half the student's block size."""
    root = ladder["root"]
    cfg = make_config(root / "b8", stage="distill_block", block_size=8, init=str(root / "b4"),
                      teacher=ladder["teacher"], steps=10, rollout_max_tokens=8)
    assert cfg.on_policy and cfg.rollout_every == 2 and cfg.effective_teacher_block_size == 4 and cfg.diffusion_weight == 0
    result = train(cfg)
    _check_trained(cfg, result, load_teacher(cfg, torch.device("cpu")), drop=0.5)
    assert [r["on_policy"] for r in result.history] == [1.0, 0.0] * 5
    assert {"jsd", "diffusion", "teacher_masked_acc"} <= set(result.history[-1])
    assert all(r["loss"] == pytest.approx(r["jsd"]) for r in result.history)  # CE weight 0


def test_stage2_offpolicy_jsd_ce_variant(ladder, make_config, synth_root, cache_dir):
    """The earlier off-policy JSD+CE Stage II, kept as the named config distill_block.yaml."""
    from pathlib import Path

    from wamdiff2_ros.training.config import load_config

    root = ladder["root"]
    yaml = Path(__file__).resolve().parents[2] / "config" / "train" / "distill_block.yaml"
    cfg = load_config(yaml, [f"output_dir={root / 'b8off'}", f"init={root / 'b4'}", f"teacher={ladder['teacher']}",
                             "block_size=8", "steps=20", "batch_size=3", "lr=1e-3", "warmup_steps=1", "save_every=0",
                             "progress=false", f"data.logs_dir={synth_root}", f"data.cache_dir={cache_dir}",
                             "data.max_pixels=1024", "data.understanding_per_scene=1", "data.max_boxes=1", "data.seed=0"])
    assert not cfg.on_policy and cfg.teacher_block_size == 4 and cfg.diffusion_weight == 1.0 and cfg.jsd_weight == 5.0
    result = train(cfg)
    _check_trained(cfg, result, load_teacher(cfg, torch.device("cpu")))
    assert all(r["on_policy"] == 0.0 for r in result.history)
    assert all(r["loss"] == pytest.approx(5.0 * r["jsd"] + r["diffusion"], rel=1e-5) for r in result.history)


def test_stage3_model_distillation(ladder, make_config):
    root = ladder["root"]
    cfg = make_config(root / "b8m", stage="distill_model", block_size=8, init=str(root / "b4"),
                      teacher=ladder["teacher"], teacher_block_size=8, steps=10, grad_accum=2, rollout_max_tokens=8)
    result = train(cfg)
    _check_trained(cfg, result, load_teacher(cfg, torch.device("cpu")), drop=0.5)
    assert [r["on_policy"] for r in result.history][:2] == [1.0, 0.0]


def test_resume_continues_exactly(ladder, make_config):
    """Stopped after 3 steps and resumed == trained 6 steps in one go (weights, optimizer, data, noise)."""
    root = ladder["root"]
    common = dict(stage="adapt", block_size=4, init=str(root / "ar"), steps=6, save_every=3)
    straight = train(make_config(root / "straight", **common))
    first = train(make_config(root / "resumed", stop_after=3, **common))
    assert not first.finished and (root / "resumed" / "checkpoint" / "trainer_state.pt").is_file()
    assert not (root / "resumed" / "model.safetensors").exists()
    second = train(make_config(root / "resumed", **common))
    assert second.start_step == 3 and second.finished
    for (name, a), b in zip(straight.vla.model.state_dict().items(), second.vla.model.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), name
    assert [round(r["loss"], 5) for r in straight.history] == [round(r["loss"], 5) for r in second.history]


def test_heldout_scoring_and_shipping(ladder, tmp_path):
    """The results table scores all three tasks of a trained model; shipping copies model files with a card."""
    from wamdiff2_ros.evaluation.ladder import evaluate_model, pick
    from wamdiff2_ros.evaluation.ladder_cards import card
    from wamdiff2_ros.evaluation.ladder_index import load_index
    from wamdiff2_ros.evaluation.ladder_report import markdown_table
    from wamdiff2_ros.training.ship import copy_model

    cfg, result = ladder["b4"]
    samples = pick(TokenizedDataset.build(cfg.data, result.vla, cfg.data.cache_dir, progress=False).rows, 1)
    scores = evaluate_model(result.vla, samples, 4, max_new_tokens=8, progress=False)
    assert scores["samples"] == {"planning": 1, "understanding": 1, "perception": 1}
    assert scores["planning_l2"] >= 0 and 0 <= scores["qa_accuracy"] <= 1 and 0 <= scores["detection_map"] <= 1
    assert scores["tokens_per_forward"] > 0 and scores["decode_tokens_per_second"] > 0
    assert "| B=4, stage I | 4 |" in markdown_table({"b4": scores})
    from wamdiff2_ros.evaluation import heldout

    plan_row = samples["planning"][0]  # 8 tokens cannot hold 8 waypoints: refused
    record = heldout.score_row(result.vla, plan_row, heldout.task_config(4, 0.9, 8))
    assert not record["parsed"] and record["error"] and isinstance(record["text"], str)
    assert record["l2_h_pred"] is None and len(record["l2_h"]) == 4  # the fallback is driven, not the model's answer
    shipped = copy_model(result.output_dir, tmp_path / "ship")
    assert (shipped / "model.safetensors").is_file() and not (shipped / "checkpoint").exists()
    assert load_model(shipped).block_size == 4
    from wamdiff2_ros.training.ship import command

    exact = command(result.output_dir.parent, result.output_dir.name, "adapt", "adapt_b4.yaml")  # the YAML plus the overrides the run used
    assert exact.startswith("wamdiff2 train adapt --config config/train/adapt_b4.yaml ")
    assert "steps=10 " in exact and f"init={ladder['root'] / 'ar'}" in exact and "block_size" not in exact
    text = card("x", "tiny-b4", ladder["root"], scores, "a test model", load_index())
    assert "planning L2" in text and "load_model" in text


def _same(a, b):
    """Per-sample scores equal, NaN (no masked position) matching NaN."""
    return all(len(a[k]) == len(b[k]) and all(x == y or (x != x and y != y) for x, y in zip(a[k], b[k], strict=True))
               for k in ("acc", "nll"))


def test_teacher_check_reads_every_model_on_the_same_noisy_states(ladder):
    """Stage II/III's teacher check: a copy of the student scores exactly the student; a uniform model scores log(V)."""
    from wamdiff2_ros.training.teacher_check import compare, masked_scores

    cfg, result = ladder["b4"]
    student = load_model(result.output_dir, block_size=4)
    rows = _rows(cfg, student)
    models = {"student": (student, 4), "copy": (load_model(result.output_dir, block_size=4), 4),
              "uniform": (load_model(result.output_dir, block_size=4), 4)}
    head = models["uniform"][0].model.get_output_embeddings()
    with torch.no_grad():  # every logit equal: each masked token costs log(vocabulary), and argmax is token 0
        head.weight.zero_()
        if head.bias is not None:
            head.bias.zero_()
    scores = masked_scores(models, rows, 4, seed=3)
    assert len(scores["student"]["acc"]) == len(rows)
    assert _same(scores["copy"], scores["student"])
    report = compare(scores, "student", tasks=[r["task"] for r in rows])
    assert report["models"]["copy"]["acc_minus_student"]["mean"] == 0.0
    assert set(report["models"]["student"]["masked_acc_by_task"]) == {r["task"] for r in rows}
    vocabulary = head.weight.shape[0]
    assert report["models"]["uniform"]["masked_nll"] == pytest.approx(math.log(vocabulary), rel=1e-4)
    assert report["models"]["student"]["masked_nll"] < report["models"]["uniform"]["masked_nll"]
    assert report["models"]["uniform"]["acc_minus_student"]["ci95"][1] < 0
    assert _same(masked_scores(models, rows, 4, seed=3)["student"], scores["student"])  # the seed fixes the noise
    assert not _same(masked_scores(models, rows, 4, seed=4)["student"], scores["student"])
    with pytest.raises(ValueError, match="must divide"):
        masked_scores({"student": (student, 4), "odd": (student, 3)}, rows, 4)


def test_teacher_check_compare_leaves_out_unmasked_samples_and_pairs_the_rest():
    from wamdiff2_ros.training.teacher_check import compare

    nan = float("nan")
    scores = {"student": {"acc": [0.5, nan, 0.7, 0.1], "nll": [1.0, nan, 0.5, 2.0]},
              "teacher": {"acc": [0.6, 0.9, 0.9, 0.2], "nll": [0.8, 0.1, 0.4, 1.5]}}
    report = compare(scores, "student", tasks=["planning", "planning", "understanding", "planning"])
    assert report["samples"] == 3
    teacher = report["models"]["teacher"]
    assert teacher["masked_acc"] == pytest.approx((0.6 + 0.9 + 0.2) / 3)
    assert teacher["masked_acc_by_task"] == pytest.approx({"planning": 0.4, "understanding": 0.9})
    diff = teacher["acc_minus_student"]
    assert diff["mean"] == pytest.approx(0.4 / 3)
    assert diff["ci95"][0] <= diff["mean"] <= diff["ci95"][1]
