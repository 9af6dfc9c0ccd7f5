"""Issue 16 point 4: one benchmark route through sim_node + drive_node + waypoint_follower_node over DDS
scores like the in-process run of the same route and policy.

Route: r05_straight_red of seed 0 (red on arrival), cut to 10 s of simulated time; the
shipped student (B=32) plans at 2 Hz on 256x128 images. On that route the student
drives ~60 % of it and crosses the stop line on red, so the comparison covers progress
and an infraction, not a car standing still. The ROS run is lock-step on /clock
(sim_node waits for each frame's plan and each step's command; planning takes no
simulated time, like in-process).

Tolerance: route completion and driving score within 0.1, identical infraction counts
(collisions by kind, red lights) and off-road events. Both runs see the same world, the
same images (raw transport, no JPEG), the same ego state and the same decoder settings,
so the plans match token for token; measured here the two runs agree exactly
(completion 0.5853, driving score 0.4097, one red light, 70.13 m). Same ego state by
stamp, not by arrival order: drive_node plans each frame on the odometry and
acceleration of the frame's own stamp (waiting up to ``ego_wait_s`` for them) and the
follower commands each sim-time tick from the odometry of that tick (``odometry_wait_s``);
both waits are 1 s here, so a loaded machine slows the run down instead of changing it.
Before that pairing, CI runs on a loaded machine ended this route on route_deviation
about one time in three (one step on stale state flips a plan token and the student's
route diverges), never reproduced on an idle one. The slack covers what is left: a plan
reaching the follower after the sim's ``plan_settle_s``.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.slow]

ROUTE_INDEX, ROUTE_SEED, TIMEOUT_S = 5, 0, 10.0
COMPLETION_TOLERANCE = 0.1


def _student():
    from wamdiff2_ros.model.checkpoints import default_checkpoint

    found = default_checkpoint("wamdiff2-tiny-b32")
    if found is None:
        pytest.skip("shipped student checkpoint not present")
    return found


def _in_process(student) -> dict:
    import torch

    torch.set_num_threads(1)
    from wamdiff2_ros.evaluation.closed_loop.policies import ModelPolicy
    from wamdiff2_ros.evaluation.closed_loop.routes import route_spec
    from wamdiff2_ros.evaluation.closed_loop.runner import RunSettings, run_route

    spec = dataclasses.replace(route_spec(ROUTE_INDEX, ROUTE_SEED), timeout_s=TIMEOUT_S)
    return run_route(spec, ModelPolicy(student), "student", RunSettings(pdm_every=0)).metrics


def _through_ros(ros_env, ros_peer, tmp_path, student) -> dict:
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from wamdiff2_ros.ros.launching import NodeGroup

    group = NodeGroup(ros_env, tmp_path / "logs")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    metrics = ros_peer.listen(String, "/sim/route_metrics", latched)
    try:
        drive = group.start("drive_node", {
            "model_path": str(student), "tasks": ["planning"], "block_size": 32, "max_new_tokens": 128,
            "confidence_threshold": 0.9, "max_rate_hz": 20.0, "use_sim_time": True, "torch_threads": 1,
            "ego_wait_s": 1.0, "require_ego": True,
        }, params_file="drive.yaml")  # fmt: skip
        follower = group.start("waypoint_follower_node", {"use_sim_time": True, "odometry_wait_s": 1.0},
                               params_file="follower.yaml")
        sim = group.start("sim_node", {
            "route_index": ROUTE_INDEX, "route_seed": ROUTE_SEED, "route_timeout_s": TIMEOUT_S, "lockstep": True,
            "publish_clock": True, "image_width": 256, "image_height": 128, "camera_rate_hz": 2.0,
            "physics_rate_hz": 20.0, "real_time_factor": 0.0, "image_transport": "raw",
            # generous waits: a loaded CI machine slows the run down instead of changing its result
            "command_wait_s": 2.0, "plan_settle_s": 0.1, "state_settle_s": 0.01,
        }, params_file="sim.yaml")  # fmt: skip
        logs = lambda: "\n".join(f"--- {n.name}\n{n.output()[-2500:]}" for n in (sim, drive, follower))  # noqa: E731
        deadline = time.monotonic() + 150
        final = lambda: any(json.loads(m.data)["final"] for m in metrics)  # noqa: E731
        while time.monotonic() < deadline and not final():
            ros_peer.spin_for(0.5)
            assert drive.running() and follower.running(), logs()
            if not sim.running():
                ros_peer.spin_for(1.0)
                break
        assert final(), "no final route metrics from sim_node\n" + logs()
        sim.proc.wait(timeout=15)
        assert sim.proc.returncode == 0, logs()
    finally:
        group.stop_all(order=["sim_node", "waypoint_follower_node", "drive_node"])
    return next(json.loads(m.data) for m in metrics if json.loads(m.data)["final"])


def test_route_through_ros_scores_like_in_process(ros_env, ros_peer, tmp_path):
    student = _student()
    ros = _through_ros(ros_env, ros_peer, tmp_path, student)
    local = _in_process(student)
    summary = {k: (local[k], ros[k]) for k in ("end_reason", "route_completion", "driving_score", "infractions",
                                               "off_road_events", "off_road_m", "stuck_s", "distance_m")}
    print("in-process vs ROS:", json.dumps(summary))
    # the ROS run was scored and ran lock-step: every frame planned, every step commanded
    assert ros["route"] == "r05_straight_red" and ros["end_reason"] == "timeout"
    assert ros["plans_missed"] == 0 and ros["plans_received"] >= 20, ros
    assert ros["commands_missed"] <= 2, ros
    assert abs(ros["sim_time_s"] - TIMEOUT_S) < 0.1
    # the route is meaningful: the student moves and runs the red light in-process
    assert local["route_completion"] > 0.3 and local["red_light_violations"] == 1, local
    assert abs(ros["route_completion"] - local["route_completion"]) <= COMPLETION_TOLERANCE, summary
    assert ros["infractions"] == local["infractions"], summary
    assert ros["collisions_not_at_fault"] == local["collisions_not_at_fault"], summary
    assert ros["off_road_events"] == local["off_road_events"], summary
    assert abs(ros["driving_score"] - local["driving_score"]) <= COMPLETION_TOLERANCE, summary
