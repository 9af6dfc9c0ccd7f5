"""Evaluation-room geometry: NAVSIM box arrays, frame changes and bearings in the ego plane.

Angles, oriented boxes, the overlap test and the ego footprint are the shared ones of
:mod:`wamdiff2_ros.geometry` (REP 103 / NAVSIM frames, rear-axle ego poses).
"""

from __future__ import annotations

import numpy as np

from wamdiff2_ros.geometry import box_corners, wrap_angle


def boxes_corners(boxes: np.ndarray) -> np.ndarray:
    """Corners (..., 4, 2) of (..., 7) boxes ``x, y, z, length, width, height, yaw``."""
    boxes = np.asarray(boxes, dtype=np.float64)
    return box_corners(boxes[..., 0], boxes[..., 1], boxes[..., 3], boxes[..., 4], boxes[..., 6])


def to_frame(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """Points (..., 2) given in the frame of ``pose`` (x, y, yaw) expressed in the parent frame."""
    points = np.asarray(points, dtype=np.float64)
    x, y, yaw = pose
    cos, sin = np.cos(yaw), np.sin(yaw)
    return np.stack(
        [x + points[..., 0] * cos - points[..., 1] * sin, y + points[..., 0] * sin + points[..., 1] * cos], axis=-1
    )


def relative_bearing(poses: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Angle of ``points`` (..., 2) seen from ``poses`` (..., 3), relative to their heading, in [-pi, pi)."""
    poses = np.asarray(poses, dtype=np.float64)
    points = np.asarray(points, dtype=np.float64)
    angle = np.arctan2(points[..., 1] - poses[..., 1], points[..., 0] - poses[..., 0])
    return wrap_angle(angle - poses[..., 2], method="modulo")
