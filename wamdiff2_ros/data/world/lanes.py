"""Lane sequences as paths to drive: one polyline with stop lines, connectors and curve speed limits.

:class:`LanePath` is what the ego and every vehicle follow (and what the closed-loop
monitor measures progress on); :func:`connector_conflicts` lists the connectors of an
intersection whose paths cross or merge, for right of way.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from wamdiff2_ros.data.polyline import Polyline
from wamdiff2_ros.data.world.map import STOP_LINE_SETBACK, RoadMap

__all__ = ["DENSE_STEP", "LATERAL_ACCEL", "LanePath", "connector_conflicts"]

DENSE_STEP = 1.0  # m between the dense samples of a path
LATERAL_ACCEL = 2.2  # m/s^2 allowed in curves


class LanePath:
    """A lane sequence as one polyline with its stop lines (s, intersection, approach arm)."""

    def __init__(self, road_map: RoadMap, lane_ids: list[int]) -> None:
        parts = [road_map.lanes[i].points for i in lane_ids]
        pts = [parts[0]]
        for p in parts[1:]:
            pts.append(p[1:] if np.linalg.norm(pts[-1][-1] - p[0]) < 1e-6 else p)
        self.poly = Polyline(np.concatenate(pts))
        self.lane_ids = list(lane_ids)
        self.stops: list[tuple[float, int, int]] = []
        #: connectors on the path: (s at entry, s at exit, intersection, approach arm, turn, lane id)
        self.turns: list[tuple[float, float, int, int, str, int]] = []
        s_end = 0.0
        self.lane_ends: list[float] = []
        for i in lane_ids:
            lane = road_map.lanes[i]
            s_start = s_end
            s_end += lane.polyline.length
            self.lane_ends.append(s_end)
            if lane.kind == "connector":
                self.turns.append((s_start, s_end, lane.intersection, lane.approach_arm, lane.turn, lane.id))
            if lane.kind == "lane" and lane.intersection >= 0:
                self.stops.append((s_end - STOP_LINE_SETBACK, lane.intersection, lane.approach_arm))
        #: lane after the connector that follows each stop line (-1 if the path ends first)
        self.stop_exits: list[int] = []
        for k, lane_id in enumerate(self.lane_ids):
            lane = road_map.lanes[lane_id]
            if lane.kind == "lane" and lane.intersection >= 0:
                self.stop_exits.append(self.lane_ids[k + 2] if k + 2 < len(self.lane_ids) else -1)
        self.lane_starts = [0.0, *self.lane_ends[:-1]]
        # curvature for speed limits
        dh = np.diff(self.poly.headings_unwrapped)
        ds = np.maximum(np.diff(self.poly.s), 1e-6)
        self.curvature = np.concatenate([np.abs(dh) / ds, [0.0]])
        self.smooth_curvature = np.convolve(self.curvature, np.ones(3) / 3, mode="same")
        # dense 1 m samples for obstacle look-ahead and curve speed limits
        self.dense = self.poly.interpolate(np.arange(0.0, self.poly.length, DENSE_STEP))
        idx = np.clip(np.searchsorted(self.poly.s, self.dense_s), 0, len(self.smooth_curvature) - 1)
        self.v_curve_sq = LATERAL_ACCEL / np.maximum(self.smooth_curvature[idx], 1e-6)

    def lane_at(self, s: float) -> tuple[int, float]:
        """(lane id, arc length within that lane) at path arc length ``s``."""
        k = min(bisect_right(self.lane_ends, s), len(self.lane_ids) - 1)
        return self.lane_ids[k], s - self.lane_starts[k]

    @property
    def dense_s(self) -> np.ndarray:
        return np.arange(0.0, self.poly.length, DENSE_STEP)

    @property
    def length(self) -> float:
        return self.poly.length


def connector_conflicts(road_map: RoadMap, clearance: float = 3.2) -> dict[int, set[int]]:
    """For each connector, the connectors of its intersection that pass within ``clearance`` m of it
    (crossing or merging paths), except those leaving the same lane (they just diverge)."""
    by_inter: dict[int, list] = {}
    for lane in road_map.lanes.values():
        if lane.kind == "connector":
            by_inter.setdefault(lane.intersection, []).append(lane)
    out: dict[int, set[int]] = {}
    for lanes in by_inter.values():
        pts = [lane.polyline.resample(0.5) for lane in lanes]
        for i, a in enumerate(lanes):
            for j in range(i + 1, len(lanes)):
                b = lanes[j]
                if a.approach_arm == b.approach_arm:
                    continue
                d = np.sqrt(((pts[i][:, None, :] - pts[j][None, :, :]) ** 2).sum(-1)).min()
                if d < clearance:
                    out.setdefault(a.id, set()).add(b.id)
                    out.setdefault(b.id, set()).add(a.id)
    return out
