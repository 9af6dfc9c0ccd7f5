"""Who is on the synthetic world's roads besides the ego: traffic at the start, respawns, scripted actors.

:class:`Population` places vehicles (in the ego's lane, oncoming, on side roads) and
pedestrians (on both sidewalks of every road) when a world starts, keeps traffic
flowing ahead of the ego as it drives (:meth:`Population.respawn`) and adds the actors
of closed-loop scenarios: a vehicle at a given place, its scripted hard stop, a
pedestrian who crosses the road. Every draw comes from the world's generator, in the
order the world asks, so a seed gives the same traffic.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from wamdiff2_ros.data.polyline import Polyline, offset_points
from wamdiff2_ros.data.world.agents import BrakeEvent, Ego, Pedestrian, Vehicle
from wamdiff2_ros.data.world.config import WorldConfig
from wamdiff2_ros.data.world.lanes import LanePath
from wamdiff2_ros.data.world.looks import body_color, vehicle_size
from wamdiff2_ros.data.world.map import LANE_WIDTH, SIDEWALK_WIDTH, RoadMap

__all__ = ["Population"]


def _token(*parts: object) -> str:
    return hashlib.blake2b("/".join(str(p) for p in parts).encode(), digest_size=8).hexdigest()


class Population:
    """The vehicles and pedestrians of one world (see module docstring); ``rng`` is the world's generator."""

    def __init__(self, seed: int, config: WorldConfig, road_map: RoadMap, rng: np.random.Generator, ego: Ego) -> None:
        self.seed = seed
        self.config = config
        self.map = road_map
        self.rng = rng
        self.ego = ego
        self.vehicles: list[Vehicle] = []
        self.pedestrians: list[Pedestrian] = []
        self._next_agent = 0

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

    def _spawn_vehicle(self, lane_ids: list[int], s: float, speed_scale: float | None = None) -> Vehicle | None:
        path = LanePath(self.map, lane_ids)
        if s < 0 or s >= path.length - 5.0:
            return None
        pos = np.array(path.poly.pose_at(s)[:2])
        for other in self._positions(include_pedestrians=False):
            if np.hypot(*(other - pos)) < 12.0:
                return None
        length, width, height = vehicle_size(self.rng)
        desired = float(self.rng.uniform(7.0, 13.0))
        scale = float(self.rng.uniform(0.3, 1.0)) if speed_scale is None else speed_scale
        vehicle = Vehicle(
            token=self._new_token("vehicle"), path=path, s=s, speed=desired * scale, desired_speed=desired,
            length=length, width=width, height=height, color=body_color(self.rng),
            front_offset=length / 2,
        )
        self.vehicles.append(vehicle)
        return vehicle

    def _positions(self, include_pedestrians: bool = True) -> list[np.ndarray]:
        out = [np.array([self.ego.x, self.ego.y])]
        out += [np.array(v.path.poly.pose_at(v.s)[:2]) for v in self.vehicles]
        if include_pedestrians:
            out += [np.array(p.path.pose_at(p.s)[:2]) for p in self.pedestrians]
        return out

    def populate(self) -> None:
        """Traffic at the start: vehicles in the ego's lane (ahead, behind) and on the other lanes, pedestrians on every sidewalk."""
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
                    self.pedestrians.append(
                        Pedestrian(
                            token=self._new_token("pedestrian"), path=walk, s=float(self.rng.uniform(0, walk.length)),
                            speed=float(self.rng.uniform(0.9, 1.6)), direction=1.0 if self.rng.random() < 0.5 else -1.0,
                            height=float(self.rng.uniform(1.55, 1.9)),
                            color=body_color(self.rng),
                        )
                    )

    def respawn(self) -> None:
        """Keep traffic flowing: new oncoming / cross traffic ahead of the ego, drop far agents."""
        ego_xy = np.array([self.ego.x, self.ego.y])
        self.vehicles = [
            v for v in self.vehicles
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

    def add_vehicle(self, s: float, speed: float, desired_speed: float, lane_ids: list[int] | None = None,
                    size: tuple[float, float, float] = (4.6, 1.85, 1.5)) -> str:
        """Put a vehicle at arc length ``s`` of a lane sequence (default: the ego's route); returns its token."""
        path = LanePath(self.map, self.ego.path.lane_ids if lane_ids is None else lane_ids)
        if not 0.0 <= s < path.length - 5.0:
            raise ValueError(f"vehicle s={s:.1f} is not on the {path.length:.0f} m lane sequence")
        if not (0.0 <= speed < 40.0 and 0.0 < desired_speed < 40.0):
            raise ValueError(f"vehicle speeds must be in [0, 40) m/s, got {speed}, {desired_speed}")
        length, width, height = size
        vehicle = Vehicle(
            token=self._new_token("vehicle"), path=path, s=float(s), speed=float(speed),
            desired_speed=float(desired_speed), length=length, width=width, height=height,
            color=body_color(self.rng), front_offset=length / 2,
        )
        self.vehicles.append(vehicle)
        return vehicle.token

    def schedule_brake(self, token: str, after_s: float, decel: float = 5.0, hold_s: float = 3.0,
                       trigger_gap: float = 40.0) -> None:
        """Make vehicle ``token`` stop hard (``decel`` m/s^2) once ``time >= after_s`` and the ego is within
        ``trigger_gap`` m, stand ``hold_s`` seconds, then drive on."""
        if not 0.5 <= decel <= 10.0:
            raise ValueError(f"decel must be in [0.5, 10] m/s^2, got {decel}")
        for vehicle in self.vehicles:
            if vehicle.token == token:
                vehicle.brake = BrakeEvent(float(after_s), float(decel), float(hold_s), float(trigger_gap))
                return
        raise ValueError(f"no vehicle {token!r}")

    def brake_events(self) -> dict[str, str]:
        """State of every scripted brake event by vehicle token (pending / braking / holding / done)."""
        return {v.token: v.brake.state for v in self.vehicles if v.brake is not None}

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
        pedestrian = Pedestrian(
            token=self._new_token("pedestrian"), path=path, s=0.0, speed=float(speed), direction=1.0,
            height=1.75, color=body_color(self.rng), pause=math.inf, crossing=True,
            trigger=(float(centre[0]), float(centre[1]), float(trigger_distance)),
        )
        self.pedestrians.append(pedestrian)
        return pedestrian.token
