"""`wamdiff2 bench sweep`: speed against quality, students decoded at several confidence thresholds next to the AR baseline.

The confidence threshold is the knob of parallel decoding: every masked position whose
softmax confidence reaches it is committed in the same forward. Lower thresholds commit
more tokens per forward (faster) and risk committing wrong ones together (worse plans).
This sweep decodes the same held-out samples with every (model, threshold) and scores
them like the results ladder (``evaluation.ladder``: planning L2 with the flagged
constant-velocity fallback, parse rate, QA exact match, COCO mAP), so the frontier is
measured, not guessed. A B=1 model is decoded once: its threshold changes nothing (one slot per step).

``wamdiff2 bench sweep --model NAME=DIR[@B] ... --heldout DIR --thresholds 0.9,0.7,0.5 --json OUT``
(also ``python bench/threshold_sweep.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.bench.machine import device_description
from wamdiff2_ros.bench.plot import pyplot
from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.evaluation.ladder import evaluate_model, heldout_rows, pick
from wamdiff2_ros.evaluation.stats import paired_bootstrap
from wamdiff2_ros.model.loader import ModelLoadError, load_model


def parse_model_spec(spec: str) -> tuple[str, str, int | None]:
    """``"student=checkpoints/x@32"`` -> ("student", "checkpoints/x", 32); the block size defaults to the checkpoint's."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise ValueError(f"bad --model {spec!r}: use NAME=DIR or NAME=DIR@B")
    path, at, block = rest.rpartition("@") if "@" in rest else (rest, "", "")
    if at:
        if not block.isdigit() or int(block) < 1:
            raise ValueError(f"bad block size in --model {spec!r}: {block!r}")
        return name, path, int(block)
    return name, rest, None


def parse_thresholds(text: str) -> list[float]:
    """``"0.9,0.5"`` -> [0.9, 0.5]; each must lie in [0, 1]."""
    values = [float(v) for v in text.split(",") if v.strip()]
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"--thresholds {text!r}: give comma-separated values in [0, 1]")
    return values


def threshold_sweep(models: dict[str, tuple[Any, int]], samples: dict[str, list[dict[str, Any]]],
                    thresholds: Sequence[float], *, max_new_tokens: int = 192, paired_to: float | None = None,
                    progress: bool = True) -> list[dict[str, Any]]:
    """One scored row per (model, threshold); B=1 models get a single row (threshold ``None``).

    With ``paired_to`` (one of ``thresholds``) every diffusion row also gets ``l2_vs_ref``: the
    paired per-sample planning L2 difference against the same model at that threshold (mean,
    95% bootstrap interval, relative %), so a threshold is chosen on more than two means.
    """
    if paired_to is not None and paired_to not in thresholds:
        raise ValueError(f"paired_to={paired_to} is not one of the thresholds {list(thresholds)}")
    rows = []
    for name, (vla, block) in models.items():
        for threshold in (thresholds if block > 1 else [None]):
            start = time.perf_counter()
            scores = evaluate_model(vla, samples, block, max_new_tokens=max_new_tokens,
                                    threshold=0.9 if threshold is None else threshold, progress=progress)
            scores.pop("examples", None)
            rows.append({"model": name, "threshold": threshold, "wall_s": time.perf_counter() - start, **scores})
    baseline = next((r for r in rows if r["block_size"] == 1), None)
    for r in rows:
        r["speedup_vs_ar"] = (r["decode_tokens_per_second"] / baseline["decode_tokens_per_second"]
                              if baseline else float("nan"))
        r["l2_vs_ar"] = r["planning_l2"] / baseline["planning_l2"] if baseline else float("nan")
    for r in rows:
        ref = next((q for q in rows if q["model"] == r["model"] and q["threshold"] == paired_to), None)
        if paired_to is None or r["threshold"] is None or ref is None:
            continue
        mine, theirs = r["per_sample"]["planning_l2"], ref["per_sample"]["planning_l2"]
        r["l2_vs_ref"] = {"threshold": paired_to, **paired_bootstrap(
            [a - b for a, b in zip(mine, theirs, strict=True)], reference=theirs)}
    return rows


def paired_text(r: dict[str, Any]) -> str:
    """``+1.2% [-0.5, +3.0]`` of a row's ``l2_vs_ref`` (``-`` without one or at the reference itself)."""
    p = r.get("l2_vs_ref")
    if not p or p["threshold"] == r["threshold"] or p.get("relative_pct") is None:
        return "-"
    return f"{p['relative_pct']:+.1f}% [{p['relative_low']:+.1f}, {p['relative_high']:+.1f}]"


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of the sweep (one line per row)."""
    lines = ["| model | B | threshold | planning L2 (m) | L2 / AR | paired L2 vs ref [95%] | plans parsed | QA | mAP |"
             " tokens / forward | decode tokens/s | x AR |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        threshold = "-" if r["threshold"] is None else f"{r['threshold']:.2f}"
        lines.append(
            f"| {r['model']} | {r['block_size']} | {threshold} | {r['planning_l2']:.3f} | {r['l2_vs_ar']:.2f} |"
            f" {paired_text(r)} |"
            f" {r['planning_parse_rate']:.2f} | {r['qa_accuracy']:.2f} | {r['detection_map']:.3f} |"
            f" {r['tokens_per_forward']:.2f} | {r['decode_tokens_per_second']:.1f} | {r['speedup_vs_ar']:.2f} |")
    return "\n".join(lines)


def format_speed_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table of decode speed per task (tokens/s, tokens per forward, x the AR row's tokens/s)."""
    base = next((r for r in rows if r["block_size"] == 1), None)
    tasks = list((rows[0].get("speed_per_task") or {}) if rows else [])
    head = " | ".join(f"{t} tok/s (x AR) | {t} tok/fwd" for t in tasks)
    lines = [f"| model | threshold | {head} |", "|---|---|" + "---|---|" * len(tasks)]
    for r in rows:
        cells = []
        for t in tasks:
            mine = r["speed_per_task"][t]
            ratio = (f" ({mine['tokens_per_second'] / base['speed_per_task'][t]['tokens_per_second']:.2f}x)"
                     if base is not None else "")
            cells.append(f"{mine['tokens_per_second']:.1f}{ratio} | {mine['tokens_per_forward']:.2f}")
        threshold = "-" if r["threshold"] is None else f"{r['threshold']:.2f}"
        lines.append(f"| {r['model']} | {threshold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_plot(rows: Sequence[dict[str, Any]], path: str | Path, title: str) -> Path:
    """Planning L2 and QA against tokens per forward, one curve per diffusion model, AR as a star."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        x = [r["tokens_per_forward"] for r in mine]
        style = {"marker": "*", "markersize": 14, "linestyle": "none"} if mine[0]["threshold"] is None else {"marker": "o"}
        for ax, key in zip(axes, ("planning_l2", "qa_accuracy"), strict=True):
            ax.plot(x, [r[key] for r in mine], label=f"{name} (B={mine[0]['block_size']})", **style)
            if mine[0]["threshold"] is not None:
                for r in mine:
                    ax.annotate(f"{r['threshold']:g}", (r["tokens_per_forward"], r[key]), fontsize=7,
                                textcoords="offset points", xytext=(3, 3))
    for ax, label in zip(axes, ("planning L2 avg 1-4 s (m), lower is better", "QA exact match"), strict=True):
        ax.set_xlabel("tokens per forward (labels: confidence threshold)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", action="append", required=True, metavar="NAME=DIR[@B]",
                        help="a checkpoint to decode (repeat; @B overrides its block size), "
                             "e.g. ar=checkpoints/wamdiff2-tiny-ar student=checkpoints/wamdiff2-tiny-b32")
    parser.add_argument("--heldout", default="runs/data/synth-heldout", help="held-out NAVSIM-format dataset root")
    parser.add_argument("--cache", default="runs/cache", help="where tokenised held-out samples are cached")
    parser.add_argument("--limit", type=int, default=30, help="samples per task (default: 30)")
    parser.add_argument("--thresholds", default="0.95,0.9,0.8,0.7,0.5,0.3", help="comma-separated confidence thresholds")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--paired-to", type=float, default=None,
                        help="one of --thresholds: each row's paired per-sample L2 difference against it, with a "
                             "bootstrap interval (default: none)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    parser.add_argument("--json", required=True, help="where to write the JSON results")
    parser.add_argument("--plot", default=None, help="optional PNG: L2 and QA against tokens per forward")


def sweep(args: argparse.Namespace) -> int:
    try:
        specs = [parse_model_spec(s) for s in args.model]
        thresholds = parse_thresholds(args.thresholds)
        if args.paired_to is not None and args.paired_to not in thresholds:
            raise ValueError(f"--paired-to {args.paired_to} is not one of --thresholds {args.thresholds}")
    except ValueError as exc:
        print(f"wamdiff2 bench sweep: {exc}", file=sys.stderr)
        return 2
    if len({name for name, _, _ in specs}) != len(specs):
        print("wamdiff2 bench sweep: --model names must differ", file=sys.stderr)
        return 2
    if not Path(args.heldout).is_dir():
        print(f"wamdiff2 bench sweep: --heldout {args.heldout} is not a directory"
              " (make one with `tools/reproduce.sh data` or `wamdiff2 synth`)", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, args.threads))
    models = {}
    try:
        for name, path, block in specs:
            vla = load_model(path, block_size=block)
            models[name] = (vla, vla.block_size)
    except ModelLoadError as exc:
        print(f"wamdiff2 bench sweep: {exc}", file=sys.stderr)
        return 2
    first = next(iter(models.values()))[0]
    samples = pick(heldout_rows(first, args.heldout, args.cache), args.limit)
    print(f"samples per task: { {k: len(v) for k, v in samples.items()} }; thresholds {thresholds}")
    rows = threshold_sweep(models, samples, thresholds, max_new_tokens=args.max_new_tokens,
                           paired_to=args.paired_to)
    device = device_description("cpu")
    report = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "device": device,
              "models": {name: path for name, path, _ in specs}, "heldout": str(args.heldout),
              "samples": {k: len(v) for k, v in samples.items()}, "torch": torch.__version__, "rows": rows}
    print(format_table(rows))
    print()
    print(format_speed_table(rows))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    if args.plot:
        print(f"wrote {write_plot(rows, args.plot, f'confidence-threshold sweep on {device}')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python bench/threshold_sweep.py``: the flags of ``wamdiff2 bench sweep``."""
    return run_script("bench/threshold_sweep.py",
                      "planning L2 and QA against tokens per forward over confidence thresholds",
                      sweep_arguments, sweep, argv)
