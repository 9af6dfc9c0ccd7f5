"""Oriented boxes in the ego plane: the ego footprint, corners, and overlap tests (separating axes).

Frames follow REP 103 and NAVSIM: x forward, y left, yaw counter-clockwise. Ego poses
are rear-axle poses (nuPlan / NAVSIM convention); the footprint is the Chrysler
Pacifica box nuPlan uses (``get_pacifica_parameters``). No shapely needed: all boxes
are convex, so the separating-axis test is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VehicleParameters:
    """Footprint of a car around its rear axle, metres."""

    width: float = 1.1485 * 2.0
    front_length: float = 4.049  # rear axle to front bumper
    rear_length: float = 1.127  # rear axle to rear bumper
    height: float = 1.777
    wheel_base: float = 3.089

    @property
    def length(self) -> float:
        return self.front_length + self.rear_length

    @property
    def rear_axle_to_center(self) -> float:
        return (self.front_length - self.rear_length) / 2.0


PACIFICA = VehicleParameters()


def wrap_angle(angle: np.ndarray | float) -> np.ndarray:
    """Angles wrapped to [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi


def box_corners(x: np.ndarray, y: np.ndarray, length: np.ndarray, width: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Corners (..., 4, 2) of boxes centred at (x, y): front-left, rear-left, rear-right, front-right."""
    x, y, length, width, yaw = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, y, length, width, yaw)))
    cos, sin = np.cos(yaw), np.sin(yaw)
    half_l, half_w = length / 2.0, width / 2.0
    local = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])  # (4, 2) signs
    lx = local[:, 0] * half_l[..., None]
    ly = local[:, 1] * half_w[..., None]
    cx = x[..., None] + lx * cos[..., None] - ly * sin[..., None]
    cy = y[..., None] + lx * sin[..., None] + ly * cos[..., None]
    return np.stack([cx, cy], axis=-1)


def ego_centers(poses: np.ndarray, vehicle: VehicleParameters = PACIFICA) -> np.ndarray:
    """Box centres (..., 2) of rear-axle poses (..., 3)."""
    poses = np.asarray(poses, dtype=np.float64)
    offset = vehicle.rear_axle_to_center
    return np.stack(
        [poses[..., 0] + offset * np.cos(poses[..., 2]), poses[..., 1] + offset * np.sin(poses[..., 2])], axis=-1
    )


def ego_corners(poses: np.ndarray, vehicle: VehicleParameters = PACIFICA) -> np.ndarray:
    """Footprint corners (..., 4, 2) of rear-axle poses (..., 3) (x, y, heading)."""
    poses = np.asarray(poses, dtype=np.float64)
    centre = ego_centers(poses, vehicle)
    return box_corners(centre[..., 0], centre[..., 1], vehicle.length, vehicle.width, poses[..., 2])


def boxes_corners(boxes: np.ndarray) -> np.ndarray:
    """Corners (..., 4, 2) of (..., 7) boxes ``x, y, z, length, width, height, yaw``."""
    boxes = np.asarray(boxes, dtype=np.float64)
    return box_corners(boxes[..., 0], boxes[..., 1], boxes[..., 3], boxes[..., 4], boxes[..., 6])


def _axes(polygon: np.ndarray) -> np.ndarray:
    """Edge normals (..., K, 2) of polygons (..., K, 2)."""
    edges = np.roll(polygon, -1, axis=-2) - polygon
    return np.stack([-edges[..., 1], edges[..., 0]], axis=-1)


def convex_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether convex polygons ``a`` (..., Ka, 2) and ``b`` (..., Kb, 2) intersect (touching counts).

    Batch dimensions broadcast. A two-point "polygon" is a segment (used for the front bumper).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-2:])
    axes = np.concatenate([_axes(a), _axes(b)], axis=-2)
    proj_a = np.einsum("...kd,...jd->...kj", axes, a)  # (..., K, Ka)
    proj_b = np.einsum("...kd,...jd->...kj", axes, b)
    eps = 1e-9
    separated = (proj_a.max(-1) < proj_b.min(-1) - eps) | (proj_b.max(-1) < proj_a.min(-1) - eps)
    degenerate = np.all(np.abs(axes) < 1e-12, axis=-1)
    separated &= ~degenerate
    return ~np.any(separated, axis=-1)


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
    return wrap_angle(angle - poses[..., 2])
