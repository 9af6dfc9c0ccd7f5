"""The results page on held-out data: its targets against the AR baseline, its speed columns and runs."""

from __future__ import annotations

import json


def test_results_targets_judge_against_the_shipped_ar_baseline():
    """B=32 rows are judged against the continued AR (the shipped baseline) when it exists, interleaved speed first."""
    from wamdiff2_ros.evaluation.ladder_report import _targets

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


def test_results_markdown_has_speed_per_thread_count_and_the_v3_runs(tmp_path):
    """docs/RESULTS.md: one speed column per thread count, the v3 runs in the stage table and their loss plot."""
    from wamdiff2_ros.evaluation.ladder_report import write_markdown

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
    from wamdiff2_ros.evaluation.ladder_report import plot_training

    assert images / "training_v3_loss.png" in plot_training(runs, images)
    text = write_markdown(results, runs, tmp_path / "docs" / "RESULTS.md", 50, images).read_text()
    assert "| model | decode tokens/s, 1 thread | decode tokens/s, 2 threads | tokens / forward |" in text
    assert "| v3 B=32 seq-KD | 180.0 | 250.0 | 3.00 |" in text
    assert "| v3-b32-kd-cf | adapt | 32 | 20 | 1.0 | 0.6000 |" in text
    assert "![training_v3_loss.png](images/training_v3_loss.png)" in text
    assert "2.38x AR's (interleaved timing, 2 threads; target >= 3: not met)" in text
