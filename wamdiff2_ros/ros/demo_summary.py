"""Summarise a demo bag: plans, validity, detections, rationales, latency, decode speed, L2, closed loop.

Reads the bag with `rosbags` (no rclpy): a task's latency is the receive time of its
output (plan, boxes, rationale) minus the receive time of the camera image with the
same stamp (both taken by the recorder's clock), reported per task with the task's
output rate; ``latency_ms`` is the plan's. L2 is scored against the replayed ground
truth of the same stamp.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from wamdiff2_ros.data.bags import BagReadReport, read_messages
from wamdiff2_ros.data.world import World
from wamdiff2_ros.evaluation.planning import l2_metrics

CAMERA_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage")
TASK_TOPICS = {"/wamdiff2/trajectory": "planning", "/wamdiff2/detections": "perception",
               "/wamdiff2/rationale": "understanding"}


def _ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": round(float(np.percentile(arr, q)), 1) for q in (50, 95, 99)} | {"n": len(values)}


def _task_summary(rows: list[tuple[int, int]], image_recv: dict[int, int]) -> dict:
    """Outputs, latency percentiles (image received -> output received) and output rate of one task."""
    latencies = [(recv - image_recv[stamp]) / 1e6 for stamp, recv in rows if stamp in image_recv]
    times = sorted(recv for _, recv in rows)
    span_s = (times[-1] - times[0]) / 1e9 if len(times) > 1 else 0.0
    return {"outputs": len(rows), "latency_ms": _percentiles(latencies),
            "rate_hz": round((len(times) - 1) / span_s, 3) if span_s > 0 else None}


def summarize_bag(bag: Path, mode: str = "replay", seed: int = 0, plot: Path | None = None) -> dict:
    report = BagReadReport(str(bag))
    topic_counts: Counter = Counter()
    image_recv: dict[int, int] = {}
    plans: dict[int, tuple[int, object]] = {}
    gt: dict[int, np.ndarray] = {}
    detections_per_frame: list[int] = []
    labels: Counter = Counter()
    rationales: list[str] = []
    task_recv: dict[str, list[tuple[int, int]]] = {t: [] for t in TASK_TOPICS.values()}  # (stamp, receive time)
    stats: dict[str, list] = defaultdict(list)
    odometry: list[tuple[float, float]] = []
    sim_status: dict[str, str] = {}
    for topic, msgtype, recv, msg in read_messages(bag, report=report):
        topic_counts[topic] += 1
        if topic in TASK_TOPICS:
            task_recv[TASK_TOPICS[topic]].append((_ns(msg.header.stamp), recv))
        if msgtype in CAMERA_TYPES:
            image_recv.setdefault(_ns(msg.header.stamp), recv)
        elif topic == "/wamdiff2/trajectory":
            plans[_ns(msg.header.stamp)] = (recv, msg)
        elif topic == "/navsim/gt_trajectory":
            gt[_ns(msg.header.stamp)] = np.array([[w.x, w.y] for w in msg.waypoints])
        elif topic == "/wamdiff2/detections":
            detections_per_frame.append(len(msg.detections))
            labels.update(d.label for d in msg.detections)
        elif topic == "/wamdiff2/rationale":
            rationales.append(msg.text)
        elif topic == "/wamdiff2/decode_stats":
            task = msg.engine.split(":")[-1]
            stats[task].append((msg.decode_tokens_per_second, msg.tokens_per_forward, msg.generated_tokens, msg.forwards))
        elif topic == "/ego/odometry":
            odometry.append((msg.pose.pose.position.x, msg.pose.pose.position.y))
        elif topic == "/sim/status":
            for status in msg.status:
                sim_status = {kv.key: kv.value for kv in status.values}
    latencies = [(recv - image_recv[s]) / 1e6 for s, (recv, _) in plans.items() if s in image_recv]
    valid = [bool(m.valid) for _, m in plans.values()]
    summary: dict = {
        "mode": mode,
        "bag": str(bag),
        "trajectories": len(plans),
        "valid_share": round(float(np.mean(valid)), 3) if valid else 0.0,
        "sources": dict(Counter(m.source for _, m in plans.values())),
        "detections": {"frames": len(detections_per_frame), "boxes": int(sum(detections_per_frame)),
                       "labels": dict(labels)},
        "rationales": len(rationales),
        "rationale_samples": [r for r in rationales if r][:3],
        "latency_ms": _percentiles(latencies),
        "per_task": {task: _task_summary(rows, image_recv) for task, rows in task_recv.items() if rows},
        "decode": {
            task: {
                "tokens_per_second_mean": round(float(np.mean([v[0] for v in rows])), 1),
                "tokens_per_forward_mean": round(float(np.mean([v[1] for v in rows])), 2),
                "generated_tokens_mean": round(float(np.mean([v[2] for v in rows])), 1),
                "decodes": len(rows),
            }
            for task, rows in stats.items()
        },
        "topics": dict(topic_counts),
        "bag_problems": report.problems,
    }
    if mode == "replay":
        scored = []
        for stamp, (_, msg) in plans.items():
            if stamp in gt and msg.valid:
                pred = np.array([[w.x, w.y] for w in msg.waypoints])
                scored.append(l2_metrics(pred, gt[stamp]))
        summary["planning"] = {
            "scored_plans": len(scored),
            "l2_avg_m": round(float(np.mean([s["l2_avg"] for s in scored])), 3) if scored else None,
            "note": "L2 of valid (model) plans against the replayed log's future (UniAD convention, avg of 1-4 s)",
        }
    else:
        summary["closed_loop"] = {
            "route_progress_m": float(sim_status.get("route_progress_m", "nan")),
            "distance_m": float(sim_status.get("distance_m", "nan")),
            "collisions": int(sim_status.get("collisions", "0")),
            "controlled": sim_status.get("controlled", "unknown"),
            "sim_time_s": float(sim_status.get("sim_time_s", "nan")),
        }
    if plot is not None:
        _plot(plot, plans, gt, odometry, mode, seed)
    return summary


def _plot(path: Path, plans, gt, odometry, mode: str, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if mode == "replay":
        stamps = sorted(plans)[:: max(1, len(plans) // 6)][:6]
        fig, axes = plt.subplots(1, max(1, len(stamps)), figsize=(3.2 * max(1, len(stamps)), 4.2), squeeze=False)
        for ax, stamp in zip(axes[0], stamps, strict=False):
            msg = plans[stamp][1]
            pred = np.array([[w.x, w.y] for w in msg.waypoints])
            if stamp in gt:
                ax.plot(-gt[stamp][:, 1], gt[stamp][:, 0], "o-", color="tab:green", label="log (ground truth)")
            ax.plot(-pred[:, 1], pred[:, 0], "s--" if msg.valid else "x:", color="tab:blue" if msg.valid else "tab:red",
                    label="model" if msg.valid else "fallback")
            ax.plot([0], [0], "k^", markersize=9)
            ax.set_title(f"t={stamp / 1e9 % 1000:.1f}s", fontsize=9)
            ax.set_xlabel("-y (m, right)")
            ax.set_aspect("equal", adjustable="datalim")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("x (m, forward)")
        axes[0][0].legend(fontsize=7, loc="upper left")
        fig.suptitle("wamdiff2 demo: planned vs logged trajectories (ego frame, BEV)")
    else:
        fig, ax = plt.subplots(figsize=(7, 7))
        try:
            world = World(seed)
            for lane in world.map.lanes.values():
                pts = np.asarray(lane.centerline if hasattr(lane, "centerline") else lane.points)
                ax.plot(pts[:, 0], pts[:, 1], color="0.8", linewidth=1)
        except Exception:  # the map is decoration
            pass
        if odometry:
            xy = np.asarray(odometry)
            ax.plot(xy[:, 0], xy[:, 1], color="tab:blue", linewidth=2, label="ego (closed loop)")
            ax.plot(*xy[0], "go", label="start")
            ax.plot(*xy[-1], "rs", label="end")
            pad = 40
            ax.set_xlim(xy[:, 0].min() - pad, xy[:, 0].max() + pad)
            ax.set_ylim(xy[:, 1].min() - pad, xy[:, 1].max() + pad)
        ax.set_aspect("equal")
        ax.legend()
        ax.set_title("wamdiff2 demo: closed loop in the synthetic world (BEV, map frame)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
