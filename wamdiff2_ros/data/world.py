"""Synthetic driving world: traffic on a procedural road map, an autopilot ego, cameras, closed loop.

``World(seed, config)`` builds a :class:`~wamdiff2_ros.data.road_map.RoadMap` (roads,
curves, signalised intersections, side roads, buildings) and populates it with
vehicles (car-following with IDM, stopping at red and yellow lights, yielding at
crossing conflicts) and pedestrians on the sidewalks. The ego follows its route with
the same driver model (keeps distance to the lead vehicle, stops at lights) unless a
caller takes over with :meth:`World.set_ego_pose` / :meth:`World.step_with_ego`
(closed loop); other traffic reacts to the ego either way.

Scenario hooks for closed-loop routes: a given map (``World(seed, config, road_map)``),
the ego's start on its route (``WorldConfig.ego_start_s`` / ``ego_initial_speed``),
scripted vehicles (:meth:`World.add_vehicle`) that brake hard once the ego is close
(:meth:`World.schedule_brake`), pedestrians that cross the road in front of the ego
(:meth:`World.add_crossing_pedestrian`; vehicles stop for them), and :meth:`World.fork`,
an independent copy for look-ahead rollouts.

Units and frames: metres, radians, seconds; global frame x/y on the ground; agent
positions are box centres, the ego pose is its rear axle (as in NAVSIM). Everything
is deterministic given the seed and the sequence of calls.
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from wamdiff2_ros.data.camera import CAMERA_MOUNTS, PinholeCamera, camera_calibration
from wamdiff2_ros.data.polyline import Polyline, offset_points
from wamdiff2_ros.data.road_map import (
    LANE_WIDTH,
    SIDEWALK_WIDTH,
    STOP_LINE_SETBACK,
    RoadMap,
    generate_road_map,
)
from wamdiff2_ros.geometry import box_corners, convex_overlap, wrap_angle

__all__ = [
    "EGO_LENGTH",
    "EGO_WIDTH",
    "EGO_HEIGHT",
    "EGO_REAR_AXLE_TO_CENTER",
    "WorldConfig",
    "AgentBox",
    "EgoState",
    "TrafficLight",
    "RouteProgress",
    "World",
    "LanePath",
]

# nuPlan's ego (Chrysler Pacifica)
EGO_LENGTH = 5.176
EGO_WIDTH = 2.297
EGO_HEIGHT = 1.777
EGO_REAR_AXLE_TO_CENTER = 1.461

_PALETTE = (
    (200, 30, 30), (30, 60, 160), (230, 230, 230), (25, 25, 28), (140, 140, 145), (190, 190, 195),
    (20, 110, 60), (210, 160, 20), (90, 40, 20), (120, 150, 190), (170, 20, 60), (60, 60, 70),
)
_GLASS = (45, 60, 75)
_CORRIDOR_HALF_WIDTH = 1.9
_DENSE_STEP = 1.0
_LOOKAHEAD = 55  # dense samples (m) checked for obstacles ahead of the front bumper
_SPEED_LOOKAHEAD = 60  # m checked for curves ahead
_LATERAL_ACCEL = 2.2  # m/s^2 allowed in curves
_COMFORT_DECEL = 1.5
_SKIN = (200, 160, 130)


@dataclass
class WorldConfig:
    """Knobs of the synthetic world."""

    route_length: float = 600.0  # metres of route ahead of the ego start
    ego_speed: tuple[float, float] = (8.0, 13.0)  # desired speed range, m/s (drawn per world)
    vehicle_density: float = 1.0  # scales how many vehicles spawn
    pedestrian_density: float = 1.0
    intersection_prob: float = 0.45
    dt: float = 0.1  # simulation sub-step, s
    annotation_range: float = 60.0  # boxes within this distance go into ``anns``
    buildings: bool = True
    lateral_wander: float = 0.15  # amplitude of the ego's lateral wander, m
    ego_start_s: float | None = None  # route arc length of the ego's start (None: drawn in 15-25 m)
    ego_initial_speed: float | None = None  # m/s (None: drawn in 0.5-1.0 x the desired speed)
    ego_lane_traffic: bool = True  # spawn random vehicles ahead of / behind the ego in its lane
    respawn_interval_s: float = 0.5  # simulated seconds between traffic respawns (any step size)


@dataclass
class AgentBox:
    """A box of another road user in the global frame (centre, size, yaw, velocity)."""

    track_token: str
    name: str  # NAVSIM class: "vehicle" or "pedestrian"
    x: float
    y: float
    z: float
    length: float
    width: float
    height: float
    yaw: float
    vx: float
    vy: float
    speed: float


@dataclass
class EgoState:
    """Ego rear-axle pose, velocity/acceleration in the ego frame, route progress and time."""

    x: float
    y: float
    yaw: float
    speed: float
    vx: float
    vy: float
    ax: float
    ay: float
    yaw_rate: float
    time_s: float
    route_s: float


@dataclass
class TrafficLight:
    """State of the signal controlling one lane connector."""

    lane_connector_id: int
    intersection: int
    approach_arm: int
    state: str  # green / yellow / red
    on_route: bool

    @property
    def is_red(self) -> bool:
        return self.state == "red"


@dataclass
class RouteProgress:
    s: float  # metres along the route lane from its start
    length: float
    fraction: float
    lateral_offset: float  # metres, left +
    heading_error: float  # radians


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
        self.dense = self.poly.interpolate(np.arange(0.0, self.poly.length, _DENSE_STEP))
        idx = np.clip(np.searchsorted(self.poly.s, self.dense_s), 0, len(self.smooth_curvature) - 1)
        self.v_curve_sq = _LATERAL_ACCEL / np.maximum(self.smooth_curvature[idx], 1e-6)

    def lane_at(self, s: float) -> tuple[int, float]:
        """(lane id, arc length within that lane) at path arc length ``s``."""
        k = min(bisect_right(self.lane_ends, s), len(self.lane_ids) - 1)
        return self.lane_ids[k], s - self.lane_starts[k]

    @property
    def dense_s(self) -> np.ndarray:
        return np.arange(0.0, self.poly.length, _DENSE_STEP)

    @property
    def length(self) -> float:
        return self.poly.length



@dataclass
class _BrakeEvent:
    """A scripted hard stop: once ``time >= after_s`` and the ego is within ``trigger_gap`` m,
    decelerate at ``decel`` to a standstill, hold ``hold_s`` seconds, then drive on."""

    after_s: float
    decel: float
    hold_s: float
    trigger_gap: float
    state: str = "pending"  # pending / braking / holding / done
    hold_until: float = 0.0
    started_at: float | None = None


@dataclass
class _Vehicle:
    token: str
    path: LanePath
    s: float
    speed: float
    desired_speed: float
    length: float
    width: float
    height: float
    color: tuple[int, int, int]
    front_offset: float  # reference point -> front bumper along the path
    accel: float = 0.0
    done: bool = False
    brake: _BrakeEvent | None = None


@dataclass
class _Pedestrian:
    token: str
    path: Polyline
    s: float
    speed: float
    direction: float
    height: float
    color: tuple[int, int, int]
    pause: float = 0.0
    crossing: bool = False  # walks once across the road (path = curb to curb), then stays
    trigger: tuple[float, float, float] | None = None  # (x, y, distance): starts when the ego is this close


@dataclass
class _Ego:
    path: LanePath
    s: float
    speed: float
    desired_speed: float
    accel: float = 0.0
    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    ay: float = 0.0
    yaw_rate: float = 0.0
    external: bool = False
    wander_phase: float = 0.0
    wander_period: float = 10.0


def _token(*parts: object) -> str:
    return hashlib.blake2b("/".join(str(p) for p in parts).encode(), digest_size=8).hexdigest()


def _idm(v: float, v0: float, gap: float, dv: float, s0: float = 2.5, headway: float = 1.4,
         a_max: float = 1.6, b: float = 2.2) -> float:
    """Intelligent Driver Model acceleration; ``gap`` = inf for free road, ``dv`` = v - v_leader."""
    free = 1.0 - (v / max(v0, 0.1)) ** 4
    if not math.isfinite(gap):
        return a_max * free
    s_star = s0 + max(0.0, v * headway + v * dv / (2.0 * math.sqrt(a_max * b)))
    return a_max * (free - (s_star / max(gap, 0.1)) ** 2)


class World:
    """The synthetic driving world (see module docstring)."""

    def __init__(self, seed: int, config: WorldConfig | None = None, road_map: RoadMap | None = None) -> None:
        self.seed = int(seed)
        self.config = config or WorldConfig()
        rng = np.random.default_rng([self.seed, 0])
        self.rng = np.random.default_rng([self.seed, 1])
        origin = (float(rng.uniform(-2000, 2000)), float(rng.uniform(-2000, 2000)))
        heading = float(rng.uniform(-math.pi, math.pi))
        if road_map is None:
            road_map = generate_road_map(
                rng, self.config.route_length, origin, heading, self.config.intersection_prob,
                buildings=self.config.buildings, name=f"synthetic-{self.seed}",
            )
        self.map: RoadMap = road_map
        self.ground_color_index = int(rng.integers(4))
        self.time_s = 0.0
        self._vehicles: list[_Vehicle] = []
        self._pedestrians: list[_Pedestrian] = []
        self._next_agent = 0
        self._respawn_clock = 0.0
        self._renderer = None
        self._conflicts = _connector_conflicts(self.map)
        route_path = LanePath(self.map, self.map.route)
        self.ego = _Ego(
            path=route_path,
            s=float(rng.uniform(15.0, 25.0)),
            speed=0.0,
            desired_speed=float(rng.uniform(*self.config.ego_speed)),
            wander_phase=float(rng.uniform(0, 2 * math.pi)),
            wander_period=float(rng.uniform(8.0, 16.0)),
        )
        self.ego.speed = float(rng.uniform(0.5, 1.0)) * self.ego.desired_speed
        if self.config.ego_start_s is not None:
            if not 0.0 <= self.config.ego_start_s < route_path.length - 5.0:
                raise ValueError(f"ego_start_s={self.config.ego_start_s} is not on the {route_path.length:.0f} m route")
            self.ego.s = float(self.config.ego_start_s)
        if self.config.ego_initial_speed is not None:
            if not 0.0 <= self.config.ego_initial_speed < 40.0:
                raise ValueError(f"ego_initial_speed={self.config.ego_initial_speed} must be in [0, 40) m/s")
            self.ego.speed = float(self.config.ego_initial_speed)
        self._update_ego_pose_from_path()
        self._populate()

    # ------------------------------------------------------------------ population

    def _new_token(self, kind: str) -> str:
        self._next_agent += 1
        return _token(self.seed, kind, self._next_agent)

    def _random_walk(self, lane_id: int, min_length: float) -> list[int]:
        lanes = [lane_id]
        total = self.map.lanes[lane_id].polyline.length
        while total < min_length:
            succ = self.map.lanes[lanes[-1]].successors
            if not succ:
                break
            nxt = int(succ[int(self.rng.integers(len(succ)))])
            lanes.append(nxt)
            total += self.map.lanes[nxt].polyline.length
        return lanes

    def _vehicle_size(self) -> tuple[float, float, float]:
        r = self.rng.random()
        if r < 0.08:  # truck / bus
            return float(self.rng.uniform(7.0, 10.0)), float(self.rng.uniform(2.3, 2.6)), float(self.rng.uniform(2.8, 3.4))
        if r < 0.25:  # van / suv
            return float(self.rng.uniform(4.8, 5.6)), float(self.rng.uniform(1.9, 2.1)), float(self.rng.uniform(1.8, 2.2))
        return float(self.rng.uniform(4.0, 4.9)), float(self.rng.uniform(1.75, 1.95)), float(self.rng.uniform(1.4, 1.6))

    def _spawn_vehicle(self, lane_ids: list[int], s: float, speed_scale: float | None = None) -> _Vehicle | None:
        path = LanePath(self.map, lane_ids)
        if s < 0 or s >= path.length - 5.0:
            return None
        pos = np.array(path.poly.pose_at(s)[:2])
        for other in self._positions(include_pedestrians=False):
            if np.hypot(*(other - pos)) < 12.0:
                return None
        length, width, height = self._vehicle_size()
        desired = float(self.rng.uniform(7.0, 13.0))
        scale = float(self.rng.uniform(0.3, 1.0)) if speed_scale is None else speed_scale
        vehicle = _Vehicle(
            token=self._new_token("vehicle"), path=path, s=s, speed=desired * scale, desired_speed=desired,
            length=length, width=width, height=height, color=_PALETTE[int(self.rng.integers(len(_PALETTE)))],
            front_offset=length / 2,
        )
        self._vehicles.append(vehicle)
        return vehicle

    def _positions(self, include_pedestrians: bool = True) -> list[np.ndarray]:
        out = [np.array([self.ego.x, self.ego.y])]
        out += [np.array(v.path.poly.pose_at(v.s)[:2]) for v in self._vehicles]
        if include_pedestrians:
            out += [np.array(p.path.pose_at(p.s)[:2]) for p in self._pedestrians]
        return out

    def _populate(self) -> None:
        density = self.config.vehicle_density
        ego = self.ego
        route = self.map.route
        # traffic in the ego lane, ahead and behind
        if self.config.ego_lane_traffic:
            gap_ahead = float(self.rng.uniform(15.0, 45.0))
            if self.rng.random() < 0.75 * min(density, 1.0):
                v = self._spawn_vehicle(route, ego.s + gap_ahead, speed_scale=float(self.rng.uniform(0.4, 1.0)))
                if v is not None and self.rng.random() < 0.5:
                    self._spawn_vehicle(route, v.s + float(self.rng.uniform(20.0, 50.0)))
            if self.rng.random() < 0.4 * min(density, 1.0) and ego.s > 12.0:
                self._spawn_vehicle(route, ego.s - float(self.rng.uniform(11.0, ego.s)))
        # oncoming traffic and side roads
        for lane in self.map.lanes.values():
            if lane.kind != "lane":
                continue
            on_route = lane.id in route
            if on_route:
                continue
            length = lane.polyline.length
            expected = density * length / (70.0 if lane.road >= 0 and self.map.roads[lane.road].kind == "route" else 45.0)
            for _ in range(int(self.rng.poisson(expected))):
                s = float(self.rng.uniform(0.0, max(length - 8.0, 1.0)))
                self._spawn_vehicle(self._random_walk(lane.id, 250.0), s)
        # pedestrians on both sidewalks of every road
        for road in self.map.roads:
            poly = Polyline(road.points)
            for side in (1.0, -1.0):
                walk = Polyline(offset_points(road.points, side * (LANE_WIDTH + SIDEWALK_WIDTH / 2)))
                expected = self.config.pedestrian_density * poly.length / 60.0
                for _ in range(int(self.rng.poisson(expected))):
                    self._pedestrians.append(
                        _Pedestrian(
                            token=self._new_token("pedestrian"), path=walk, s=float(self.rng.uniform(0, walk.length)),
                            speed=float(self.rng.uniform(0.9, 1.6)), direction=1.0 if self.rng.random() < 0.5 else -1.0,
                            height=float(self.rng.uniform(1.55, 1.9)),
                            color=_PALETTE[int(self.rng.integers(len(_PALETTE)))],
                        )
                    )

    def _respawn(self) -> None:
        """Keep traffic flowing: new oncoming / cross traffic ahead of the ego, drop far agents."""
        ego_xy = np.array([self.ego.x, self.ego.y])
        self._vehicles = [
            v for v in self._vehicles
            if not v.done and np.hypot(*(np.array(v.path.poly.pose_at(v.s)[:2]) - ego_xy)) < 220.0
        ]
        if self.rng.random() > 0.25 * self.config.vehicle_density:
            return
        candidates = []
        for lane in self.map.lanes.values():
            if lane.kind != "lane" or lane.id in self.map.route:
                continue
            start = lane.points[0]
            d = float(np.hypot(*(start - ego_xy)))
            if 60.0 < d < 180.0:
                candidates.append(lane.id)
        if candidates:
            lane_id = candidates[int(self.rng.integers(len(candidates)))]
            self._spawn_vehicle(self._random_walk(lane_id, 250.0), float(self.rng.uniform(0.0, 5.0)), 0.8)

    # ------------------------------------------------------------------ dynamics

    def _update_ego_pose_from_path(self) -> None:
        ego = self.ego
        x, y, h = ego.path.poly.pose_at(ego.s)
        amp = self.config.lateral_wander
        w = 2 * math.pi / ego.wander_period
        offset = amp * math.sin(w * self.time_s + ego.wander_phase)
        d_offset = amp * w * math.cos(w * self.time_s + ego.wander_phase)
        ego.x = float(x - offset * math.sin(h))
        ego.y = float(y + offset * math.cos(h))
        slip = math.atan2(d_offset, max(ego.speed, 1.0)) if ego.speed > 0.5 else 0.0
        ego.yaw = float(wrap_angle(h + slip, method="atan2"))

    def _signal(self, intersection: int, arm: int) -> str:
        inter = self.map.intersections[intersection]
        return inter.signal_state(arm % 2, self.time_s)

    def _occupancy(self) -> dict[int, tuple[float, float]]:
        """Per lane: (rear of the last vehicle measured from the lane start, its speed).

        A vehicle on a connector occupies the start of the lane the connector leads to.
        """
        out: dict[int, tuple[float, float]] = {}
        for mover in [self.ego, *self._vehicles]:
            rear = EGO_LENGTH / 2 - EGO_REAR_AXLE_TO_CENTER if mover is self.ego else mover.length / 2
            lane_id, s_in = mover.path.lane_at(mover.s)
            lane = self.map.lanes[lane_id]
            if lane.kind == "connector":
                lane_id, s_in, rear = lane.successors[0], 0.0, 0.0
            value = (s_in - rear, mover.speed)
            if lane_id not in out or value[0] < out[lane_id][0]:
                out[lane_id] = value
        return out

    def _stop_line_gap(self, path: LanePath, s: float, front_offset: float, speed: float, length: float,
                       occupancy: dict[int, tuple[float, float]]) -> float:
        """Distance from the front bumper to the first stop line ahead where the vehicle must wait (inf if none).

        It waits for red (and yellow when it can still stop comfortably) and, on green, when the lane
        behind the intersection has no room for it (don't block the box).
        """
        best = math.inf
        for (s_stop, inter, arm), exit_lane in zip(path.stops, path.stop_exits, strict=True):
            dist = s_stop - s - front_offset
            if dist < -0.5 or dist > 80.0:
                continue
            state = self._signal(inter, arm)
            must_stop = state == "red"
            if state == "yellow":
                # go only if the stop line is reached while still yellow, or stopping is impossible
                remaining = self.map.intersections[inter].yellow_remaining(arm % 2, self.time_s)
                must_stop = dist > speed * remaining and dist > speed * speed / (2 * 6.0)
            if not must_stop and dist < 25.0 and exit_lane in occupancy:
                room, other_speed = occupancy[exit_lane]
                must_stop = room < length + 3.0 and other_speed < 3.0
            if must_stop:
                best = max(dist, 0.05)
                break
        if path is self.ego.path:
            best = min(best, max(path.length - s - front_offset, 0.05))
        return best

    def _rear(self, mover: _Vehicle | _Ego) -> float:
        """Reference point -> rear bumper along the path."""
        return EGO_LENGTH / 2 - EGO_REAR_AXLE_TO_CENTER if mover is self.ego else mover.length / 2

    def _approaches(self) -> tuple[dict[tuple[int, int], list[tuple[str, float, float]]], dict[int, list[int]]]:
        """Traffic at intersections.

        Returns (approaching, occupied): vehicles within 60 m of their next connector by (intersection,
        approach arm) as (turn, metres from front bumper to the connector, speed), negative while on it;
        and the connectors with a vehicle on them (``id(mover)`` is not needed: a list of connector ids
        per occupying vehicle, keyed by the vehicle's index, 0 = ego).
        """
        approaching: dict[tuple[int, int], list[tuple[str, float, float]]] = {}
        occupied: dict[int, list[int]] = {}
        for index, mover in enumerate([self.ego, *self._vehicles]):
            front_s = mover.s + self._front(mover)
            rear_s = mover.s - self._rear(mover)
            for s_in, s_out, inter, arm, turn, lane_id in mover.path.turns:
                if rear_s > s_out:
                    continue  # has left this connector
                if front_s > s_in:
                    occupied.setdefault(index, []).append(lane_id)
                if s_in - front_s < 60.0:
                    approaching.setdefault((inter, arm), []).append((turn, s_in - front_s, mover.speed))
                break
        return approaching, occupied

    def _yield_gap(self, index: int, mover: _Vehicle | _Ego, front: float,
                   traffic: tuple[dict[tuple[int, int], list[tuple[str, float, float]]], dict[int, list[int]]]) -> float:
        """Right of way at intersections: wait before entering while a conflicting connector is occupied,
        and turn left only through a gap in the opposing traffic (permissive left)."""
        approaching, occupied = traffic
        front_s = mover.s + front
        for s_in, s_out, inter, arm, turn, lane_id in mover.path.turns:
            if front_s > s_in + 0.5:
                if front_s < s_out:
                    return math.inf  # committed inside the intersection
                continue
            if s_in - front_s > 40.0:
                return math.inf
            wait_at = s_in - front_s - 0.3  # the intersection's edge
            s_stop = s_in - STOP_LINE_SETBACK
            if front_s < s_stop - 0.3:
                wait_at = s_stop - front_s  # the stop line
            conflicts = self._conflicts.get(lane_id, set())
            for other, lanes in occupied.items():
                if other != index and any(c in conflicts for c in lanes):
                    return max(wait_at, 0.05)
            if turn == "left":
                for other_turn, other_dist, other_speed in approaching.get((inter, (arm + 2) % 4), []):
                    if other_turn == "left":
                        continue
                    if other_dist < 0.0 or other_dist / max(other_speed, 0.5) < 4.5:
                        # pull up to the intersection and wait there (leaves on yellow when the stream stops)
                        return max(s_in - front_s - 0.3, 0.05)
            return math.inf
        return math.inf

    def _speed_limit(self, path: LanePath, s: float, desired: float) -> float:
        """Desired speed capped so that curves ahead can be taken at <= 2.2 m/s^2 lateral acceleration."""
        i0 = int(s / _DENSE_STEP)
        v_sq = path.v_curve_sq[i0 : i0 + _SPEED_LOOKAHEAD]
        if not len(v_sq):
            return desired
        ahead = np.arange(len(v_sq)) * _DENSE_STEP + (i0 * _DENSE_STEP - s)
        return float(min(desired, np.sqrt(np.min(v_sq + 2.0 * _COMFORT_DECEL * np.maximum(ahead, 0.0)))))

    def _agent_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        xy = [(self.ego.x + EGO_REAR_AXLE_TO_CENTER * math.cos(self.ego.yaw),
               self.ego.y + EGO_REAR_AXLE_TO_CENTER * math.sin(self.ego.yaw))]
        half = [EGO_LENGTH / 2]
        speed = [self.ego.speed]
        heading = [self.ego.yaw]
        for v in self._vehicles:
            x, y, h = v.path.poly.pose_at(v.s)
            xy.append((x, y))
            half.append(v.length / 2)
            speed.append(v.speed)
            heading.append(h)
        for p in self._pedestrians:
            x, y, h = p.path.pose_at(p.s)
            xy.append((x, y))
            half.append(0.3)
            speed.append(p.speed if p.pause <= 0 else 0.0)
            heading.append(h if p.direction > 0 else h + math.pi)
        return np.array(xy), np.array(half), np.array(speed), np.array(heading)

    def _front(self, mover: _Vehicle | _Ego) -> float:
        return EGO_REAR_AXLE_TO_CENTER + EGO_LENGTH / 2 if mover is self.ego else mover.front_offset

    def _corridor_gaps(self, movers: list[tuple[int, _Vehicle | _Ego]], xy: np.ndarray, half: np.ndarray,
                       agent_speed: np.ndarray, heading: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gap to the nearest road user in each mover's corridor ahead, and its speed along the mover's path.

        A road user is in the corridor when it is within 1.9 m of the mover's path in the next 55 m. When
        two movers on crossing paths see each other, the one farther from the conflict yields.
        """
        m = len(movers)
        samples = np.zeros((m, _LOOKAHEAD, 3))
        valid = np.zeros((m, _LOOKAHEAD), dtype=bool)
        start_dist = np.zeros(m)
        for k, (_index, mover) in enumerate(movers):
            path = mover.path
            i0 = int(math.ceil((mover.s + self._front(mover)) / _DENSE_STEP))
            rows = path.dense[i0 : i0 + _LOOKAHEAD]
            samples[k, : len(rows)] = rows
            valid[k, : len(rows)] = True
            start_dist[k] = i0 * _DENSE_STEP - mover.s
        d2 = ((samples[:, :, None, :2] - xy[None, None]) ** 2).sum(-1)  # (m, L, N)
        hit = (d2 < _CORRIDOR_HALF_WIDTH**2) & valid[:, :, None]
        index = np.array([i for i, _ in movers])
        hit[np.arange(m), :, index] = False
        any_hit = hit.any(axis=1)  # (m, N)
        first = hit.argmax(axis=1)  # (m, N)
        dist = np.where(any_hit, start_dist[:, None] + first * _DENSE_STEP, np.inf)  # reference -> conflict
        # crossing conflicts seen from both sides: the mover farther from the conflict keeps the obstacle
        n = len(xy)
        full = np.full((n, n), np.inf)
        full[index] = dist
        mutual = np.isfinite(full) & np.isfinite(full.T)
        crossing = np.abs(np.angle(np.exp(1j * (heading[:, None] - heading[None, :])))) > math.radians(35)
        order_key = full + 1e-6 * np.arange(n)[:, None]
        yields_to_me = mutual & crossing & (order_key < order_key.T)  # I am closer: ignore the other
        dist = np.where(yields_to_me[index], np.inf, dist)
        fronts = np.array([self._front(mv) for _, mv in movers])
        gap = dist - fronts[:, None] - half[None, :]
        best = np.argmin(gap, axis=1)
        rows = np.arange(m)
        best_gap = gap[rows, best]
        path_heading = samples[rows, first[rows, best], 2]
        along = agent_speed[best] * np.cos(heading[best] - path_heading)
        gaps = np.where(np.isfinite(best_gap), np.maximum(best_gap, 0.05), np.inf)
        return gaps, np.where(np.isfinite(best_gap), np.maximum(along, 0.0), 0.0)

    def _substep(self, dt: float) -> None:
        xy, half, agent_speed, heading = self._agent_arrays()
        movers: list[tuple[int, _Vehicle | _Ego]] = []
        if not self.ego.external:
            movers.append((0, self.ego))
        movers += [(i + 1, v) for i, v in enumerate(self._vehicles)]
        traffic = self._approaches()
        occupancy = self._occupancy()
        if movers:
            # pedestrians keep to the sidewalks (>= 3 m from any lane centre) except those that cross the road:
            # vehicles and crossing pedestrians can block a lane
            nv = 1 + len(self._vehicles)
            sel = np.concatenate([np.arange(nv), [nv + i for i, p in enumerate(self._pedestrians) if p.crossing]])
            sel = sel.astype(int)
            gaps, lead_speeds = self._corridor_gaps(movers, xy[sel], half[sel], agent_speed[sel], heading[sel])
        for k, (index, mover) in enumerate(movers):
            front = self._front(mover)
            gap, lead_speed = gaps[k], lead_speeds[k]
            length = EGO_LENGTH if mover is self.ego else mover.length
            stop = min(self._stop_line_gap(mover.path, mover.s, front, mover.speed, length, occupancy),
                       self._yield_gap(index, mover, front, traffic))
            if stop < gap:
                gap, lead_speed = stop, 0.0
            v0 = self._speed_limit(mover.path, mover.s, mover.desired_speed)
            a = float(np.clip(_idm(mover.speed, v0, gap, mover.speed - lead_speed), -7.0, 2.0))
            if isinstance(mover, _Vehicle) and mover.brake is not None:
                a = self._scripted_brake(mover, a, dt)
            new_speed = max(0.0, mover.speed + a * dt)
            mover.accel = (new_speed - mover.speed) / dt
            mover.s += 0.5 * (mover.speed + new_speed) * dt
            mover.speed = new_speed
            if isinstance(mover, _Vehicle) and mover.s >= mover.path.length - 1.0:
                mover.done = True
        for p in self._pedestrians:
            if p.crossing:
                self._walk_across(p, dt)
                continue
            if p.pause > 0:
                p.pause -= dt
                continue
            p.s += p.direction * p.speed * dt
            if p.s <= 0.0 or p.s >= p.path.length:
                p.s = float(np.clip(p.s, 0.0, p.path.length))
                p.direction = -p.direction
            elif self.rng.random() < 0.002:
                p.pause = float(self.rng.uniform(1.0, 4.0))
        self.time_s += dt
        if not self.ego.external:
            prev_yaw = self.ego.yaw
            self._update_ego_pose_from_path()
            self.ego.yaw_rate = float(wrap_angle(self.ego.yaw - prev_yaw, method="atan2")) / dt
            self.ego.ay = self.ego.speed * self.ego.yaw_rate

    def _scripted_brake(self, vehicle: _Vehicle, a: float, dt: float) -> float:
        """Acceleration of a vehicle with a scripted hard stop (see :meth:`schedule_brake`)."""
        event = vehicle.brake
        assert event is not None
        if event.state == "pending" and self.time_s >= event.after_s:
            x, y, _ = vehicle.path.poly.pose_at(vehicle.s)
            if math.hypot(x - self.ego.x, y - self.ego.y) <= event.trigger_gap:
                event.state, event.started_at = "braking", self.time_s
        if event.state == "braking":
            a = min(a, -event.decel)
            if vehicle.speed + a * dt <= 0.0:
                event.state, event.hold_until = "holding", self.time_s + event.hold_s
        elif event.state == "holding":
            if self.time_s >= event.hold_until:
                event.state = "done"
            else:
                a = min(a, 0.0)
        return a

    def _walk_across(self, p: _Pedestrian, dt: float) -> None:
        """A crossing pedestrian waits at the curb for its trigger, walks across once, then stands."""
        if p.trigger is not None:
            tx, ty, distance = p.trigger
            if math.hypot(self.ego.x - tx, self.ego.y - ty) > distance:
                return
            p.trigger, p.pause = None, 0.0
        if p.pause > 0:
            return
        p.s = min(p.s + p.speed * dt, p.path.length)
        if p.s >= p.path.length:
            p.pause = math.inf

    def step(self, dt: float = 0.5) -> None:
        """Advance the world by ``dt`` seconds (sub-steps of ``config.dt``); the ego drives itself.

        Traffic respawns once per ``config.respawn_interval_s`` of simulated time (at most once per
        call), so the traffic does not depend on how finely a caller steps.
        """
        if dt < 0:
            raise ValueError(f"dt must be >= 0, got {dt}")
        n = max(1, int(round(dt / self.config.dt))) if dt > 0 else 0
        for _ in range(n):
            self._substep(dt / n)
        if n:
            self._respawn_clock += dt
            if self._respawn_clock >= self.config.respawn_interval_s - 1e-9:
                self._respawn_clock = 0.0
                self._respawn()

    # ------------------------------------------------------------------ closed loop

    def set_ego_pose(self, x: float, y: float, yaw: float, speed: float, acceleration: float = 0.0,
                     dt: float | None = None) -> None:
        """Put the ego at a pose given from outside (closed loop); the autopilot stops driving it.

        ``dt``: seconds since the previous pose, for the yaw rate (default ``config.dt``).
        """
        for name, value in (("x", x), ("y", y), ("yaw", yaw), ("speed", speed)):
            if not math.isfinite(float(value)):
                raise ValueError(f"ego {name} must be finite, got {value}")
        ego = self.ego
        prev_yaw = ego.yaw
        ego.external = True
        ego.x, ego.y, ego.yaw = float(x), float(y), float(wrap_angle(yaw, method="atan2"))
        ego.accel = float(acceleration)
        ego.speed = max(float(speed), 0.0)
        ego.yaw_rate = (float(wrap_angle(ego.yaw - prev_yaw, method="atan2"))
                        / max(self.config.dt if dt is None else dt, 1e-3))
        ego.ay = ego.speed * ego.yaw_rate
        # progress: project onto the route near the previous progress
        window_lo = max(ego.s - 30.0, 0.0)
        window_hi = min(ego.s + 60.0, ego.path.length)
        s_samples = np.linspace(window_lo, window_hi, 181)
        pts = ego.path.poly.interpolate(s_samples)
        i = int(np.argmin(np.hypot(pts[:, 0] - x, pts[:, 1] - y)))
        ego.s = float(s_samples[i])

    def step_with_ego(self, x: float, y: float, yaw: float, speed: float, dt: float = 0.5,
                      acceleration: float = 0.0) -> None:
        """Advance the world by ``dt`` with the ego held externally, then place it at (x, y, yaw, speed)."""
        self.ego.external = True
        self.step(dt)
        self.set_ego_pose(x, y, yaw, speed, acceleration, dt=dt if dt > 0 else None)

    def release_ego(self) -> None:
        """Hand the ego back to the autopilot (from its current route progress)."""
        self.ego.external = False

    # ------------------------------------------------------------------ scenario hooks

    def add_vehicle(self, s: float, speed: float, desired_speed: float, lane_ids: list[int] | None = None,
                    size: tuple[float, float, float] = (4.6, 1.85, 1.5)) -> str:
        """Put a vehicle at arc length ``s`` of a lane sequence (default: the ego's route); returns its token."""
        path = LanePath(self.map, self.ego.path.lane_ids if lane_ids is None else lane_ids)
        if not 0.0 <= s < path.length - 5.0:
            raise ValueError(f"vehicle s={s:.1f} is not on the {path.length:.0f} m lane sequence")
        if not (0.0 <= speed < 40.0 and 0.0 < desired_speed < 40.0):
            raise ValueError(f"vehicle speeds must be in [0, 40) m/s, got {speed}, {desired_speed}")
        length, width, height = size
        vehicle = _Vehicle(
            token=self._new_token("vehicle"), path=path, s=float(s), speed=float(speed),
            desired_speed=float(desired_speed), length=length, width=width, height=height,
            color=_PALETTE[int(self.rng.integers(len(_PALETTE)))], front_offset=length / 2,
        )
        self._vehicles.append(vehicle)
        return vehicle.token

    def schedule_brake(self, token: str, after_s: float, decel: float = 5.0, hold_s: float = 3.0,
                       trigger_gap: float = 40.0) -> None:
        """Make vehicle ``token`` stop hard (``decel`` m/s^2) once ``time >= after_s`` and the ego is within
        ``trigger_gap`` m, stand ``hold_s`` seconds, then drive on."""
        if not 0.5 <= decel <= 10.0:
            raise ValueError(f"decel must be in [0.5, 10] m/s^2, got {decel}")
        for vehicle in self._vehicles:
            if vehicle.token == token:
                vehicle.brake = _BrakeEvent(float(after_s), float(decel), float(hold_s), float(trigger_gap))
                return
        raise ValueError(f"no vehicle {token!r}")

    def brake_events(self) -> dict[str, str]:
        """State of every scripted brake event by vehicle token (pending / braking / holding / done)."""
        return {v.token: v.brake.state for v in self._vehicles if v.brake is not None}

    def add_crossing_pedestrian(self, route_s: float, side: float = -1.0, speed: float = 1.4,
                                trigger_distance: float = 35.0) -> str:
        """A pedestrian who waits at the curb beside route arc length ``route_s`` (``side`` -1: right of the
        ego lane, +1: left) and walks across the road once the ego is ``trigger_distance`` m away."""
        if side not in (-1.0, 1.0, -1, 1):
            raise ValueError(f"side must be -1 (right) or +1 (left), got {side}")
        if not 0.3 <= speed <= 4.0:
            raise ValueError(f"pedestrian speed must be in [0.3, 4] m/s, got {speed}")
        x, y, h = self.ego.path.poly.pose_at(route_s)
        normal = np.array([-math.sin(h), math.cos(h)])
        centre = np.array([x, y]) + normal * (LANE_WIDTH / 2)  # road centreline (right-hand traffic)
        reach = LANE_WIDTH + SIDEWALK_WIDTH / 2
        start, end = centre + side * reach * normal, centre - side * reach * normal
        path = Polyline(np.linspace(start, end, 25))
        pedestrian = _Pedestrian(
            token=self._new_token("pedestrian"), path=path, s=0.0, speed=float(speed), direction=1.0,
            height=1.75, color=_PALETTE[int(self.rng.integers(len(_PALETTE)))], pause=math.inf, crossing=True,
            trigger=(float(centre[0]), float(centre[1]), float(trigger_distance)),
        )
        self._pedestrians.append(pedestrian)
        return pedestrian.token

    def fork(self) -> World:
        """An independent copy of the world's state (shares the immutable map and lane paths) for rollouts."""
        import copy

        memo: dict[int, object] = {id(self.map): self.map, id(self._conflicts): self._conflicts,
                                   id(self.ego.path): self.ego.path}
        if self._renderer is not None:
            memo[id(self._renderer)] = None
        for v in self._vehicles:
            memo[id(v.path)] = v.path
        for p in self._pedestrians:
            memo[id(p.path)] = p.path
        return copy.deepcopy(self, memo)

    # ------------------------------------------------------------------ queries

    def ego_state(self) -> EgoState:
        e = self.ego
        return EgoState(e.x, e.y, e.yaw, e.speed, e.speed, 0.0, e.accel, e.ay, e.yaw_rate, self.time_s, e.s)

    def ego_box(self) -> AgentBox:
        e = self.ego
        cx = e.x + EGO_REAR_AXLE_TO_CENTER * math.cos(e.yaw)
        cy = e.y + EGO_REAR_AXLE_TO_CENTER * math.sin(e.yaw)
        return AgentBox("ego", "vehicle", cx, cy, EGO_HEIGHT / 2, EGO_LENGTH, EGO_WIDTH, EGO_HEIGHT, e.yaw,
                        e.speed * math.cos(e.yaw), e.speed * math.sin(e.yaw), e.speed)

    def agents(self) -> list[AgentBox]:
        """Boxes of all vehicles and pedestrians (global frame, z = box centre height)."""
        out = []
        for v in self._vehicles:
            x, y, h = v.path.poly.pose_at(v.s)
            out.append(AgentBox(v.token, "vehicle", float(x), float(y), v.height / 2, v.length, v.width, v.height,
                                float(h), v.speed * math.cos(h), v.speed * math.sin(h), v.speed))
        for p in self._pedestrians:
            x, y, h = p.path.pose_at(p.s)
            yaw = float(wrap_angle(h if p.direction > 0 else h + math.pi, method="atan2"))
            sp = 0.0 if p.pause > 0 else p.speed
            out.append(AgentBox(p.token, "pedestrian", float(x), float(y), p.height / 2, 0.55, 0.6, p.height,
                                yaw, sp * math.cos(yaw), sp * math.sin(yaw), sp))
        return out

    def traffic_lights(self, within: float | None = None) -> list[TrafficLight]:
        """Signal state of every lane connector (only intersections within ``within`` metres if given)."""
        route = set(self.map.route)
        out = []
        for lane in self.map.lanes.values():
            if lane.kind != "connector":
                continue
            inter = self.map.intersections[lane.intersection]
            if within is not None and math.hypot(inter.center[0] - self.ego.x, inter.center[1] - self.ego.y) > within:
                continue
            out.append(TrafficLight(lane.id, lane.intersection, lane.approach_arm,
                                    inter.signal_state(lane.axis, self.time_s), lane.id in route))
        return out

    def route_command(self, distance: float = 20.0, lateral_offset: float = 2.0) -> str:
        """NAVSIM's driving command: where the route is ``distance`` m ahead (left / straight / right)."""
        path = self.ego.path.poly
        if self.ego.s >= path.length - 1.0:
            return "unknown"
        x0, y0, h0 = path.pose_at(self.ego.s)
        x1, y1, _ = path.pose_at(self.ego.s + distance)
        lateral = -math.sin(h0) * (x1 - x0) + math.cos(h0) * (y1 - y0)
        if lateral >= lateral_offset:
            return "left"
        if lateral <= -lateral_offset:
            return "right"
        return "straight"

    def route_progress(self) -> RouteProgress:
        path = self.ego.path.poly
        x, y, h = path.pose_at(self.ego.s)
        lateral = -math.sin(h) * (self.ego.x - x) + math.cos(h) * (self.ego.y - y)
        return RouteProgress(self.ego.s, path.length, self.ego.s / path.length, float(lateral),
                             float(wrap_angle(self.ego.yaw - h, method="atan2")))

    def next_intersection(self) -> tuple[int, float] | None:
        """(intersection id, distance along the route to its stop line) of the next one ahead, if any."""
        for s_stop, inter, _arm in self.ego.path.stops:
            if s_stop - self.ego.s > -2.0:
                return inter, s_stop - self.ego.s
        return None

    def collisions(self) -> list[str]:
        """Track tokens of agents whose box overlaps the ego's box now."""
        ego = self.ego_box()
        ego_corners = box_corners(ego.x, ego.y, ego.length, ego.width, ego.yaw)
        out = []
        for agent in self.agents():
            if math.hypot(agent.x - ego.x, agent.y - ego.y) > (ego.length + agent.length) / 2 + 1.0:
                continue
            if convex_overlap(ego_corners, box_corners(agent.x, agent.y, agent.length, agent.width, agent.yaw), eps=0.0):
                out.append(agent.track_token)
        return out

    # ------------------------------------------------------------------ cameras

    @property
    def renderer(self):  # noqa: ANN201 - lazy import keeps cv2 out of non-rendering use
        if self._renderer is None:
            from wamdiff2_ros.data.render import GROUNDS, Renderer

            self._renderer = Renderer(self.map, GROUNDS[self.ground_color_index])
        return self._renderer

    def render_boxes(self) -> list:
        from wamdiff2_ros.data.render import RenderBox

        out = []
        for v in self._vehicles:
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
        for p in self._pedestrians:
            x, y, h = p.path.pose_at(p.s)
            yaw = h if p.direction > 0 else h + math.pi
            legs = p.height * 0.47
            torso = p.height * 0.38
            out.append(RenderBox(float(x), float(y), 0.0, float(yaw), 0.3, 0.4, legs, ((40, 40, 60),) * 5))
            out.append(RenderBox(float(x), float(y), legs, float(yaw), 0.35, 0.5, torso, (p.color,) * 5))
            out.append(RenderBox(float(x), float(y), legs + torso, float(yaw), 0.22, 0.22, p.height - legs - torso,
                                 (_SKIN,) * 5))
        return out

    def signal_render_states(self) -> dict[tuple[int, int], str]:
        return {(inter.id, arm): inter.signal_state(arm % 2, self.time_s)
                for inter in self.map.intersections for arm in range(4)}

    def camera(self, name: str, size: tuple[int, int]) -> PinholeCamera:
        return PinholeCamera.from_calibration(name, camera_calibration(name, size), size)

    def render(self, cameras: tuple[str, ...] | list[str] = ("CAM_F0",), size: tuple[int, int] = (512, 256),
               calibrations: dict[str, dict] | None = None) -> dict[str, np.ndarray]:
        """RGB images (H, W, 3) uint8 by camera name; ``calibrations`` overrides the rig (NAVSIM ``cams`` fields)."""
        boxes = self.render_boxes()
        states = self.signal_render_states()
        pose = (self.ego.x, self.ego.y, self.ego.yaw)
        out = {}
        for name in cameras:
            if name not in CAMERA_MOUNTS:
                raise ValueError(f"unknown camera {name!r}; expected some of {', '.join(CAMERA_MOUNTS)}")
            cal = (calibrations or {}).get(name) or camera_calibration(name, size)
            cam = PinholeCamera.from_calibration(name, cal, size)
            out[name] = self.renderer.render(cam, pose, boxes, states)
        return out


def _connector_conflicts(road_map: RoadMap, clearance: float = 3.2) -> dict[int, set[int]]:
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
