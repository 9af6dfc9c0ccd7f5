"""The NAVSIM log reader on hand-written frames that follow the real OpenScene schema."""

from __future__ import annotations

import math
import pickle

import cv2
import numpy as np
import pytest

from wamdiff2_ros.data.navsim import CAMERA_NAMES, LogFormatError, NavsimLogs, load_log

LOG = "2021.05.12.22.00.38_veh-35_01008_01518"


def _quat(yaw: float) -> np.ndarray:
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


def _pose(i: int) -> tuple[float, float, float]:
    """Ego on a circle of radius 50 m around (600, 4000), 5 m/s, counter-clockwise."""
    angle = 0.05 * i
    return 600.0 + 50.0 * math.sin(angle), 4000.0 - 50.0 * math.cos(angle), angle


def make_frame(i: int, with_anns: bool = True) -> dict:
    """One frame dict with exactly the fields and types of a real OpenScene log."""
    x, y, yaw = _pose(i)
    token = f"{i:016x}"
    can_bus = np.array([x, y, 610.0, *_quat(yaw), 0.1, 0.5, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0])
    cams = {}
    for cam in CAMERA_NAMES:
        cams[cam] = {
            "data_path": f"{LOG}/{cam}/{token}.jpg",
            "sensor2lidar_rotation": np.eye(3),
            "sensor2lidar_translation": np.array([1.5, 0.0, -0.3]),
            "cam_intrinsic": np.array([[1545.0, 0.0, 960.0], [0.0, 1545.0, 560.0], [0.0, 0.0, 1.0]]),
            "distortion": np.array([-0.356, 0.172, -0.00136, -0.00055, -0.0433]),
        }
    frame = {
        "token": token,
        "frame_idx": i,
        "timestamp": 1620857889650000 + 500000 * i,
        "log_name": LOG,
        "log_token": "a8d4b5f5a9a05b2a",
        "scene_name": "log-0001-scene-0001",
        "scene_token": "1b3c0fd2d0b35a65",
        "map_location": "las_vegas",
        "roadblock_ids": ["58154", "58155"] if i != 6 else [],
        "vehicle_name": "35",
        "can_bus": can_bus,
        "lidar_path": f"{LOG}/MergedPointCloud/{token}.pcd",
        "lidar2ego_translation": np.array([1.5, 0.0, 1.9]),
        "lidar2ego_rotation": [1.0, 0.0, 0.0, 0.0],
        "ego2global_translation": can_bus[:3],
        "ego2global_rotation": can_bus[3:7],
        "ego_dynamic_state": [5.0, 0.0, 0.1, 0.5],
        "traffic_lights": [(72613, False), (72614, True)],
        "driving_command": np.array([1, 0, 0, 0]),
        "cams": cams,
        "sample_prev": None,
        "sample_next": None,
        "ego2global": np.eye(4),
        "lidar2ego": np.eye(4),
        "lidar2global": np.eye(4),
    }
    if with_anns:
        frame["anns"] = {
            "gt_boxes": np.array([[10.0, 0.5, 0.8, 4.5, 1.9, 1.6, 0.1], [5.0, 6.0, 0.9, 0.6, 0.6, 1.8, 1.5]]),
            "gt_names": np.array(["vehicle", "pedestrian"]),
            "gt_velocity_3d": np.zeros((2, 3)),
            "instance_tokens": [f"i{i}a", f"i{i}b"],
            "track_tokens": ["ta", "tb"],
        }
    return frame


def write_log(folder, frames, name=LOG):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.pkl"
    path.write_bytes(pickle.dumps(frames, protocol=pickle.HIGHEST_PROTOCOL))
    return path


def test_real_schema_loads_into_scenes(tmp_path):
    logs_dir = tmp_path / "navsim_logs" / "mini"
    write_log(logs_dir, [make_frame(i) for i in range(20)])
    logs = NavsimLogs(logs_dir, tmp_path / "sensor_blobs" / "mini", num_history_frames=4, num_future_frames=8)
    # windows start at 0..8 (20 - 12 + 1 = 9); the one whose current frame (3 + start) is frame 6 has no route
    assert len(logs) == 8
    assert logs.camera_names() == list(CAMERA_NAMES)
    scene = logs[0]
    assert scene.token == f"{3:016x}" and scene.metadata.map_name == "las_vegas"
    assert len(scene.frames) == 12
    frame = scene.current_frame
    assert frame.annotations is not None and frame.annotations.names == ["vehicle", "pedestrian"]
    assert frame.traffic_lights == [(72613, False), (72614, True)]
    assert frame.ego_status.driving_command.tolist() == [1, 0, 0, 0]
    assert frame.cameras["CAM_F0"].intrinsics[0, 0] == 1545.0
    assert frame.can_bus is not None and frame.can_bus.shape == (18,)


def test_future_trajectory_is_in_the_current_ego_frame(tmp_path):
    logs_dir = tmp_path / "logs"
    write_log(logs_dir, [make_frame(i) for i in range(20)])
    logs = NavsimLogs(logs_dir, num_history_frames=4, num_future_frames=8, has_route=False)
    scene = logs[2]  # current frame 5
    traj = scene.future_trajectory()
    assert traj.shape == (8, 3)
    for k in range(8):
        angle = 0.05 * (k + 1)  # on a circle of radius 50 m: chord in the local frame
        assert traj[k, 0] == pytest.approx(50.0 * math.sin(angle), abs=1e-6)
        assert traj[k, 1] == pytest.approx(50.0 * (1 - math.cos(angle)), abs=1e-6)
        assert traj[k, 2] == pytest.approx(angle, abs=1e-9)
    history = scene.history_trajectory()
    assert history.shape == (4, 3) and np.allclose(history[-1], 0.0)
    agent_input = scene.agent_input()
    assert len(agent_input.ego_statuses) == 4 and not agent_input.ego_statuses[0].in_global_frame
    assert agent_input.ego_statuses[0].ego_pose[0] < 0  # earlier pose lies behind


def test_test_split_without_anns_loads(tmp_path):
    logs_dir = tmp_path / "navsim_logs" / "test"
    write_log(logs_dir, [make_frame(i, with_anns=False) for i in range(12)])
    logs = NavsimLogs(logs_dir)
    assert len(logs) == 1
    assert all(f.annotations is None for f in logs[0].frames)


def test_frame_interval_and_future_frames_are_configurable(tmp_path):
    logs_dir = tmp_path / "logs"
    write_log(logs_dir, [make_frame(i) for i in range(30)])
    assert len(NavsimLogs(logs_dir, num_future_frames=10, frame_interval=14, has_route=False)) == 2
    assert len(NavsimLogs(logs_dir, num_future_frames=8, frame_interval=1, has_route=False)) == 19


def test_images_load_as_rgb(tmp_path):
    logs_dir = tmp_path / "navsim_logs" / "mini"
    blobs = tmp_path / "sensor_blobs" / "mini"
    frames = [make_frame(i) for i in range(12)]
    write_log(logs_dir, frames)
    path = blobs / frames[3]["cams"]["CAM_F0"]["data_path"]
    path.parent.mkdir(parents=True)
    image = np.zeros((8, 16, 3), dtype=np.uint8)
    image[..., 0] = 255  # red in RGB
    cv2.imwrite(str(path), image[..., ::-1])
    scene = NavsimLogs(logs_dir, blobs)[0]
    loaded = scene.load_images(("CAM_F0",))["CAM_F0"]
    assert loaded.shape == (8, 16, 3) and loaded[..., 0].mean() > 200 and loaded[..., 2].mean() < 50
    with pytest.raises(FileNotFoundError, match="CAM_B0"):
        scene.load_images(("CAM_B0",))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda f: f.pop("ego2global_translation"), "ego2global_translation"),
        (lambda f: f.update(ego_dynamic_state=[1.0, 2.0]), "ego_dynamic_state"),
        (lambda f: f.update(driving_command=np.array([1, 1, 0, 0])), "driving_command"),
        (lambda f: f["cams"]["CAM_L1"].pop("cam_intrinsic"), "cams.CAM_L1.cam_intrinsic"),
        (lambda f: f["cams"]["CAM_F0"].update(sensor2lidar_rotation=np.eye(4)), "cams.CAM_F0.sensor2lidar_rotation"),
        (lambda f: f["anns"].update(gt_boxes=np.zeros((2, 5))), "anns.gt_boxes"),
        (lambda f: f["anns"].update(track_tokens=["only-one"]), "anns.track_tokens"),
        (lambda f: f.update(token=17), "token"),
        (lambda f: f.update(traffic_lights=[("x", "y", "z")]), "traffic_lights[0]"),
        (lambda f: f.update(ego2global_rotation=np.array([0.0, 0.0, 0.0, 0.0])), "ego2global_rotation"),
    ],
)
def test_malformed_frames_name_file_frame_and_field(tmp_path, mutate, field):
    frames = [make_frame(i) for i in range(5)]
    mutate(frames[2])
    path = write_log(tmp_path, frames)
    with pytest.raises(LogFormatError) as info:
        load_log(path)
    assert info.value.field == field and info.value.frame == 2
    assert str(path) in str(info.value) and f"'{field}'" in str(info.value)


def test_not_a_frame_list_and_missing_file(tmp_path):
    path = tmp_path / "dict.pkl"
    path.write_bytes(pickle.dumps({"token": "x"}))
    with pytest.raises(LogFormatError, match="dict.pkl"):
        load_log(path)
    with pytest.raises(FileNotFoundError, match="nowhere.pkl"):
        load_log(tmp_path / "nowhere.pkl")
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        NavsimLogs(tmp_path / "no_such_dir")
