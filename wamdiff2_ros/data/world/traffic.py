"""Synthetic driving world: traffic on a procedural road map, an autopilot ego, closed loop.

``World(seed, config)`` builds a :class:`~wamdiff2_ros.data.world.map.RoadMap` (roads,
curves, signalised intersections, side roads, buildings) and populates it with
vehicles (car-following with IDM, stopping at red and yellow lights, yielding at
crossing conflicts: :mod:`~wamdiff2_ros.data.world.driver`) and pedestrians on the
sidewalks. The ego follows its route with the same driver model (keeps distance to the
lead vehicle, stops at lights) unless a caller takes over with :meth:`World.set_ego_pose`
/ :meth:`World.step_with_ego` (closed loop); other traffic reacts to the ego either way.
How agents look and what the cameras see: :mod:`~wamdiff2_ros.data.world.looks`,
:mod:`~wamdiff2_ros.data.world.views`.

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

import copy
import math
from typing import TYPE_CHECKING

import numpy as np

from wamdiff2_ros.data.world import driver
from wamdiff2_ros.data.world.agents import (
    EGO_HEIGHT,
    EGO_LENGTH,
    EGO_REAR_AXLE_TO_CENTER,
    EGO_WIDTH,
    AgentBox,
    Ego,
    EgoState,
    Pedestrian,
    RouteProgress,
    TrafficLight,
    Vehicle,
)
from wamdiff2_ros.data.world.cameras import PinholeCamera, camera_calibration
from wamdiff2_ros.data.world.config import WorldConfig
from wamdiff2_ros.data.world.lanes import LanePath, connector_conflicts
from wamdiff2_ros.data.world.looks import agent_boxes
from wamdiff2_ros.data.world.map import RoadMap
from wamdiff2_ros.data.world.map_builder import generate_road_map
from wamdiff2_ros.data.world.population import Population
from wamdiff2_ros.data.world.rules import world_rules
from wamdiff2_ros.data.world.views import CameraViews
from wamdiff2_ros.geometry import box_corners, convex_overlap, wrap_angle

if TYPE_CHECKING:
    from wamdiff2_ros.data.world.render import Renderer

__all__ = ["World"]


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
        self._respawn_clock = 0.0
        self._views = CameraViews(self.map, self.ground_color_index, world_rules(self.config)["lamp_visor_deg"])
        self._conflicts = connector_conflicts(self.map)
        route_path = LanePath(self.map, self.map.route)
        self.ego = Ego(
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
        self._population = Population(self.seed, self.config, self.map, self.rng, self.ego)
        self._population.populate()

    def _respawn(self) -> None:
        """Keep traffic flowing: new oncoming / cross traffic ahead of the ego, drop far agents."""
        self._population.respawn()

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

    def _agent_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        xy = [(self.ego.x + EGO_REAR_AXLE_TO_CENTER * math.cos(self.ego.yaw),
               self.ego.y + EGO_REAR_AXLE_TO_CENTER * math.sin(self.ego.yaw))]
        half = [EGO_LENGTH / 2]
        speed = [self.ego.speed]
        heading = [self.ego.yaw]
        for v in self._population.vehicles:
            x, y, h = v.path.poly.pose_at(v.s)
            xy.append((x, y))
            half.append(v.length / 2)
            speed.append(v.speed)
            heading.append(h)
        for p in self._population.pedestrians:
            x, y, h = p.path.pose_at(p.s)
            xy.append((x, y))
            half.append(0.3)
            speed.append(p.speed if p.pause <= 0 else 0.0)
            heading.append(h if p.direction > 0 else h + math.pi)
        return np.array(xy), np.array(half), np.array(speed), np.array(heading)

    def _substep(self, dt: float) -> None:
        vehicles, pedestrians = self._population.vehicles, self._population.pedestrians
        xy, half, agent_speed, heading = self._agent_arrays()
        movers: list[tuple[int, Vehicle | Ego]] = []
        if not self.ego.external:
            movers.append((0, self.ego))
        movers += [(i + 1, v) for i, v in enumerate(vehicles)]
        traffic = driver.approaches([self.ego, *vehicles])
        occupancy = driver.occupancy(self.map, [self.ego, *vehicles])
        if movers:
            # pedestrians keep to the sidewalks (>= 3 m from any lane centre) except those that cross the road:
            # vehicles and crossing pedestrians can block a lane
            nv = 1 + len(vehicles)
            sel = np.concatenate([np.arange(nv), [nv + i for i, p in enumerate(pedestrians) if p.crossing]])
            sel = sel.astype(int)
            gaps, lead_speeds = driver.corridor_gaps(movers, xy[sel], half[sel], agent_speed[sel], heading[sel])
        for k, (index, mover) in enumerate(movers):
            front = mover.front_offset
            gap, lead_speed = gaps[k], lead_speeds[k]
            stop = min(driver.stop_line_gap(self.map, self.time_s, mover.path, mover.s, front, mover.speed,
                                            mover.length, occupancy, self.ego.path),
                       driver.yield_gap(index, mover, front, traffic, self._conflicts))
            if stop < gap:
                gap, lead_speed = stop, 0.0
            v0 = driver.curve_speed_limit(mover.path, mover.s, mover.desired_speed)
            a = float(np.clip(driver.idm(mover.speed, v0, gap, mover.speed - lead_speed), -7.0, 2.0))
            if isinstance(mover, Vehicle) and mover.brake is not None:
                a = driver.scripted_brake(mover, a, dt, self.time_s, self.ego.x, self.ego.y)
            new_speed = max(0.0, mover.speed + a * dt)
            mover.accel = (new_speed - mover.speed) / dt
            mover.s += 0.5 * (mover.speed + new_speed) * dt
            mover.speed = new_speed
            if isinstance(mover, Vehicle) and mover.s >= mover.path.length - 1.0:
                mover.done = True
        for p in pedestrians:
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

    def _walk_across(self, p: Pedestrian, dt: float) -> None:
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
        return self._population.add_vehicle(s, speed, desired_speed, lane_ids, size)

    def schedule_brake(self, token: str, after_s: float, decel: float = 5.0, hold_s: float = 3.0,
                       trigger_gap: float = 40.0) -> None:
        """Make vehicle ``token`` stop hard (``decel`` m/s^2) once ``time >= after_s`` and the ego is within
        ``trigger_gap`` m, stand ``hold_s`` seconds, then drive on."""
        self._population.schedule_brake(token, after_s, decel, hold_s, trigger_gap)

    def brake_events(self) -> dict[str, str]:
        """State of every scripted brake event by vehicle token (pending / braking / holding / done)."""
        return self._population.brake_events()

    def add_crossing_pedestrian(self, route_s: float, side: float = -1.0, speed: float = 1.4,
                                trigger_distance: float = 35.0) -> str:
        """A pedestrian who waits at the curb beside route arc length ``route_s`` (``side`` -1: right of the
        ego lane, +1: left) and walks across the road once the ego is ``trigger_distance`` m away."""
        return self._population.add_crossing_pedestrian(route_s, side, speed, trigger_distance)

    def fork(self) -> World:
        """An independent copy of the world's state (shares the immutable map and lane paths) for rollouts."""
        memo: dict[int, object] = {id(self.map): self.map, id(self._conflicts): self._conflicts,
                                   id(self.ego.path): self.ego.path,
                                   id(self._views): CameraViews(self.map, self.ground_color_index, self._views.lamp_visor_deg)}
        for v in self._population.vehicles:
            memo[id(v.path)] = v.path
        for p in self._population.pedestrians:
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
        for v in self._population.vehicles:
            x, y, h = v.path.poly.pose_at(v.s)
            out.append(AgentBox(v.token, "vehicle", float(x), float(y), v.height / 2, v.length, v.width, v.height,
                                float(h), v.speed * math.cos(h), v.speed * math.sin(h), v.speed))
        for p in self._population.pedestrians:
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

    def route_command(self, distance: float = 20.0, lateral_offset: float = 2.0,
                      horizon_s: float | None = None) -> str:
        """NAVSIM's driving command (left / straight / right; unknown at the route's end).

        ``horizon_s`` (default: ``config.command_horizon_s``) 0: where the route is ``distance`` m ahead, against
        the route's heading here. > 0: the first point of the route, 1 m apart up to ``max(distance, speed x
        horizon_s + 5)`` m ahead, that lies ``lateral_offset`` m or more to one side of that heading: a turn the
        plan's horizon reaches is announced even when the route 20 m ahead is still straight, or already past it.
        """
        rules = self.config if horizon_s is None else WorldConfig(command_horizon_s=horizon_s)
        horizon = world_rules(rules, "command horizon")["command_horizon_s"]
        path = self.ego.path.poly
        if self.ego.s >= path.length - 1.0:
            return "unknown"
        x0, y0, h0 = path.pose_at(self.ego.s)

        def side(ahead: float) -> float:
            x1, y1, _ = path.pose_at(self.ego.s + ahead)
            return -math.sin(h0) * (x1 - x0) + math.cos(h0) * (y1 - y0)

        if horizon == 0:
            lateral = side(distance)
        else:
            reach = max(distance, self.ego.speed * horizon + 5.0)
            lateral = 0.0
            for ahead in np.arange(1.0, reach + 1e-9, 1.0):
                lateral = side(float(ahead))
                if abs(lateral) >= lateral_offset:
                    break
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
    def renderer(self) -> Renderer:
        """The OpenCV renderer of this world's map (built on first use)."""
        return self._views.renderer

    def camera(self, name: str, size: tuple[int, int]) -> PinholeCamera:
        return PinholeCamera.from_calibration(name, camera_calibration(name, size), size)

    def render(self, cameras: tuple[str, ...] | list[str] = ("CAM_F0",), size: tuple[int, int] = (512, 256),
               calibrations: dict[str, dict] | None = None) -> dict[str, np.ndarray]:
        """RGB images (H, W, 3) uint8 by camera name; ``calibrations`` overrides the rig (NAVSIM ``cams`` fields)."""
        boxes = agent_boxes(self._population.vehicles, self._population.pedestrians)
        pose = (self.ego.x, self.ego.y, self.ego.yaw)
        return self._views.render(pose, boxes, self.time_s, cameras, size, calibrations)
