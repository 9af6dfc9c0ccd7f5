"""`wamdiff2 demo` end to end (short): processes over DDS, a bag, summary.json and the BEV plot."""

from __future__ import annotations

import json
import subprocess
import sys


def test_replay_demo_writes_bag_summary_and_plot(repo, ros_env, tmp_path):
    out = tmp_path / "demo"
    run = subprocess.run(
        # a random model's answers never end: each task decodes its whole budget, and the rationale's decode
        # yields to every plan (planning priority) while lock-step replay keeps planning busy, so 160 tokens
        # took longer than the run; 32 leave room for several rationales
        [sys.executable, "-m", "wamdiff2_ros.cli", "demo", "--seconds", "40", "--out", str(out),
         "--model", "preset:tiny", "--tasks", "planning,understanding", "--max-new-tokens", "32"],
        env=ros_env, cwd=repo, capture_output=True, text=True, timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trajectories"] >= 1
    assert summary["sources"] and all(s.startswith(("model", "fallback:")) for s in summary["sources"])
    assert summary["rationales"] >= 1 and "understanding" in summary["decode"]
    assert summary["latency_ms"]["n"] >= 1 and summary["latency_ms"]["p50"] > 0
    # latency per task: the plan's is latency_ms; the rationale's comes from its own outputs
    tasks = summary["per_task"]
    assert set(tasks) == {"planning", "understanding"}, tasks
    assert tasks["planning"]["latency_ms"] == summary["latency_ms"]
    assert tasks["planning"]["outputs"] == summary["trajectories"]
    assert tasks["understanding"]["outputs"] == summary["rationales"]
    assert tasks["understanding"]["latency_ms"]["n"] >= 1 and tasks["understanding"]["latency_ms"]["p50"] > 0
    assert summary["topics"]["/wamdiff2/trajectory"] == summary["trajectories"]
    assert summary["topics"]["/navsim/gt_trajectory"] >= 1 and summary["bag_problems"] == []
    assert all(code == 0 for code in summary["exit_codes"].values()), summary["exit_codes"]
    assert (out / "bev.png").stat().st_size > 10_000
    assert (out / "bag" / "metadata.yaml").is_file()
