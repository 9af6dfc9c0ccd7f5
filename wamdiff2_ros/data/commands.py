"""CLI of the data room: ``wamdiff2 synth``, ``wamdiff2 data inspect|export``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["synth", "synth_arguments", "inspect", "inspect_arguments", "export", "export_arguments"]


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _cameras(text: list[str] | None) -> tuple[str, ...]:
    from wamdiff2_ros.data.navsim import CAMERA_NAMES

    if not text:
        return ("CAM_F0",)
    names: list[str] = []
    for item in text:
        names += [part.strip().upper() for part in item.split(",") if part.strip()]
    if names == ["ALL"]:
        return CAMERA_NAMES
    unknown = [n for n in names if n not in CAMERA_NAMES]
    if unknown:
        raise ValueError(f"unknown camera(s) {', '.join(unknown)}; expected some of {', '.join(CAMERA_NAMES)} or 'all'")
    return tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------- synth


def synth_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="output dataset root (navsim_logs/, sensor_blobs/, maps/)")
    parser.add_argument("--logs", type=int, default=1, help="number of logs (default 1)")
    parser.add_argument("--frames", type=int, default=40, help="frames per log at 2 Hz (default 40 = 20 s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed; same seed, same bytes")
    parser.add_argument("--cameras", nargs="+", default=None,
                        help="cameras to render (names or comma lists, or 'all'; default CAM_F0)")
    parser.add_argument("--size", default="512x256", help="image size WIDTHxHEIGHT (default 512x256)")
    parser.add_argument("--split", default="synthetic", help="split folder name (default synthetic)")
    parser.add_argument("--jpeg-quality", type=int, default=90)
    parser.add_argument("--command-horizon", type=float, default=0.0,
                        help="driving-command look-ahead in s (0: the route 20 m ahead, the default; 4: the first "
                             "turn within the plan's 4 s; data README)")  # fmt: skip
    parser.add_argument("--lamp-visor", type=float, default=60.0,
                        help="signal lamps are seen within this angle (deg) of the way a head faces (default 60; "
                             "35 hides the cross street's near lamps; data README)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def synth(args: argparse.Namespace) -> int:
    from wamdiff2_ros.data.synth import synthesize
    from wamdiff2_ros.data.world import parse_size

    try:
        cameras = _cameras(args.cameras)
        size = parse_size(args.size)
        if args.logs < 1 or args.frames < 1:
            raise ValueError("--logs and --frames must be >= 1")
        if not 1 <= args.jpeg_quality <= 100:
            raise ValueError("--jpeg-quality must be in 1..100")
        logs = synthesize(args.out, args.logs, args.frames, args.seed, cameras, size, args.split,
                          progress=not args.no_progress, jpeg_quality=args.jpeg_quality,
                          command_horizon_s=args.command_horizon, lamp_visor_deg=args.lamp_visor)
    except ValueError as exc:
        return _fail(str(exc))
    print(f"wrote {len(logs)} log(s) x {args.frames} frames, cameras {', '.join(cameras)} at {size[0]}x{size[1]}")
    print(f"  logs:         {args.out / 'navsim_logs' / args.split}")
    print(f"  sensor_blobs: {args.out / 'sensor_blobs' / args.split}")
    print(f"  maps:         {args.out / 'maps'}")
    return 0


# --------------------------------------------------------------------------- inspect


def inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logs", required=True, type=Path, help="navsim_logs/<split> folder (or one .pkl)")
    parser.add_argument("--sensor-blobs", type=Path, default=None, help="sensor_blobs/<split> folder (checks images)")
    parser.add_argument("--history", type=int, default=4, help="history frames per scene (default 4)")
    parser.add_argument("--future", type=int, default=8, help="future frames per scene (default 8)")
    parser.add_argument("--interval", type=int, default=1, help="frames between scene starts (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def inspect(args: argparse.Namespace) -> int:
    import pickle

    from wamdiff2_ros.data.navsim import LogFormatError, NavsimLogs, summarize

    try:
        logs = NavsimLogs(args.logs, args.sensor_blobs, args.history, args.future, args.interval,
                          progress=not args.json)
    except (LogFormatError, FileNotFoundError, ValueError, pickle.UnpicklingError) as exc:
        return _fail(str(exc))
    summary = summarize(logs)
    if args.sensor_blobs is not None:
        missing = [
            str(cam.image_path) for frames in logs.logs.values() for f in frames
            for cam in f.cameras.cameras.values() if cam.image_path is not None and not cam.image_path.is_file()
        ]
        summary["missing_images"] = len(missing)
        summary["first_missing_images"] = missing[:5]
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for key in ("logs", "frames", "scenes", "cameras", "frames_with_annotations", "boxes", "duration_s",
                "missing_images", "maps_dir"):
        if key in summary:
            value = summary[key]
            print(f"{key:24s} {', '.join(value) if isinstance(value, list) else value}")
    print(f"{'scene window':24s} {args.history} history + {args.future} future frames, every {args.interval}")
    return 0


# --------------------------------------------------------------------------- export


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logs", required=True, type=Path, help="navsim_logs/<split> folder")
    parser.add_argument("--sensor-blobs", required=True, type=Path, help="sensor_blobs/<split> folder")
    parser.add_argument("--out", required=True, type=Path, help="output JSON file (a list of conversations)")
    parser.add_argument("--tasks", default="planning,perception,understanding",
                        help="comma list of tasks (default all three)")
    parser.add_argument("--cameras", nargs="+", default=None, help="cameras per sample (default CAM_F0)")
    parser.add_argument("--future", type=int, default=8, help="future frames per scene (>= 8)")
    parser.add_argument("--interval", type=int, default=1, help="frames between scene starts")
    parser.add_argument("--relative-to", type=Path, default=None,
                        help="write image paths relative to this folder (default: absolute paths)")
    parser.add_argument("--datasource", default="navsim")
    parser.add_argument("--max-scenes", type=int, default=None)


def export(args: argparse.Namespace) -> int:
    import pickle

    from tqdm import tqdm

    from wamdiff2_ros.data.navsim import LogFormatError, NavsimLogs
    from wamdiff2_ros.data.samples import scene_samples, to_conversation

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    bad = [t for t in tasks if t not in ("planning", "perception", "understanding")]
    if bad or not tasks:
        return _fail(f"unknown task(s) {', '.join(bad) or '(none)'}; expected planning, perception, understanding")
    if args.future < 8:
        return _fail("--future must be >= 8 (planning answers are 8 waypoints)")
    try:
        cameras = _cameras(args.cameras)
        logs = NavsimLogs(args.logs, args.sensor_blobs, 4, args.future, args.interval, max_scenes=args.max_scenes,
                          progress=True)
    except (LogFormatError, FileNotFoundError, ValueError, pickle.UnpicklingError) as exc:
        return _fail(str(exc))
    conversations = []
    counts: dict[str, int] = {}
    maps: dict[str, object] = {}
    for scene in tqdm(logs, desc="export", unit="scene", total=len(logs)):
        log = scene.metadata.log_name
        if log not in maps:
            maps[log] = logs.map_for(scene)
        try:
            samples = scene_samples(scene, maps[log], cameras, tasks)
        except (KeyError, ValueError) as exc:
            return _fail(f"scene {scene.token} of {scene.metadata.log_path}: {exc}")
        for sample in samples:
            conversations.append(to_conversation(sample, args.datasource, args.relative_to))
            counts[sample.task] = counts.get(sample.task, 0) + 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(conversations, indent=1))
    print(f"wrote {len(conversations)} samples from {len(logs)} scenes to {args.out}: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0
