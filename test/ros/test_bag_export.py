"""`wamdiff2 bag export`: replay topics in a rosbag2 (MCAP, sqlite3) with our definitions embedded."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    from wamdiff2_ros.data.synth import synthesize

    out = tmp_path_factory.mktemp("navsim")
    synthesize(out, num_logs=1, num_frames=15, seed=5, size=(160, 96), split="mini", progress=False)
    return out / "navsim_logs" / "mini", out / "sensor_blobs" / "mini"


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "wamdiff2_ros.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_export_round_trip(logs, tmp_path, storage):
    from wamdiff2_ros.data.bags import read_messages
    from wamdiff2_ros.data.navsim import NavsimLogs

    logs_dir, blobs = logs
    bag = tmp_path / "bag"
    out = _cli("bag", "export", "--logs", str(logs_dir), "--sensor-blobs", str(blobs), "--out", str(bag),
               "--storage", storage)
    assert out.returncode == 0, out.stderr
    scenes = NavsimLogs(logs_dir, blobs)
    by_topic: dict[str, list] = {}
    for topic, _, recv, msg in read_messages(bag):
        by_topic.setdefault(topic, []).append((recv, msg))
    assert len(by_topic["/navsim/gt_trajectory"]) == len(scenes)
    assert len(by_topic["/cameras/CAM_F0/image/compressed"]) == len(scenes)
    first_recv, first_gt = by_topic["/navsim/gt_trajectory"][0]
    assert first_recv == int(scenes[0].current_frame.timestamp) * 1000
    assert first_gt.scene_token == scenes[0].token
    np.testing.assert_allclose([[w.x, w.y, w.heading] for w in first_gt.waypoints], scenes[0].future_trajectory(), atol=1e-9)
    jpg = by_topic["/cameras/CAM_F0/image/compressed"][0][1].data
    assert bytes(jpg[:2]) == b"\xff\xd8"  # the stored jpeg, untouched
    odom = by_topic["/ego/odometry"][0][1]
    assert odom.pose.pose.position.x == pytest.approx(float(scenes[0].current_frame.ego_status.ego_pose[0]))


def test_mcap_embeds_message_definitions(logs, tmp_path):
    from mcap.reader import make_reader

    logs_dir, blobs = logs
    bag = tmp_path / "bag"
    assert _cli("bag", "export", "--logs", str(logs_dir), "--sensor-blobs", str(blobs), "--out", str(bag)).returncode == 0
    (mcap_file,) = bag.glob("*.mcap")
    with open(mcap_file, "rb") as f:
        schemas = {s.name: s for s in make_reader(f).get_summary().schemas.values()}
    trajectory = schemas["wamdiff2_ros/msg/Trajectory"]
    assert trajectory.encoding == "ros2msg"
    text = trajectory.data.decode()
    assert "Waypoint[] waypoints" in text and "MSG: wamdiff2_ros/Waypoint" in text
    assert (bag / "metadata.yaml").is_file()


def test_exported_ground_truth_scores_zero_with_bag_eval(logs, tmp_path):
    logs_dir, blobs = logs
    bag = tmp_path / "bag"
    assert _cli("bag", "export", "--logs", str(logs_dir), "--sensor-blobs", str(blobs), "--out", str(bag)).returncode == 0
    result = tmp_path / "eval.json"
    out = _cli("bag", "eval", "--bag", str(bag), "--logs", str(logs_dir), "--json", str(result))
    assert out.returncode == 0, out.stderr
    scores = json.loads(result.read_text())
    assert scores["scenes_scored"] > 0 and scores["l2_avg"] == pytest.approx(0.0, abs=1e-6)


def test_bad_logs_dir_is_a_clear_error(tmp_path):
    out = _cli("bag", "export", "--logs", str(tmp_path / "missing"), "--sensor-blobs", str(tmp_path), "--out",
               str(tmp_path / "bag"))
    assert out.returncode == 2 and "wamdiff2 bag export" in out.stderr and "Traceback" not in out.stderr
