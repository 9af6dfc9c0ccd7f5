"""CLI targets: ``wamdiff2 eval open-loop``, ``wamdiff2 eval closed-loop`` and ``wamdiff2 bag eval``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from wamdiff2_ros.data.bags import BagError, read_trajectories
from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.data.world.rules import checked_world_rules
from wamdiff2_ros.evaluation.bag_eval import evaluate_bag
from wamdiff2_ros.evaluation.closed_loop import report as closed_loop_report
from wamdiff2_ros.evaluation.closed_loop.benchmark import aggregate, run_benchmark
from wamdiff2_ros.evaluation.closed_loop.policies import policy_specs
from wamdiff2_ros.evaluation.closed_loop.routes import route_set
from wamdiff2_ros.evaluation.closed_loop.runner import RunSettings
from wamdiff2_ros.evaluation.groundtruth import ground_truth_from_logs
from wamdiff2_ros.evaluation.open_loop import run_open_loop, write_submission
from wamdiff2_ros.evaluation.report import write_report
from wamdiff2_ros.evaluation.scoring import json_safe


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _write_json(path: str | Path, payload: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(payload), indent=2) + "\n", encoding="utf-8")


def _load_logs(args: argparse.Namespace) -> Any:
    return NavsimLogs(args.logs, args.sensor_blobs, progress=True)


def _command_line(prefix: str, args: argparse.Namespace) -> str:
    """The command as a user would type it, rebuilt from the parsed arguments."""
    parts = [prefix]
    for key, value in vars(args).items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif isinstance(value, list):
            parts.append(flag + " " + " ".join(shlex.quote(str(v)) for v in value))
        else:
            parts.append(f"{flag} {shlex.quote(str(value))}")
    return " ".join(parts)


def _print_summary(summary: dict[str, Any], name: str = "") -> None:
    keys = ("scenes_scored", "scenes_missing", "l2_avg", "l2_upto_avg", "collision_rate", "nc", "ttc", "comfort",
            "ep", "pdms", "pdms_without_map_terms", "fallback_rate", "decode_tokens_per_second")  # fmt: skip
    parts = []
    for key in keys:
        if key in summary and summary[key] is not None:
            value = summary[key]
            parts.append(f"{key}={value:.4f}" if isinstance(value, float) else f"{key}={value}")
    print((f"[{name}] " if name else "") + " ".join(parts))


# ------------------------------------------------------------------ bag eval


def bag_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bag", required=True, help="rosbag2 folder or .mcap/.db3 file with Trajectory messages")
    parser.add_argument("--logs", required=True, help="navsim_logs/<split> folder (or one .pkl)")
    parser.add_argument("--sensor-blobs", default=None, help="sensor_blobs/<split> (not needed for scoring)")
    parser.add_argument("--json", required=True, help="summary JSON to write")
    parser.add_argument("--topic", action="append", default=None, help="only this Trajectory topic (repeatable)")
    parser.add_argument("--per-scene", default=None, help="also write per-scene results (JSON)")
    parser.add_argument("--report", default=None, help="also write a Markdown report with plots to this folder")
    parser.add_argument("--stamp-tolerance", type=float, default=0.05, help="seconds, for matching by header stamp")
    parser.add_argument("--processes", type=int, default=None, help="scoring processes (default: CPUs, max 8)")


def bag_eval(args: argparse.Namespace) -> int:
    try:
        logs = _load_logs(args)
        scenes = ground_truth_from_logs(logs, progress=True)
    except (OSError, ValueError) as exc:
        return _fail(f"cannot read logs {args.logs}: {exc}")
    if not scenes:
        return _fail(f"no scenes with annotations in {args.logs}; nothing to score against")
    try:
        summary, results = evaluate_bag(
            args.bag, scenes, topics=args.topic, processes=args.processes, stamp_tolerance_s=args.stamp_tolerance
        )
    except BagError as exc:
        return _fail(str(exc))
    _write_json(args.json, summary)
    if args.per_scene:
        _write_json(args.per_scene, results)
    if args.report:
        records, _ = read_trajectories(args.bag, args.topic)
        by_token = {r["token"]: r for r in results if "error" not in r}
        samples = []
        for record in records:
            token = record.scene_token
            if token in by_token and token in scenes and len(samples) < 6:
                samples.append(("bag", record.waypoints[: len(scenes[token].trajectory)], scenes[token]))
        write_report(args.report, {"bag": summary}, samples=samples, title=f"Bag evaluation: {args.bag}",
                     command=_command_line("wamdiff2 bag eval", args))  # fmt: skip
    for problem in summary.get("problems", []):
        print(f"warning: {problem}", file=sys.stderr)
    _print_summary(summary)
    print(f"wrote {args.json}")
    return 0 if summary["scenes_scored"] else 1


# ------------------------------------------------------------------ open loop


def open_loop_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="checkpoint directory (ours, qwen3_vl or wam_diff2)")
    parser.add_argument("--logs", required=True, help="navsim_logs/<split> folder (or one .pkl)")
    parser.add_argument("--sensor-blobs", required=True, help="sensor_blobs/<split> folder")
    parser.add_argument("--block-size", type=int, nargs="+", default=None,
                        help="block size(s) B; several give one row each (default: the checkpoint's)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N scenes")
    parser.add_argument("--json", required=True, help="summary JSON to write")
    parser.add_argument("--report", default=None, help="write a Markdown report with plots to this folder")
    parser.add_argument("--submission", default=None, help="write NAVSIM-style {token: poses} pickle (first B)")
    parser.add_argument("--per-scene", default=None, help="also write per-scene results (JSON)")
    parser.add_argument("--engine", choices=("fast", "reference"), default="fast")
    parser.add_argument("--confidence-threshold", type=float, default=0.9)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--cameras", nargs="+", default=["CAM_F0"])
    parser.add_argument("--tasks", nargs="+", default=["planning"], choices=("planning", "perception", "understanding"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--processes", type=int, default=None, help="scoring processes (default: CPUs, max 8)")
    parser.add_argument("--samples", type=int, default=4, help="BEV plots of this many scenes in the report")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads for decoding (default 1; 0 = torch's default)")


def open_loop(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        return _fail("--limit must be >= 1")
    # torch and the model loader only here: bag eval and the scripted closed-loop rows run without torch
    import torch

    from wamdiff2_ros.model.loader import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        vla = load_model(args.model, device=args.device)
    except (OSError, ValueError) as exc:
        return _fail(f"cannot load model {args.model}: {exc}")
    try:
        logs = _load_logs(args)
    except (OSError, ValueError) as exc:
        return _fail(f"cannot read logs {args.logs}: {exc}")
    block_sizes = args.block_size or [int(getattr(vla, "block_size", None) or getattr(vla.config, "block_size", 32))]
    try:
        runs, truth = run_open_loop(
            vla, logs, block_sizes, engine=args.engine, confidence_threshold=args.confidence_threshold,
            max_new_tokens=args.max_new_tokens, cameras=args.cameras, tasks=args.tasks, limit=args.limit,
            processes=args.processes, device=args.device,
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    summaries = {f"B={r.block_size}": r.summary for r in runs}
    payload = dict(runs[0].summary) if len(runs) == 1 else {"runs": summaries, **runs[0].summary}
    payload.update(model=str(args.model), logs=str(args.logs))
    _write_json(args.json, payload)
    if args.per_scene:
        _write_json(args.per_scene, {f"B={r.block_size}": r.per_scene for r in runs})
    if args.submission:
        write_submission(args.submission, runs[0].predictions)
        print(f"wrote {args.submission}")
    if args.report:
        tokens = list(truth)[: max(0, args.samples)]
        samples = [(f"B={runs[-1].block_size}", runs[-1].predictions[t], truth[t]) for t in tokens]
        path = write_report(args.report, summaries, samples=samples, title="Open-loop evaluation",
                            command=_command_line("wamdiff2 eval open-loop", args))  # fmt: skip
        print(f"wrote {path}")
    for name, summary in summaries.items():
        _print_summary(summary, name)
    print(f"wrote {args.json}")
    return 0


# ------------------------------------------------------------------ closed loop


def closed_loop_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", action="append", default=None, metavar="NAME=DIR",
                        help="a checkpoint to drive (repeatable), next to the baselines")  # fmt: skip
    parser.add_argument("--baselines", default="autopilot,constant-velocity,ar,student",
                        help="comma-separated rows: autopilot, constant-velocity, standstill, ar (shipped AR "
                             "checkpoint), student (shipped B=32 student); a model name + '+gate' (student+gate) "
                             "drives with the agent's backwards-plan gate; '' for none")  # fmt: skip
    parser.add_argument("--routes", type=int, default=20, help="number of routes (the first N of the seed's set)")
    parser.add_argument("--seed", type=int, default=0, help="route-set seed")
    parser.add_argument("--route-kinds", default=None, help="only routes of these comma-separated kinds")
    parser.add_argument("--json", required=True, help="results JSON to write")
    parser.add_argument("--report", default=None, help="write report.md and BEV plots to this folder")
    parser.add_argument("--workers", type=int, default=1, help="parallel processes (torch at --threads each)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--plan-hz", type=float, default=2.0, help="planning rate in simulated time")
    parser.add_argument("--physics-hz", type=float, default=20.0, help="control and simulation rate")
    parser.add_argument("--pdm-every", type=int, default=2, help="score every k-th plan with the PDM terms (0: off)")
    parser.add_argument("--image-size", default="256x128", help="camera image WxH fed to the model")
    parser.add_argument("--cameras", default="CAM_F0", help="comma-separated cameras fed to the model")
    parser.add_argument("--block-size", type=int, default=None, help="decode block size (default: the checkpoint's)")
    parser.add_argument("--confidence-threshold", type=float, default=None,
                        help="decode threshold of every model (default: each checkpoint's own, else 0.9)")
    parser.add_argument("--command-horizon", type=float, default=None,
                        help="driving-command look-ahead in s for every model's world (0: the 20 m rule; default: "
                             "each checkpoint's own, generation_config.json world_rules, else 0)")  # fmt: skip
    parser.add_argument("--lamp-visor", type=float, default=None,
                        help="signal lamps' visor angle in degrees for every model's world (default: each "
                             "checkpoint's own, else 60)")  # fmt: skip
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--engine", choices=("fast", "reference"), default="fast")
    parser.add_argument("--device", default="cpu")


def closed_loop(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.threads < 1:
        return _fail("--workers and --threads must be >= 1")
    try:
        width, height = (int(v) for v in args.image_size.lower().split("x"))
    except ValueError:
        return _fail(f"--image-size must be WxH, got {args.image_size!r}")
    options = {"confidence_threshold": args.confidence_threshold, "max_new_tokens": args.max_new_tokens,
               "engine": args.engine, "device": args.device,
               "cameras": tuple(c for c in args.cameras.split(",") if c)}  # fmt: skip
    if args.block_size is not None:
        options["block_size"] = args.block_size
    given = {"command_horizon_s": args.command_horizon, "lamp_visor_deg": args.lamp_visor}
    given = {k: v for k, v in given.items() if v is not None}
    if given:
        try:
            checked_world_rules(given, "--command-horizon / --lamp-visor")
        except ValueError as exc:
            return _fail(str(exc))
        options["world_rules"] = tuple(sorted(given.items()))
    try:
        routes = route_set(args.routes, args.seed, [k for k in (args.route_kinds or "").split(",") if k] or None)
        policies = policy_specs([b for b in args.baselines.split(",") if b], args.model or [], options)
        settings = RunSettings(plan_hz=args.plan_hz, physics_hz=args.physics_hz, pdm_every=args.pdm_every,
                               image_size=(width, height))  # fmt: skip
    except ValueError as exc:
        return _fail(str(exc))
    print(f"{len(policies)} policies x {len(routes)} routes: {', '.join(p.name for p in policies)}", file=sys.stderr)
    start = time.perf_counter()
    try:
        results = run_benchmark(policies, routes, settings, workers=args.workers, threads=args.threads)
    except (OSError, ValueError, RuntimeError) as exc:
        return _fail(f"closed-loop run failed: {type(exc).__name__}: {exc}")
    wall = time.perf_counter() - start
    summary = aggregate(results)
    data = closed_loop_report.payload(summary, results, routes,
                   {**vars(settings), "workers": args.workers, "threads": args.threads, "seed": args.seed},
                   _command_line("wamdiff2 eval closed-loop", args), wall)  # fmt: skip
    _write_json(args.json, data)
    if args.report:
        page = closed_loop_report.write_report(args.report, data, results, routes)
        print(f"wrote {page}")
    for name, row in summary.items():
        print(f"[{name}] DS={row['driving_score']:.4f} RC={row['route_completion']:.4f} "
              f"clean={row['routes_clean']}/{row['routes']} collisions_at_fault={row['collisions_at_fault']} "
              f"red_lights={row['red_light_violations']} off_road_m={row['off_road_m']} stuck_s={row['stuck_s']} "
              f"CL-PDMS={row['closed_loop_pdms']}")  # fmt: skip
    for target, met, measured in closed_loop_report.targets(summary):
        print(f"target: {target}: {'met' if met else 'NOT met'} ({measured})")
    print(f"wrote {args.json} ({wall:.1f} s)")
    return 0
