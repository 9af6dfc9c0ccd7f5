"""`wamdiff2 bench paired-speed`: decode tokens/s of checkpoints timed interleaved on the same scenes, as ratios with intervals.

Every model decodes each chosen scene's planning, perception and understanding prompts one after
another (as a driving node asks them, at the checkpoint's own decode settings: block size,
confidence thresholds, end-token order), the models take turns scene by scene (which goes first
rotates), and the whole pass repeats. So both models run under the same machine load, which
separately timed runs (the paper table's rows, each scored in its own process at its own time)
do not share: on a shared VM the speed of one host or hour can be twice another's.

A model's speed is its total tokens over its total decode time (prefill excluded, as the
engine's ``decode_tokens_per_second``); its ratio to the baseline is taken for planning alone and
for the mixed three-task workload, with a 95 % interval from a bootstrap over scenes (the same
resampled scenes for both models).

``wamdiff2 bench paired-speed --model ar=checkpoints/wamdiff2-tiny-ar --model student=checkpoints/wamdiff2-tiny-b32
--split runs/data/synth-val-l6 --scenes 40 --repeats 3 --json OUT`` (also ``python bench/paired_speed.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from wamdiff2_ros.bench.machine import device_description
from wamdiff2_ros.bench.script import run_script
from wamdiff2_ros.bench.sweep import parse_model_spec
from wamdiff2_ros.data.tokenized import prompt_of
from wamdiff2_ros.decoding import generate
from wamdiff2_ros.evaluation.heldout import TASKS, scene_tasks, split_rows, spread, task_config
from wamdiff2_ros.evaluation.paper_table import PAIRED_KEY, update_store
from wamdiff2_ros.model.checkpoints import (
    decode_threshold,
    own_end_in_order_tasks,
    own_reuse_kv_tasks,
    own_task_thresholds,
)
from wamdiff2_ros.model.loader import ModelLoadError, load_model

WORKLOADS = {"planning": ("planning",), "mixed": TASKS}


@dataclass(frozen=True)
class DecodeSettings:
    """A checkpoint's own decode defaults (``generation_config.json``), as its users get them."""

    block_size: int
    threshold: float
    task_thresholds: dict[str, float]
    end_in_order_tasks: tuple[str, ...]
    reuse_kv_tasks: tuple[str, ...] = ()

    @classmethod
    def of(cls, directory: str | Path, block_size: int) -> DecodeSettings:
        return cls(block_size, decode_threshold(None, directory), own_task_thresholds(directory),
                   own_end_in_order_tasks(directory), own_reuse_kv_tasks(directory))

    def config(self, task: str, max_new_tokens: int):
        thresholds = {t: self.task_thresholds.get(t, self.threshold) for t in TASKS}
        return task_config(self.block_size, thresholds, max_new_tokens, task, self.end_in_order_tasks,
                           self.reuse_kv_tasks)


def turn_order(names: Sequence[str], scene_index: int) -> list[str]:
    """The models in the order they decode scene ``scene_index``: the first place rotates scene by scene."""
    k = scene_index % len(names)
    return list(names[k:]) + list(names[:k])


def time_interleaved(models: dict[str, tuple[Any, DecodeSettings]], scenes: list[dict[str, dict[str, Any]]],
                     repeats: int, *, max_new_tokens: int = 192, progress: bool = True) -> dict[str, dict[str, Any]]:
    """Per model and task, per scene (summed over repeats): generated tokens, forwards, decode ms.

    ``scenes[i][name][task]`` is model ``name``'s tokenised row of scene i and that task.
    """
    names = list(models)
    out = {n: {t: {k: np.zeros(len(scenes)) for k in ("tokens", "forwards", "ms")} for t in TASKS} for n in names}
    configs = {n: {t: s.config(t, max_new_tokens) for t in TASKS} for n, (_, s) in models.items()}
    for name, (vla, _) in models.items():  # one untimed decode each: engine set-up is not decode speed
        generate(vla, prompt_of(scenes[0][name]["planning"]), configs[name]["planning"])
    bar = tqdm(total=repeats * len(scenes), desc="paired speed", unit="scene", disable=not progress)
    for _ in range(repeats):
        for i, scene in enumerate(scenes):
            for name in turn_order(names, i):
                vla = models[name][0]
                for task in TASKS:
                    stats = generate(vla, prompt_of(scene[name][task]), configs[name][task]).stats
                    cell = out[name][task]
                    cell["tokens"][i] += stats.generated_tokens
                    cell["forwards"][i] += stats.forwards
                    cell["ms"][i] += stats.decode_ms
            bar.update(1)
    bar.close()
    return out


def speed_ratio(tokens: np.ndarray, ms: np.ndarray, base_tokens: np.ndarray, base_ms: np.ndarray, *,
                bootstrap: int = 10000, seed: int = 0) -> dict[str, float]:
    """(sum tokens / sum ms) over the baseline's, on the same scenes; 95 % percentile bootstrap over scenes."""
    arrays = [np.asarray(a, dtype=np.float64) for a in (tokens, ms, base_tokens, base_ms)]
    if len({a.size for a in arrays}) != 1 or arrays[0].size == 0:
        raise ValueError("speed_ratio needs the same non-empty scenes for both models")

    def ratio(t, m, bt, bm):
        return (t.sum(axis=-1) / m.sum(axis=-1)) / (bt.sum(axis=-1) / bm.sum(axis=-1))

    idx = np.random.default_rng(seed).integers(0, arrays[0].size, size=(bootstrap, arrays[0].size))
    samples = ratio(*(a[idx] for a in arrays))
    return {"ratio": float(ratio(*arrays)), "low": float(np.percentile(samples, 2.5)),
            "high": float(np.percentile(samples, 97.5))}


def summarize(timings: dict[str, dict[str, Any]], baseline: str, *, bootstrap: int = 10000) -> dict[str, Any]:
    """Per model: tokens/s, tokens per forward and ms per forward of each task and workload, and its ratios."""
    out: dict[str, Any] = {}
    for name, cells in timings.items():
        row: dict[str, Any] = {"per_task": {}, "workloads": {}}
        for task, c in cells.items():
            row["per_task"][task] = _rates(c["tokens"].sum(), c["forwards"].sum(), c["ms"].sum())
        for workload, tasks in WORKLOADS.items():
            t, f, m = (sum(cells[task][k] for task in tasks) for k in ("tokens", "forwards", "ms"))
            bt, bm = (sum(timings[baseline][task][k] for task in tasks) for k in ("tokens", "ms"))
            row["workloads"][workload] = {**_rates(t.sum(), f.sum(), m.sum()),
                                          "vs_baseline": speed_ratio(t, m, bt, bm, bootstrap=bootstrap)}
        out[name] = row
    return out


def _rates(tokens: float, forwards: float, ms: float) -> dict[str, float]:
    return {"tokens": int(tokens), "forwards": int(forwards), "decode_ms": float(ms),
            "tokens_per_second": float(tokens / (ms / 1e3)) if ms else float("nan"),
            "tokens_per_forward": float(tokens / forwards) if forwards else float("nan"),
            "ms_per_forward": float(ms / forwards) if forwards else float("nan")}


def format_table(runs: Sequence[dict[str, Any]], baseline: str) -> str:
    """One markdown row per (thread count, model)."""
    lines = ["| threads | model | B | planning tok/s | x " + baseline + " [95% CI] | mixed tok/s | x " + baseline
             + " [95% CI] | tok/fwd plan / perc / QA | ms/fwd plan / perc / QA |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        for name, row in run["models"].items():
            cells = []
            for workload in WORKLOADS:
                w = row["workloads"][workload]
                v = w["vs_baseline"]
                cells += [f"{w['tokens_per_second']:.1f}", f"{v['ratio']:.2f}x [{v['low']:.2f}, {v['high']:.2f}]"]
            tpf = " / ".join(f"{row['per_task'][t]['tokens_per_forward']:.2f}" for t in TASKS)
            mpf = " / ".join(f"{row['per_task'][t]['ms_per_forward']:.2f}" for t in TASKS)
            lines.append(f"| {run['threads']} | {name} | {run['settings'][name]['block_size']} | "
                         + " | ".join(cells) + f" | {tpf} | {mpf} |")
    return "\n".join(lines)


def paired_speed_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", action="append", required=True, metavar="NAME=DIR[@B]",
                        help="a checkpoint, decoded at its own settings (repeatable; at least two)")
    parser.add_argument("--baseline", default=None, help="the model the ratios are against (default: the first)")
    parser.add_argument("--split", required=True, help="a synthetic split's root (its prompts; no label is read)")
    parser.add_argument("--scenes", type=int, default=40, help="scenes spread evenly over the split (0: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1", help="torch thread counts, one timed pass each (e.g. 1,2)")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--seed", type=int, default=2, help="the split's sample seed (which QA question per scene)")
    parser.add_argument("--cache", default=None, help="tokenised-sample cache (default: next to --json)")
    parser.add_argument("--bootstrap", type=int, default=10000)
    parser.add_argument("--json", required=True)
    parser.add_argument("--store", default=None, help="also keep the result in this paper-table store (with --name)")
    parser.add_argument("--name", default=None, help="the split's name in --store (e.g. test)")
    parser.add_argument("--row", action="append", default=[], metavar="NAME=ROW",
                        help="with --store: the paper-table row a model is (repeatable)")
    parser.add_argument("--quiet", action="store_true")


def _threads(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or any(v < 1 for v in values):
        raise ValueError(f"--threads {text!r}: give comma-separated counts >= 1")
    return values


def paired_speed(args: argparse.Namespace) -> int:
    try:
        specs = [parse_model_spec(s) for s in args.model]
        threads = _threads(args.threads)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    names = [name for name, _, _ in specs]
    baseline = args.baseline or names[0]
    if len(set(names)) != len(names) or len(names) < 2 or baseline not in names or args.repeats < 1:
        print(f"error: give at least two models with distinct names, --baseline one of them ({', '.join(names)}),"
              " and --repeats >= 1", file=sys.stderr)
        return 2
    rows = dict(spec.partition("=")[::2] for spec in args.row)
    if (args.store is None) != (args.name is None) or any(n not in names or not r for n, r in rows.items()):
        print("error: --store and --name go together; each --row is NAME=ROW for a model given", file=sys.stderr)
        return 2
    models: dict[str, tuple[Any, DecodeSettings]] = {}
    try:
        for name, path, block in specs:
            vla = load_model(path, block_size=block)
            models[name] = (vla, DecodeSettings.of(path, int(vla.block_size)))
    except (ModelLoadError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cache = Path(args.cache) if args.cache else Path(args.json).parent / "paired_speed_cache"
    per_model = {n: scene_tasks(split_rows(vla, args.split, cache, seed=args.seed)) for n, (vla, _) in models.items()}
    shared = spread([s for s in per_model[names[0]] if all(s in per_model[n] for n in names)], args.scenes)
    if not shared:
        print(f"error: {args.split} has no scene with all three tasks", file=sys.stderr)
        return 2
    scenes = [{n: per_model[n][s] for n in names} for s in shared]
    runs = []
    for count in threads:
        torch.set_num_threads(count)
        timings = time_interleaved(models, scenes, args.repeats, max_new_tokens=args.max_new_tokens,
                                   progress=not args.quiet)
        runs.append({"threads": count, "machine": device_description("cpu"),
                     "settings": {n: asdict(s) for n, (_, s) in models.items()},
                     "models": summarize(timings, baseline, bootstrap=args.bootstrap)})
    result = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "split": str(args.split),
              "scenes": len(scenes), "scene_ids": shared, "repeats": args.repeats, "baseline": baseline,
              "checkpoints": {name: path for name, path, _ in specs}, "runs": runs}
    print(format_table(runs, baseline))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    if args.store:
        entry = {**result, "rows": rows}
        update_store(Path(args.store), lambda r: r.setdefault(args.name, {}).__setitem__(PAIRED_KEY, entry))
        print(f"kept in {args.store} as {args.name}.{PAIRED_KEY}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python bench/paired_speed.py``: the flags of ``wamdiff2 bench paired-speed``."""
    return run_script("bench/paired_speed.py", __doc__.splitlines()[0], paired_speed_arguments, paired_speed, argv)
