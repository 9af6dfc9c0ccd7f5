"""Synthetic writer -> NAVSIM reader round trip: poses, boxes, images, maps, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wamdiff2_ros.data.navsim import CAMERA_NAMES, NavsimLogs
from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.data.world import RoadMap

SIZE = (96, 48)
CAMERAS = ("CAM_F0", "CAM_B0")
REAL_KEYS = {
    "token", "frame_idx", "timestamp", "log_name", "log_token", "scene_name", "scene_token", "map_location",
    "roadblock_ids", "vehicle_name", "can_bus", "lidar_path", "lidar2ego_translation", "lidar2ego_rotation",
    "ego2global_translation", "ego2global_rotation", "ego_dynamic_state", "traffic_lights", "driving_command",
    "cams", "sample_prev", "sample_next", "ego2global", "lidar2ego", "lidar2global", "anns",
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    truth = synthesize(root, 2, 14, seed=5, cameras=CAMERAS, size=SIZE, split="mini", progress=False)
    return root, truth


def _logs(root, **kwargs):
    return NavsimLogs(root / "navsim_logs" / "mini", root / "sensor_blobs" / "mini", **kwargs)


def test_reader_reproduces_ground_truth_poses_and_boxes(dataset):
    root, truth = dataset
    logs = _logs(root)
    assert sorted(logs.logs) == sorted(t.log_name for t in truth)
    total_boxes = 0
    for log in truth:
        frames = logs.logs[log.log_name]
        assert [f.token for f in frames] == log.frame_tokens
        for frame, pose, boxes, command in zip(frames, log.ego_poses, log.boxes, log.commands, strict=True):
            assert set(frame.raw) == REAL_KEYS
            assert np.allclose(frame.ego_status.ego_pose[:2], pose[:2], atol=1e-9)
            assert math.isclose(math.remainder(frame.ego_status.ego_pose[2] - pose[2], 2 * math.pi), 0.0, abs_tol=1e-9)
            assert ("left", "straight", "right", "unknown")[int(np.argmax(frame.ego_status.driving_command))] == command
            anns = frame.annotations
            assert anns is not None and anns.track_tokens == [b.track_token for b in boxes]
            x, y, yaw = frame.ego_status.ego_pose
            c, s = math.cos(yaw), math.sin(yaw)
            for local, name, box in zip(anns.boxes, anns.names, boxes, strict=True):
                gx = x + c * local[0] - s * local[1]
                gy = y + s * local[0] + c * local[1]
                assert (gx, gy) == pytest.approx((box.x, box.y), abs=1e-6)
                assert local[3:6] == pytest.approx((box.length, box.width, box.height))
                assert math.remainder(local[6] + yaw - box.yaw, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
                assert name == box.name
            total_boxes += len(boxes)
    assert total_boxes > 0


def test_scenes_future_trajectory_matches_generator(dataset):
    root, truth = dataset
    logs = _logs(root)
    assert len(logs) == 2 * (14 - 12 + 1)
    scene = logs[0]
    log = next(t for t in truth if t.log_name == scene.metadata.log_name)
    x0, y0, h0 = log.ego_poses[3]
    expected = []
    for x, y, _h in log.ego_poses[4:12]:
        dx, dy = x - x0, y - y0
        expected.append((math.cos(h0) * dx + math.sin(h0) * dy, -math.sin(h0) * dx + math.cos(h0) * dy))
    assert np.allclose(scene.future_trajectory()[:, :2], expected, atol=1e-9)
    # a moving ego: the last waypoint is metres ahead
    assert scene.future_trajectory()[-1, 0] > 5.0


def test_images_and_cameras(dataset):
    root, _ = dataset
    logs = _logs(root)
    assert logs.camera_names() == list(CAMERAS)
    scene = logs[1]
    images = scene.load_images(CAMERAS)
    for name in CAMERAS:
        assert images[name].shape == (SIZE[1], SIZE[0], 3) and images[name].dtype == np.uint8
    frame = scene.current_frame
    assert frame.raw["cams"]["CAM_L0"] == {}  # not rendered: empty, as NAVSIM writes it
    cam = frame.cameras["CAM_F0"]
    assert cam.intrinsics[0, 2] == SIZE[0] / 2 and cam.intrinsics[1, 2] == SIZE[1] / 2
    assert set(frame.raw["cams"]) == set(CAMERA_NAMES)
    # sky on top, ground below the horizon
    img = images["CAM_F0"].astype(int)
    assert img[1, :, 2].mean() > img[1, :, 0].mean()  # bluish sky
    assert img[-1].mean() < img[1].mean()


def test_maps_are_next_to_the_logs_and_round_trip(dataset):
    root, _ = dataset
    logs = _logs(root)
    assert (root / "maps").is_dir() and not list((root / "navsim_logs").rglob("*.json"))
    road_map = logs.map_for(logs[0])
    assert isinstance(road_map, RoadMap)
    frame = logs[0].current_frame
    x, y, yaw = frame.ego_status.ego_pose
    assert road_map.is_drivable(x, y)
    assert road_map.driving_direction_ok(x, y, yaw)
    assert not road_map.driving_direction_ok(x, y, yaw + math.pi) or road_map.in_intersection(x, y) >= 0
    assert road_map.time_origin_us == logs.logs[logs[0].metadata.log_name][0].timestamp
    assert set(frame.roadblock_ids)  # synthetic logs always have a route


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    def write(folder, seed):
        synthesize(folder, 1, 3, seed=seed, cameras=("CAM_F0",), size=(64, 32), progress=False)
        return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    a = write(tmp_path / "a", 11)
    b = write(tmp_path / "b", 11)
    c = write(tmp_path / "c", 12)
    assert a == b
    assert a.keys() != c.keys() or any(a[k] != c[k] for k in a)


def test_a_split_records_its_world_rules_and_the_commands_follow_them(tmp_path):
    import pickle

    from wamdiff2_ros.data.world.rules import split_world_rules as data_world_rules

    def commands(folder, horizon):
        synthesize(folder, 1, 30, seed=7, cameras=(), size=(64, 32), progress=False, command_horizon_s=horizon)
        (log,) = sorted(folder.rglob("*.pkl"))
        return [tuple(int(v) for v in f["driving_command"]) for f in pickle.loads(log.read_bytes())]

    near, far = commands(tmp_path / "near", 0.0), commands(tmp_path / "far", 4.0)
    assert data_world_rules(tmp_path / "near") == {"command_horizon_s": 0.0, "lamp_visor_deg": 60.0}
    assert data_world_rules(tmp_path / "far") == {"command_horizon_s": 4.0, "lamp_visor_deg": 60.0}
    assert data_world_rules(tmp_path / "nothing")["command_horizon_s"] == 0.0  # splits before the file: the 20 m rule
    assert near != far and len(near) == len(far) == 30  # same world, other commands
    assert sum(c != (0, 1, 0, 0) for c in far) > sum(c != (0, 1, 0, 0) for c in near)  # more turns announced
    (tmp_path / "far" / "synth_config.json").write_text('{"command_horizon_s": -2}')
    with pytest.raises(ValueError, match="command_horizon_s"):
        data_world_rules(tmp_path / "far")
