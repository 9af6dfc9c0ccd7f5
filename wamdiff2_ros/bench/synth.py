"""`wamdiff2 bench synth`: frames per second of the synthetic writer, front camera vs all eight cameras.

Each variant writes a fresh dataset into a temporary folder (world simulation,
rendering, JPEG encoding, pickling) and is timed end to end; variants run in one
process back to back so the ratio is meaningful on a noisy machine. Prints a table
and writes JSON. Goal: 1,000 front-camera frames at 512x256 in under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.data.navsim import CAMERA_NAMES
from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.data.world import parse_size

__all__ = ["run_benchmark", "format_table", "synth_arguments", "synth", "main"]


def run_benchmark(frames: int = 200, logs: int = 2, size: tuple[int, int] = (512, 256), seed: int = 0,
                  all_camera_frames: int | None = None) -> dict:
    """Time ``synthesize`` for the front camera and for all 8 cameras; returns the result dict."""
    variants = [("CAM_F0", ("CAM_F0",), frames), ("all 8 cameras", CAMERA_NAMES, all_camera_frames or max(frames // 4, 8))]
    rows = []
    for label, cameras, n_frames in variants:
        per_log = max(1, n_frames // logs)
        with tempfile.TemporaryDirectory(prefix="wamdiff2_synth_bench_") as tmp:
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            synthesize(tmp, logs, per_log, seed, cameras, size, "bench", progress=False)
            wall = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            total = logs * per_log
            disk = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        rows.append({
            "variant": label,
            "cameras": len(cameras),
            "frames": total,
            "images": total * len(cameras),
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "frames_per_s": round(total / wall, 2),
            "images_per_s": round(total * len(cameras) / wall, 2),
            "projected_1000_frames_s": round(1000 * wall / total, 1),
            "bytes_per_frame": int(disk / total),
        })
    front = rows[0]
    return {
        "benchmark": "synth",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "size": f"{size[0]}x{size[1]}",
        "logs": logs,
        "rows": rows,
        "goal": "1000 front-camera frames in < 60 s",
        "goal_met": front["projected_1000_frames_s"] < 60.0,
        "all_cameras_vs_front_time_per_frame": round(
            (rows[1]["wall_s"] / rows[1]["frames"]) / (front["wall_s"] / front["frames"]), 2
        ),
    }


def format_table(result: dict) -> str:
    head = f"{'variant':16s} {'frames':>7s} {'images':>7s} {'wall s':>8s} {'cpu s':>8s} {'frames/s':>9s} " \
           f"{'images/s':>9s} {'1000 fr s':>10s} {'KB/frame':>9s}"
    lines = [f"synth benchmark, {result['size']}, {result['date']}, {result['machine']}", head, "-" * len(head)]
    for r in result["rows"]:
        lines.append(
            f"{r['variant']:16s} {r['frames']:7d} {r['images']:7d} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} "
            f"{r['frames_per_s']:9.2f} {r['images_per_s']:9.2f} {r['projected_1000_frames_s']:10.1f} "
            f"{r['bytes_per_frame'] / 1024:9.1f}"
        )
    lines.append(f"goal ({result['goal']}): {'met' if result['goal_met'] else 'NOT met'}; "
                 f"all-8 vs front time per frame: x{result['all_cameras_vs_front_time_per_frame']}")
    return "\n".join(lines)


def synth_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=200, help="front-camera frames to time (default 200)")
    parser.add_argument("--all-camera-frames", type=int, default=None, help="frames for the 8-camera run (default frames/4)")
    parser.add_argument("--logs", type=int, default=2, help="logs the frames are split into (default 2)")
    parser.add_argument("--size", default="512x256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", "--out", dest="out", type=Path, default=Path("out/bench/synth.json"),
                        help="where to write the JSON results (default out/bench/synth.json)")


def synth(args: argparse.Namespace) -> int:
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    if args.frames < 2 or args.logs < 1:
        print("error: --frames must be >= 2 and --logs >= 1")
        return 2
    result = run_benchmark(args.frames, args.logs, size, args.seed, args.all_camera_frames)
    print(format_table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python bench/synth.py``: the flags of ``wamdiff2 bench synth``."""
    return run_script("bench/synth.py", "frames per second of the synthetic world", synth_arguments, synth, argv)
