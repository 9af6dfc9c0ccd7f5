"""A hand-written NAVSIM log (real schema) for evaluation tests: ego at 5 m/s, one parked and one moving car."""

import pickle

import numpy as np

FRONT_CAMERA = {
    "sensor2lidar_rotation": np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]),
    "sensor2lidar_translation": np.array([1.5, 0.0, 1.5]),
    "cam_intrinsic": np.array([[80.0, 0.0, 64.0], [0.0, 80.0, 32.0], [0.0, 0.0, 1.0]]),
    "distortion": np.zeros(5),
}


def write_log(logs_dir, name="log_a", frames=16, yaw=0.3, speed=5.0, sensor_blobs=None):
    """Write ``logs_dir/<name>.pkl`` (and 128x64 front images under ``sensor_blobs``); returns ego poses."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    direction = np.array([np.cos(yaw), np.sin(yaw)])
    parked_global = np.array([100.0, 100.0]) + 40.0 * direction + 5.0 * np.array([-direction[1], direction[0]])
    poses, data = [], []
    for i in range(frames):
        xy = np.array([100.0, 100.0]) + speed * 0.5 * i * direction
        poses.append([xy[0], xy[1], yaw])
        rel = parked_global - xy
        local = np.array([rel @ direction, rel @ np.array([-direction[1], direction[0]])])
        boxes = np.array([[local[0], local[1], 0.8, 4.5, 2.0, 1.6, 0.0],
                          [8.0, -3.5, 0.8, 4.5, 2.0, 1.6, 0.0]])  # fmt: skip
        data.append({
            "token": f"{name}_{i:03d}", "timestamp": 1_700_000_000_000_000 + i * 500_000, "log_name": name,
            "scene_token": f"{name}_scene", "map_location": "synthetic", "roadblock_ids": ["rb0"],
            "traffic_lights": [], "can_bus": np.zeros(18),
            "ego2global_translation": np.array([xy[0], xy[1], 0.0]),
            "ego2global_rotation": np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]),
            "ego_dynamic_state": np.array([speed, 0.0, 0.0, 0.0]),
            "driving_command": np.array([0, 1, 0, 0]),
            "cams": {} if sensor_blobs is None else {"CAM_F0": {"data_path": f"{name}/CAM_F0/{i:03d}.png", **FRONT_CAMERA}},
            "anns": {"gt_boxes": boxes, "gt_names": ["vehicle", "vehicle"],
                     "gt_velocity_3d": np.array([[-speed, 0.0, 0.0], [0.0, 0.0, 0.0]]),
                     "instance_tokens": ["i0", "i1"], "track_tokens": ["parked", "follower"]},
        })  # fmt: skip
        if sensor_blobs is not None:
            import cv2

            image = np.full((64, 128, 3), 90, np.uint8)
            image[32:] = 60  # road
            image[20:40, 40 + i : 60 + i] = (200, 40, 40)  # something drifting
            path = sensor_blobs / name / "CAM_F0" / f"{i:03d}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(path), image)
    with open(logs_dir / f"{name}.pkl", "wb") as f:
        pickle.dump(data, f)
    return np.array(poses)
