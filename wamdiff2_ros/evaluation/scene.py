"""Ground truth of one scene as evaluation needs it: future ego poses, agent boxes over time, a map.

Everything is in the ego frame of the scene's current frame (x forward, y left), with
poses at 0.5 s steps like NAVSIM's 8-pose, 4 s trajectory. The map, when there is one,
is any object with ``is_drivable(x, y)`` and ``lane_heading(x, y)`` in its own (global)
frame; ``ego_pose_global`` places the ego frame in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from wamdiff2_ros.geometry import wrap_angle
from wamdiff2_ros.model.codecs import waypoint_headings

INTERVAL_S = 0.5
NUM_POSES = 8
# NAVSIM / nuPlan agent classes whose collision scores 0 (others, static objects, score 0.5).
AGENT_TYPES = frozenset({"vehicle", "pedestrian", "bicycle", "ego"})
STOPPED_SPEED_THRESHOLD = 5e-2  # m/s, nuPlan's is_track_stopped


@runtime_checkable
class DrivingMap(Protocol):
    """The part of a map that the map-dependent NAVSIM terms need (vectorised over points)."""

    def is_drivable(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """True where (x, y) lies on the drivable area."""
        ...

    def lane_heading(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Driving direction (rad) of the lane at (x, y); NaN where there is no lane."""
        ...


def call_map(fn: Any, x: np.ndarray, y: np.ndarray, dtype: Any) -> np.ndarray:
    """Call a map query on arrays; falls back to point-by-point calls for scalar-only maps."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    try:
        out = np.asarray(fn(x, y), dtype=dtype)
        if out.shape == x.shape:
            return out
    except Exception:
        pass
    flat = [fn(float(a), float(b)) for a, b in zip(x.ravel(), y.ravel(), strict=True)]
    if np.dtype(dtype).kind == "f":
        flat = [np.nan if v is None else v for v in flat]  # "no lane here"
    return np.asarray(flat, dtype=dtype).reshape(x.shape)


@dataclass
class AgentBoxes:
    """Ground-truth agent boxes over the horizon, in the current ego frame.

    ``boxes[k, i]`` is agent ``i`` at time ``k * interval_s`` (k = 0 is now) as
    ``x, y, z, length, width, height, yaw``; ``valid[k, i]`` says whether it exists then.
    """

    boxes: np.ndarray  # (K, N, 7)
    valid: np.ndarray  # (K, N) bool
    names: list[str]
    track_ids: list[str]
    velocities: np.ndarray  # (K, N, 2) m/s in the current ego frame
    interval_s: float = INTERVAL_S

    def __post_init__(self) -> None:
        self.boxes = np.asarray(self.boxes, dtype=np.float64)
        if self.boxes.ndim != 3 or self.boxes.shape[1] != len(self.names) or self.boxes.shape[2] != 7:
            raise ValueError(f"AgentBoxes: boxes must be (K, {len(self.names)}, 7), got {self.boxes.shape}")
        k, n = self.boxes.shape[:2]
        self.valid = np.asarray(self.valid, dtype=bool).reshape(k, n)
        self.velocities = np.asarray(self.velocities, dtype=np.float64).reshape(k, n, 2)
        if len(self.track_ids) != n:
            raise ValueError(f"AgentBoxes: {len(self.track_ids)} track ids for {n} agents")

    @property
    def num_agents(self) -> int:
        return self.boxes.shape[1]

    @classmethod
    def empty(cls, steps: int = NUM_POSES) -> AgentBoxes:
        return cls(np.zeros((steps + 1, 0, 7)), np.zeros((steps + 1, 0), bool), [], [], np.zeros((steps + 1, 0, 2)))

    @classmethod
    def constant_velocity(
        cls,
        boxes: np.ndarray,
        velocities: np.ndarray | None = None,
        names: Sequence[str] | None = None,
        track_ids: Sequence[str] | None = None,
        *,
        steps: int = NUM_POSES,
        interval_s: float = INTERVAL_S,
    ) -> AgentBoxes:
        """Boxes (N, 7) of the current frame moved on at constant velocity (N, 2|3) for ``steps`` steps."""
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 7)
        n = len(boxes)
        vel = np.zeros((n, 2)) if velocities is None else np.asarray(velocities, dtype=np.float64).reshape(n, -1)[:, :2]
        times = np.arange(steps + 1) * interval_s
        future = np.repeat(boxes[None], steps + 1, axis=0)
        future[..., 0] += times[:, None] * vel[None, :, 0]
        future[..., 1] += times[:, None] * vel[None, :, 1]
        return cls(
            future,
            np.ones((steps + 1, n), bool),
            list(names) if names is not None else ["vehicle"] * n,
            list(track_ids) if track_ids is not None else [f"agent_{i}" for i in range(n)],
            np.repeat(vel[None], steps + 1, axis=0),
            interval_s,
        )

    def at_times(self, times_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Boxes (T, N, 7), validity (T, N) and velocities (T, N, 2) linearly interpolated at ``times_s``.

        Times past the last sample hold the last sample (NAVSIM's observation ends with the log).
        """
        times_s = np.asarray(times_s, dtype=np.float64)
        k = self.boxes.shape[0]
        pos = np.clip(times_s / self.interval_s, 0.0, k - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, k - 1)
        w = (pos - lo)[:, None, None]
        a, b = self.boxes[lo], self.boxes[hi]
        boxes = a + (b - a) * w
        boxes[..., 6] = a[..., 6] + wrap_angle(b[..., 6] - a[..., 6], method="modulo") * w[..., 0]
        valid = self.valid[lo] & (self.valid[hi] | (w[..., 0] == 0))
        # where only one end is valid, fall back to the valid end's box
        only_lo = self.valid[lo] & ~self.valid[hi]
        boxes[only_lo] = a[only_lo]
        vel = self.velocities[lo] + (self.velocities[hi] - self.velocities[lo]) * w
        return boxes, valid | only_lo, vel

    def speeds(self) -> np.ndarray:
        """Speed (N,) of each agent at the current frame."""
        return np.hypot(self.velocities[0, :, 0], self.velocities[0, :, 1]) if self.num_agents else np.zeros(0)


@dataclass
class SceneGroundTruth:
    """What a prediction for one scene is scored against."""

    token: str
    trajectory: np.ndarray  # (8, 3) x, y, heading of the logged human future, ego frame
    agents: AgentBoxes = field(default_factory=AgentBoxes.empty)
    timestamp_us: int = 0
    ego_velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))  # (vx, vy) now, ego frame
    ego_acceleration: np.ndarray = field(default_factory=lambda: np.zeros(2))
    ego_pose_global: np.ndarray | None = None  # (x, y, yaw) of the ego in the map frame
    driving_command: str = ""
    log_name: str = ""
    map: Any = None  # a DrivingMap, or None
    interval_s: float = INTERVAL_S

    def __post_init__(self) -> None:
        traj = np.asarray(self.trajectory, dtype=np.float64)
        if traj.ndim != 2 or traj.shape[1] not in (2, 3):
            raise ValueError(f"scene {self.token}: ground-truth trajectory must be (N, 2|3), got {traj.shape}")
        if traj.shape[1] == 2:
            traj = np.concatenate([traj, waypoint_headings(traj)[:, None]], axis=1)
        self.trajectory = traj
        self.ego_velocity = np.asarray(self.ego_velocity, dtype=np.float64).reshape(-1)[:2]
        self.ego_acceleration = np.asarray(self.ego_acceleration, dtype=np.float64).reshape(-1)[:2]
        if self.ego_pose_global is not None:
            self.ego_pose_global = np.asarray(self.ego_pose_global, dtype=np.float64).reshape(3)
