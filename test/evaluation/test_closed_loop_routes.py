"""Closed-loop routes in-process: the route set, the autopilot's clean runs, baselines that fail the metrics,
a collision in the world attributed to the ego, the shipped student through the agent, and the CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest

from wamdiff2_ros.cli import main
from wamdiff2_ros.evaluation.closed_loop.policies import Autopilot, ConstantVelocity, Standstill, policy_specs
from wamdiff2_ros.evaluation.closed_loop.routes import (
    FRONT_OFFSET,
    ROUTE_KINDS,
    CrossingPedestrian,
    build_route,
    route_set,
    route_spec,
)
from wamdiff2_ros.evaluation.closed_loop.runner import RunSettings, run_route
from wamdiff2_ros.model.checkpoints import default_checkpoint, own_threshold

FAST = RunSettings(pdm_every=0)


def _kind(kind: str, seed: int = 0):
    return route_set(1, seed, [kind])[0]


def test_route_set_is_fixed_seeded_and_covers_every_kind():
    routes = route_set(len(ROUTE_KINDS), 0)
    assert {r.kind for r in routes} == set(ROUTE_KINDS)
    assert route_set(3, 0) == routes[:3]  # a prefix of a longer set
    assert route_spec(4, 0) == routes[4] and route_spec(4, 1) != routes[4]
    tags = " ".join(t for r in routes for t in r.tags)
    for needed in ("left", "right", "straight", "red on arrival", "green on arrival", "lead brakes", "pedestrian"):
        assert needed in tags
    with pytest.raises(ValueError, match="unknown route kinds"):
        route_set(2, 0, ["roundabout"])


@pytest.mark.parametrize("kind,state", [("straight_red", "red"), ("left_green", "green")])
def test_signal_state_on_nominal_arrival(kind, state):
    spec = _kind(kind)
    route = build_route(spec, buildings=False)
    inter = route.world.map.intersections[0]
    assert inter.signal_state(0, spec.signals[0].nominal_arrival_s) == state
    assert route.world.map.intersections[0].turn == kind.split("_")[0]
    assert route.world.ego.s == spec.start_s and route.world.ego.speed == pytest.approx(spec.initial_speed)


@pytest.mark.parametrize("kind", ["straight_red", "pedestrian_crossing"])
def test_autopilot_completes_short_routes_without_infraction(kind):
    result = run_route(_kind(kind), Autopilot(), "autopilot", RunSettings(pdm_every=4))
    m = result.metrics
    assert m["end_reason"] == "completed" and m["clean"], result.events
    assert m["driving_score"] == 1.0 and m["route_completion"] == 1.0
    assert m["time_to_complete_s"] > 0 and m["comfort"]["samples"] > 100
    assert m["pdm"]["plans_scored"] >= 3 and 0.9 <= m["pdm"]["pdms"] <= 1.0
    assert len(result.path) > 10 and result.path.shape[1] == 5


def test_constant_velocity_runs_the_red_light():
    result = run_route(_kind("straight_red"), ConstantVelocity(), "constant-velocity", FAST)
    m = result.metrics
    assert m["red_light_violations"] == 1 and m["driving_score"] <= 0.7 + 1e-9
    assert any(e["kind"] == "red_light" for e in result.events)


def test_standstill_gets_stuck_with_low_completion():
    result = run_route(_kind("straight_green"), Standstill(), "standstill", FAST)
    m = result.metrics
    assert m["end_reason"] == "blocked" and m["stuck_s"] >= 20.0
    assert m["route_completion"] < 0.1 and m["driving_score"] < 0.1 and not m["completed"]


class _CommandLog(ConstantVelocity):
    """Constant velocity that records the driving command it is given under its own world rules."""

    def __init__(self, horizon_s: float) -> None:
        self.world_rules, self.commands = {"command_horizon_s": horizon_s}, []

    def plan(self, obs):
        self.commands.append(obs.command)
        return super().plan(obs)


def test_each_policy_drives_under_its_own_world_rules():
    spec = dataclasses.replace(_kind("left_green"), timeout_s=8.0)
    near, far = _CommandLog(0.0), _CommandLog(4.0)
    run_route(spec, near, "near", FAST)
    run_route(spec, far, "far", FAST)
    assert len(near.commands) == len(far.commands) >= 10
    # the 4 s look-ahead announces the left turn no later than the 20 m rule, and earlier on this approach
    assert far.commands.index("left") < near.commands.index("left")
    assert set(near.commands) | set(far.commands) <= {"straight", "left"}


def test_collision_with_a_crossing_pedestrian_is_detected_and_attributed():
    spec = _kind("pedestrian_crossing")
    speed = 1.4
    walk = (3.5 + 2.5 / 2) - 3.5 / 2  # right curb -> middle of the ego lane
    # the pedestrian reaches the middle of the lane when a constant-velocity ego gets there
    trigger = FRONT_OFFSET + spec.initial_speed * walk / speed
    spec = dataclasses.replace(spec, pedestrian=CrossingPedestrian(spec.pedestrian.route_s, -1.0, speed, trigger))
    result = run_route(spec, ConstantVelocity(), "constant-velocity", FAST)
    hits = [e for e in result.events if e["kind"] == "collision"]
    assert hits and hits[0]["with"] == "pedestrian" and hits[0]["at_fault"]
    assert result.metrics["infractions"]["collision_pedestrian"] == 1
    assert result.metrics["infraction_penalty"] <= 0.5
    # the autopilot stops for the same pedestrian
    clean = run_route(spec, Autopilot(), "autopilot", FAST)
    assert clean.metrics["collisions_at_fault"] == 0 and clean.metrics["completed"]


@pytest.mark.skipif(default_checkpoint() is None, reason="shipped student checkpoint not present")
def test_shipped_student_plans_through_the_agent():
    import torch

    torch.set_num_threads(1)
    from wamdiff2_ros.evaluation.closed_loop.benchmark import run_job

    (policy,) = policy_specs(["student"], [])
    spec = dataclasses.replace(_kind("start_on_red"), timeout_s=6.0)
    result = run_job(policy, spec, RunSettings(pdm_every=4))
    assert result.metrics["end_reason"] in ("timeout", "completed")
    assert result.plans["plans"] >= 12 and 0.0 <= result.plans["fallback_rate"] <= 1.0
    assert result.plans["latency_ms_mean"] > 0 and result.plans["tokens_mean"] > 0
    assert "pdm" in result.metrics and "driving_score" in result.metrics
    # decoded at the checkpoint's own threshold (its generation_config.json), as drive_node does by default
    assert result.plans["confidence_threshold"] == own_threshold(default_checkpoint())


@pytest.mark.skipif(default_checkpoint() is None, reason="shipped student checkpoint not present")
def test_gate_suffix_turns_on_the_backwards_gate_for_that_policy_only(tmp_path):
    plain, gated = policy_specs(["student", "student+gate"], [], {"max_new_tokens": 96})
    assert plain.path == gated.path and gated.name.startswith("student+gate (")
    assert plain.option("reject_backwards") is None and gated.option("reject_backwards") is True
    assert gated.option("max_new_tokens") == 96  # the shared options stay
    (mine,) = policy_specs([], [f"mine+gate={plain.path}"])
    assert mine.name == "mine+gate" and mine.option("reject_backwards") is True
    with pytest.raises(ValueError, match="unknown baseline"):
        policy_specs(["autopilot+gate"], [])


def test_cli_writes_json_table_and_bev_plots(tmp_path):
    out = tmp_path / "cl.json"
    report = tmp_path / "report"
    rc = main(["eval", "closed-loop", "--baselines", "autopilot,constant-velocity", "--routes", "2",
               "--route-kinds", "straight_red,right_green", "--pdm-every", "0", "--json", str(out),
               "--report", str(report)])  # fmt: skip
    assert rc == 0
    data = json.loads(out.read_text())
    assert set(data["summary"]) == {"autopilot", "constant-velocity"}
    assert data["summary"]["autopilot"]["routes_clean"] == 2
    assert data["targets"][0]["met"] is True
    assert len(data["results"]) == 4 and data["penalties"]["red_light"] == 0.7
    page = (report / "report.md").read_text()
    assert "| autopilot | 2 |" in page and "CARLA" in page
    assert sorted(p.name for p in (report / "bev").iterdir()) == [f"{r['name']}.png" for r in data["routes"]]


def test_cli_refuses_bad_arguments(tmp_path, capsys):
    assert main(["eval", "closed-loop", "--model", "nodir", "--json", str(tmp_path / "x.json")]) == 2
    assert "NAME=DIR" in capsys.readouterr().err
    assert main(["eval", "closed-loop", "--model", f"x={tmp_path}", "--json", str(tmp_path / "x.json")]) == 2
    assert main(["eval", "closed-loop", "--baselines", "oracle", "--json", str(tmp_path / "x.json")]) == 2
    assert main(["eval", "closed-loop", "--routes", "0", "--json", str(tmp_path / "x.json")]) == 2
    assert main(["eval", "closed-loop", "--command-horizon", "-1", "--json", str(tmp_path / "x.json")]) == 2
    assert "--command-horizon" in capsys.readouterr().err
    assert main(["eval", "closed-loop", "--lamp-visor", "0", "--json", str(tmp_path / "x.json")]) == 2
    assert "lamp_visor_deg" in capsys.readouterr().err
