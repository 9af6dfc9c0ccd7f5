"""SE(2)/SE(3) helpers for NAVSIM poses: quaternions (w, x, y, z), yaw, relative poses."""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "normalize_angle",
    "yaw_from_quaternion",
    "quaternion_from_yaw",
    "absolute_to_relative_se2",
    "relative_to_absolute_se2",
    "rotation_z",
]


def normalize_angle(angle: np.ndarray | float) -> np.ndarray | float:
    """Angle(s) wrapped to [-pi, pi]."""
    return np.arctan2(np.sin(angle), np.cos(angle))


def yaw_from_quaternion(q: np.ndarray | list[float]) -> float:
    """Yaw (rotation about z) of a unit quaternion given as (w, x, y, z)."""
    w, x, y, z = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quaternion_from_yaw(yaw: float) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation by ``yaw`` about z."""
    return np.array([math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)], dtype=np.float64)


def rotation_z(yaw: float) -> np.ndarray:
    """3x3 rotation matrix about z."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], dtype=np.float64)


def absolute_to_relative_se2(origin: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """Poses (..., 3) x, y, heading in the frame of ``origin`` (3,) (all global -> local)."""
    poses = np.asarray(poses, dtype=np.float64)
    ox, oy, oh = (float(v) for v in origin)
    c, s = math.cos(oh), math.sin(oh)
    dx = poses[..., 0] - ox
    dy = poses[..., 1] - oy
    out = np.empty_like(poses)
    out[..., 0] = c * dx + s * dy
    out[..., 1] = -s * dx + c * dy
    out[..., 2] = normalize_angle(poses[..., 2] - oh)
    return out


def relative_to_absolute_se2(origin: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """Inverse of :func:`absolute_to_relative_se2`: local poses (..., 3) -> global."""
    poses = np.asarray(poses, dtype=np.float64)
    ox, oy, oh = (float(v) for v in origin)
    c, s = math.cos(oh), math.sin(oh)
    out = np.empty_like(poses)
    out[..., 0] = ox + c * poses[..., 0] - s * poses[..., 1]
    out[..., 1] = oy + s * poses[..., 0] + c * poses[..., 1]
    out[..., 2] = normalize_angle(poses[..., 2] + oh)
    return out
