"""The closed-loop demo's route summary: the route monitor's metrics read from a bag, and the route's BEV plot.

sim_node in route mode publishes the :class:`~wamdiff2_ros.evaluation.closed_loop.monitor.RouteMonitor`
metrics as JSON on ``/sim/route_metrics`` (the last one with ``"final": true``). This
module takes the last (preferably final) one from a demo bag and keeps the keys the
closed-loop benchmark reports (completion, collisions by kind, red lights, off-road,
stuck time, driving score, ...), so the demo and ``wamdiff2 eval closed-loop`` speak the
same numbers. Reads the bag with `rosbags` (no rclpy).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.data.bags import BagReadReport, read_messages
from wamdiff2_ros.evaluation.closed_loop.report import plot_route
from wamdiff2_ros.evaluation.closed_loop.routes import route_spec
from wamdiff2_ros.evaluation.closed_loop.runner import RouteResult
from wamdiff2_ros.geometry import yaw_from_quaternion

METRICS_TOPIC = "/sim/route_metrics"
ODOMETRY_TOPIC = "/ego/odometry"
BENCHMARK_KEYS = (
    "end_reason", "completed", "route_length_m", "route_completion", "route_completion_on_road", "driving_score",
    "infraction_penalty", "infractions", "collisions_at_fault", "collisions_not_at_fault", "red_light_violations",
    "off_road_events", "off_road_s", "off_road_m", "stuck_s", "time_s", "time_to_complete_s", "distance_m", "comfort",
    "clean",
)  # fmt: skip
LOCKSTEP_KEYS = ("lockstep", "plans_received", "plans_missed", "commands_received", "commands_missed")


def read_route_metrics(bag: Path) -> tuple[dict[str, Any] | None, np.ndarray, list[str]]:
    """(last route metrics, final preferred; ego path rows (t, x, y, yaw, speed); problems) from a bag."""
    report = BagReadReport(str(bag))
    latest: dict[str, Any] | None = None
    path: list[tuple[float, float, float, float, float]] = []
    problems: list[str] = []
    for topic, _, _, msg in read_messages(bag, topics=[METRICS_TOPIC, ODOMETRY_TOPIC], report=report):
        if topic == ODOMETRY_TOPIC:
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            t = int(msg.header.stamp.sec) + int(msg.header.stamp.nanosec) / 1e9
            yaw = yaw_from_quaternion((q.w, q.x, q.y, q.z))
            path.append((t, float(p.x), float(p.y), yaw, float(msg.twist.twist.linear.x)))
            continue
        try:
            metrics = json.loads(msg.data)
        except ValueError as exc:
            problems.append(f"unparsable {METRICS_TOPIC} message: {exc}")
            continue
        if latest is None or not latest.get("final") or metrics.get("final"):
            latest = metrics
    rows = np.array(path, dtype=np.float64).reshape(-1, 5)
    if len(rows):
        rows[:, 0] -= rows[0, 0]
    return latest, rows, problems + list(report.problems)


def route_summary(bag: Path, plot: Path | None = None, policy: str = "demo") -> dict[str, Any]:
    """The benchmark's metrics of the demo's route (plus lock-step counters); ``plot``: BEV with infractions."""
    metrics, path, problems = read_route_metrics(bag)
    if metrics is None:
        return {"error": f"no route metrics on {METRICS_TOPIC} (sim_node not in route mode, or nothing recorded)",
                "problems": problems}  # fmt: skip
    out: dict[str, Any] = {"route": metrics.get("route"), "route_index": metrics.get("route_index"),
                           "route_seed": metrics.get("route_seed"), "final": bool(metrics.get("final")),
                           "sim_time_s": metrics.get("sim_time_s")}  # fmt: skip
    out.update({k: metrics.get(k) for k in BENCHMARK_KEYS})
    if not out["final"]:
        out["end_reason"] = "unfinished (the demo stopped before the route ended)"
    infractions = metrics.get("infractions") or {}
    out["collisions_at_fault_by_kind"] = {kind: int(infractions.get(f"collision_{kind}", 0))
                                          for kind in ("pedestrian", "vehicle", "static")}  # fmt: skip
    out.update({k: metrics.get(k) for k in LOCKSTEP_KEYS})
    out["events"] = metrics.get("events", [])
    out["problems"] = problems
    if plot is not None:
        _plot(plot, metrics, path, policy)
    return out


def headline(summary: dict[str, Any]) -> str:
    """One line with the benchmark's headline numbers."""
    if "error" in summary:
        return summary["error"]
    c = summary["collisions_at_fault_by_kind"]
    return (f"{summary['route']}: completion {summary['route_completion']:.3f}, driving score "
            f"{summary['driving_score']:.3f}, at-fault collisions {summary['collisions_at_fault']} "
            f"(pedestrian {c['pedestrian']}, vehicle {c['vehicle']}, static {c['static']}), red lights "
            f"{summary['red_light_violations']}, off-road {summary['off_road_m']} m, stuck {summary['stuck_s']} s, "
            f"end: {summary['end_reason']}")  # fmt: skip


def _plot(plot: Path, metrics: dict[str, Any], path: np.ndarray, policy: str) -> None:
    spec = route_spec(int(metrics["route_index"]), int(metrics["route_seed"]))
    shown = dict(metrics)
    if not metrics.get("final"):
        shown["end_reason"] = "unfinished"
    plot_route(plot, spec, [RouteResult(spec.name, policy, shown, metrics.get("events", []), path)])
