"""`wamdiff2 demo --mode closed-loop` (short): a benchmark route through the nodes over DDS, lock-step, and a
summary with the closed-loop benchmark's metrics from the route monitor (issue 16 point 5)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest


@pytest.mark.ros
@pytest.mark.slow
def test_closed_loop_demo_reports_the_benchmark_metrics(repo, ros_env, tmp_path):
    from wamdiff2_ros.evaluation.closed_loop.policies import Standstill
    from wamdiff2_ros.evaluation.closed_loop.routes import route_spec
    from wamdiff2_ros.evaluation.closed_loop.runner import RunSettings, run_route
    from wamdiff2_ros.evaluation.closed_loop.scoring import driving_score
    from wamdiff2_ros.model.checkpoints import default_checkpoint

    if default_checkpoint() is None:
        pytest.skip("shipped student checkpoint not present")
    out = tmp_path / "demo"
    run = subprocess.run(
        [sys.executable, "-m", "wamdiff2_ros.cli", "demo", "--mode", "closed-loop", "--route", "5", "--route-seed", "0",
         "--route-timeout", "8", "--tasks", "planning", "--seconds", "150", "--out", str(out)],
        env=ros_env, cwd=repo, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "[demo] closed loop r05_straight_red: completion" in run.stdout
    summary = json.loads((out / "summary.json").read_text())
    cl = summary["closed_loop"]
    # the route ran to its end inside sim_node, lock-step: every frame was planned
    assert cl["route"] == "r05_straight_red" and cl["final"] and cl["end_reason"] == "timeout", cl
    assert abs(cl["sim_time_s"] - 8.0) < 0.1 and cl["plans_missed"] == 0 and cl["plans_received"] >= 16, cl
    # the same metrics as the benchmark: every key a benchmark route result has
    reference = run_route(dataclasses.replace(route_spec(5, 0), timeout_s=1.0), Standstill(), "standstill",
                          RunSettings(pdm_every=0)).metrics  # fmt: skip
    missing = sorted(set(reference) - set(cl))
    assert not missing, f"demo summary lacks benchmark metrics {missing}"
    # ... and they hang together: the student moved, the score is completion x penalties, kinds add up
    assert 0.2 < cl["route_completion"] <= 1.0 and cl["distance_m"] > 20.0, cl
    score, penalty = driving_score(cl["route_completion_on_road"], cl["infractions"])
    assert cl["driving_score"] == pytest.approx(score, abs=1e-3) and cl["infraction_penalty"] == pytest.approx(penalty, abs=1e-3)
    assert sum(cl["collisions_at_fault_by_kind"].values()) == cl["collisions_at_fault"]
    assert cl["red_light_violations"] == sum(e["kind"] == "red_light" for e in cl["events"])
    assert cl["off_road_events"] == sum(e["kind"] == "off_road" for e in cl["events"])
    assert summary["topics"]["/sim/route_metrics"] >= 2 and summary["trajectories"] >= 16
    assert all(code == 0 for code in summary["exit_codes"].values()), summary["exit_codes"]
    assert (out / "bev.png").stat().st_size > 10_000


def _write_metrics_bag(path, payloads):
    from wamdiff2_ros.data.bags import BagWriter

    with BagWriter(path) as bag:
        msg_type = bag.typestore.types["std_msgs/msg/String"]
        bag.add_topic("/sim/route_metrics", "std_msgs/msg/String")
        for i, data in enumerate(payloads):
            bag.write("/sim/route_metrics", 1_000 + i, msg_type(data=data))


def test_route_summary_prefers_the_final_metrics_and_flags_what_is_missing(tmp_path):
    """ros/closed_loop_summary without ROS: the final message wins over later snapshots, garbage is reported,
    a bag without route metrics gives an error entry (the demo then exits 1), an unfinished route says so."""
    pytest.importorskip("rosbags")
    from wamdiff2_ros.evaluation.closed_loop.policies import Standstill
    from wamdiff2_ros.evaluation.closed_loop.routes import route_spec
    from wamdiff2_ros.evaluation.closed_loop.runner import RunSettings, run_route
    from wamdiff2_ros.ros.closed_loop_summary import headline, route_summary

    metrics = run_route(dataclasses.replace(route_spec(5, 0), timeout_s=2.0), Standstill(), "standstill",
                        RunSettings(pdm_every=0)).metrics  # fmt: skip
    base = {"route": "r05_straight_red", "route_index": 5, "route_seed": 0, "sim_time_s": 2.0, "events": []}
    running = json.dumps({**base, **metrics, "final": False, "end_reason": None, "route_completion": 0.01})
    final = json.dumps({**base, **metrics, "final": True})
    _write_metrics_bag(tmp_path / "a", [running, "not json", final, running])
    summary = route_summary(tmp_path / "a")
    assert summary["final"] and summary["end_reason"] == "timeout"
    assert summary["route_completion"] == metrics["route_completion"] and summary["stuck_s"] == metrics["stuck_s"]
    assert any("unparsable" in p for p in summary["problems"])
    assert "r05_straight_red: completion" in headline(summary)
    _write_metrics_bag(tmp_path / "b", [running])
    assert route_summary(tmp_path / "b")["end_reason"].startswith("unfinished")
    _write_metrics_bag(tmp_path / "c", [])
    empty = route_summary(tmp_path / "c")
    assert "error" in empty and "/sim/route_metrics" in headline(empty)
