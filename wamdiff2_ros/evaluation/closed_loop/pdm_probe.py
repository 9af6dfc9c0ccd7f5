"""Per-step PDM terms in closed loop: score each plan with NAVSIM's terms against a privileged look-ahead.

At a planning step the world is forked and its autopilot drives the ego for 4 s from
the ego's current route progress and speed; the other road users react to that ego.
The fork gives the scene a plan is scored against (:func:`~wamdiff2_ros.evaluation.pdm.pdm_terms`):
the autopilot's own 8 poses as the reference trajectory (ego progress is measured along
it), every road user's boxes at 0.5 s steps, and the road map (drivable area, driving
direction). Like NAVSIM's non-reactive log replay, the other road users do not react
to the plan being scored. The mean of these terms over a route is its closed-loop PDMS.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wamdiff2_ros.data.world import AgentBox, RoadMap, World
from wamdiff2_ros.evaluation.closed_loop.monitor import OFF_ROAD_TOLERANCE_M
from wamdiff2_ros.evaluation.pdm import pdm_terms
from wamdiff2_ros.evaluation.scene import AgentBoxes, SceneGroundTruth
from wamdiff2_ros.geometry import wrap_angle

INTERVAL_S = 0.5
NUM_POSES = 8


class TolerantMap:
    """A road map whose drivable area is grown by ``tolerance`` m (see the monitor's off-road rule)."""

    def __init__(self, road_map: RoadMap, tolerance: float = OFF_ROAD_TOLERANCE_M) -> None:
        self.road_map, self.tolerance = road_map, tolerance

    def is_drivable(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.asarray(self.road_map.is_drivable(x, y, margin=-self.tolerance))

    def lane_heading(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.asarray(self.road_map.lane_heading(np.asarray(x), np.asarray(y)), dtype=np.float64)


def _to_ego(pose: tuple[float, float, float], x: float, y: float, yaw: float) -> tuple[float, float, float]:
    px, py, pyaw = pose
    c, s = math.cos(pyaw), math.sin(pyaw)
    dx, dy = x - px, y - py
    return c * dx + s * dy, -s * dx + c * dy, float(wrap_angle(yaw - pyaw, method="math"))


def reference_scene(world: World, pose: tuple[float, float, float], speed: float, token: str = "") -> SceneGroundTruth:
    """The scene at ``pose`` (the ego's rear axle now): a 4 s autopilot look-ahead on a fork of ``world``."""
    fork = world.fork()
    fork.release_ego()
    frames: list[list[AgentBox]] = [world.agents()]
    ego_future = []
    for _ in range(NUM_POSES):
        fork.step(INTERVAL_S)
        e = fork.ego
        ego_future.append(_to_ego(pose, e.x, e.y, e.yaw))
        frames.append(fork.agents())
    tokens: dict[str, int] = {}
    names: list[str] = []
    for frame in frames:
        for a in frame:
            if a.track_token not in tokens:
                tokens[a.track_token] = len(tokens)
                names.append(a.name)
    k, n = len(frames), len(tokens)
    boxes = np.zeros((k, n, 7))
    valid = np.zeros((k, n), dtype=bool)
    velocities = np.zeros((k, n, 2))
    c, s = math.cos(pose[2]), math.sin(pose[2])
    for t, frame in enumerate(frames):
        for a in frame:
            i = tokens[a.track_token]
            x, y, yaw = _to_ego(pose, a.x, a.y, a.yaw)
            boxes[t, i] = (x, y, a.z, a.length, a.width, a.height, yaw)
            velocities[t, i] = (c * a.vx + s * a.vy, -s * a.vx + c * a.vy)
            valid[t, i] = True
    agents = AgentBoxes(boxes, valid, names, list(tokens), velocities, INTERVAL_S)
    return SceneGroundTruth(token, np.array(ego_future), agents, ego_velocity=np.array([speed, 0.0]),
                            ego_pose_global=np.array(pose), map=TolerantMap(world.map))  # fmt: skip


def score_plan(world: World, pose: tuple[float, float, float], speed: float, plan: np.ndarray | None) -> dict[str, Any]:
    """PDM terms of ``plan`` (8, 2|3, ego frame) at ``pose``; ``plan=None`` scores the look-ahead itself."""
    scene = reference_scene(world, pose, speed)
    return pdm_terms(scene.trajectory if plan is None else np.asarray(plan), scene)
