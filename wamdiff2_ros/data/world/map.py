"""Map of a synthetic world: roads, lanes, intersections with signals, drivable area, route.

The route is a chain of roads (straights and curves, one lane each way, right-hand
traffic) joined by four-way intersections where the route turns left, goes straight
or turns right; the other arms of an intersection are short side roads. Lanes form
a graph (lane -> connector inside the intersection -> lane); the ego's route is a
lane sequence. Each intersection has a two-phase signal (axis 0: the route's
approach and its opposite arm, axis 1: the cross arms). The map is plain data and
round-trips through JSON (``to_json`` / ``from_json``), which is how the synthetic
writer stores it next to the logs (``maps/<log_name>.json``) for evaluation
(drivable area, driving direction, signal states). Maps are built by
:mod:`~wamdiff2_ros.data.world.map_builder` (random routes, or scripted ones for
closed-loop evaluation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wamdiff2_ros.data.polyline import Polyline, concat_points
from wamdiff2_ros.geometry import wrap_angle

__all__ = [
    "LANE_WIDTH",
    "SIDEWALK_WIDTH",
    "INTERSECTION_HALF_SIZE",
    "ARM_LENGTH",
    "STOP_LINE_SETBACK",
    "SIGNAL_STATES",
    "TURNS",
    "MAP_FORMAT",
    "Lane",
    "Road",
    "Intersection",
    "Building",
    "RoadMap",
]

MAP_FORMAT = "wamdiff2-synthetic-map-v1"
LANE_WIDTH = 3.5
SIDEWALK_WIDTH = 2.5
INTERSECTION_HALF_SIZE = 9.0
ARM_LENGTH = 45.0
STOP_LINE_SETBACK = 3.6  # stop line distance before the intersection box (crosswalk in between)
SIGNAL_STATES = ("green", "yellow", "red")
TURNS = ("left", "straight", "right")


@dataclass
class Lane:
    """A lane centreline (driving direction = point order) and its successors."""

    id: int
    points: np.ndarray
    successors: list[int] = field(default_factory=list)
    kind: str = "lane"  # "lane" or "connector" (inside an intersection)
    road: int = -1
    intersection: int = -1  # connector: its intersection; lane: the intersection at its end (-1: none)
    approach_arm: int = -1  # lane entering an intersection, or connector: the arm it comes from
    turn: str = ""  # connectors: left / straight / right
    width: float = LANE_WIDTH

    def __post_init__(self) -> None:
        self.points = np.asarray(self.points, dtype=np.float64)
        self.polyline = Polyline(self.points)

    @property
    def axis(self) -> int:
        """Signal group of the approach (0: route axis, 1: cross axis), -1 if none."""
        return -1 if self.approach_arm < 0 else self.approach_arm % 2


@dataclass
class Road:
    """A road strip: centreline and half width (drivable), optional sidewalks."""

    id: int
    points: np.ndarray
    half_width: float = LANE_WIDTH
    kind: str = "route"  # "route" or "arm"

    def __post_init__(self) -> None:
        self.points = np.asarray(self.points, dtype=np.float64)


@dataclass
class Intersection:
    """A four-way signalised intersection: square box, arms at heading + k * 90 deg."""

    id: int
    center: np.ndarray
    heading: float  # heading of the route when it enters (arm 2 is where it comes from)
    turn: str  # the route's manoeuvre here
    half_size: float = INTERSECTION_HALF_SIZE
    green_s: tuple[float, float] = (12.0, 10.0)
    yellow_s: float = 3.0
    all_red_s: float = 2.5
    offset_s: float = 0.0

    def __post_init__(self) -> None:
        self.center = np.asarray(self.center, dtype=np.float64)

    def arm_heading(self, arm: int) -> float:
        """Outward heading of arm ``arm`` (0 front, 1 left, 2 back, 3 right of the route's approach)."""
        return float(wrap_angle(self.heading + arm * math.pi / 2.0, method="atan2"))

    @property
    def exit_arm(self) -> int:
        return {"straight": 0, "left": 1, "right": 3}[self.turn]

    @property
    def cycle_s(self) -> float:
        return sum(self.green_s) + 2 * (self.yellow_s + self.all_red_s)

    def signal_state(self, axis: int, time_s: float) -> str:
        """State ("green", "yellow", "red") of the signal for approaches on ``axis`` at ``time_s``."""
        t = (time_s + self.offset_s) % self.cycle_s
        phase_len = [self.green_s[0] + self.yellow_s + self.all_red_s, self.green_s[1] + self.yellow_s + self.all_red_s]
        active = 0 if t < phase_len[0] else 1
        local = t if active == 0 else t - phase_len[0]
        if axis != active:
            return "red"
        if local < self.green_s[active]:
            return "green"
        if local < self.green_s[active] + self.yellow_s:
            return "yellow"
        return "red"

    def yellow_remaining(self, axis: int, time_s: float) -> float:
        """Seconds of yellow left for ``axis`` at ``time_s`` (0 when not yellow)."""
        t = (time_s + self.offset_s) % self.cycle_s
        phase0 = self.green_s[0] + self.yellow_s + self.all_red_s
        active = 0 if t < phase0 else 1
        local = t if active == 0 else t - phase0
        if axis != active or not self.green_s[active] <= local < self.green_s[active] + self.yellow_s:
            return 0.0
        return self.green_s[active] + self.yellow_s - local

    def contains(self, xy: np.ndarray, margin: float = 0.0) -> np.ndarray:
        q = np.asarray(xy, dtype=np.float64) - self.center
        c, s = math.cos(self.heading), math.sin(self.heading)
        lx = c * q[..., 0] + s * q[..., 1]
        ly = -s * q[..., 0] + c * q[..., 1]
        lim = self.half_size + margin
        return (np.abs(lx) <= lim) & (np.abs(ly) <= lim)


@dataclass
class Building:
    """A box of scenery beside the road (footprint centre, yaw, size, RGB colour)."""

    x: float
    y: float
    yaw: float
    length: float
    width: float
    height: float
    color: tuple[int, int, int]


class RoadMap:
    """Roads, lanes, intersections and the ego route of one synthetic world."""

    def __init__(
        self,
        roads: list[Road],
        lanes: list[Lane],
        intersections: list[Intersection],
        route: list[int],
        buildings: list[Building] | None = None,
        name: str = "synthetic",
        time_origin_us: int = 0,
    ) -> None:
        self.roads = roads
        self.lanes = {lane.id: lane for lane in lanes}
        self.intersections = intersections
        self.route = list(route)
        self.buildings = list(buildings or [])
        self.name = name
        #: log timestamp (µs) at which the signal clocks read 0 s
        self.time_origin_us = int(time_origin_us)
        self._build_index()

    def _build_index(self) -> None:
        starts, ends, half = [], [], []
        for road in self.roads:
            pts = road.points
            starts.append(pts[:-1])
            ends.append(pts[1:])
            half.append(np.full(len(pts) - 1, road.half_width))
        self._seg_a = np.concatenate(starts) if starts else np.zeros((0, 2))
        self._seg_b = np.concatenate(ends) if ends else np.zeros((0, 2))
        self._seg_half = np.concatenate(half) if half else np.zeros(0)
        lane_pts, lane_head, lane_ids = [], [], []
        for lane in self.lanes.values():
            if lane.kind != "lane":
                continue
            pts = lane.polyline.resample(1.0)
            poly = Polyline(pts)
            lane_pts.append(pts)
            lane_head.append(poly.headings)
            lane_ids.append(np.full(len(pts), lane.id))
        self._lane_pts = np.concatenate(lane_pts)
        self._lane_head = np.concatenate(lane_head)
        self._lane_ids = np.concatenate(lane_ids)

    # ------------------------------------------------------------------ queries

    def _segment_distance(self, xy: np.ndarray) -> np.ndarray:
        """Per point (P,) and segment (S,): distance matrix (P, S)."""
        q = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        d = self._seg_b - self._seg_a
        len2 = np.maximum((d * d).sum(-1), 1e-12)
        rel = q[:, None, :] - self._seg_a[None]
        t = np.clip((rel * d[None]).sum(-1) / len2[None], 0.0, 1.0)
        proj = self._seg_a[None] + t[..., None] * d[None]
        return np.linalg.norm(q[:, None, :] - proj, axis=-1)

    def is_drivable(self, x: np.ndarray | float, y: np.ndarray | float, margin: float = 0.0) -> np.ndarray | bool:
        """Whether point(s) lie on a road or inside an intersection (``margin`` shrinks the area)."""
        xa, ya = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        xy = np.stack([xa.reshape(-1), ya.reshape(-1)], axis=1)
        out = np.zeros(len(xy), dtype=bool)
        for start in range(0, len(xy), 256):
            chunk = xy[start : start + 256]
            dist = self._segment_distance(chunk)
            inside = (dist <= (self._seg_half[None] - margin)).any(axis=1)
            for inter in self.intersections:
                inside |= inter.contains(chunk, -margin)
            out[start : start + 256] = inside
        out = out.reshape(xa.shape)
        return bool(out) if out.ndim == 0 else out

    def in_intersection(self, x: float, y: float) -> int:
        """Index of the intersection box containing (x, y), or -1."""
        for inter in self.intersections:
            if inter.contains(np.array([x, y])):
                return inter.id
        return -1

    def nearest_lane(self, x: float, y: float) -> tuple[int, float, float]:
        """(lane id, lane heading, distance) of the nearest non-connector lane point."""
        d2 = (self._lane_pts[:, 0] - x) ** 2 + (self._lane_pts[:, 1] - y) ** 2
        i = int(np.argmin(d2))
        return int(self._lane_ids[i]), float(self._lane_head[i]), float(math.sqrt(d2[i]))

    def lane_heading(self, x: float | np.ndarray, y: float | np.ndarray) -> float | None | np.ndarray:
        """Heading of the lane at (x, y); None inside intersections or off the road.

        With arrays: an array of headings, NaN where a scalar call would give None.
        """
        if np.ndim(x) or np.ndim(y):
            return self._lane_headings(x, y)
        if self.in_intersection(x, y) >= 0 or not self.is_drivable(x, y):
            return None
        return self.nearest_lane(x, y)[1]

    def _lane_headings(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xa, ya = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        xy = np.stack([xa.reshape(-1), ya.reshape(-1)], axis=1)
        out = np.full(len(xy), np.nan)
        ok = np.asarray(self.is_drivable(xy[:, 0], xy[:, 1]), dtype=bool).reshape(-1)
        for inter in self.intersections:
            ok &= ~inter.contains(xy)
        for start in range(0, len(xy), 128):
            chunk = xy[start : start + 128]
            d2 = ((chunk[:, None, :] - self._lane_pts[None]) ** 2).sum(-1)
            out[start : start + 128] = self._lane_head[np.argmin(d2, axis=1)]
        out[~ok] = np.nan
        return out.reshape(xa.shape)

    def driving_direction_ok(self, x: float, y: float, yaw: float, tolerance: float = math.pi / 2) -> bool:
        """True if ``yaw`` agrees with the lane direction at (x, y) (always True in intersections / off road)."""
        heading = self.lane_heading(x, y)
        if heading is None:
            return True
        return abs(float(wrap_angle(yaw - heading, method="atan2"))) <= tolerance

    def signal_states(self, time_s: float) -> dict[int, str]:
        """State of every signalised connector (by lane connector id) at ``time_s``."""
        out = {}
        for lane in self.lanes.values():
            if lane.kind == "connector":
                inter = self.intersections[lane.intersection]
                out[lane.id] = inter.signal_state(lane.axis, time_s)
        return out

    def route_connectors(self) -> list[int]:
        return [lid for lid in self.route if self.lanes[lid].kind == "connector"]

    def route_polyline(self) -> Polyline:
        return Polyline(concat_points([self.lanes[lid].points for lid in self.route]))

    def bounds(self) -> tuple[float, float, float, float]:
        pts = np.concatenate([r.points for r in self.roads])
        return float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max())

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        def pts(a: np.ndarray) -> list[list[float]]:
            return np.round(a, 3).tolist()

        return {
            "format": MAP_FORMAT,
            "name": self.name,
            "time_origin_us": self.time_origin_us,
            "lane_width": LANE_WIDTH,
            "roads": [{"id": r.id, "kind": r.kind, "half_width": r.half_width, "points": pts(r.points)} for r in self.roads],
            "lanes": [
                {
                    "id": lane.id,
                    "kind": lane.kind,
                    "road": lane.road,
                    "intersection": lane.intersection,
                    "approach_arm": lane.approach_arm,
                    "turn": lane.turn,
                    "successors": list(lane.successors),
                    "points": pts(lane.points),
                }
                for lane in self.lanes.values()
            ],
            "intersections": [
                {
                    "id": i.id,
                    "center": pts(i.center),
                    "heading": round(i.heading, 6),
                    "turn": i.turn,
                    "half_size": i.half_size,
                    "green_s": list(i.green_s),
                    "yellow_s": i.yellow_s,
                    "all_red_s": i.all_red_s,
                    "offset_s": i.offset_s,
                }
                for i in self.intersections
            ],
            "route": list(self.route),
            "buildings": [
                {"x": round(b.x, 3), "y": round(b.y, 3), "yaw": round(b.yaw, 5), "length": b.length,
                 "width": b.width, "height": b.height, "color": list(b.color)}
                for b in self.buildings
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoadMap:
        if not isinstance(data, dict) or data.get("format") != MAP_FORMAT:
            raise ValueError(f"not a synthetic map (expected format {MAP_FORMAT!r})")
        roads = [Road(r["id"], np.array(r["points"]), r["half_width"], r["kind"]) for r in data["roads"]]
        lanes = [
            Lane(
                id=lane["id"], points=np.array(lane["points"]), successors=list(lane["successors"]), kind=lane["kind"],
                road=lane["road"], intersection=lane["intersection"], approach_arm=lane["approach_arm"], turn=lane["turn"],
            )
            for lane in data["lanes"]
        ]
        inters = [
            Intersection(
                id=i["id"], center=np.array(i["center"]), heading=i["heading"], turn=i["turn"], half_size=i["half_size"],
                green_s=tuple(i["green_s"]), yellow_s=i["yellow_s"], all_red_s=i["all_red_s"], offset_s=i["offset_s"],
            )
            for i in data["intersections"]
        ]
        buildings = [
            Building(b["x"], b["y"], b["yaw"], b["length"], b["width"], b["height"], tuple(b["color"]))
            for b in data.get("buildings", [])
        ]
        return cls(roads, lanes, inters, data["route"], buildings, data.get("name", "synthetic"),
                   int(data.get("time_origin_us", 0)))
