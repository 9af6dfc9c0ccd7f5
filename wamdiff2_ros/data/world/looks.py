"""How the synthetic world's agents look: vehicle sizes, colours, and the boxes the renderer draws.

Drawing is boxes (:class:`RenderBox`): a vehicle is a body, a cabin with glass and its
tyres; a pedestrian is legs, torso and head (:func:`agent_boxes`). What the cameras
see of them is :mod:`~wamdiff2_ros.data.world.views`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wamdiff2_ros.data.world.agents import Pedestrian, Vehicle

__all__ = ["PALETTE", "RenderBox", "agent_boxes", "body_color", "vehicle_size"]

#: Body colours of vehicles and clothes of pedestrians.
PALETTE = (
    (200, 30, 30), (30, 60, 160), (230, 230, 230), (25, 25, 28), (140, 140, 145), (190, 190, 195),
    (20, 110, 60), (210, 160, 20), (90, 40, 20), (120, 150, 190), (170, 20, 60), (60, 60, 70),
)
_GLASS = (45, 60, 75)
_SKIN = (200, 160, 130)


@dataclass
class RenderBox:
    """A box to draw: centre of the bottom face, yaw, size and per-face colours (top, +x, -x, +y, -y)."""

    x: float
    y: float
    z: float  # bottom height
    yaw: float
    length: float
    width: float
    height: float
    colors: tuple[tuple[int, int, int], ...]
    lamp: str = ""  # signal head: the lit lamp ("red"/"yellow"/"green") on its +x face


def vehicle_size(rng: np.random.Generator) -> tuple[float, float, float]:
    """(length, width, height) in metres of a new vehicle: a car, a van / SUV or a truck / bus."""
    r = rng.random()
    if r < 0.08:  # truck / bus
        return float(rng.uniform(7.0, 10.0)), float(rng.uniform(2.3, 2.6)), float(rng.uniform(2.8, 3.4))
    if r < 0.25:  # van / suv
        return float(rng.uniform(4.8, 5.6)), float(rng.uniform(1.9, 2.1)), float(rng.uniform(1.8, 2.2))
    return float(rng.uniform(4.0, 4.9)), float(rng.uniform(1.75, 1.95)), float(rng.uniform(1.4, 1.6))


def body_color(rng: np.random.Generator) -> tuple[int, int, int]:
    """A colour from :data:`PALETTE` (a vehicle's body, a pedestrian's clothes)."""
    return PALETTE[int(rng.integers(len(PALETTE)))]


def agent_boxes(vehicles: Sequence[Vehicle], pedestrians: Sequence[Pedestrian]) -> list[RenderBox]:
    """The boxes that draw every vehicle (body, cabin, tyres) and pedestrian (legs, torso, head)."""
    out = []
    for v in vehicles:
        x, y, h = v.path.poly.pose_at(v.s)
        body_h = v.height * 0.55
        color = v.color
        out.append(RenderBox(float(x), float(y), 0.15, float(h), v.length, v.width, body_h - 0.15, (color,) * 5))
        cabin_len = v.length * (0.55 if v.length < 6.5 else 0.85)
        shift = -0.08 * v.length if v.length < 6.5 else 0.05 * v.length
        cx, cy = x + shift * math.cos(h), y + shift * math.sin(h)
        out.append(RenderBox(float(cx), float(cy), body_h, float(h), cabin_len, v.width * 0.9,
                             v.height - body_h, (color, _GLASS, _GLASS, _GLASS, _GLASS)))
        out.append(RenderBox(float(x), float(y), 0.0, float(h), v.length * 0.8, v.width * 0.95, 0.15,
                             ((20, 20, 20),) * 5))
    for p in pedestrians:
        x, y, h = p.path.pose_at(p.s)
        yaw = h if p.direction > 0 else h + math.pi
        legs = p.height * 0.47
        torso = p.height * 0.38
        out.append(RenderBox(float(x), float(y), 0.0, float(yaw), 0.3, 0.4, legs, ((40, 40, 60),) * 5))
        out.append(RenderBox(float(x), float(y), legs, float(yaw), 0.35, 0.5, torso, (p.color,) * 5))
        out.append(RenderBox(float(x), float(y), legs + torso, float(yaw), 0.22, 0.22, p.height - legs - torso,
                             (_SKIN,) * 5))
    return out
