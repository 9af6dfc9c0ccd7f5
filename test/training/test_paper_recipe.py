"""The paper path's configs and recipe: Stage I 1->4->8->16->32 -> Stage II -> Stage III, the tiny-deep teacher, three splits."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from wamdiff2_ros.training.config import load_config

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "config" / "train" / "paper"
RECIPE = REPO / "tools" / "paper_recipe.sh"


def _cfg(name: str):
    return load_config(PAPER / f"{name}.yaml")


@pytest.mark.parametrize("prefix,preset", [("", "tiny"), ("mid_", "mid")])
def test_stage_i_ladder_chains_from_the_ar_model(prefix, preset):
    chain = [_cfg(f"{prefix}ar")] + [_cfg(f"{prefix}adapt_b{b}") for b in (4, 8, 16, 32)]
    assert chain[0].preset == preset and chain[0].prompt_format == "reference"
    assert [c.block_size for c in chain] == [1, 4, 8, 16, 32]
    for prev, cur in zip(chain, chain[1:], strict=False):
        assert cur.init == prev.output_dir and cur.stage == "adapt" and cur.certainty_weight == 0


def test_stage_ii_and_iii_are_the_references():
    b16, b32, deep32 = _cfg("adapt_b16"), _cfg("adapt_b32"), _cfg("deep_adapt_b32")
    s2, s3 = _cfg("distill_block"), _cfg("distill_model")
    assert (s2.init, s2.block_size, s2.effective_teacher_block_size) == (b32.output_dir, 32, 16)
    assert s2.teacher in (b16.output_dir, b32.output_dir)  # the B=16 stage I model, or the B=32 one masked at B/2
    assert (s3.init, s3.teacher, s3.block_size) == (s2.output_dir, deep32.output_dir, 32)
    # the teacher: grown from the stage I B=32 tiny model, trained further at the student's block size
    assert deep32.init == "runs/paper/deep-b32-init" and deep32.block_size == 32 and deep32.stage == "adapt"
    assert 'upscale "$RUNS/tiny-b32" "$RUNS/deep-b32-init"' in RECIPE.read_text()
    for cfg in (s2, s3):  # on-policy every 2 steps, JSD only (the reference's kd_ratio 1.0)
        assert cfg.on_policy and cfg.rollout_every == 2 and cfg.diffusion_weight == 0 and cfg.jsd_weight == 1


def test_ablations_sit_on_top_of_the_paper_path():
    """Our own additions are separate runs from the paper's checkpoints, never in the paper lineage."""
    kd_cf, off = _cfg("ablation_kd_cf"), _cfg("distill_block_offpolicy")
    assert kd_cf.init == _cfg("distill_model").output_dir and kd_cf.certainty_weight > 0 and kd_cf.block_size == 32
    assert (off.init, off.teacher) == (_cfg("adapt_b32").output_dir, _cfg("adapt_b4").output_dir)
    assert not off.on_policy and off.diffusion_weight == 1.0 and off.jsd_weight == 5.0 and off.teacher_block_size == 4
    paper_outputs = {_cfg(n).output_dir for n in ("distill_block", "distill_model")}
    assert kd_cf.output_dir not in paper_outputs and off.output_dir not in paper_outputs


def test_recipe_phases():
    assert subprocess.run(["bash", "-n", str(RECIPE)]).returncode == 0
    text = RECIPE.read_text()
    for phase in ("data", "ar", "stage1", "stage2", "teacher", "mid", "stage3", "ar-equal-compute", "ablation"):
        assert f"    {phase})" in text
    found = re.search(r"^splits = (\(.*?\)\))$", text, re.MULTILINE | re.DOTALL)
    splits = ast.literal_eval(found.group(1))
    names = [name for name, _, _, _ in splits]
    assert names == ["synth-train", "synth-val", "synth-test", "synth-val-l", "synth-val-l2", "synth-val-l3", "synth-val-l4",
                     "synth-val-l5"]
    assert len({seed for *_, seed in splits}) == len(splits)  # disjoint world seeds: no world is in two splits
    bad = subprocess.run(["bash", str(RECIPE), "nonsense"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown phase" in bad.stderr


def test_equal_compute_budget(tmp_path):
    import json

    from wamdiff2_ros.evaluation.compute import equal_compute_steps, run_compute

    def run(name, steps, batch, wall, threads=1):
        d = tmp_path / name
        d.mkdir()
        (d / "train_summary.json").write_text(json.dumps({"steps": steps, "steps_done": steps, "wall_time_s": wall,
                                                          "world_size": 1, "finished": True}))
        (d / "train_config.json").write_text(json.dumps({"batch_size": batch, "grad_accum": 1, "num_threads": threads}))

    run("ar", 100, 8, 100.0)  # 1 s/step
    run("b4", 50, 8, 100.0)
    run("teacher", 10, 8, 400.0)
    assert run_compute(tmp_path / "b4").samples == 400
    extra, total, base = equal_compute_steps(tmp_path, "ar", ["ar", "b4", "teacher"])
    assert total.samples == 1280 and total.core_s == 600.0
    assert extra == 500  # samples need only 60 more steps; core-seconds need 500 more 1-second steps


def test_converged_phase_seeds_stage_0_from_the_converged_ar(tmp_path):
    """The second lineage starts stage I from the converged equal-compute AR, with its records (its compute)."""
    source, records, runs = tmp_path / "ar-equal", tmp_path / "records", tmp_path / "paper2"
    source.mkdir()
    records.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors", "chat_template.jinja"):
        (source / name).write_text(name)
    (records / "train_summary.json").write_text('{"steps": 4105}')
    env = {"PATH": "/usr/bin:/bin", "RUNS": str(runs), "CONVERGED_FROM": str(source),
           "CONVERGED_RECORDS": str(records)}
    done = subprocess.run(["bash", str(RECIPE), "converged"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    seeded = runs / "tiny-ar"
    assert sorted(p.name for p in seeded.iterdir()) == ["chat_template.jinja", "config.json", "model.safetensors",
                                                       "tokenizer.json", "train_summary.json"]
    again = subprocess.run(["bash", str(RECIPE), "converged"], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "present" in again.stdout  # never overwrites a seeded stage 0
    missing = subprocess.run(["bash", str(RECIPE), "converged"], capture_output=True, text=True,
                             env={**env, "RUNS": str(tmp_path / "other"), "CONVERGED_FROM": str(tmp_path / "nope")})
    assert missing.returncode == 2 and "no model at" in missing.stderr


def test_overrides_reach_every_stage_of_a_lineage():
    """OVERRIDES (e.g. a data change of a whole lineage) is given to each training command of a phase."""
    import os

    env = {**os.environ, "PY": "echo", "RUNS": "runs/x", "OVERRIDES": "data.plan_style=fixed data.oversample_starts=2"}
    out = subprocess.run(["bash", str(RECIPE), "stage1", "stage2"], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    commands = [line for line in out.stdout.splitlines() if line.startswith("-m wamdiff2_ros.cli train")]
    assert len(commands) == 5  # B=4, 8, 16, 32 and stage II
    assert all(c.endswith("data.plan_style=fixed data.oversample_starts=2") for c in commands)
    plain = subprocess.run(["bash", str(RECIPE), "stage2"], capture_output=True, text=True,
                           env={**env, "OVERRIDES": ""}, cwd=REPO)
    assert "plan_style" not in plain.stdout
