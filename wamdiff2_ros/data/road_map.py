"""Map of a synthetic world: roads, lanes, intersections with signals, drivable area, route.

The route is a chain of roads (straights and curves, one lane each way, right-hand
traffic) joined by four-way intersections where the route turns left, goes straight
or turns right; the other arms of an intersection are short side roads. Lanes form
a graph (lane -> connector inside the intersection -> lane); the ego's route is a
lane sequence. Each intersection has a two-phase signal (axis 0: the route's
approach and its opposite arm, axis 1: the cross arms). The map is plain data and
round-trips through JSON (``to_json`` / ``from_json``), which is how the synthetic
writer stores it next to the logs (``maps/<log_name>.json``) for evaluation
(drivable area, driving direction, signal states). ``scripted_road_map`` builds a route
from a given list of pieces (straights, arcs, intersections with a given turn) for
closed-loop evaluation routes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wamdiff2_ros.data.polyline import Polyline, arc_points, offset_points, straight_points
from wamdiff2_ros.geometry import box_corners, wrap_angle

__all__ = [
    "LANE_WIDTH",
    "SIGNAL_STATES",
    "Lane",
    "Road",
    "Intersection",
    "Building",
    "RoadMap",
    "generate_road_map",
    "scripted_road_map",
    "MAP_FORMAT",
]

MAP_FORMAT = "wamdiff2-synthetic-map-v1"
LANE_WIDTH = 3.5
SIDEWALK_WIDTH = 2.5
INTERSECTION_HALF_SIZE = 9.0
ARM_LENGTH = 45.0
STOP_LINE_SETBACK = 3.6  # stop line distance before the intersection box (crosswalk in between)
SIGNAL_STATES = ("green", "yellow", "red")
TURNS = ("left", "straight", "right")


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


def _left_normal(angle: float) -> np.ndarray:
    return np.array([-math.sin(angle), math.cos(angle)])


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
        return Polyline(_concat([self.lanes[lid].points for lid in self.route]))

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


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    out = [parts[0]]
    for p in parts[1:]:
        if np.linalg.norm(out[-1][-1] - p[0]) < 1e-6:
            p = p[1:]
        out.append(p)
    return np.concatenate(out)


# --------------------------------------------------------------------------- generation


@dataclass
class _Cursor:
    pos: np.ndarray
    heading: float


def _route_pieces(rng: np.random.Generator, start: _Cursor, min_length: float, h0: float,
                  intersection_prob: float) -> tuple[list[np.ndarray], list[tuple[np.ndarray, float, str]]]:
    """Road centrelines and intersections (centre, entry heading, turn) of one route."""
    cur = _Cursor(start.pos.copy(), start.heading)
    roads: list[np.ndarray] = []
    inters: list[tuple[np.ndarray, float, str]] = []
    current = [straight_points(cur.pos, cur.heading, float(rng.uniform(45.0, 70.0)))]
    cur.pos = current[-1][-1].copy()
    total = 0.0
    since_intersection = float(np.linalg.norm(current[-1][-1] - current[-1][0]))
    while True:
        total_now = total + since_intersection
        if total_now >= min_length and since_intersection > 30.0:
            tail = straight_points(cur.pos, cur.heading, 40.0)
            current.append(tail)
            roads.append(_concat(current))
            break
        rel = float(wrap_angle(cur.heading - h0, method="atan2"))
        choice = rng.random()
        if since_intersection >= 30.0 and choice < intersection_prob:
            allowed = ["straight"]
            if rel + math.pi / 2 <= math.pi / 2 + 1e-6:
                allowed.append("left")
            if rel - math.pi / 2 >= -math.pi / 2 - 1e-6:
                allowed.append("right")
            turn = str(rng.choice(allowed))
            roads.append(_concat(current))
            total += since_intersection
            center = cur.pos + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            inters.append((center.copy(), cur.heading, turn))
            delta = {"left": math.pi / 2, "straight": 0.0, "right": -math.pi / 2}[turn]
            cur.heading = float(wrap_angle(cur.heading + delta, method="atan2"))
            cur.pos = center + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            first = straight_points(cur.pos, cur.heading, float(rng.uniform(35.0, 60.0)))
            current = [first]
            cur.pos = first[-1].copy()
            since_intersection = float(np.linalg.norm(first[-1] - first[0]))
        elif choice < intersection_prob + 0.3:
            radius = float(rng.uniform(50.0, 160.0))
            angle = float(rng.uniform(math.radians(15), math.radians(45))) * (1 if rng.random() < 0.5 else -1)
            if abs(rel + angle) > math.pi / 2:
                angle = -angle
            piece = arc_points(cur.pos, cur.heading, radius, angle)
            current.append(piece)
            cur.pos = piece[-1].copy()
            cur.heading = float(wrap_angle(cur.heading + angle, method="atan2"))
            since_intersection += abs(angle) * radius
        else:
            length = float(rng.uniform(25.0, 70.0))
            piece = straight_points(cur.pos, cur.heading, length)
            current.append(piece)
            cur.pos = piece[-1].copy()
            since_intersection += length
    return roads, inters


def _lane_points(center: np.ndarray, direction: int) -> np.ndarray:
    """Right-hand lane of a road centreline: +1 along the points, -1 against them."""
    if direction > 0:
        return offset_points(center, -LANE_WIDTH / 2)
    return offset_points(center, LANE_WIDTH / 2)[::-1].copy()


def _connector_points(inter: Intersection, arm_in: int, arm_out: int) -> tuple[np.ndarray, str]:
    h = inter.half_size
    a_in = inter.arm_heading(arm_in)
    a_out = inter.arm_heading(arm_out)
    heading_in = a_in + math.pi
    p0 = inter.center + h * _unit(a_in) + (LANE_WIDTH / 2) * _left_normal(a_in)
    p1 = inter.center + h * _unit(a_out) - (LANE_WIDTH / 2) * _left_normal(a_out)
    delta = float(wrap_angle(a_out - heading_in, method="atan2"))
    if abs(delta) < 0.1:
        return straight_points(p0, heading_in, float(np.linalg.norm(p1 - p0)), step=1.0), "straight"
    if delta > 0:
        pts = arc_points(p0, heading_in, h + LANE_WIDTH / 2, math.pi / 2, step=0.5)
        turn = "left"
    else:
        pts = arc_points(p0, heading_in, h - LANE_WIDTH / 2, -math.pi / 2, step=0.5)
        turn = "right"
    pts[-1] = p1
    return pts, turn


def _min_distance(a: np.ndarray, b: np.ndarray) -> float:
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=-1)
    return float(d.min())


def generate_road_map(rng: np.random.Generator, min_route_length: float = 400.0, origin: tuple[float, float] = (0.0, 0.0),
                      heading: float = 0.0, intersection_prob: float = 0.4, buildings: bool = True,
                      name: str = "synthetic") -> RoadMap:
    """A random route of at least ``min_route_length`` metres with side roads, lanes and signals."""
    for _attempt in range(50):
        road_pts, inter_specs = _route_pieces(
            rng, _Cursor(np.array(origin, dtype=np.float64), heading), min_route_length, heading, intersection_prob
        )
        road_map = _assemble(rng, road_pts, inter_specs, name)
        if _self_overlap_free(road_map):
            break
    if buildings:
        road_map.buildings = _place_buildings(rng, road_map)
    return road_map


def scripted_road_map(rng: np.random.Generator, pieces: list[tuple], origin: tuple[float, float] = (0.0, 0.0),
                      heading: float = 0.0, buildings: bool = True, name: str = "scripted") -> RoadMap:
    """A route made of ``pieces`` in order: ``("straight", length)``, ``("arc", radius, angle_rad)`` (left +)
    or ``("intersection", "left" | "straight" | "right")``; it must start and end with road, not an
    intersection. Side roads, lanes and signals as in :func:`generate_road_map` (signal timing drawn
    from ``rng``; callers may set ``green_s`` / ``offset_s`` afterwards)."""
    if not pieces or pieces[0][0] == "intersection" or pieces[-1][0] == "intersection":
        raise ValueError("a scripted route must start and end with a straight or an arc")
    cur = _Cursor(np.array(origin, dtype=np.float64), float(heading))
    roads: list[np.ndarray] = []
    inters: list[tuple[np.ndarray, float, str]] = []
    current: list[np.ndarray] = []
    for piece in pieces:
        kind = piece[0]
        if kind == "straight":
            if not piece[1] > 0:
                raise ValueError(f"straight length must be > 0, got {piece[1]}")
            part = straight_points(cur.pos, cur.heading, float(piece[1]))
            delta = 0.0
        elif kind == "arc":
            radius, angle = float(piece[1]), float(piece[2])
            if radius < 10.0 or not 0.0 < abs(angle) <= math.pi:
                raise ValueError(f"arc needs radius >= 10 m and 0 < |angle| <= pi, got {radius}, {angle}")
            part = arc_points(cur.pos, cur.heading, radius, angle)
            delta = angle
        elif kind == "intersection":
            turn = piece[1]
            if turn not in TURNS:
                raise ValueError(f"intersection turn must be one of {TURNS}, got {turn!r}")
            if not current:
                raise ValueError("two intersections need a road between them")
            roads.append(_concat(current))
            current = []
            center = cur.pos + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            inters.append((center.copy(), cur.heading, turn))
            cur.heading = float(wrap_angle(cur.heading + {"left": math.pi / 2, "straight": 0.0,
                                                          "right": -math.pi / 2}[turn], method="atan2"))
            cur.pos = center + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            continue
        else:
            raise ValueError(f"unknown route piece {piece!r}")
        current.append(part)
        cur.pos = part[-1].copy()
        cur.heading = float(wrap_angle(cur.heading + delta, method="atan2"))
    roads.append(_concat(current))
    road_map = _assemble(rng, roads, inters, name)
    if buildings:
        road_map.buildings = _place_buildings(rng, road_map)
    return road_map


def _assemble(rng: np.random.Generator, road_pts: list[np.ndarray], inter_specs: list[tuple[np.ndarray, float, str]],
              name: str) -> RoadMap:
    roads: list[Road] = []
    lanes: list[Lane] = []
    inters: list[Intersection] = []
    next_id = [1]

    def new_id() -> int:
        next_id[0] += 1
        return next_id[0] - 1

    forward: list[Lane] = []
    backward: list[Lane] = []
    for i, pts in enumerate(road_pts):
        roads.append(Road(i, pts, LANE_WIDTH, "route"))
        f = Lane(new_id(), _lane_points(pts, +1), road=i, intersection=i if i < len(inter_specs) else -1,
                 approach_arm=2 if i < len(inter_specs) else -1)
        b = Lane(new_id(), _lane_points(pts, -1), road=i, intersection=i - 1 if i > 0 else -1)
        forward.append(f)
        backward.append(b)
        lanes += [f, b]
    route = [forward[0].id]
    for k, (center, heading_in, turn) in enumerate(inter_specs):
        inter = Intersection(
            id=k, center=center, heading=heading_in, turn=turn,
            green_s=(float(rng.uniform(9.0, 15.0)), float(rng.uniform(7.0, 12.0))),
            offset_s=float(rng.uniform(0.0, 40.0)),
        )
        inters.append(inter)
        if k + 1 < len(backward):
            backward[k + 1].approach_arm = inter.exit_arm
        arm_in: dict[int, Lane] = {2: forward[k]}
        arm_out: dict[int, Lane] = {2: backward[k], inter.exit_arm: forward[k + 1]}
        arm_in[inter.exit_arm] = backward[k + 1]
        for arm in range(4):
            if arm in (2, inter.exit_arm):
                continue
            a = inter.arm_heading(arm)
            start = inter.center + inter.half_size * _unit(a)
            center_pts = straight_points(start, a, ARM_LENGTH, step=1.0)
            road_id = len(roads)
            roads.append(Road(road_id, center_pts, LANE_WIDTH, "arm"))
            out_lane = Lane(new_id(), _lane_points(center_pts, +1), road=road_id)
            in_lane = Lane(new_id(), _lane_points(center_pts, -1), road=road_id, intersection=k, approach_arm=arm)
            arm_in[arm] = in_lane
            arm_out[arm] = out_lane
            lanes += [out_lane, in_lane]
        for a_in, lane_in in arm_in.items():
            for a_out, lane_out in arm_out.items():
                if a_in == a_out:
                    continue
                pts, turn_name = _connector_points(inter, a_in, a_out)
                conn = Lane(new_id(), pts, [lane_out.id], "connector", -1, k, a_in, turn_name)
                lanes.append(conn)
                lane_in.successors.append(conn.id)
                if a_in == 2 and a_out == inter.exit_arm:
                    route += [conn.id, lane_out.id]
    return RoadMap(roads, lanes, inters, route, name=name)


def _self_overlap_free(road_map: RoadMap) -> bool:
    """No two unconnected road pieces come closer than two road widths."""
    pieces = [r.points[::3] for r in road_map.roads]
    owner = [r.id for r in road_map.roads]
    clearance = 4 * LANE_WIDTH + 2 * SIDEWALK_WIDTH
    for i in range(len(pieces)):
        for j in range(i + 1, len(pieces)):
            if _min_distance(pieces[i], pieces[j]) < clearance:
                # pieces meeting at an intersection touch by construction
                ends_i = road_map.roads[owner[i]].points[[0, -1]]
                ends_j = road_map.roads[owner[j]].points[[0, -1]]
                if _min_distance(ends_i, ends_j) < 3 * INTERSECTION_HALF_SIZE:
                    # connected through a box: check the far parts only
                    far_i = pieces[i][_far_mask(pieces[i], ends_i)]
                    far_j = pieces[j][_far_mask(pieces[j], ends_j)]
                    if len(far_i) and len(far_j) and _min_distance(far_i, far_j) < clearance:
                        return False
                    continue
                return False
    return True


def _far_mask(points: np.ndarray, ends: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(points[:, None, :] - ends[None], axis=-1).min(axis=1)
    return d > 4 * INTERSECTION_HALF_SIZE


_BUILDING_COLORS = (
    (176, 160, 140), (150, 140, 130), (190, 180, 165), (160, 110, 90), (120, 120, 125),
    (200, 190, 170), (140, 150, 160), (170, 130, 100), (110, 100, 95), (185, 175, 185),
)


def _place_buildings(rng: np.random.Generator, road_map: RoadMap) -> list[Building]:
    clearance = LANE_WIDTH + SIDEWALK_WIDTH + 1.5
    candidates = []
    for road in road_map.roads:
        poly = Polyline(road.points)
        for side in (1.0, -1.0):
            s = float(rng.uniform(0.0, 8.0))
            while s < poly.length:
                width = float(rng.uniform(8.0, 22.0))
                depth = float(rng.uniform(8.0, 18.0))
                setback = float(rng.uniform(2.0, 9.0))
                height = float(rng.uniform(5.0, 28.0))
                color = _BUILDING_COLORS[int(rng.integers(len(_BUILDING_COLORS)))]
                x, y, h = poly.pose_at(s + width / 2)
                dist = LANE_WIDTH + SIDEWALK_WIDTH + setback + depth / 2
                cx = x - side * dist * math.sin(h)
                cy = y + side * dist * math.cos(h)
                candidates.append(Building(float(cx), float(cy), float(h), width, depth, height, color))
                s += width + float(rng.uniform(2.0, 12.0))
    if not candidates:
        return []
    tests = []
    for b in candidates:
        corners = box_corners(b.x, b.y, b.length, b.width, b.yaw)
        tests.append(np.concatenate([corners, [[b.x, b.y]], (corners + np.array([[b.x, b.y]])) / 2]))
    pts = np.concatenate(tests)
    on_road = road_map.is_drivable(pts[:, 0], pts[:, 1], margin=-clearance).reshape(len(candidates), -1).any(axis=1)
    out: list[Building] = []
    for b, blocked in zip(candidates, on_road, strict=True):
        if blocked:
            continue
        if all(math.hypot(b.x - o.x, b.y - o.y) > (max(b.length, b.width) + max(o.length, o.width)) / 2 for o in out):
            out.append(b)
    return out
