"""Drive one route in-process: plan at a fixed rate in simulated time, track the plan, step the world, score.

Loop (``physics_hz`` steps per simulated second, default 20 like ``sim_node`` and the
follower): every ``1 / plan_hz`` s (default 2 Hz, the rate of the training frames and
of ``drive_node``) the policy plans from the current camera images, ego status and
route command; planning takes no simulated time (the world waits for the model). The world
runs under the policy's own world rules (``world_rules``: the driving command's look-ahead
and the lamps' visor its checkpoint was trained with).
Between plans the follower's controller (:class:`~wamdiff2_ros.control.PurePursuit`,
pure pursuit + PID, the plan anchored to the pose it was made at) turns the plan into
(speed, yaw-rate) commands for the kinematic bicycle; the world then advances with the
ego held at that pose, and the other road users react to it. The autopilot baseline
instead lets the world drive the ego. Each step feeds the route monitor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wamdiff2_ros.agent import EgoMotion
from wamdiff2_ros.control import PurePursuit, from_frame, to_frame
from wamdiff2_ros.evaluation.closed_loop.monitor import EgoSample, MonitorLimits, RouteMonitor
from wamdiff2_ros.evaluation.closed_loop.pdm_probe import score_plan
from wamdiff2_ros.evaluation.closed_loop.policies import Observation, Plan
from wamdiff2_ros.evaluation.closed_loop.routes import RouteSpec, build_route
from wamdiff2_ros.evaluation.closed_loop.vehicle import KinematicBicycle
from wamdiff2_ros.model.codecs import waypoint_times


@dataclass(frozen=True)
class RunSettings:
    plan_hz: float = 2.0
    physics_hz: float = 20.0
    pdm_every: int = 2  # score every k-th plan with the PDM terms (0: never)
    image_size: tuple[int, int] = (256, 128)
    trace_hz: float = 5.0  # ego path samples kept for the BEV plot

    def __post_init__(self) -> None:
        if not 0.1 <= self.plan_hz <= self.physics_hz:
            raise ValueError(f"plan_hz must be in [0.1, physics_hz={self.physics_hz}], got {self.plan_hz}")
        if not 1.0 <= self.physics_hz <= 200.0:
            raise ValueError(f"physics_hz must be in [1, 200], got {self.physics_hz}")
        if self.pdm_every < 0:
            raise ValueError(f"pdm_every must be >= 0, got {self.pdm_every}")


@dataclass
class RouteResult:
    """One policy on one route: metrics, events, the ego path (t, x, y, yaw, speed) and plan statistics."""

    route: str
    policy: str
    metrics: dict[str, Any]
    events: list[dict[str, Any]]
    path: np.ndarray
    plans: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def to_json(self, with_path: bool = False) -> dict[str, Any]:
        out = {"route": self.route, "policy": self.policy, **self.metrics, "events": self.events,
               "plans": self.plans, "wall_s": round(self.wall_s, 2)}  # fmt: skip
        if with_path:
            out["path"] = np.round(self.path, 3).tolist()
        return out


def run_route(spec: RouteSpec, policy: Any, policy_name: str, settings: RunSettings | None = None,
              on_plan: Callable[[float], None] | None = None) -> RouteResult:
    """Drive ``spec`` with ``policy`` until the monitor ends the route (goal, timeout, blocked, deviation).

    ``on_plan(sim_time_s)`` is called at every planning step (progress display).
    """
    settings = settings or RunSettings()
    start_wall = time.perf_counter()
    route = build_route(spec, rules=getattr(policy, "world_rules", None))
    world = route.world
    monitor = RouteMonitor(world.map, world.map.route, route.start_s, route.goal_s, MonitorLimits(timeout_s=spec.timeout_s))
    dt = 1.0 / settings.physics_hz
    plan_every = max(1, int(round(settings.physics_hz / settings.plan_hz)))
    trace_every = max(1, int(round(settings.physics_hz / settings.trace_hz)))
    ego = world.ego_state()
    vehicle = KinematicBicycle(ego.x, ego.y, ego.yaw, ego.speed)
    controller = PurePursuit()
    times = waypoint_times()
    plan_world: np.ndarray | None = None
    plan_stamp = 0.0
    plans: list[Plan] = []
    pdm_count = 0
    trace = []
    tick = 0
    monitor.update(EgoSample(world.time_s, ego.x, ego.y, ego.yaw, ego.speed, 0.0), world.agents())
    while not monitor.done:
        pose = (vehicle.x, vehicle.y, vehicle.yaw)
        if tick % trace_every == 0:
            trace.append((world.time_s, *pose, vehicle.v))
        plan_due = tick % plan_every == 0
        if plan_due and on_plan is not None:
            on_plan(world.time_s)
        if policy.drives_world:
            if plan_due and settings.pdm_every and (tick // plan_every) % settings.pdm_every == 0:
                monitor.record_plan_score(score_plan(world, pose, vehicle.v, None))
                pdm_count += 1
            world.step(dt)
            e = world.ego_state()
            vehicle.x, vehicle.y, vehicle.yaw, vehicle.v = e.x, e.y, e.yaw, e.speed
            vehicle.accel, vehicle.yaw_rate = e.ax, e.yaw_rate
        else:
            if plan_due:
                obs = Observation(
                    world.time_s,
                    EgoMotion((vehicle.v, 0.0), (vehicle.accel, vehicle.v * vehicle.yaw_rate)),
                    world.route_command(),
                    world.render(policy.cameras, settings.image_size) if policy.cameras else {},
                )
                plan = policy.plan(obs)
                plans.append(plan)
                plan_world, plan_stamp = from_frame(plan.trajectory[:, :2], pose), world.time_s
                if settings.pdm_every and (tick // plan_every) % settings.pdm_every == 0:
                    monitor.record_plan_score(score_plan(world, pose, vehicle.v, plan.trajectory))
                    pdm_count += 1
            assert plan_world is not None
            v_cmd, w_cmd, _ = controller.command(to_frame(plan_world, pose), times, world.time_s - plan_stamp,
                                                 vehicle.v, dt)  # fmt: skip
            vehicle.step(v_cmd, w_cmd, dt)
            world.step_with_ego(vehicle.x, vehicle.y, vehicle.yaw, vehicle.v, dt, vehicle.accel)
        tick += 1
        monitor.update(EgoSample(world.time_s, vehicle.x, vehicle.y, vehicle.yaw, vehicle.v, vehicle.yaw_rate),
                       world.agents())  # fmt: skip
    trace.append((world.time_s, vehicle.x, vehicle.y, vehicle.yaw, vehicle.v))
    metrics = monitor.finish()
    stats = _plan_stats(plans, pdm_count)
    if getattr(policy, "confidence_threshold", None) is not None:  # a model's decode threshold (its own by default)
        stats["confidence_threshold"] = float(policy.confidence_threshold)
    return RouteResult(spec.name, policy_name, metrics, [e.to_json() for e in monitor.events], np.array(trace),
                       stats, time.perf_counter() - start_wall)  # fmt: skip


def _plan_stats(plans: list[Plan], pdm_count: int) -> dict[str, Any]:
    if not plans:
        return {"plans": 0, "pdm_scored": pdm_count}
    latency = np.array([p.latency_ms for p in plans])
    return {
        "plans": len(plans),
        "fallbacks": int(sum(not p.valid for p in plans)),
        "fallback_rate": round(float(np.mean([not p.valid for p in plans])), 4),
        "latency_ms_mean": round(float(latency.mean()), 1),
        "latency_ms_p95": round(float(np.percentile(latency, 95)), 1),
        "tokens_mean": round(float(np.mean([p.tokens for p in plans])), 1),
        "pdm_scored": pdm_count,
    }
