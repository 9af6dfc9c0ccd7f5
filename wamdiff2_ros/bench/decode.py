"""`wamdiff2 bench decode`: decode tokens/s and forwards/s per engine and block size, side by side.

Runs every engine variant on the same prompts in one process, prints a table, writes
JSON ``{"model", "device", "parity", "rows": [...]}`` and, with ``--plot``, a PNG of
tokens/s and forwards/s against block size. Engine variants: ``reference``,
``fast`` (auto backend/graphs) or ``fast:<auto|sdpa|flashinfer>[+graphs|+nographs][+full]``
(``+full``: every block position through the last layer, ``prune_committed`` off).
``--model`` is a checkpoint directory or a preset name (``tiny``, ``small``,
``2b-shape``: random weights, said so in the output). On a random model the
diffusion decode commits about one token per step, so forwards/s is the number to
compare until a trained checkpoint exists.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from wamdiff2_ros.bench.machine import device_description
from wamdiff2_ros.bench.plot import pyplot
from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.bench.workload import load_bench_model, make_prompts
from wamdiff2_ros.decoding.api import fast_engine
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.reference import ReferenceDecoder


def decode_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="tiny", help="checkpoint directory, or a preset name for random weights (default: tiny)")
    parser.add_argument("--blocks", default="1,4,8,16,32", help="comma-separated block sizes (default: 1,4,8,16,32)")
    parser.add_argument("--engines", default="reference,fast",
                        help="comma-separated: reference, fast, fast:sdpa, fast:flashinfer, fast:sdpa+graphs, ... (default: reference,fast)")
    parser.add_argument("--samples", type=int, default=4, help="prompts per engine and block size (default: 4)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="response budget per prompt (default: 64)")
    parser.add_argument("--threshold", type=float, default=0.9, help="confidence threshold (default: 0.9)")
    parser.add_argument("--batch", type=int, default=1, help="prompts decoded together (left padded; default: 1)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--no-image", action="store_true", help="text-only prompts (default: one camera image each)")
    parser.add_argument("--prompts", choices=("auto", "driving", "generic"), default="auto",
                        help="driving: the model's real tasks (planning, perception, understanding questions) on "
                             "front-camera frames of the synthetic world; generic: fixed short questions with noise "
                             "images; auto: driving for checkpoints, generic for presets (default)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run every variant this many times, round-robin, and sum (evens out a busy machine; default: 1)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: leave torch's default)")
    parser.add_argument("--json", required=True, help="where to write the JSON results")
    parser.add_argument("--plot", default=None, help="optional PNG: tokens/s and forwards/s against block size")


def parse_engine(spec: str) -> tuple[str, str, bool | str, bool]:
    """``"fast:flashinfer+graphs"`` -> ("fast", "flashinfer", True, True); ``+full`` turns ``prune_committed`` off."""
    name, _, rest = spec.strip().partition(":")
    if name not in ("reference", "fast"):
        raise ValueError(f"unknown engine {spec!r}: use reference, fast or "
                         "fast:<auto|sdpa|flashinfer>[+graphs|+nographs][+full]")
    backend, graphs, prune = "auto", "auto", True
    if rest:
        backend, *flags = rest.split("+")
        if backend not in ("auto", "sdpa", "flashinfer") or len(set(flags)) != len(flags):
            raise ValueError(f"bad engine variant {spec!r}")
        for flag in flags:
            if flag in ("graphs", "nographs") and graphs == "auto":
                graphs = flag == "graphs"
            elif flag == "full":
                prune = False
            else:
                raise ValueError(f"bad engine variant {spec!r}: unknown or conflicting flag {flag!r}")
    return name, backend, graphs, prune


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_variant(vla, prompts, spec, block_size, args) -> tuple[dict, list[list[list[int]]]]:
    name, backend, graphs, prune = parse_engine(spec)
    config = DecodeConfig(block_size=block_size, confidence_threshold=args.threshold, max_new_tokens=args.max_new_tokens,
                          engine=name, attention_backend=backend, cuda_graphs=graphs, prune_committed=prune,
                          dtype=args.dtype, device=args.device)
    engine = ReferenceDecoder(vla) if name == "reference" else fast_engine(vla)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    engine.generate(prompts[0], config)  # warm-up (and CUDA graph capture)
    totals = {"generated_tokens": 0, "forwards": 0, "decode_ms": 0.0, "prefill_ms": 0.0, "prompt_tokens": 0}
    answers, label = [], spec
    for inputs in prompts:
        result = engine.generate(inputs, config)
        answers.append(result.tokens)
        label = result.stats.engine
        for key in totals:
            totals[key] += getattr(result.stats, key)
    seconds = max(totals["decode_ms"] / 1e3, 1e-9)
    row = {
        "engine": spec, "engine_resolved": label, "block_size": block_size,
        "decode_tps": totals["generated_tokens"] / seconds,
        "forwards_per_second": totals["forwards"] / seconds,
        "tokens_per_forward": totals["generated_tokens"] / max(totals["forwards"], 1),
        "forwards": totals["forwards"], "generated_tokens": totals["generated_tokens"],
        "prefill_ms": totals["prefill_ms"] / len(prompts), "decode_ms": totals["decode_ms"],
        "prompt_tokens": totals["prompt_tokens"], "peak_memory_mb": _peak_memory_mb(device), "runs": 1,
    }
    return row, answers


def merge_rows(first: dict, again: dict) -> dict:
    """One row from two runs of the same variant: counts and times summed, rates recomputed."""
    row = dict(first)
    for key in ("generated_tokens", "forwards", "decode_ms", "prompt_tokens"):
        row[key] = first[key] + again[key]
    runs = first["runs"]
    row["runs"] = runs + 1
    row["prefill_ms"] = (first["prefill_ms"] * runs + again["prefill_ms"]) / (runs + 1)
    row["peak_memory_mb"] = max(first["peak_memory_mb"], again["peak_memory_mb"])
    seconds = max(row["decode_ms"] / 1e3, 1e-9)
    row["decode_tps"] = row["generated_tokens"] / seconds
    row["forwards_per_second"] = row["forwards"] / seconds
    row["tokens_per_forward"] = row["generated_tokens"] / max(row["forwards"], 1)
    return row


def format_table(rows: list[dict]) -> str:
    fast_ar = {r["engine"]: r["decode_tps"] for r in rows if r["block_size"] == 1}
    ref = {r["block_size"]: r["decode_tps"] for r in rows if r["engine"] == "reference"}
    head = f"{'engine':<24}{'B':>4}{'tok/s':>10}{'fwd/s':>10}{'tok/fwd':>9}{'fwds':>7}{'tokens':>8}{'prefill ms':>12}{'peak MB':>9}{'x B=1':>7}{'x ref':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        vs_ar = r["decode_tps"] / fast_ar[r["engine"]] if fast_ar.get(r["engine"]) else float("nan")
        vs_ref = r["decode_tps"] / ref[r["block_size"]] if ref.get(r["block_size"]) else float("nan")
        lines.append(f"{r['engine_resolved']:<24}{r['block_size']:>4}{r['decode_tps']:>10.1f}{r['forwards_per_second']:>10.1f}"
                     f"{r['tokens_per_forward']:>9.2f}{r['forwards']:>7}{r['generated_tokens']:>8}{r['prefill_ms']:>12.1f}"
                     f"{r['peak_memory_mb']:>9.0f}{vs_ar:>7.2f}{vs_ref:>7.2f}")
    return "\n".join(lines)


def write_plot(rows: list[dict], path: str, title: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for spec in dict.fromkeys(r["engine"] for r in rows):
        mine = sorted((r for r in rows if r["engine"] == spec), key=lambda r: r["block_size"])
        blocks = [r["block_size"] for r in mine]
        axes[0].plot(blocks, [r["decode_tps"] for r in mine], marker="o", label=mine[0]["engine_resolved"])
        axes[1].plot(blocks, [r["forwards_per_second"] for r in mine], marker="o", label=mine[0]["engine_resolved"])
    for ax, label in zip(axes, ("decode tokens/s", "forwards/s"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("block size B")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def decode(args: argparse.Namespace) -> int:
    try:
        blocks = [int(b) for b in args.blocks.split(",") if b.strip()]
        specs = [s.strip() for s in args.engines.split(",") if s.strip()]
        for spec in specs:
            parse_engine(spec)
    except ValueError as exc:
        print(f"wamdiff2 bench decode: {exc}", file=sys.stderr)
        return 2
    if not blocks or min(blocks) < 1 or args.samples < 1 or args.batch < 1 or args.repeats < 1:
        print("wamdiff2 bench decode: --blocks, --samples, --batch and --repeats must be positive", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    vla, description = load_bench_model(args.model, args.device, args.dtype)
    print(f"model: {description}; {vla.num_parameters() / 1e6:.1f} M parameters; device {args.device}, {args.dtype}")
    kind = args.prompts if args.prompts != "auto" else ("driving" if os.path.isdir(args.model) else "generic")
    prompts = make_prompts(vla, args.samples, args.batch, image=not args.no_image, kind=kind)
    print(f"prompts: {kind} ({args.samples})")
    merged, answers = {}, {}
    for repeat in range(args.repeats):
        for block in blocks:
            for spec in tqdm(specs, desc=f"B={block} ({repeat + 1}/{args.repeats})", leave=False):
                row, tokens = run_variant(vla, prompts, spec, block, args)
                key = (spec, block)
                merged[key] = row if key not in merged else merge_rows(merged[key], row)
                answers[key] = tokens
    rows = list(merged.values())
    parity_checks = [answers[(s, b)] == answers[("reference", b)]
                     for s in specs if s != "reference" and ("reference", blocks[0]) in answers for b in blocks]
    parity = all(parity_checks) if parity_checks else None
    device_name = device_description(args.device)
    report = {
        "model": description, "device": device_name, "dtype": args.dtype, "parity": parity,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "samples": args.samples, "prompts": kind, "batch": args.batch, "max_new_tokens": args.max_new_tokens,
        "confidence_threshold": args.threshold, "repeats": args.repeats, "torch": torch.__version__, "rows": rows,
    }
    print(format_table(rows))
    print(f"parity (fast tokens == reference tokens): {parity}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.json}")
    if args.plot:
        write_plot(rows, args.plot, f"{description} on {device_name}")
        print(f"wrote {args.plot}")
    return 0 if parity in (True, None) else 1


def main(argv: list[str] | None = None) -> int:
    """``python bench/decode.py``: the flags of ``wamdiff2 bench decode``."""
    return run_script("bench/decode.py", "decode tokens/s per engine and block size", decode_arguments, decode, argv)
