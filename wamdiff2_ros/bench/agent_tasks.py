"""Per-frame DrivingAgent latency for the three tasks: before vs after one vision pass and a shared prefix.

Variants, run round-robin on the same frames in one process (ratios are what to read
on a noisy machine):

* ``before``: every task from scratch, one after another (``run_task`` per task: its
  own image resize, vision pass and whole-prompt prefill), the agent's old ``step``;
* ``shared``: ``prepare`` once (images resized and encoded once), planning first with
  its whole prompt, whose shared prefix the other tasks then continue from, in turn;
* ``shared+batch``: the same, perception and understanding as rows of one batch.

Per frame: ``plan_ms`` (frame in -> planning answer parsed), ``total_ms`` (all three
tasks). Every variant must give the same tokens (checked on every frame).

    python bench/agent_tasks.py --cameras 1,8 --frames 8 --json bench_out/agent_tasks.json
    wamdiff2 bench agent-tasks --cameras 1,8 --frames 8 --json bench_out/agent_tasks.json   # the same
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from wamdiff2_ros.agent import DrivingAgent, EgoMotion, TaskOutput
from wamdiff2_ros.data.world import World
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.model.cameras import NAVSIM_CAMERAS
from wamdiff2_ros.model.checkpoints import default_checkpoint
from wamdiff2_ros.model.loader import load_model

TASKS = ("planning", "perception", "understanding")
VARIANTS = ("before", "shared", "shared+batch")


def run_before(agent: DrivingAgent, images: Mapping[str, np.ndarray], ego: EgoMotion,
               command: str) -> tuple[dict[str, TaskOutput], float, float]:
    """Every task from scratch in turn: (outputs, plan_ms, total_ms)."""
    start = time.perf_counter()
    outputs, plan_ms = {}, 0.0
    for task in TASKS:
        outputs[task] = agent.run_task(task, images, ego, command)
        if task == "planning":
            plan_ms = 1e3 * (time.perf_counter() - start)
    return outputs, plan_ms, 1e3 * (time.perf_counter() - start)


def run_shared(agent: DrivingAgent, images: Mapping[str, np.ndarray], ego: EgoMotion,
               command: str) -> tuple[dict[str, TaskOutput], float, float]:
    """One ``prepare``, then the tasks from the shared prefix: (outputs, plan_ms, total_ms)."""
    start = time.perf_counter()
    marks = {}
    ctx = agent.prepare(images, ego, command)
    outputs = agent.run(ctx, on_output=lambda c, out: marks.setdefault(out.task, 1e3 * (time.perf_counter() - start)))
    return outputs, marks["planning"], 1e3 * (time.perf_counter() - start)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def agent_tasks_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="", help="checkpoint directory ('' = the shipped student)")
    parser.add_argument("--cameras", default="1,8", help="camera counts to measure (first N NAVSIM cameras)")
    parser.add_argument("--frames", type=int, default=8, help="timed frames per camera count (after 1 warm-up)")
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--vision-tokens", type=int, default=0, help="vision tokens per camera (0 = checkpoint default)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--size", default="512x256", help="rendered camera image size WxH")
    parser.add_argument("--json", default="bench_out/agent_tasks.json")


def agent_tasks(args: argparse.Namespace, command_line: str = "") -> int:
    """Measure every variant; ``command_line`` is written to the JSON (default: this process's)."""
    torch.set_num_threads(args.threads)
    path = args.model or default_checkpoint()
    if not path:
        print("error: no checkpoint given and the shipped student is missing", file=sys.stderr)
        return 2
    vla = load_model(path)
    width, height = (int(v) for v in args.size.split("x"))
    config = DecodeConfig(block_size=args.block_size, max_new_tokens=args.max_new_tokens)
    vision = {"vision_tokens_per_camera": args.vision_tokens} if args.vision_tokens else {}
    rows = []
    for count in (int(c) for c in args.cameras.split(",")):
        cameras = NAVSIM_CAMERAS[:count]
        agents = {
            "before": DrivingAgent(vla, config, cameras=cameras, tasks=TASKS, shared_prefix=False, **vision),
            "shared": DrivingAgent(vla, config, cameras=cameras, tasks=TASKS, batch_tasks=False, **vision),
            "shared+batch": DrivingAgent(vla, config, cameras=cameras, tasks=TASKS, batch_tasks=True, **vision),
        }
        world = World(11)
        samples = {v: {"plan_ms": [], "total_ms": []} for v in VARIANTS}
        prefix_tokens = prompt_tokens = 0
        for index in range(args.frames + 1):
            world.step(1.0)
            state = world.ego_state()
            images = world.render(list(cameras), (width, height))
            ego, command = EgoMotion((state.vx, state.vy), (state.ax, state.ay)), world.route_command()
            tokens = {}
            order = VARIANTS[index % 3:] + VARIANTS[:index % 3]  # rotate who goes first
            for variant in order:
                runner = run_before if variant == "before" else run_shared
                outputs, plan_ms, total_ms = runner(agents[variant], images, ego, command)
                tokens[variant] = {t: o.token_ids for t, o in outputs.items()}
                if index:  # frame 0 warms up
                    samples[variant]["plan_ms"].append(plan_ms)
                    samples[variant]["total_ms"].append(total_ms)
            if any(tokens[v] != tokens["before"] for v in VARIANTS):
                raise SystemExit(f"variants disagree on frame {index} with {count} cameras: not the same tokens")
            ctx = agents["shared"].prepare(images, ego, command)
            prefix_tokens = ctx.shared_prefix_tokens
            prompt_tokens = max(int(i["input_ids"].shape[1]) for i in ctx.inputs.values())
        base = statistics.median(samples["before"]["total_ms"])
        base_plan = statistics.median(samples["before"]["plan_ms"])
        for variant in VARIANTS:
            s = samples[variant]
            rows.append({
                "cameras": count, "variant": variant, "frames": args.frames,
                "plan_ms_p50": statistics.median(s["plan_ms"]), "plan_ms_p90": percentile(s["plan_ms"], 0.9),
                "total_ms_p50": statistics.median(s["total_ms"]), "total_ms_p90": percentile(s["total_ms"], 0.9),
                "total_speedup": base / statistics.median(s["total_ms"]),
                "plan_speedup": base_plan / statistics.median(s["plan_ms"]),
                "shared_prefix_tokens": prefix_tokens if variant != "before" else 0,
                "longest_prompt_tokens": prompt_tokens,
            })

    header = (f"{'cams':>4} {'variant':<13} {'plan p50':>9} {'plan p90':>9} {'all3 p50':>9} {'all3 p90':>9} "
              f"{'x all3':>7} {'x plan':>7} {'prefix/prompt':>14}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['cameras']:>4} {r['variant']:<13} {r['plan_ms_p50']:>9.1f} {r['plan_ms_p90']:>9.1f} "
              f"{r['total_ms_p50']:>9.1f} {r['total_ms_p90']:>9.1f} {r['total_speedup']:>7.2f} {r['plan_speedup']:>7.2f} "
              f"{r['shared_prefix_tokens']:>6}/{r['longest_prompt_tokens']:<7}")
    out = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(),
                    "torch": torch.__version__, "torch_threads": args.threads},
        "checkpoint": str(path), "block_size": args.block_size, "max_new_tokens": args.max_new_tokens,
        "image_size": args.size, "vision_tokens_per_camera": args.vision_tokens or None, "rows": rows,
        "command": command_line or " ".join(["wamdiff2", *sys.argv[1:]]),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python bench/agent_tasks.py``: the flags of ``wamdiff2 bench agent-tasks``."""
    parser = argparse.ArgumentParser(prog="bench/agent_tasks.py", description=__doc__.splitlines()[0])
    agent_tasks_arguments(parser)
    args = parser.parse_args(argv)
    return agent_tasks(args, "python bench/agent_tasks.py " + " ".join(argv if argv is not None else sys.argv[1:]))
