"""Analysis commands on held-out data: the confidence-threshold sweep, the commit trace, the results targets."""

from __future__ import annotations

import argparse
import json

import pytest

from wamdiff2_ros.training.sweep import parse_model_spec, parse_thresholds, sweep, sweep_arguments, threshold_sweep


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
                ["--model", f"a={tmp_path / 'missing'}"],
                ["--model", f"a={root / 'ar'}", "--heldout", str(tmp_path / "none")]):
        args = parser.parse_args([*bad, "--heldout", str(synth_root), "--json", str(tmp_path / "x.json")]
                                 if "--heldout" not in bad else [*bad, "--json", str(tmp_path / "x.json")])
        assert sweep(args) == 2


def test_results_targets_judge_against_the_shipped_ar_baseline():
    """B=32 rows are judged against the continued AR (the shipped baseline) when it exists, interleaved speed first."""
    from wamdiff2_ros.training.results import _targets

    def scores(l2, parsed, tps):
        return {"planning_l2": l2, "planning_parse_rate": parsed, "decode_tokens_per_second": tps}

    results = {"ar": scores(3.0, 0.3, 100.0), "ar_long": scores(2.0, 0.9, 100.0),
               "v2_b32": scores(2.1, 0.9, 150.0), "b32": scores(2.5, 0.0, 90.0),
               "_speed": {"AR continued (B=1)": {"decode_tokens_per_second": 100.0},
                          "v2 B=32 stage I": {"decode_tokens_per_second": 310.0}}}
    lines = _targets(results)
    assert "AR (B=1), stage 0 continued" in lines[0]
    v2 = next(line for line in lines if line.startswith("- v2: B=32, stage I (long)"))
    assert "L2 1.05x" in v2 and "target <= 1.10: met" in v2
    assert "3.10x AR's (interleaved timing, 1 thread; target >= 3: met)" in v2
    b32 = next(line for line in lines if line.startswith("- B=32, stage I:"))
    assert "not judged" in b32 and "0.90x AR's (per-row timing; target >= 3: not met)" in b32
    results["_speed_threads"] = {"1": {"AR continued (B=1)": {"decode_tokens_per_second": 100.0},
                                       "v2 B=32 stage I": {"decode_tokens_per_second": 150.0}},
                                 "2": {"AR continued (B=1)": {"decode_tokens_per_second": 110.0},
                                       "v2 B=32 stage I": {"decode_tokens_per_second": 341.0}}}
    v2 = next(line for line in _targets(results) if line.startswith("- v2: B=32, stage I (long)"))
    assert "1.50x AR's (interleaved timing, 1 thread; target >= 3: not met)" in v2
    assert "3.10x AR's (interleaved timing, 2 threads; target >= 3: met)" in v2
    results.pop("ar_long")
    assert _targets(results)[0] == "Baseline: AR (B=1), stage 0."


def test_trace_prints_every_step_and_writes_commits(random_models, synth_root, tmp_path, capsys):
    from wamdiff2_ros.training.trace import trace, trace_arguments

    root, _, _ = random_models
    parser = argparse.ArgumentParser()
    trace_arguments(parser)
    out = tmp_path / "trace.json"
    base = ["--heldout", str(synth_root), "--cache", str(root / "cache"), "--max-new-tokens", "8"]
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--json", str(out)])) == 0
    text = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["task"] == "planning" and report["summary"]["tokens"] == len(report["commits"]) >= 8
    assert text.count("block 0 step") == report["summary"]["steps_per_block"][0]
    assert "committed above the threshold" in text
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--index", "99"])) == 2
    assert trace(parser.parse_args(["--model", str(tmp_path / "missing"), *base])) == 2
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--block-size", "-1"])) == 2


def test_results_markdown_has_speed_per_thread_count_and_the_v3_runs(tmp_path):
    """docs/RESULTS.md: one speed column per thread count, the v3 runs in the stage table and their loss plot."""
    from wamdiff2_ros.training.results import write_markdown

    runs, images = tmp_path / "runs", tmp_path / "docs" / "images"
    for name, diffusion in (("v3-b32-kd", 0.5), ("v3-b32-kd-cf", 0.6)):
        (runs / name).mkdir(parents=True)
        rows = "\n".join(f"{s},{diffusion + 0.1},{diffusion - s / 100}" for s in range(1, 21))
        (runs / name / "train_log.csv").write_text("step,loss,diffusion\n" + rows + "\n")
        (runs / name / "train_summary.json").write_text(json.dumps(
            {"stage": "adapt", "block_size": 32, "steps": 20, "wall_time_s": 60.0, "final_loss": diffusion}))
    row = {"block_size": 32, "planning_l2": 2.0, "planning_parse_rate": 1.0, "qa_accuracy": 0.5,
           "detection_map": 0.0, "decode_tokens_per_second": 100.0, "tokens_per_forward": 3.0}
    results = {"ar_long": {**row, "block_size": 1, "tokens_per_forward": 1.0}, "v3_b32_kd": row,
               "_speed_threads": {"1": {"AR continued (B=1)": {"decode_tokens_per_second": 100.0, "tokens_per_forward": 1.0},
                                        "v3 B=32 seq-KD": {"decode_tokens_per_second": 180.0, "tokens_per_forward": 3.0}},
                                  "2": {"AR continued (B=1)": {"decode_tokens_per_second": 105.0, "tokens_per_forward": 1.0},
                                        "v3 B=32 seq-KD": {"decode_tokens_per_second": 250.0, "tokens_per_forward": 3.0}}}}
    from wamdiff2_ros.training.results import plot_training

    assert images / "training_v3_loss.png" in plot_training(runs, images)
    text = write_markdown(results, runs, tmp_path / "docs" / "RESULTS.md", 50, images).read_text()
    assert "| model | decode tokens/s, 1 thread | decode tokens/s, 2 threads | tokens / forward |" in text
    assert "| v3 B=32 seq-KD | 180.0 | 250.0 | 3.00 |" in text
    assert "| v3-b32-kd-cf | adapt | 32 | 20 | 1.0 | 0.6000 |" in text
    assert "![training_v3_loss.png](images/training_v3_loss.png)" in text
    assert "2.38x AR's (interleaved timing, 2 threads; target >= 3: not met)" in text
