"""Device check of the shared-prefix agent path: same tokens as the reference, no CUDA-graph re-capture per frame.

On a CUDA machine the fast engine runs with CUDA graphs and FlashInfer (when
installed; otherwise SDPA, and the backend used is printed). For a stream of
synthetic-world frames with 1 and 8 cameras, all three tasks (planning alone, then
perception + understanding as one batch) must give the reference engine's tokens
(each task from scratch), and after the first frame of each camera count no cache
may be reallocated (that drops and re-captures every graph); graph keys are listed
per lane as (cache allocations, graph keys, captured graphs). Prints a table and
writes JSON.

    python bench/gpu_prefix_check.py --device cuda --json "$OUT/gpu_prefix_check.json"
    python bench/gpu_prefix_check.py --device cpu --static-shapes   # the CPU twin (graph shapes, eager)
    wamdiff2 bench gpu-prefix-check --device cuda                   # the same

Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from wamdiff2_ros.agent import DrivingAgent, EgoMotion
from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.data.world import World
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.fast import FastEngine
from wamdiff2_ros.model.cameras import NAVSIM_CAMERAS
from wamdiff2_ros.model.checkpoints import default_checkpoint
from wamdiff2_ros.model.loader import load_model

TASKS = ("planning", "perception", "understanding")


def gpu_prefix_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="", help="checkpoint directory ('' = the shipped student)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float32", help="float32 for token parity with the reference")
    parser.add_argument("--cameras", default="1,8")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--static-shapes", action="store_true", help="CPU: run graph shapes eagerly (the twin)")
    parser.add_argument("--json", default="bench_out/gpu_prefix_check.json")


def gpu_prefix_check(args: argparse.Namespace) -> int:
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    path = args.model or default_checkpoint()
    vla = load_model(path)
    vla.model.to(device=args.device, dtype=getattr(torch, args.dtype))
    fast = DecodeConfig(block_size=args.block_size, max_new_tokens=128, device=args.device, dtype=args.dtype)
    reference = DecodeConfig(block_size=args.block_size, max_new_tokens=128, device=args.device, dtype=args.dtype,
                             engine="reference")
    rows, ok = [], True
    for count in (int(c) for c in args.cameras.split(",")):
        cameras = NAVSIM_CAMERAS[:count]
        agent = DrivingAgent(vla, fast, cameras=cameras, tasks=TASKS, batch_tasks=True)
        oracle = DrivingAgent(vla, reference, cameras=cameras, tasks=TASKS)
        world = World(21)
        settled = None
        for index in range(args.frames):
            world.step(1.0)
            state = world.ego_state()
            images = world.render(list(cameras), (512, 256))
            ego, command = EgoMotion((state.vx, state.vy), (state.ax, state.ay)), world.route_command()
            ctx = agent.prepare(images, ego, command)
            if index == 0 and args.static_shapes:
                for lane in agent._lanes.values():
                    lane.engine = FastEngine(vla)
                    lane.engine.static_shapes = True
            start = time.perf_counter()
            got = agent.run(ctx)
            decode_ms = 1e3 * (time.perf_counter() - start)
            want = oracle.run(oracle.prepare(images, ego, command))
            same = all(got[t].token_ids == want[t].token_ids for t in TASKS)
            engines = [lane.engine for lane in agent._lanes.values()]
            state_now = [(e.cache_allocations, len(e.graph_keys), len(e.graphs or ())) for e in engines]
            allocations = [e.cache_allocations for e in engines]
            stable = settled is None or allocations == settled  # a reallocation drops and re-captures graphs
            settled = allocations if index == 0 else settled
            ok &= same and stable
            rows.append({"cameras": count, "frame": index, "same_tokens": same, "no_recapture": stable,
                         "engine": got["planning"].stats.engine, "prefix_tokens": ctx.shared_prefix_tokens,
                         "lanes_allocations_keys_graphs": state_now, "decode_ms": decode_ms,
                         "plan_ms": got["planning"].latency_ms})
            print(f"{count} cams frame {index}: same tokens {same}, no re-capture {stable}, "
                  f"{got['planning'].stats.engine}, prefix {ctx.shared_prefix_tokens}, lanes {state_now}, "
                  f"plan {got['planning'].latency_ms:.1f} ms, all {decode_ms:.1f} ms")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"device": args.device, "dtype": args.dtype, "ok": ok, "rows": rows},
                                          indent=2) + "\n")
    print("OK" if ok else "FAILED", f"-> {args.json}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    """``python bench/gpu_prefix_check.py``: the flags of ``wamdiff2 bench gpu-prefix-check``."""
    return run_script("bench/gpu_prefix_check.py", __doc__.splitlines()[0], gpu_prefix_check_arguments,
                      gpu_prefix_check, argv)
