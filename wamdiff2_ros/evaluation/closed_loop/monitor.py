"""Route monitor: the closed-loop metrics accumulator, fed one ego pose and the other road users per step.

It knows only the road map, the route (its lane ids, start and goal arc length) and
what it is fed, so the same monitor scores a route driven in-process or over ROS
(poses from odometry, agents from the simulator's status). Per step it tracks:

* route progress (rear axle projected on the route near the previous progress) and the goal;
* collisions with vehicles, pedestrians and buildings (static), each contact counted once,
  with the at-fault rules of :func:`collision_fault` (NAVSIM's, plus "a moving ego hitting
  a pedestrian is at fault");
* red-light violations: the front bumper crossing the stop line of an approach whose
  signal is red (signals from the map's timing at the step's time), once per stop line;
* leaving the drivable area (any footprint corner more than 0.3 m off it: the map's
  intersections are square, without curb radii, so an exactly tracked turn grazes
  their corners): events, seconds, metres;
* stuck time: below 0.3 m/s for more than 1.5 s in a row with no red or yellow light within 30 m ahead and nothing
  to wait for: no road user on the route within 8 m ahead, or within 20 m (35 m near an
  intersection) and slower than 3 m/s, and, near an intersection, none inside its box and none due in it within 4.5 s (the
  autopilot's gap for a permissive left): crossing traffic unless its light is red,
  oncoming traffic before a left turn;
* comfort samples (speed, yaw rate) for :mod:`.comfort`.

A route ends when the ego reaches the goal (``completed``), after ``timeout_s``
(``timeout``), after ``max_stuck_s`` stuck without a break (``blocked``), or when the
rear axle is more than ``max_deviation_m`` from the route (``route_deviation``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wamdiff2_ros.data.world import (
    EGO_LENGTH,
    EGO_REAR_AXLE_TO_CENTER,
    EGO_WIDTH,
    LANE_WIDTH,
    STOP_LINE_SETBACK,
    AgentBox,
    LanePath,
    RoadMap,
)
from wamdiff2_ros.evaluation.closed_loop.comfort import comfort_metrics
from wamdiff2_ros.evaluation.closed_loop.scoring import driving_score
from wamdiff2_ros.evaluation.geometry import relative_bearing
from wamdiff2_ros.geometry import box_corners, convex_overlap, footprint_corners, wrap_angle

STOPPED_SPEED = 0.1  # m/s: a collision while slower than this is not the ego's fault
STUCK_SPEED = 0.3  # m/s
LIGHT_LOOKAHEAD_M = 30.0
FRONT_CLEAR_M = 20.0
FRONT_CLEAR_NEAR_INTERSECTION_M = 35.0
CROSS_TRAFFIC_M = 50.0
YIELD_GAP_S = 4.5
NEAR_INTERSECTION_M = 20.0
OFF_ROAD_TOLERANCE_M = 0.3
STUCK_GRACE_S = 1.5  # a stop without reason shorter than this (e.g. starting on green) is not stuck
REAR_BEARING = math.radians(150.0)  # nuPlan's "agent behind"
OFF_LANE_M = 1.0  # |lateral offset from the route| beyond which a side contact is the ego's fault
FRONT_OFFSET = EGO_REAR_AXLE_TO_CENTER + EGO_LENGTH / 2


@dataclass
class EgoSample:
    """Ego rear-axle pose (map frame), speed and optionally yaw rate (rad/s) at ``time_s``."""

    time_s: float
    x: float
    y: float
    yaw: float
    speed: float
    yaw_rate: float | None = None

    def is_finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.time_s, self.x, self.y, self.yaw, self.speed))


@dataclass
class Event:
    """An infraction or notable moment on a route (map frame position)."""

    kind: str  # collision / red_light / off_road / stuck / route_deviation
    time_s: float
    x: float
    y: float
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "time_s": round(self.time_s, 2), "x": round(self.x, 2), "y": round(self.y, 2),
                **self.detail}  # fmt: skip


@dataclass(frozen=True)
class MonitorLimits:
    timeout_s: float = 120.0
    max_stuck_s: float = 25.0
    max_deviation_m: float = 8.0


def collision_fault(ego: EgoSample, agent: AgentBox, ego_off_lane: bool) -> tuple[bool, str]:
    """Whether a new contact with ``agent`` is the ego's fault, and why (NAVSIM's rules, closed loop).

    Stopped ego: not at fault. Agent behind the ego (bearing > 150 deg): rear-ended, not at
    fault. Pedestrian: at fault. Front bumper on the agent: at fault. Agent standing: at
    fault. Otherwise a side contact: at fault only when the ego is off its lane or the road.
    """
    if ego.speed <= STOPPED_SPEED:
        return False, "ego stopped"
    bearing = abs(float(relative_bearing(np.array([ego.x, ego.y, ego.yaw]), np.array([agent.x, agent.y]))))
    if bearing > REAR_BEARING:
        return False, "hit from behind"
    if agent.name == "pedestrian":
        return True, "moving ego hit a pedestrian"
    corners = footprint_corners(ego.x, ego.y, ego.yaw, EGO_LENGTH, EGO_WIDTH, EGO_REAR_AXLE_TO_CENTER)
    agent_box = box_corners(agent.x, agent.y, agent.length, agent.width, agent.yaw)
    if bool(convex_overlap(corners[[0, 3]], agent_box)):
        return True, "ego front bumper"
    if agent.speed <= 0.05:
        return True, "agent standing"
    if ego_off_lane:
        return True, "side contact, ego off its lane"
    return False, "side contact, ego in its lane"


@dataclass
class _StopLine:
    intersection: int
    arm: int
    centre: np.ndarray
    tangent: np.ndarray


def _stop_lines(road_map: RoadMap) -> list[_StopLine]:
    out = []
    for lane in road_map.lanes.values():
        if lane.kind != "lane" or lane.intersection < 0:
            continue
        x, y, h = lane.polyline.pose_at(lane.polyline.length - STOP_LINE_SETBACK)
        out.append(_StopLine(lane.intersection, lane.approach_arm, np.array([x, y]), np.array([math.cos(h), math.sin(h)])))
    return out


class RouteMonitor:
    """Accumulates the closed-loop metrics of one route (see the module docstring)."""

    def __init__(self, road_map: RoadMap, route_lanes: Sequence[int], start_s: float, goal_s: float,
                 limits: MonitorLimits | None = None) -> None:
        self.map = road_map
        self.path = LanePath(road_map, list(route_lanes))
        if not 0.0 <= start_s < goal_s <= self.path.length:
            raise ValueError(f"route start {start_s} and goal {goal_s} must satisfy 0 <= start < goal <= "
                             f"{self.path.length:.1f}")  # fmt: skip
        self.start_s, self.goal_s = float(start_s), float(goal_s)
        self.limits = limits or MonitorLimits()
        self.stop_lines = _stop_lines(road_map)
        self.buildings = [(b, box_corners(b.x, b.y, b.length, b.width, b.yaw)) for b in road_map.buildings]
        self.events: list[Event] = []
        self.samples: list[tuple[float, float, float, float, float, float]] = []  # t, x, y, yaw, speed, yaw_rate
        self.s = float(start_s)
        self.max_s = float(start_s)
        self.lateral = 0.0
        self.t0: float | None = None
        self.time_s = 0.0
        self.end_reason: str | None = None
        self.completed_at: float | None = None
        self.stuck_s = 0.0
        self.stuck_run_s = 0.0
        self.off_road_s = 0.0
        self.off_road_m = 0.0
        self.distance_m = 0.0
        self.plan_scores: list[dict[str, float]] = []
        self._contacts: set[str] = set()
        self._ran_red: set[tuple[int, int]] = set()
        self._off_road = False
        self._prev: EgoSample | None = None

    # ------------------------------------------------------------------ feeding

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    def update(self, ego: EgoSample, agents: Sequence[AgentBox] = ()) -> list[Event]:
        """Score one step: the ego now and the other road users now. Returns the new events."""
        if not ego.is_finite():
            raise ValueError(f"ego sample must be finite, got {ego}")
        if self.done:
            return []
        if self.t0 is None:
            self.t0 = ego.time_s
        prev = self._prev
        dt = 0.0 if prev is None else max(ego.time_s - prev.time_s, 0.0)
        step_m = 0.0 if prev is None else math.hypot(ego.x - prev.x, ego.y - prev.y)
        self.time_s = ego.time_s
        self.distance_m += step_m
        yaw_rate = ego.yaw_rate
        if yaw_rate is None:
            yaw_rate = 0.0 if prev is None or dt <= 0 else float(wrap_angle(ego.yaw - prev.yaw, method="modulo")) / dt
        self.samples.append((ego.time_s, ego.x, ego.y, ego.yaw, ego.speed, float(yaw_rate)))
        new: list[Event] = []
        deviation = self._progress(ego)
        corners = footprint_corners(ego.x, ego.y, ego.yaw, EGO_LENGTH, EGO_WIDTH, EGO_REAR_AXLE_TO_CENTER)
        off_road = not bool(np.all(self.map.is_drivable(corners[:, 0], corners[:, 1], margin=-OFF_ROAD_TOLERANCE_M)))
        if off_road:
            self.off_road_s += dt
            self.off_road_m += step_m
            if not self._off_road:
                new.append(Event("off_road", ego.time_s, ego.x, ego.y))
        self._off_road = off_road
        new += self._collisions(ego, agents, corners, off_road)
        if prev is not None:
            new += self._red_lights(prev, ego)
        new += self._stuck(ego, agents, dt)
        self.events += new
        self._prev = ego
        if self.max_s >= self.goal_s:
            self.end_reason, self.completed_at = "completed", ego.time_s - self.t0
        elif deviation > self.limits.max_deviation_m:
            self.events.append(Event("route_deviation", ego.time_s, ego.x, ego.y, {"distance_m": round(deviation, 1)}))
            self.end_reason = "route_deviation"
        elif self.stuck_run_s >= self.limits.max_stuck_s:
            self.end_reason = "blocked"
        elif ego.time_s - self.t0 >= self.limits.timeout_s:
            self.end_reason = "timeout"
        return new

    def record_plan_score(self, terms: dict[str, Any]) -> None:
        """Add the PDM terms of one plan (closed-loop PDMS = their mean over the route)."""
        keys = ("nc", "dac", "ddc", "ttc", "comfort", "ep", "pdms")
        self.plan_scores.append({k: float(terms[k]) for k in keys if terms.get(k) is not None})

    # ------------------------------------------------------------------ per-step checks

    def _progress(self, ego: EgoSample) -> float:
        """Update route progress; returns the distance from the route."""
        lo, hi = max(self.s - 30.0, 0.0), min(self.s + 60.0, self.path.length)
        s = np.linspace(lo, hi, max(int((hi - lo) / 0.25), 2) + 1)
        pts = self.path.poly.interpolate(s)
        d = np.hypot(pts[:, 0] - ego.x, pts[:, 1] - ego.y)
        i = int(np.argmin(d))
        self.s = float(s[i])
        self.max_s = max(self.max_s, self.s)
        h = pts[i, 2]
        self.lateral = -math.sin(h) * (ego.x - pts[i, 0]) + math.cos(h) * (ego.y - pts[i, 1])
        return float(d[i])

    def _collisions(self, ego: EgoSample, agents: Sequence[AgentBox], corners: np.ndarray, off_road: bool) -> list[Event]:
        touching: set[str] = set()
        new = []
        reach = EGO_LENGTH / 2 + 1.0
        cx = ego.x + EGO_REAR_AXLE_TO_CENTER * math.cos(ego.yaw)
        cy = ego.y + EGO_REAR_AXLE_TO_CENTER * math.sin(ego.yaw)
        near = [a for a in agents if math.hypot(a.x - cx, a.y - cy) <= reach + max(a.length, a.width) / 2]
        if near:
            boxes = np.stack([box_corners(a.x, a.y, a.length, a.width, a.yaw) for a in near])
            hits = convex_overlap(corners[None], boxes)
            for agent, hit in zip(near, hits, strict=True):
                if not hit:
                    continue
                touching.add(agent.track_token)
                if agent.track_token in self._contacts:
                    continue
                at_fault, why = collision_fault(ego, agent, off_road or abs(self.lateral) > OFF_LANE_M)
                kind = "pedestrian" if agent.name == "pedestrian" else "vehicle"
                new.append(Event("collision", ego.time_s, ego.x, ego.y, {
                    "with": kind, "agent": agent.track_token, "at_fault": at_fault, "why": why,
                    "ego_speed": round(ego.speed, 2), "agent_speed": round(agent.speed, 2),
                    "agent_box": [round(agent.x, 2), round(agent.y, 2), round(agent.length, 2), round(agent.width, 2),
                                  round(agent.yaw, 3)],
                }))  # fmt: skip
        if off_road:  # buildings stand off the road: only check when a corner left it
            for k, (building, bc) in enumerate(self.buildings):
                if math.hypot(building.x - cx, building.y - cy) > reach + max(building.length, building.width):
                    continue
                if bool(convex_overlap(corners, bc)):
                    token = f"building_{k}"
                    touching.add(token)
                    if token not in self._contacts:
                        new.append(Event("collision", ego.time_s, ego.x, ego.y, {
                            "with": "static", "agent": token, "at_fault": True, "why": "building",
                            "ego_speed": round(ego.speed, 2), "agent_speed": 0.0,
                        }))  # fmt: skip
        self._contacts = touching
        return new

    def _signal(self, intersection: int, arm: int, time_s: float) -> str:
        return self.map.intersections[intersection].signal_state(arm % 2, time_s)

    def _red_lights(self, prev: EgoSample, ego: EgoSample) -> list[Event]:
        p0 = np.array([prev.x + FRONT_OFFSET * math.cos(prev.yaw), prev.y + FRONT_OFFSET * math.sin(prev.yaw)])
        p1 = np.array([ego.x + FRONT_OFFSET * math.cos(ego.yaw), ego.y + FRONT_OFFSET * math.sin(ego.yaw)])
        new = []
        for line in self.stop_lines:
            d0 = float((p0 - line.centre) @ line.tangent)
            d1 = float((p1 - line.centre) @ line.tangent)
            if not d0 < 0.0 <= d1:
                continue
            frac = -d0 / (d1 - d0)
            at = p0 + frac * (p1 - p0)
            normal = np.array([-line.tangent[1], line.tangent[0]])
            if abs(float((at - line.centre) @ normal)) > LANE_WIDTH / 2 + 0.5:
                continue
            key = (line.intersection, line.arm)
            if key in self._ran_red or self._signal(line.intersection, line.arm, ego.time_s) != "red":
                continue
            self._ran_red.add(key)
            new.append(Event("red_light", ego.time_s, float(at[0]), float(at[1]),
                             {"intersection": line.intersection, "arm": line.arm, "ego_speed": round(ego.speed, 2)}))
        return new

    def _light_ahead(self, time_s: float) -> str | None:
        """State of the route's next stop line within the look-ahead (None if none)."""
        front = self.s + FRONT_OFFSET
        for s_stop, inter, arm in self.path.stops:
            if -1.0 <= s_stop - front <= LIGHT_LOOKAHEAD_M:
                return self._signal(inter, arm, time_s)
        return None

    def _next_turn(self) -> tuple[int, str] | None:
        """(intersection, turn) of the route's next connector if the front is within 20 m of it or on it."""
        front = self.s + FRONT_OFFSET
        for s_in, s_out, inter, _arm, turn, _lane in self.path.turns:
            if s_in - NEAR_INTERSECTION_M - STOP_LINE_SETBACK <= front <= s_out + 2.0:
                return inter, turn
        return None

    def _blocked_ahead(self, ego: EgoSample, agents: Sequence[AgentBox]) -> bool:
        """Whether the ego has a reason to wait (see the module docstring)."""
        near = [a for a in agents if math.hypot(a.x - ego.x, a.y - ego.y) <= CROSS_TRAFFIC_M + 10.0]
        if not near:
            return False
        turn = self._next_turn()
        reach = FRONT_CLEAR_M if turn is None else FRONT_CLEAR_NEAR_INTERSECTION_M
        front = self.s + FRONT_OFFSET
        s_agent, lateral, _ = self.path.poly.project(np.array([[a.x, a.y] for a in near]))
        for agent, sa, la in zip(near, s_agent, lateral, strict=True):
            gap = sa - front - agent.length / 2
            if abs(la) <= 2.5 + agent.width / 2 and -agent.length <= gap <= (reach if agent.speed < 3.0 else 8.0):
                return True
        if turn is None:
            return False
        inter, manoeuvre = turn
        box = self.map.intersections[inter]
        approach_heading = box.heading  # the route enters on arm 2, heading along arm 0
        cross_red = box.signal_state(1, ego.time_s) == "red"
        for agent in near:
            if self.map.in_intersection(agent.x, agent.y) == inter:
                return True
            to_centre = box.center - np.array([agent.x, agent.y])
            distance = float(np.hypot(*to_centre))
            closing = agent.vx * to_centre[0] + agent.vy * to_centre[1]
            if agent.speed < 1.0 or closing <= 0.0 or (distance - box.half_size) / agent.speed > YIELD_GAP_S:
                continue
            relative = abs(float(wrap_angle(agent.yaw - approach_heading, method="modulo")))
            crossing = math.radians(35.0) < relative < math.radians(145.0)
            if (crossing and not cross_red) or (relative >= math.radians(145.0) and manoeuvre == "left"):
                return True
        return False

    def _stuck(self, ego: EgoSample, agents: Sequence[AgentBox], dt: float) -> list[Event]:
        stuck = ego.speed < STUCK_SPEED
        if stuck:
            light = self._light_ahead(ego.time_s)
            stuck = light not in ("red", "yellow") and not self._blocked_ahead(ego, agents)
        if not stuck:
            self.stuck_run_s = 0.0
            return []
        before = self.stuck_run_s
        self.stuck_run_s += dt
        if self.stuck_run_s < STUCK_GRACE_S:
            return []
        if before < STUCK_GRACE_S:  # the run qualifies: count it from its start
            self.stuck_s += self.stuck_run_s
            return [Event("stuck", ego.time_s, ego.x, ego.y)]
        self.stuck_s += dt
        return []

    # ------------------------------------------------------------------ result

    def finish(self, reason: str | None = None) -> dict[str, Any]:
        """The route's metrics; ``reason`` ends a route that is still running (e.g. "aborted")."""
        if self.end_reason is None:
            self.end_reason = reason or "unfinished"
        return self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        """The metrics so far without ending the route (``end_reason`` None while it runs)."""
        length = self.goal_s - self.start_s
        completion = float(np.clip((self.max_s - self.start_s) / length, 0.0, 1.0))
        collisions = {"pedestrian": 0, "vehicle": 0, "static": 0}
        not_at_fault = 0
        for e in self.events:
            if e.kind == "collision":
                if e.detail["at_fault"]:
                    collisions[e.detail["with"]] += 1
                else:
                    not_at_fault += 1
        counts = {
            "collision_pedestrian": collisions["pedestrian"], "collision_vehicle": collisions["vehicle"],
            "collision_static": collisions["static"],
            "red_light": sum(e.kind == "red_light" for e in self.events),
        }  # fmt: skip
        # CARLA: the share of the route driven off the road does not count as completed
        on_road = float(max(completion - self.off_road_m / length, 0.0))
        score, penalty = driving_score(on_road, counts)
        samples = np.array(self.samples, dtype=np.float64).reshape(-1, 6)
        out: dict[str, Any] = {
            "end_reason": self.end_reason,
            "completed": self.end_reason == "completed",
            "route_length_m": round(length, 2),
            "route_completion": round(completion, 4),
            "route_completion_on_road": round(on_road, 4),
            "driving_score": round(score, 4),
            "infraction_penalty": round(penalty, 4),
            "infractions": counts,
            "collisions_at_fault": sum(collisions.values()),
            "collisions_not_at_fault": not_at_fault,
            "red_light_violations": counts["red_light"],
            "off_road_events": sum(e.kind == "off_road" for e in self.events),
            "off_road_s": round(self.off_road_s, 2),
            "off_road_m": round(self.off_road_m, 2),
            "stuck_s": round(self.stuck_s, 2),
            "time_s": round(self.time_s - (self.t0 or 0.0), 2),
            "time_to_complete_s": None if self.completed_at is None else round(self.completed_at, 2),
            "distance_m": round(self.distance_m, 2),
            "comfort": comfort_metrics(samples[:, 0], samples[:, 4], samples[:, 5]),
            "clean": self.end_reason == "completed" and sum(counts.values()) == 0 and self.off_road_m == 0.0,
        }
        if self.plan_scores:
            keys = sorted({k for row in self.plan_scores for k in row})
            out["pdm"] = {k: round(float(np.mean([r[k] for r in self.plan_scores if k in r])), 4) for k in keys}
            out["pdm"]["plans_scored"] = len(self.plan_scores)
        return out
