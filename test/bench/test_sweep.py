"""`wamdiff2 bench sweep`: block-diffusion students over confidence thresholds, next to the AR baseline."""

from __future__ import annotations

import argparse
import json

import pytest

from wamdiff2_ros.bench.sweep import (
    format_speed_table,
    parse_model_spec,
    parse_thresholds,
    sweep,
    sweep_arguments,
    threshold_sweep,
)


def test_model_spec_and_thresholds_are_checked():
    assert parse_model_spec("student=ckpt/b32@32") == ("student", "ckpt/b32", 32)
    assert parse_model_spec("ar=ckpt/ar") == ("ar", "ckpt/ar", None)
    for bad in ("ckpt/ar", "=ckpt", "x=", "x=ckpt@0", "x=ckpt@big"):
        with pytest.raises(ValueError):
            parse_model_spec(bad)
    assert parse_thresholds("0.9, 0.5") == [0.9, 0.5]
    for bad in ("", "1.5", "-0.1", "0.9,2"):
        with pytest.raises(ValueError):
            parse_thresholds(bad)


def test_lower_threshold_commits_more_tokens_per_forward(random_models):
    _, vla, samples = random_models
    rows = threshold_sweep({"ar": (vla.with_block_size(1), 1), "b4": (vla.with_block_size(4), 4)}, samples,
                           [1.0, 0.0], max_new_tokens=8, progress=False)
    assert [(r["model"], r["threshold"]) for r in rows] == [("ar", None), ("b4", 1.0), ("b4", 0.0)]
    ar, strict, loose = rows
    assert ar["speedup_vs_ar"] == pytest.approx(1.0) and ar["l2_vs_ar"] == pytest.approx(1.0)
    # a random model is never fully sure: threshold 1.0 commits one token per forward, 0.0 the whole block
    assert strict["tokens_per_forward"] == pytest.approx(1.0)
    assert loose["tokens_per_forward"] > 2.0
    assert all(r["samples"] == {"planning": 1, "understanding": 1, "perception": 1} for r in rows)
    # per task: a threshold of 0.0 commits the whole block at once on every task
    assert loose["speed_per_task"]["planning"]["tokens_per_forward"] > 2.0
    assert strict["speed_per_task"]["understanding"]["tokens_per_forward"] == pytest.approx(1.0)
    table = format_speed_table(rows).splitlines()
    assert table[0].startswith("| model | threshold | planning tok/s (x AR)") and len(table) == 2 + len(rows)
    assert "(1.00x)" in table[2]  # the AR row against itself


def test_rows_are_paired_against_the_reference_threshold(random_models):
    _, vla, samples = random_models
    rows = threshold_sweep({"b4": (vla.with_block_size(4), 4)}, samples, [1.0, 0.0], max_new_tokens=8,
                           paired_to=1.0, progress=False)
    strict, loose = rows
    # the reference against itself: a zero difference; the other row: its own per-sample difference
    assert strict["l2_vs_ref"]["mean"] == 0.0 and strict["l2_vs_ref"]["n"] == len(samples["planning"])
    diff = [a - b for a, b in zip(loose["per_sample"]["planning_l2"], strict["per_sample"]["planning_l2"], strict=True)]
    assert loose["l2_vs_ref"]["mean"] == pytest.approx(sum(diff) / len(diff))
    assert loose["per_sample"]["planning_l2"] and len(loose["per_sample"]["qa_correct"]) == len(samples["understanding"])
    with pytest.raises(ValueError, match="paired_to"):
        threshold_sweep({"b4": (vla.with_block_size(4), 4)}, samples, [0.5], paired_to=0.9, progress=False)


def test_cli_writes_json_and_plot_and_refuses_bad_input(random_models, synth_root, tmp_path):
    root, _, _ = random_models
    parser = argparse.ArgumentParser()
    sweep_arguments(parser)
    out = tmp_path / "sweep.json"
    args = parser.parse_args(["--model", f"ar={root / 'ar'}", "--model", f"b4={root / 'b4'}", "--heldout", str(synth_root),
                              "--cache", str(root / "cache"), "--limit", "1", "--thresholds", "0.5",
                              "--max-new-tokens", "8", "--json", str(out), "--plot", str(tmp_path / "sweep.png")])
    assert sweep(args) == 0
    report = json.loads(out.read_text())
    assert [(r["model"], r["block_size"], r["threshold"]) for r in report["rows"]] == [("ar", 1, None), ("b4", 4, 0.5)]
    assert (tmp_path / "sweep.png").stat().st_size > 1000
    for bad in (["--model", f"a={root / 'ar'}", "--model", f"a={root / 'b4'}"],  # duplicate names
                ["--model", f"a={root / 'ar'}", "--thresholds", "2"],
                ["--model", f"a={root / 'ar'}", "--thresholds", "0.5", "--paired-to", "0.9"],
                ["--model", f"a={tmp_path / 'missing'}"],
                ["--model", f"a={root / 'ar'}", "--heldout", str(tmp_path / "none")]):
        args = parser.parse_args([*bad, "--heldout", str(synth_root), "--json", str(tmp_path / "x.json")]
                                 if "--heldout" not in bad else [*bad, "--json", str(tmp_path / "x.json")])
        assert sweep(args) == 2
