"""Montage of the synthetic world as the reader sees it: camera frames plus a BEV plot of the scene.

``python -m wamdiff2_ros.data.montage --out docs/images/synthetic_montage.png`` writes one
synthetic log to a temporary folder, reads it back with :class:`NavsimLogs` (images,
boxes, ego poses, the map) and draws six camera frames next to a bird's-eye view of
the chosen scene: drivable area, lanes, the route, buildings, annotated boxes, the
signal states and the ground-truth 4 s trajectory, all in the ego frame.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from wamdiff2_ros.data.world import EGO_LENGTH, EGO_REAR_AXLE_TO_CENTER, EGO_WIDTH
from wamdiff2_ros.geometry import box_corners, footprint_corners

__all__ = ["make_montage", "main"]

CAMERAS = ("CAM_L0", "CAM_F0", "CAM_R0", "CAM_B0")


def _to_ego(points: np.ndarray, pose: np.ndarray) -> np.ndarray:
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    d = np.asarray(points, dtype=np.float64) - np.array([x, y])
    return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], axis=-1)


def _pick_scene(logs, road_map) -> int:
    """Scene approaching an intersection with many boxes in front (falls back to the busiest)."""
    from wamdiff2_ros.data.samples import _route_facts

    best, best_score = 0, -1.0
    for i in range(len(logs)):
        scene = logs[i]
        anns = scene.current_frame.annotations
        ahead = 0 if anns is None else int(np.sum((anns.boxes[:, 0] > 3) & (anns.boxes[:, 0] < 45)
                                                  & (np.abs(anns.boxes[:, 1]) < 15)))
        facts = _route_facts(scene, road_map)
        score = ahead + (6.0 if facts.light_distance < 35.0 else 0.0) + float(np.ptp(scene.future_trajectory()[:, 0]) > 5)
        if score > best_score:
            best, best_score = i, score
    return best


def make_montage(out: str | Path, seed: int = 3, frames: int = 48, size: tuple[int, int] = (512, 256)) -> Path:
    """Write the montage PNG to ``out``; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    from wamdiff2_ros.data.navsim import NavsimLogs
    from wamdiff2_ros.data.polyline import offset_points
    from wamdiff2_ros.data.synth import synthesize

    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="wamdiff2_montage_") as tmp:
        synthesize(tmp, 1, frames, seed, CAMERAS, size, "montage", progress=False)
        logs = NavsimLogs(Path(tmp) / "navsim_logs" / "montage", Path(tmp) / "sensor_blobs" / "montage")
        road_map = logs.map_for(logs[0])
        index = _pick_scene(logs, road_map)
        scene = logs[index]
        images = scene.load_images(CAMERAS)
        earlier = scene.load_images(("CAM_F0",), frame_index=0)["CAM_F0"]
        later_scene = logs[min(index + 4, len(logs) - 1)]
        later = later_scene.load_images(("CAM_F0",))["CAM_F0"]
        frame = scene.current_frame
        pose = frame.ego_status.ego_pose
        trajectory = scene.future_trajectory()
        time_s = (frame.timestamp - road_map.time_origin_us) / 1e6
        command = ("left", "straight", "right", "unknown")[int(np.argmax(frame.ego_status.driving_command))]
        dt_later = (later_scene.current_frame.timestamp - frame.timestamp) / 1e6
        dt_earlier = (scene.frames[0].timestamp - frame.timestamp) / 1e6

    fig = plt.figure(figsize=(16.0, 5.6), dpi=80)
    grid = fig.add_gridspec(3, 5, width_ratios=[1, 1, 1, 0.02, 0.95], height_ratios=[1, 1, 0.32], hspace=0.16,
                            wspace=0.04)
    panels = [
        (images["CAM_L0"], "CAM_L0 (front-left)"), (images["CAM_F0"], "CAM_F0 (front), t = 0 s"),
        (images["CAM_R0"], "CAM_R0 (front-right)"), (earlier, f"CAM_F0, t = {dt_earlier:+.1f} s"),
        (images["CAM_B0"], "CAM_B0 (back)"), (later, f"CAM_F0, t = {dt_later:+.1f} s"),
    ]
    for k, (img, title) in enumerate(panels):
        ax = fig.add_subplot(grid[k // 3, k % 3])
        ax.imshow(img)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    info = fig.add_subplot(grid[2, 0:3])
    info.axis("off")
    v = float(np.hypot(*frame.ego_status.ego_velocity))
    info.text(0.0, 0.95, (
        f"synthetic log {scene.metadata.log_name}, scene {scene.token}: NAVSIM layout read back with NavsimLogs\n"
        f"driving command: {command}   speed {v:.1f} m/s   boxes in anns: {len(frame.annotations or [])}   "
        f"traffic lights listed: {len(frame.traffic_lights)}\n"
        "ground truth (x, y) at 0.5 ... 4 s: " + " ".join(f"({x:.1f},{y:.1f})" for x, y in trajectory[:, :2])
    ), fontsize=8.5, va="top", family="monospace")

    bev = fig.add_subplot(grid[:, 4])
    view = 45.0
    for road in road_map.roads:
        outline = np.concatenate([offset_points(road.points, road.half_width),
                                  offset_points(road.points, -road.half_width)[::-1]])
        e = _to_ego(outline, pose)
        if np.min(np.abs(e).max(axis=1)) > 3 * view:
            continue
        bev.add_patch(Polygon(np.stack([-e[:, 1], e[:, 0]], 1), closed=True, color="#c8c8c8", zorder=1))
    for inter in road_map.intersections:
        h = inter.half_size
        corners = box_corners(inter.center[0], inter.center[1], 2 * h, 2 * h, inter.heading)
        e = _to_ego(corners, pose)
        bev.add_patch(Polygon(np.stack([-e[:, 1], e[:, 0]], 1), closed=True, color="#c8c8c8", zorder=1))
    for lane in road_map.lanes.values():
        e = _to_ego(lane.points, pose)
        style = dict(color="#8a8a8a", lw=0.5, zorder=2) if lane.kind == "lane" else dict(color="#b0b0b0", lw=0.3,
                                                                                           ls=":", zorder=2)
        bev.plot(-e[:, 1], e[:, 0], **style)
    route = _to_ego(road_map.route_polyline().points, pose)
    bev.plot(-route[:, 1], route[:, 0], color="#3070d0", lw=1.0, alpha=0.5, zorder=3, label="route")
    for b in road_map.buildings:
        e = _to_ego(box_corners(b.x, b.y, b.length, b.width, b.yaw), pose)
        bev.add_patch(Polygon(np.stack([-e[:, 1], e[:, 0]], 1), closed=True, color=np.array(b.color) / 255,
                              alpha=0.6, zorder=2))
    states = road_map.signal_states(time_s)
    colors = {"red": "#e02020", "yellow": "#f0b000", "green": "#20b040"}
    for lane in road_map.lanes.values():
        if lane.kind == "connector" and lane.turn == "straight":
            p = _to_ego(lane.points[:1], pose)[0]
            bev.scatter([-p[1]], [p[0]], s=14, color=colors[states[lane.id]], zorder=5, edgecolors="k", linewidths=0.3)
    anns = frame.annotations
    if anns is not None:
        for box, name in zip(anns.boxes, anns.names, strict=True):
            outline = box_corners(box[0], box[1], box[3], box[4], box[6])
            color = "#d04020" if name == "vehicle" else "#8020c0"
            bev.add_patch(Polygon(np.stack([-outline[:, 1], outline[:, 0]], 1), closed=True, fc=color, ec="k",
                                  lw=0.4, alpha=0.85, zorder=6))
    ego = footprint_corners(0.0, 0.0, 0.0, EGO_LENGTH, EGO_WIDTH, EGO_REAR_AXLE_TO_CENTER)
    bev.add_patch(Polygon(np.stack([-ego[:, 1], ego[:, 0]], 1), closed=True, fc="#2050ff", ec="k", lw=0.6, zorder=7))
    bev.plot(-trajectory[:, 1], trajectory[:, 0], "o-", color="#00a0ff", ms=3, lw=1.2, zorder=8,
             label="ground truth 4 s")
    bev.set_xlim(-view, view)
    bev.set_ylim(-view * 0.45, view * 1.55)
    bev.set_aspect("equal")
    bev.set_title("BEV, ego frame (x up, y left); vehicles red, pedestrians purple", fontsize=9)
    bev.set_xticks([])
    bev.set_yticks([])
    bev.legend(loc="lower right", fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.data.montage", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images/synthetic_montage.png"))
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--frames", type=int, default=48)
    args = parser.parse_args(argv)
    path = make_montage(args.out, args.seed, args.frames)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
