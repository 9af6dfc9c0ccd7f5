"""Replay -> driver over DDS: every replayed scene gets a well-formed plan carrying its token."""

from __future__ import annotations

import pytest
from conftest import process_output


@pytest.fixture(scope="module")
def synthetic_logs(tmp_path_factory):
    from wamdiff2_ros.data.synth import synthesize

    out = tmp_path_factory.mktemp("navsim")
    synthesize(out, num_logs=1, num_frames=16, seed=3, size=(256, 128), split="mini", progress=False)
    return out


def test_replay_lockstep_drives_the_driver(repo, ros_env, processes, ros_peer, synthetic_logs):
    from wamdiff2_ros.data.navsim import NavsimLogs
    from wamdiff2_ros.msg import DetectionArray, SceneInfo, Trajectory
    from wamdiff2_ros.ros.msg_utils import stamp_to_ns

    logs_dir = synthetic_logs / "navsim_logs" / "mini"
    blobs_dir = synthetic_logs / "sensor_blobs" / "mini"
    scenes = NavsimLogs(logs_dir, blobs_dir)
    n = min(4, len(scenes))
    expected = {int(scenes[i].current_frame.timestamp) * 1000: scenes[i].token for i in range(n)}

    plans = ros_peer.listen(Trajectory, "/wamdiff2/trajectory")
    from rclpy.qos import DurabilityPolicy, QoSProfile

    latched = QoSProfile(depth=50, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    gt = ros_peer.listen(Trajectory, "/navsim/gt_trajectory", latched)
    boxes = ros_peer.listen(DetectionArray, "/navsim/gt_boxes", latched)
    infos = ros_peer.listen(SceneInfo, "/navsim/scene_info", latched)
    driver = processes.python(
        ["-m", "wamdiff2_ros.ros.drive_node", "--ros-args", "-p", "model_path:=preset:tiny",
         "-p", "tasks:=[planning]", "-p", "max_new_tokens:=32", "-p", "max_rate_hz:=20.0"],
        ros_env, cwd=repo,
    )
    assert ros_peer.spin_until(lambda: ros_peer.node.count_publishers("/wamdiff2/trajectory") > 0, 90), process_output(driver)
    replay = processes.python(
        ["-m", "wamdiff2_ros.ros.replay_node", "--ros-args", "-p", f"logs_dir:={logs_dir}",
         "-p", f"sensor_blobs_dir:={blobs_dir}", "-p", "lockstep:=true", "-p", f"max_scenes:={n}",
         "-p", "image_transport:=raw"],
        ros_env, cwd=repo,
    )
    def everything() -> bool:
        return min(len(plans), len(gt), len(boxes), len(infos)) >= n

    assert ros_peer.spin_until(everything, 120), (
        f"got {len(plans)} plans, {len(gt)} ground truths, {len(boxes)} box sets, {len(infos)} scene infos of {n}\n"
        f"replay:\n{process_output(replay)}\ndriver:\n{process_output(driver)}"
    )
    assert replay.wait(timeout=30) == 0, process_output(replay)
    got = {stamp_to_ns(p.header.stamp): p for p in plans}
    assert set(expected) <= set(got), "a replayed scene got no plan"
    for stamp, token in expected.items():
        plan = got[stamp]
        assert plan.scene_token == token
        assert plan.header.frame_id == "base_link" and len(plan.waypoints) == 8
    assert len(gt) >= n and all(len(g.waypoints) == 8 and g.scene_token for g in gt)
    # the replayed ground truth is the log's future, in the current ego frame
    first = next(g for g in gt if stamp_to_ns(g.header.stamp) == min(expected))
    future = scenes[0].future_trajectory()
    assert [w.x for w in first.waypoints] == pytest.approx(future[:, 0].tolist(), abs=1e-6)
    assert len(boxes) >= n and len(infos) >= n
