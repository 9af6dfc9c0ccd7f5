"""SE(2)/SE(3) frame helpers for NAVSIM poses: relative poses and rotations about z.

Angles and quaternions (w, x, y, z) are the shared ones of :mod:`wamdiff2_ros.geometry`.
"""

from __future__ import annotations

import math

import numpy as np

from wamdiff2_ros.geometry import wrap_angle

__all__ = [
    "absolute_to_relative_se2",
    "relative_to_absolute_se2",
    "rotation_z",
]


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
    out[..., 2] = wrap_angle(poses[..., 2] - oh, method="atan2")
    return out


def relative_to_absolute_se2(origin: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """Inverse of :func:`absolute_to_relative_se2`: local poses (..., 3) -> global."""
    poses = np.asarray(poses, dtype=np.float64)
    ox, oy, oh = (float(v) for v in origin)
    c, s = math.cos(oh), math.sin(oh)
    out = np.empty_like(poses)
    out[..., 0] = ox + c * poses[..., 0] - s * poses[..., 1]
    out[..., 1] = oy + s * poses[..., 0] + c * poses[..., 1]
    out[..., 2] = wrap_angle(poses[..., 2] + oh, method="atan2")
    return out
