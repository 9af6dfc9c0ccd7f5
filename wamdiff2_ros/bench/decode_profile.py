"""Where a decode forward's time goes: matmul, attention and everything else, per engine and block size.

``wamdiff2 bench decode-profile --model checkpoints/wamdiff2-tiny-b32 --blocks 1,32 --samples 3 --json OUT``

Runs both engines on the same driving prompts under ``torch.profiler`` (CPU) and
splits the self time into matrix products (``mm``/``addmm``/``bmm``), attention
(SDPA kernels) and the rest (norms, rotary, masks, cache bookkeeping, Python).
Matmul and attention are the same arithmetic in both engines, so their share of
the reference's time bounds how much faster any exact engine can be.
Timings under the profiler are inflated; compare the shares and the ratios.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from torch.profiler import profile

from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.bench.workload import load_bench_model, make_prompts
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.fast import FastEngine
from wamdiff2_ros.decoding.reference import ReferenceDecoder

MATMUL = ("aten::mm", "aten::addmm", "aten::bmm")


def profile_engine(engine: FastEngine | ReferenceDecoder, prompts: list[dict], config: DecodeConfig) -> dict:
    """Forwards, ms per forward and the matmul / attention / other shares of the self time under the profiler."""
    engine.generate(prompts[0], config)  # warm-up
    forwards, decode_ms = 0, 0.0
    with profile() as prof:
        for inputs in prompts:
            stats = engine.generate(inputs, config).stats
            forwards += stats.forwards
            decode_ms += stats.decode_ms
    self_us = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    total = sum(self_us.values()) or 1.0
    matmul = sum(v for k, v in self_us.items() if k in MATMUL)
    attention = sum(v for k, v in self_us.items() if "scaled_dot_product" in k or "flash_attention" in k)
    return {"forwards": forwards, "ms_per_forward": decode_ms / max(forwards, 1),
            "matmul_share": matmul / total, "attention_share": attention / total,
            "other_share": 1.0 - (matmul + attention) / total}


def decode_profile_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="checkpoints/wamdiff2-tiny-b32")
    parser.add_argument("--blocks", default="1,32")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", required=True)


def decode_profile(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads)
    vla, description = load_bench_model(args.model, "cpu", "float32")
    prompts = make_prompts(vla, args.samples, 1, image=True, kind="driving")
    rows = []
    for block in (int(b) for b in args.blocks.split(",")):
        config = DecodeConfig(block_size=block, max_new_tokens=args.max_new_tokens)
        for name, engine in (("reference", ReferenceDecoder(vla)), ("fast", FastEngine(vla))):
            rows.append({"engine": name, "block_size": block, **profile_engine(engine, prompts, config)})
    print(f"{'engine':<10}{'B':>4}{'forwards':>10}{'ms/forward':>12}{'matmul':>8}{'attention':>11}{'other':>7}")
    for r in rows:
        print(f"{r['engine']:<10}{r['block_size']:>4}{r['forwards']:>10}{r['ms_per_forward']:>12.2f}"
              f"{r['matmul_share']:>8.0%}{r['attention_share']:>11.0%}{r['other_share']:>7.0%}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"model": description, "threads": args.threads, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python bench/decode_profile.py``: the flags of ``wamdiff2 bench decode-profile``."""
    return run_script("bench/decode_profile.py", __doc__.splitlines()[0], decode_profile_arguments, decode_profile, argv)
