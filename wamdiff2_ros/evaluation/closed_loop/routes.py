"""The closed-loop route set: fixed, seeded scenarios in the synthetic world, and the world each one builds.

Route ``i`` of seed ``S`` is always the same (a prefix of a longer set is the shorter
set). Kinds cycle through :data:`ROUTE_KINDS`:

* ``straight_green`` / ``left_green`` / ``right_green``: one signalised intersection,
  green when the ego arrives at its nominal speed;
* ``straight_red`` / ``left_red`` / ``right_red``: red on arrival (stop, then go on green);
* ``start_on_red``: the ego stands at the stop line, the light turns green after 3-6 s;
* ``lead_brake``: a vehicle ahead in the ego lane stops hard (4-6 m/s^2), waits, drives on;
* ``pedestrian_crossing``: a pedestrian crosses the road in front of the ego (from the
  right curb or from the far side);
* ``two_intersections``: straight through a green one, then a turn at a second one.

Every route also has the world's own cross, oncoming and side-road traffic (reacting
to the ego) and sidewalk pedestrians; the ego lane has no random traffic, so the
scenario is what the kind says. A route ends at its goal (40 m of road before the end
of its lane sequence, so a 4 s plan near the goal still lies on the map) or at its
timeout.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from wamdiff2_ros.data.world import (
    EGO_LENGTH,
    EGO_REAR_AXLE_TO_CENTER,
    LANE_WIDTH,
    SIDEWALK_WIDTH,
    STOP_LINE_SETBACK,
    World,
    WorldConfig,
    scripted_road_map,
)
from wamdiff2_ros.data.world.rules import checked_world_rules

ROUTE_KINDS = (
    "straight_green", "left_red", "pedestrian_crossing", "right_green", "lead_brake",
    "straight_red", "start_on_red", "left_green", "right_red", "two_intersections",
)  # fmt: skip
FRONT_OFFSET = EGO_REAR_AXLE_TO_CENTER + EGO_LENGTH / 2  # rear axle -> front bumper
START_S = 10.0  # ego rear axle on the first lane
GOAL_MARGIN_M = 40.0  # goal: this far before the end of the route's lane sequence (4 s plans stay on the map)
YELLOW_S = 3.0
ALL_RED_S = 2.5
CRUISE_ACCEL = 1.0  # m/s^2, for the nominal arrival time
TAIL_M = GOAL_MARGIN_M - 12.0  # extra road on the last piece so the goal stays 12 m short of the old end


@dataclass(frozen=True)
class SignalPlan:
    """Timing of one intersection's signal (route axis green ``green_s[0]``, cross axis ``green_s[1]``)."""

    green_s: tuple[float, float]
    offset_s: float
    on_arrival: str  # green / red / start_red (what the ego meets at its nominal arrival)
    nominal_arrival_s: float


@dataclass(frozen=True)
class LeadBrake:
    gap_m: float  # lead's centre ahead of the ego's rear axle at the start
    speed: float
    desired_speed: float
    after_s: float
    decel: float
    hold_s: float
    trigger_gap: float = 30.0


@dataclass(frozen=True)
class CrossingPedestrian:
    route_s: float
    side: float  # -1: from the right curb, +1: from the far (left) curb
    speed: float
    trigger_distance: float


@dataclass(frozen=True)
class RouteSpec:
    """Everything that makes a route: its map pieces, the ego's start, signals, scripted actors, timeout."""

    index: int
    kind: str
    seed: int  # world seed (traffic, pedestrians, scenery)
    pieces: tuple[tuple, ...]
    origin: tuple[float, float]
    heading: float
    start_s: float
    initial_speed: float
    desired_speed: float
    timeout_s: float
    signals: tuple[SignalPlan, ...] = ()
    lead: LeadBrake | None = None
    pedestrian: CrossingPedestrian | None = None
    vehicle_density: float = 0.8
    pedestrian_density: float = 1.0
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return f"r{self.index:02d}_{self.kind}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["name"] = self.name
        return out


def _arrival_time(distance: float, v0: float, v_desired: float, accel: float = CRUISE_ACCEL) -> float:
    """Seconds to cover ``distance`` from ``v0`` accelerating at ``accel`` up to ``v_desired``."""
    t_acc = max(v_desired - v0, 0.0) / accel
    d_acc = (v0 + v_desired) / 2 * t_acc
    if distance >= d_acc:
        return t_acc + (distance - d_acc) / max(v_desired, 0.1)
    return (-v0 + math.sqrt(v0 * v0 + 2 * accel * distance)) / accel


def _signal(rng: np.random.Generator, on_arrival: str, t_arrival: float) -> SignalPlan:
    """Route-axis timing so that the light is ``on_arrival`` when the ego arrives at ``t_arrival``."""
    g0 = float(rng.uniform(14.0, 18.0))
    g1 = float(rng.uniform(6.0, 9.0))
    cycle = g0 + g1 + 2 * (YELLOW_S + ALL_RED_S)
    if on_arrival == "green":
        local = g0 - float(rng.uniform(6.0, 8.0))  # 6-8 s of green left on arrival
    elif on_arrival == "red":
        local = g0 + YELLOW_S + float(rng.uniform(1.5, 3.0))  # red for 1.5-3 s already
    elif on_arrival == "start_red":
        local = cycle - float(rng.uniform(3.0, 6.0))  # green in 3-6 s
    else:
        raise ValueError(f"unknown signal plan {on_arrival!r}")
    return SignalPlan((g0, g1), float((local - t_arrival) % cycle), on_arrival, float(t_arrival))


def _approach(rng: np.random.Generator) -> float:
    """Metres from the ego's front bumper to the first stop line."""
    return float(rng.uniform(40.0, 60.0))


def _first_road(approach: float) -> float:
    """Length of the road before the first intersection for a given approach distance."""
    return START_S + FRONT_OFFSET + approach + STOP_LINE_SETBACK


def _ped_arrival_time(side: float, speed: float) -> float:
    """Seconds from a crossing pedestrian's start until it is at the middle of the ego lane."""
    reach = LANE_WIDTH + SIDEWALK_WIDTH / 2  # curb start, from the road centreline
    walked = reach - LANE_WIDTH / 2 if side < 0 else reach + LANE_WIDTH / 2
    return walked / speed


def route_spec(index: int, seed: int = 0) -> RouteSpec:
    """Route ``index`` of the set of seed ``seed``."""
    if index < 0:
        raise ValueError(f"route index must be >= 0, got {index}")
    kind = ROUTE_KINDS[index % len(ROUTE_KINDS)]
    rng = np.random.default_rng([int(seed), int(index), 16])
    world_seed = int(rng.integers(0, 2**31 - 1))
    origin = (float(rng.uniform(-2000, 2000)), float(rng.uniform(-2000, 2000)))
    heading = float(rng.uniform(-math.pi, math.pi))
    v_des = float(rng.uniform(8.0, 11.0))
    v0 = v_des * float(rng.uniform(0.6, 0.9))
    exit_len = float(rng.uniform(45.0, 55.0))  # intersection exit -> end of the map
    common = dict(index=index, kind=kind, seed=world_seed, origin=origin, heading=heading, desired_speed=v_des,
                  vehicle_density=float(rng.uniform(0.6, 1.0)))  # fmt: skip
    if kind.startswith(("straight_", "left_", "right_")):
        turn, light = kind.split("_")
        approach = _approach(rng)
        t_arr = _arrival_time(approach, v0, v_des)
        signal = _signal(rng, light, t_arr)
        distance = approach + 2 * 9.0 + exit_len
        wait = 16.0 if light == "red" else 0.0
        return RouteSpec(
            pieces=(("straight", _first_road(approach)), ("intersection", turn), ("straight", exit_len + TAIL_M)),
            start_s=START_S, initial_speed=v0, timeout_s=_timeout(distance, v_des, wait), signals=(signal,),
            tags=(turn, f"{light} on arrival"), **common,
        )
    if kind == "start_on_red":
        turn = str(rng.choice(["left", "straight", "right"]))
        approach = 2.5
        signal = _signal(rng, "start_red", 0.0)
        distance = approach + 18.0 + exit_len
        return RouteSpec(
            pieces=(("straight", _first_road(approach)), ("intersection", turn), ("straight", exit_len + TAIL_M)),
            start_s=START_S, initial_speed=0.0, timeout_s=_timeout(distance, v_des, 8.0), signals=(signal,),
            tags=(turn, "start at a red light"), **common,
        )
    if kind == "lead_brake":
        angle = math.radians(float(rng.uniform(12.0, 30.0))) * (1 if rng.random() < 0.5 else -1)
        radius = float(rng.uniform(80.0, 150.0))
        pieces = (("straight", 40.0), ("arc", radius, angle), ("straight", float(rng.uniform(70.0, 90.0)) + TAIL_M))
        lead = LeadBrake(
            gap_m=float(rng.uniform(20.0, 28.0)), speed=v0, desired_speed=v_des, after_s=float(rng.uniform(3.0, 6.0)),
            decel=float(rng.uniform(4.0, 6.0)), hold_s=float(rng.uniform(2.0, 4.0)),
        )
        distance = 40.0 + radius * abs(angle) + pieces[2][1] - TAIL_M - START_S
        return RouteSpec(pieces=pieces, start_s=START_S, initial_speed=v0, timeout_s=_timeout(distance, v_des, 8.0),
                         lead=lead, tags=("straight", "lead brakes"), **common)  # fmt: skip
    if kind == "pedestrian_crossing":
        angle = math.radians(float(rng.uniform(10.0, 25.0))) * (1 if rng.random() < 0.5 else -1)
        radius = float(rng.uniform(90.0, 160.0))
        first = float(rng.uniform(75.0, 90.0))
        pieces = (("straight", first), ("arc", radius, angle), ("straight", 50.0 + TAIL_M))
        side = -1.0 if rng.random() < 0.5 else 1.0
        speed = float(rng.uniform(1.1, 1.5))
        cross_s = first - float(rng.uniform(5.0, 12.0))
        trigger = FRONT_OFFSET + v_des * (_ped_arrival_time(side, speed) + float(rng.uniform(0.5, 1.5)))
        distance = first + radius * abs(angle) + 50.0 - START_S
        return RouteSpec(
            pieces=pieces, start_s=START_S, initial_speed=v0, timeout_s=_timeout(distance, v_des, 8.0),
            pedestrian=CrossingPedestrian(cross_s, side, speed, trigger),
            tags=("straight", "pedestrian crosses from the " + ("right" if side < 0 else "left")), **common,
        )
    if kind == "two_intersections":
        turn = str(rng.choice(["left", "right"]))
        light2 = "red" if rng.random() < 0.5 else "green"
        approach = _approach(rng)
        middle = float(rng.uniform(40.0, 55.0))
        t1 = _arrival_time(approach, v0, v_des)
        t2 = t1 + (18.0 + middle) / v_des
        signals = (_signal(rng, "green", t1), _signal(rng, light2, t2))
        distance = approach + middle + 4 * 9.0 + exit_len
        return RouteSpec(
            pieces=(("straight", _first_road(approach)), ("intersection", "straight"), ("straight", middle),
                    ("intersection", turn), ("straight", exit_len + TAIL_M)),
            start_s=START_S, initial_speed=v0, signals=signals,
            timeout_s=_timeout(distance, v_des, 16.0 if light2 == "red" else 0.0),
            tags=("straight", turn, f"second {light2} on arrival"), **common,
        )
    raise AssertionError(kind)


def _timeout(distance: float, v_desired: float, wait: float) -> float:
    return round(20.0 + 1.5 * distance / v_desired + wait, 1)


def route_set(count: int, seed: int = 0, kinds: tuple[str, ...] | list[str] | None = None) -> list[RouteSpec]:
    """The first ``count`` routes of seed ``seed`` (only of ``kinds`` if given; same index -> same route)."""
    if count < 1:
        raise ValueError(f"route count must be >= 1, got {count}")
    if kinds:
        unknown = sorted(set(kinds) - set(ROUTE_KINDS))
        if unknown:
            raise ValueError(f"unknown route kinds {unknown}; expected some of {', '.join(ROUTE_KINDS)}")
    out, index = [], 0
    while len(out) < count:
        if not kinds or ROUTE_KINDS[index % len(ROUTE_KINDS)] in kinds:
            out.append(route_spec(index, seed))
        index += 1
    return out


@dataclass
class RouteWorld:
    """A route's world at t = 0 and where its route starts and ends (arc length of the route lanes)."""

    spec: RouteSpec
    world: World
    start_s: float
    goal_s: float

    @property
    def route_length(self) -> float:
        return self.goal_s - self.start_s


def build_route(spec: RouteSpec, buildings: bool = True, rules: dict[str, float] | None = None) -> RouteWorld:
    """The world of ``spec``: scripted map, signal timing, ego start, scripted actors; ``rules``: the world rules
    (``data.world.rules.WORLD_RULES``) of the model that drives it (WorldConfig's defaults where not given)."""
    rng = np.random.default_rng([spec.seed, 7])
    road_map = scripted_road_map(rng, [tuple(p) for p in spec.pieces], spec.origin, spec.heading,
                                 buildings=buildings, name=spec.name)  # fmt: skip
    for inter, plan in zip(road_map.intersections, spec.signals, strict=False):
        inter.green_s, inter.offset_s = tuple(plan.green_s), plan.offset_s
        inter.yellow_s, inter.all_red_s = YELLOW_S, ALL_RED_S
    config = WorldConfig(
        ego_speed=(spec.desired_speed, spec.desired_speed), ego_start_s=spec.start_s,
        ego_initial_speed=spec.initial_speed, ego_lane_traffic=False, vehicle_density=spec.vehicle_density,
        pedestrian_density=spec.pedestrian_density, buildings=buildings, lateral_wander=0.1,
        **checked_world_rules(rules),
    )  # fmt: skip
    world = World(spec.seed, config, road_map=road_map)
    if spec.lead is not None:
        lead = spec.lead
        token = world.add_vehicle(spec.start_s + lead.gap_m, lead.speed, lead.desired_speed)
        world.schedule_brake(token, lead.after_s, lead.decel, lead.hold_s, lead.trigger_gap)
    if spec.pedestrian is not None:
        ped = spec.pedestrian
        world.add_crossing_pedestrian(ped.route_s, ped.side, ped.speed, ped.trigger_distance)
    goal = world.ego.path.length - GOAL_MARGIN_M
    return RouteWorld(spec, world, spec.start_s, goal)
