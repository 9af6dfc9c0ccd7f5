"""Plane geometry ground floor: angles, quaternions, oriented boxes and vehicle footprints.

Every room (``data``, ``model``, ``evaluation``, ``ros``) takes these primitives from
here; this module needs numpy only and imports nothing else from the project. Frames
follow REP 103 and NAVSIM: x forward, y left, yaw counter-clockwise. Quaternions are
(w, x, y, z). Ego poses are rear-axle poses (nuPlan / NAVSIM convention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "WRAP_METHODS",
    "wrap_angle",
    "yaw_from_quaternion",
    "quaternion_from_yaw",
    "box_corners",
    "convex_overlap",
    "VehicleParameters",
    "PACIFICA",
    "ego_centers",
    "ego_corners",
    "footprint_corners",
]

TWO_PI = 2.0 * math.pi

# --------------------------------------------------------------------------- angles

#: How :func:`wrap_angle` reduces an angle. They differ in the last bit and at +-pi:
#: ``remainder`` is exact (IEEE remainder, like ``math.remainder``) and keeps +-pi;
#: ``modulo`` is ``(a + pi) mod 2 pi - pi``, maps +pi to -pi, and rounds (small angles
#: lose low bits); ``atan2`` is ``atan2(sin a, cos a)``, keeps +-pi, and rounds;
#: ``math`` is the same formula through Python's ``math`` module, one value at a time
#: (numpy's vectorised ``arctan2`` differs from libm's in the last bit for some inputs).
#: ``modulo`` (evaluation), ``atan2`` (synthetic world and map) and ``math`` (closed-loop
#: vehicle model and PDM probe) stay so that their numbers do not move; new code should
#: use the default.
WRAP_METHODS = ("remainder", "modulo", "atan2", "math")


def wrap_angle(angle: np.ndarray | float, *, method: str = "remainder") -> np.ndarray | np.floating:
    """Angle(s) wrapped to [-pi, pi] (``method="modulo"``: [-pi, pi)); see :data:`WRAP_METHODS`.

    ``remainder`` and ``math`` raise ``ValueError`` on an infinite angle, as ``math`` does.
    """
    if method == "modulo":
        return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi
    if method == "atan2":
        return np.arctan2(np.sin(angle), np.cos(angle))
    if method == "math":
        a = np.asarray(angle, dtype=np.float64)
        out = np.array([math.atan2(math.sin(v), math.cos(v)) for v in a.ravel().tolist()], dtype=np.float64)
        return out.reshape(a.shape)[()]
    if method != "remainder":
        raise ValueError(f"unknown wrap method {method!r}; expected one of {', '.join(WRAP_METHODS)}")
    a = np.asarray(angle, dtype=np.float64)
    if np.isinf(a).any():
        raise ValueError("cannot wrap an infinite angle")
    r = np.fmod(a, TWO_PI)  # exact, |r| < 2 pi, sign of a
    r = np.where(r > math.pi, r - TWO_PI, np.where(r < -math.pi, r + TWO_PI, r))  # exact (Sterbenz)
    tie = np.abs(r) == math.pi
    if tie.any():  # a halfway case: IEEE remainder rounds the quotient to even
        odd = np.fmod(np.rint((a - r) / TWO_PI), 2.0) != 0.0
        r = np.where(tie & odd, -r, r)
    return r[()]


# --------------------------------------------------------------------------- quaternions


def yaw_from_quaternion(q: np.ndarray | list[float] | tuple[float, ...]) -> float:
    """Yaw (rotation about z) of a unit quaternion given as (w, x, y, z)."""
    w, x, y, z = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quaternion_from_yaw(yaw: float) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation by ``yaw`` about z."""
    return np.array([math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)], dtype=np.float64)


# --------------------------------------------------------------------------- oriented boxes


def box_corners(x: np.ndarray, y: np.ndarray, length: np.ndarray, width: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Corners (..., 4, 2) of boxes centred at (x, y): front-left, rear-left, rear-right, front-right.

    The order runs counter-clockwise; all arguments broadcast.
    """
    x, y, length, width, yaw = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, y, length, width, yaw)))
    cos, sin = np.cos(yaw), np.sin(yaw)
    half_l, half_w = length / 2.0, width / 2.0
    local = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])  # (4, 2) signs
    lx = local[:, 0] * half_l[..., None]
    ly = local[:, 1] * half_w[..., None]
    cx = x[..., None] + lx * cos[..., None] - ly * sin[..., None]
    cy = y[..., None] + lx * sin[..., None] + ly * cos[..., None]
    return np.stack([cx, cy], axis=-1)


def _axes(polygon: np.ndarray) -> np.ndarray:
    """Edge normals (..., K, 2) of polygons (..., K, 2)."""
    edges = np.roll(polygon, -1, axis=-2) - polygon
    return np.stack([-edges[..., 1], edges[..., 0]], axis=-1)


def convex_overlap(a: np.ndarray, b: np.ndarray, *, eps: float = 1e-9) -> np.ndarray:
    """Whether convex polygons ``a`` (..., Ka, 2) and ``b`` (..., Kb, 2) intersect (touching counts).

    Separating-axis test over the edge normals of both. Batch dimensions broadcast. A
    two-point "polygon" is a segment (used for the front bumper). Two polygons count as
    separated on an axis only when their projections are more than ``eps`` apart there
    (the normals are not unit vectors, so ``eps`` scales with the edge length).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    b = np.broadcast_to(b, shape + b.shape[-2:])
    axes = np.concatenate([_axes(a), _axes(b)], axis=-2)
    proj_a = np.einsum("...kd,...jd->...kj", axes, a)  # (..., K, Ka)
    proj_b = np.einsum("...kd,...jd->...kj", axes, b)
    separated = (proj_a.max(-1) < proj_b.min(-1) - eps) | (proj_b.max(-1) < proj_a.min(-1) - eps)
    degenerate = np.all(np.abs(axes) < 1e-12, axis=-1)
    separated &= ~degenerate
    return ~np.any(separated, axis=-1)


# --------------------------------------------------------------------------- vehicle footprints


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


#: The Chrysler Pacifica box nuPlan uses (``get_pacifica_parameters``).
PACIFICA = VehicleParameters()


def _centers(x: np.ndarray, y: np.ndarray, yaw: np.ndarray, rear_axle_to_center: float) -> tuple[np.ndarray, np.ndarray]:
    return x + rear_axle_to_center * np.cos(yaw), y + rear_axle_to_center * np.sin(yaw)


def footprint_corners(x: np.ndarray | float, y: np.ndarray | float, yaw: np.ndarray | float, length: float, width: float,
                      rear_axle_to_center: float) -> np.ndarray:
    """Corners (..., 4, 2) of a ``length`` x ``width`` vehicle at rear-axle pose(s) (x, y, yaw).

    The box centre lies ``rear_axle_to_center`` ahead of the rear axle; corner order as
    :func:`box_corners`.
    """
    cx, cy = _centers(x, y, yaw, rear_axle_to_center)
    return box_corners(cx, cy, length, width, yaw)


def ego_centers(poses: np.ndarray, vehicle: VehicleParameters = PACIFICA) -> np.ndarray:
    """Box centres (..., 2) of rear-axle poses (..., 3) (x, y, heading)."""
    poses = np.asarray(poses, dtype=np.float64)
    return np.stack(_centers(poses[..., 0], poses[..., 1], poses[..., 2], vehicle.rear_axle_to_center), axis=-1)


def ego_corners(poses: np.ndarray, vehicle: VehicleParameters = PACIFICA) -> np.ndarray:
    """Footprint corners (..., 4, 2) of rear-axle poses (..., 3) (x, y, heading)."""
    poses = np.asarray(poses, dtype=np.float64)
    return footprint_corners(poses[..., 0], poses[..., 1], poses[..., 2], vehicle.length, vehicle.width,
                             vehicle.rear_axle_to_center)
