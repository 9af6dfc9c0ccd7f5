"""Closed-loop report: the JSON payload, a Markdown table (per policy and per route) and BEV plots per route.

The BEV plot of a route has one panel per policy: the drivable area, the route, the
ego's path coloured by speed, and its infractions (collisions, red lights, leaving the
road, getting stuck, leaving the route). The targets of the benchmark are checked and
stated (met or not) under the table.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.closed_loop.routes import RouteSpec, build_route
from wamdiff2_ros.evaluation.closed_loop.runner import RouteResult
from wamdiff2_ros.evaluation.closed_loop.scoring import PENALTIES
from wamdiff2_ros.evaluation.report import format_cell
from wamdiff2_ros.evaluation.stats import paired_bootstrap
from wamdiff2_ros.geometry import box_corners

COLUMNS = (
    ("driving_score", "DS"),
    ("route_completion", "RC"),
    ("infraction_penalty", "IP"),
    ("routes_clean", "clean"),
    ("collisions_at_fault", "coll. (at fault)"),
    ("collisions_not_at_fault", "coll. (not at fault)"),
    ("red_light_violations", "red lights"),
    ("off_road_m", "off road [m]"),
    ("stuck_s", "stuck [s]"),
    ("time_to_complete_s", "time to goal [s]"),
    ("lon_jerk_abs_p95", "jerk p95 [m/s³]"),
    ("lat_accel_abs_p95", "lat. acc. p95 [m/s²]"),
    ("closed_loop_pdms", "CL-PDMS"),
    ("fallback_rate", "fallback rate"),
    ("plan_latency_ms_mean", "plan [ms]"),
)
MARKERS = {
    "collision": ("X", "red"),
    "red_light": ("s", "darkorange"),
    "off_road": ("^", "purple"),
    "stuck": ("o", "gold"),
    "route_deviation": ("D", "black"),
}


def targets(summary: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """(target, met or None when a row is missing, measured values) for the issue's targets."""
    def find(prefix: str) -> Mapping[str, Any] | None:
        return next((v for k, v in summary.items() if k == prefix or k.startswith(prefix + " (")), None)

    out: list[tuple[str, bool | None, str]] = []
    auto = find("autopilot")
    if auto is not None:
        share = auto["routes_clean"] / max(auto["routes"], 1)
        out.append(("autopilot completes almost every route (>= 90 %) without infraction", share >= 0.9,
                    f"{auto['routes_clean']}/{auto['routes']} clean"))  # fmt: skip
    student, cv, ar = find("student"), find("constant-velocity"), find("ar")
    if student is not None and cv is not None:
        out.append(("student DS > constant velocity DS", student["driving_score"] > cv["driving_score"],
                    f"{student['driving_score']:.3f} vs {cv['driving_score']:.3f}"))  # fmt: skip
    if student is not None and ar is not None:
        out.append(("student DS >= AR DS", student["driving_score"] >= ar["driving_score"],
                    f"{student['driving_score']:.3f} vs {ar['driving_score']:.3f}"))  # fmt: skip
    if student is not None:
        ok = student["route_completion"] >= 0.8 and student["collisions_at_fault"] == 0
        out.append(("stretch: student RC >= 0.8 and no at-fault collision", ok,
                    f"RC {student['route_completion']:.3f}, {student['collisions_at_fault']} at-fault collisions"))
    return out


#: the paired comparisons stated under the table: (policy, baseline), by name prefix as in :func:`targets`
PAIRS = (("student", "constant-velocity"), ("student", "ar"), ("ar", "constant-velocity"))


def paired_ds(results: Sequence[Mapping[str, Any]], a: str, b: str, n: int = 10000) -> dict[str, Any] | None:
    """Per-route driving-score difference a - b over the routes both ran, with a 95 % paired bootstrap interval."""
    def of(prefix: str) -> dict[str, float]:
        return {r["route"]: float(r["driving_score"]) for r in results
                if r["policy"] == prefix or r["policy"].startswith(prefix + " (")}

    da, db = of(a), of(b)
    routes = sorted(set(da) & set(db))
    if not routes:
        return None
    boot = paired_bootstrap([da[r] - db[r] for r in routes], n=n, seed=0)
    wins = sum(da[r] > db[r] for r in routes)
    return {"a": a, "b": b, "routes": len(routes), "wins": wins, "losses": sum(da[r] < db[r] for r in routes),
            "mean": boot["mean"], "low": boot["low"], "high": boot["high"]}


def payload(summary: Mapping[str, Any], results: Sequence[RouteResult], routes: Sequence[RouteSpec],
            settings: Mapping[str, Any], command: str, wall_s: float) -> dict[str, Any]:
    """Everything the JSON file holds."""
    return {
        "command": command,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()},  # fmt: skip
        "wall_s": round(wall_s, 1),
        "settings": dict(settings),
        "penalties": PENALTIES,
        "driving_score": "route_completion_on_road x prod(penalty ** count) (CARLA leaderboard coefficients)",
        "targets": [{"target": t, "met": met, "measured": m} for t, met, m in targets(summary)],
        "summary": summary,
        "routes": [r.to_json() for r in routes],
        "results": [r.to_json() for r in results],
    }


def summary_lines(data: Mapping[str, Any], level: int = 1, plots: str | None = None,
                  title: str = "Closed-loop benchmark") -> list[str]:
    """Settings, the per-policy table and the targets, under a heading of ``level`` (also docs/RESULTS.md's section).

    ``plots``: where the BEV plots are, named in the text when given.
    """
    summary = data["summary"]
    head = "#" * level
    lines = [
        f"{head} {title}",
        "",
        f"Command: `{data['command']}`  ",
        f"Date: {data['date']}; machine: {data['machine']['platform']}, {data['machine'].get('cpus')} CPUs; "
        f"wall time {data['wall_s']} s.",
        "",
        "Driving score (DS) = route completion on the road x the product of infraction penalties "
        + ", ".join(f"{k} {v}" for k, v in PENALTIES.items()) + " (CARLA leaderboard coefficients); "
        "RC = route completion, IP = infraction penalty, clean = routes completed without infraction; "
        "CL-PDMS = NAVSIM PDM score of the plans, averaged over each route (autopilot: its own look-ahead).",
        "",
        "| policy | routes | " + " | ".join(label for _, label in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for name, row in summary.items():
        lines.append(f"| {name} | {row['routes']} | " + " | ".join(format_cell(row.get(k)) for k, _ in COLUMNS) + " |")
    lines += ["", f"{head}# Targets", ""]
    for t in data["targets"]:
        state = "met" if t["met"] else ("not met" if t["met"] is False else "not measured")
        lines.append(f"- {t['target']}: **{state}** ({t['measured']})")
    pairs = [p for p in (paired_ds(data["results"], a, b) for a, b in PAIRS) if p is not None]
    if pairs:
        lines += ["", "Paired per-route driving-score differences (same routes, same seeds; 95 % bootstrap interval "
                  "over routes, 10000 resamples):", ""]
        for p in pairs:
            sure = "above 0" if p["low"] > 0 else ("below 0" if p["high"] < 0 else "includes 0")
            lines.append(f"- {p['a']} - {p['b']}: {p['mean']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}] over "
                         f"{p['routes']} routes ({p['wins']} better, {p['losses']} worse; the interval {sure})")
    if plots:
        lines += ["", f"Per-route results and a BEV plot per route (each policy's path, infractions marked): {plots}."]
    return lines


def markdown(data: Mapping[str, Any]) -> str:
    """The report page: settings, the per-policy table, targets, the per-route table, plot links."""
    lines = summary_lines(data, level=1)
    lines += ["", "## Per route", "", "| route | tags | policy | end | DS | RC | infractions | stuck [s] | time [s] |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    tags = {r["name"]: ", ".join(r["tags"]) for r in data["routes"]}
    for r in data["results"]:
        inf = ", ".join(f"{k} {v}" for k, v in r["infractions"].items() if v) or "none"
        if r["off_road_m"]:
            inf += f"; off road {r['off_road_m']} m"
        lines.append(f"| {r['route']} | {tags.get(r['route'], '')} | {r['policy']} | {r['end_reason']} | "
                     f"{r['driving_score']:.3f} | {r['route_completion']:.3f} | {inf} | {r['stuck_s']} | {r['time_s']} |")
    plots = data.get("plots") or []
    if plots:
        lines += ["", "## BEV plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _draw_map(ax: Any, road_map: Any) -> None:
    from matplotlib.patches import Polygon

    from wamdiff2_ros.data.polyline import offset_points

    for road in road_map.roads:
        left = offset_points(road.points, road.half_width)
        right = offset_points(road.points, -road.half_width)
        ax.add_patch(Polygon(np.vstack([left, right[::-1]]), closed=True, color="#d4d4d4", zorder=1, lw=0))
    for inter in road_map.intersections:
        h = inter.half_size
        pts = box_corners(inter.center[0], inter.center[1], 2 * h, 2 * h, inter.heading)
        ax.add_patch(Polygon(pts, closed=True, color="#c4c4c4", zorder=1, lw=0))
    for b in road_map.buildings:
        pts = box_corners(b.x, b.y, b.length, b.width, b.yaw)
        ax.add_patch(Polygon(pts, closed=True, color="#e8dcc8", zorder=1, lw=0))


def plot_route(path: Path, spec: RouteSpec, results: Sequence[RouteResult]) -> Path:
    """One BEV figure for a route: a panel per policy with its path and infractions."""
    plt = _pyplot()
    route = build_route(spec, buildings=True)
    road_map, world = route.world.map, route.world
    poly = world.ego.path.poly
    start = poly.pose_at(route.start_s)
    goal = poly.pose_at(route.goal_s)
    route_pts = poly.interpolate(np.linspace(route.start_s, route.goal_s, 200))
    n = max(len(results), 1)
    cols = min(n, 3)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.6 * rows), squeeze=False)
    lo = route_pts[:, :2].min(0) - 25.0
    hi = route_pts[:, :2].max(0) + 25.0
    for ax, result in zip(axes.ravel(), results, strict=False):
        _draw_map(ax, road_map)
        ax.plot(route_pts[:, 0], route_pts[:, 1], "--", color="tab:green", lw=1.0, zorder=2, label="route")
        ax.plot(*start[:2], "o", color="tab:green", ms=6, zorder=4)
        ax.plot(*goal[:2], "*", color="tab:green", ms=12, zorder=4)
        p = result.path
        if len(p):
            sc = ax.scatter(p[:, 1], p[:, 2], c=p[:, 4], cmap="viridis", s=6, zorder=3, vmin=0, vmax=14)
            lo, hi = np.minimum(lo, p[:, 1:3].min(0) - 10), np.maximum(hi, p[:, 1:3].max(0) + 10)
        seen = set()
        for e in result.events:
            marker, color = MARKERS.get(e["kind"], ("x", "k"))
            label = e["kind"] if e["kind"] not in seen else None
            seen.add(e["kind"])
            edge = "k" if e.get("at_fault", True) else "white"
            ax.scatter([e["x"]], [e["y"]], marker=marker, c=color, s=90, edgecolors=edge, zorder=5, label=label)
        m = result.metrics
        ax.set_title(f"{result.policy}\nDS {m['driving_score']:.2f} RC {m['route_completion']:.2f} ({m['end_reason']})",
                     fontsize=9)  # fmt: skip
        ax.legend(fontsize=6, loc="best")
    for ax in axes.ravel():
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(results):]:
        ax.axis("off")
    if results and len(results[0].path):
        fig.colorbar(sc, ax=axes.ravel().tolist(), shrink=0.6, label="speed [m/s]")
    fig.suptitle(f"{spec.name} ({', '.join(spec.tags)}); map frame, metres", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(directory: str | Path, data: dict[str, Any], results: Sequence[RouteResult],
                 routes: Sequence[RouteSpec]) -> Path:
    """report.md and bev/<route>.png under ``directory``; returns the Markdown path."""
    directory = Path(directory)
    (directory / "bev").mkdir(parents=True, exist_ok=True)
    plots = []
    for spec in routes:
        rows = [r for r in results if r.route == spec.name]
        if rows:
            plot_route(directory / "bev" / f"{spec.name}.png", spec, rows)
            plots.append(f"bev/{spec.name}.png")
    page = directory / "report.md"
    page.write_text(markdown({**data, "plots": plots}), encoding="utf-8")
    return page
