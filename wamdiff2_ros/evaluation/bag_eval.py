"""Score the Trajectory messages recorded in a rosbag2 against ground-truth scenes.

Messages are matched to scenes by ``scene_token``; messages without a known token fall
back to the header stamp, matched to the nearest scene timestamp within a tolerance.
When a scene has several plans, the last one received counts. Unreadable parts of a
bag are reported in the result's ``problems``; what was readable is scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.data.bags import TrajectoryRecord, read_trajectories
from wamdiff2_ros.evaluation.scene import SceneGroundTruth
from wamdiff2_ros.evaluation.scoring import aggregate, score_scenes

STAMP_TOLERANCE_S = 0.05


def match_trajectories(
    records: list[TrajectoryRecord],
    scenes: dict[str, SceneGroundTruth],
    stamp_tolerance_s: float = STAMP_TOLERANCE_S,
) -> tuple[dict[str, TrajectoryRecord], dict[str, int]]:
    """Plans by scene token, and counts of how they were matched (``by_token``, ``by_stamp``, ``unmatched``)."""
    tokens = list(scenes)
    stamps = np.array([scenes[t].timestamp_us * 1000 for t in tokens], dtype=np.int64)
    order = np.argsort(stamps) if len(stamps) else np.zeros(0, int)
    sorted_stamps = stamps[order]
    matched: dict[str, TrajectoryRecord] = {}
    counts = {"by_token": 0, "by_stamp": 0, "unmatched": 0}
    for record in sorted(records, key=lambda r: r.receive_ns):
        token = record.scene_token if record.scene_token in scenes else None
        if token is not None:
            counts["by_token"] += 1
        elif len(sorted_stamps):
            i = int(np.searchsorted(sorted_stamps, record.stamp_ns))
            best = min(
                (j for j in (i - 1, i) if 0 <= j < len(sorted_stamps)),
                key=lambda j: abs(int(sorted_stamps[j]) - record.stamp_ns),
            )
            if abs(int(sorted_stamps[best]) - record.stamp_ns) <= stamp_tolerance_s * 1e9:
                token = tokens[int(order[best])]
                counts["by_stamp"] += 1
        if token is None:
            counts["unmatched"] += 1
            continue
        matched[token] = record
    return matched, counts


def plan_at_times(record: TrajectoryRecord, times_s: np.ndarray) -> np.ndarray | None:
    """The record's waypoints at ``times_s`` (N, 3); None when the plan does not reach the last time.

    Waypoints are used as they are when their ``time_from_start`` already equals
    ``times_s`` (or is unset, all zero: then 0.5 s spacing is assumed); otherwise x, y
    and heading are interpolated linearly in time from the ego origin at t = 0.
    """
    wps = record.waypoints
    times = record.times_s
    n = len(times_s)
    if len(times) == 0:
        return None
    if not np.any(times):
        return wps[:n] if len(wps) >= n else None
    if len(times) >= n and np.allclose(times[:n], times_s, atol=1e-3):
        return wps[:n]
    if np.any(np.diff(times) <= 0) or times[-1] < times_s[-1] - 1e-3:
        return None
    knots = np.concatenate([[0.0], times])
    points = np.vstack([np.zeros((1, 3)), wps])
    heading = np.unwrap(points[:, 2])
    return np.column_stack([np.interp(times_s, knots, points[:, 0]), np.interp(times_s, knots, points[:, 1]),
                            np.interp(times_s, knots, heading)])  # fmt: skip


def evaluate_bag(
    bag: str | Path,
    scenes: dict[str, SceneGroundTruth],
    *,
    topics: list[str] | None = None,
    processes: int | None = None,
    progress: bool = True,
    stamp_tolerance_s: float = STAMP_TOLERANCE_S,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Summary (JSON-ready) and per-scene results of the plans in ``bag`` against ``scenes``."""
    records, report = read_trajectories(bag, topics)
    matched, counts = match_trajectories(records, scenes, stamp_tolerance_s)
    pairs = []
    too_short = []
    for token, record in matched.items():
        scene = scenes[token]
        plan = plan_at_times(record, scene.interval_s * np.arange(1, len(scene.trajectory) + 1))
        if plan is None:
            too_short.append(token)
            continue
        pairs.append((plan, scene))
    results = score_scenes(pairs, processes=processes, progress=progress)
    for result in results:
        record = matched[result["token"]]
        result.update(valid=record.valid, source=record.source, block_size=record.block_size)
    summary = aggregate(results)
    errors = [r for r in results if "error" in r]
    missing = sorted(set(scenes) - set(matched))
    short_problem = []
    if too_short:
        horizon = scenes[too_short[0]].interval_s * len(scenes[too_short[0]].trajectory)
        short_problem.append(
            f"{len(too_short)} plans do not reach the {horizon:g} s horizon or have non-increasing waypoint times; "
            "not scored"
        )
    summary.update(
        bag=str(bag),
        bag_complete=report.complete,
        problems=report.problems + short_problem,
        messages_read=report.messages_read,
        trajectories_read=len(records),
        matched_by_token=counts["by_token"],
        matched_by_stamp=counts["by_stamp"],
        trajectories_unmatched=counts["unmatched"],
        fallback_plans=sum(1 for r in results if not r.get("valid", True)),
        scenes_total=len(scenes),
        scenes_missing=len(missing) + len(too_short) + len(errors),
        missing_tokens=missing[:50],
    )
    return summary, results
