"""Camera rig of the synthetic car: NAVSIM's eight cameras as OpenCV pinhole models.

Calibration follows the NAVSIM ``cams`` fields: ``cam_intrinsic`` (3, 3) K,
``sensor2lidar_rotation`` / ``sensor2lidar_translation`` taking points from the
camera's optical frame (x right, y down, z forward) into the lidar frame, and the
log's ``lidar2ego`` pose. :class:`PinholeCamera` is built from exactly those numbers,
so the renderer draws with the calibration written into the log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wamdiff2_ros.data.geometry import rotation_z

__all__ = [
    "CAMERA_MOUNTS",
    "LIDAR2EGO_TRANSLATION",
    "LIDAR2EGO_ROTATION",
    "CameraMount",
    "PinholeCamera",
    "camera_calibration",
    "parse_size",
]

#: Lidar pose in the ego (rear-axle) frame; identity rotation.
LIDAR2EGO_TRANSLATION = np.array([0.0, 0.0, 1.9])
LIDAR2EGO_ROTATION = np.array([1.0, 0.0, 0.0, 0.0])  # w, x, y, z

# optical (x right, y down, z forward) -> ego (x forward, y left, z up) for a camera looking along +x
_OPTICAL_TO_FORWARD = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


@dataclass(frozen=True)
class CameraMount:
    """Where a camera sits on the car (ego frame) and where it looks."""

    name: str
    x: float
    y: float
    z: float
    yaw_deg: float
    hfov_deg: float = 64.0


#: Roughly nuPlan's ring of eight 64-degree cameras on the roof.
CAMERA_MOUNTS: dict[str, CameraMount] = {
    m.name: m
    for m in (
        CameraMount("CAM_F0", 1.80, 0.00, 1.55, 0.0),
        CameraMount("CAM_L0", 1.60, 0.45, 1.55, 55.0),
        CameraMount("CAM_L1", 1.00, 0.90, 1.55, 100.0),
        CameraMount("CAM_L2", 0.20, 0.75, 1.55, 145.0),
        CameraMount("CAM_R0", 1.60, -0.45, 1.55, -55.0),
        CameraMount("CAM_R1", 1.00, -0.90, 1.55, -100.0),
        CameraMount("CAM_R2", 0.20, -0.75, 1.55, -145.0),
        CameraMount("CAM_B0", -0.30, 0.00, 1.55, 180.0),
    )
}


def parse_size(text: str) -> tuple[int, int]:
    """``"512x256"`` -> (512, 256), with a clear error otherwise."""
    try:
        w, h = (int(v) for v in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"image size must look like WIDTHxHEIGHT (e.g. 512x256), got {text!r}") from None
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise ValueError(f"image size {w}x{h} is out of range (16..8192 per side)")
    return w, h


def camera_calibration(name: str, size: tuple[int, int]) -> dict[str, np.ndarray]:
    """NAVSIM ``cams[name]`` calibration fields (without ``data_path``) for an image ``size`` (W, H)."""
    if name not in CAMERA_MOUNTS:
        raise ValueError(f"unknown camera {name!r}; expected one of {', '.join(CAMERA_MOUNTS)}")
    mount = CAMERA_MOUNTS[name]
    width, height = size
    f = (width / 2.0) / math.tan(math.radians(mount.hfov_deg) / 2.0)
    intrinsic = np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]])
    cam2ego_rotation = rotation_z(math.radians(mount.yaw_deg)) @ _OPTICAL_TO_FORWARD
    cam2ego_translation = np.array([mount.x, mount.y, mount.z])
    # lidar2ego has identity rotation: sensor2lidar = cam2ego shifted by the lidar position
    return {
        "sensor2lidar_rotation": cam2ego_rotation,
        "sensor2lidar_translation": cam2ego_translation - LIDAR2EGO_TRANSLATION,
        "cam_intrinsic": intrinsic,
        "distortion": np.zeros(5),
    }


class PinholeCamera:
    """An undistorted OpenCV pinhole camera posed in the ego frame via lidar2ego."""

    def __init__(self, name: str, intrinsic: np.ndarray, sensor2lidar_rotation: np.ndarray,
                 sensor2lidar_translation: np.ndarray, size: tuple[int, int],
                 lidar2ego_rotation: np.ndarray | None = None, lidar2ego_translation: np.ndarray | None = None) -> None:
        self.name = name
        self.K = np.asarray(intrinsic, dtype=np.float64)
        self.width, self.height = int(size[0]), int(size[1])
        r_l2e = np.eye(3) if lidar2ego_rotation is None else np.asarray(lidar2ego_rotation, dtype=np.float64)
        t_l2e = LIDAR2EGO_TRANSLATION if lidar2ego_translation is None else np.asarray(lidar2ego_translation)
        self.cam2ego_rotation = r_l2e @ np.asarray(sensor2lidar_rotation, dtype=np.float64)
        self.cam2ego_translation = r_l2e @ np.asarray(sensor2lidar_translation, dtype=np.float64) + t_l2e

    @classmethod
    def from_calibration(cls, name: str, calibration: dict, size: tuple[int, int]) -> PinholeCamera:
        return cls(name, calibration["cam_intrinsic"], calibration["sensor2lidar_rotation"],
                   calibration["sensor2lidar_translation"], size)

    def world_to_camera(self, ego_pose: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
        """(R, t) with p_cam = R @ p_world + t for an ego pose (x, y, yaw) on the ground (z = 0)."""
        x, y, yaw = ego_pose
        r_e = rotation_z(yaw)
        t_e = np.array([x, y, 0.0])
        r = self.cam2ego_rotation.T @ r_e.T
        t = -self.cam2ego_rotation.T @ (r_e.T @ t_e + self.cam2ego_translation)
        return r, t

    def ego_to_camera(self, points_ego: np.ndarray) -> np.ndarray:
        """Points (..., 3) in the ego frame -> optical frame."""
        return (np.asarray(points_ego) - self.cam2ego_translation) @ self.cam2ego_rotation

    def project(self, points_cam: np.ndarray) -> np.ndarray:
        """Optical-frame points (..., 3) with z > 0 -> pixel coordinates (..., 2)."""
        p = np.asarray(points_cam, dtype=np.float64)
        z = p[..., 2:3]
        uv = p[..., :2] / z
        return uv * np.array([self.K[0, 0], self.K[1, 1]]) + np.array([self.K[0, 2], self.K[1, 2]])
