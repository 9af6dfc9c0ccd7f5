"""Training compute of runs and lineages (samples seen, CPU core-seconds) and the AR baseline's equal-compute budget.

A run's compute is read from what the engine writes: ``train_summary.json`` (steps done,
wall time, world size) and ``train_config.json`` (batch size, accumulation, threads).
``samples = steps * batch_size * grad_accum * world_size`` and ``core_s = wall_time_s *
world_size * threads``. ``python -m wamdiff2_ros.evaluation.compute --runs DIR --baseline
tiny-ar --lineage RUN ...`` prints how many more steps the baseline needs so that it has
seen at least as many samples AND spent at least as many core-seconds as the whole
lineage (which includes the baseline's own run when the student started from it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Compute:
    """Steps, samples and CPU core-seconds of one run (or a sum of runs)."""

    steps: int
    samples: int
    core_s: float

    def __add__(self, other: Compute) -> Compute:
        return Compute(self.steps + other.steps, self.samples + other.samples, self.core_s + other.core_s)


def _read(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing (has the run finished?)")
    return json.loads(path.read_text())


def run_compute(run_dir: str | Path) -> Compute:
    """The compute of one finished (or stopped) run directory."""
    run_dir = Path(run_dir)
    summary, config = _read(run_dir / "train_summary.json"), _read(run_dir / "train_config.json")
    world = int(summary.get("world_size", 1))
    steps = int(summary.get("steps_done", summary["steps"]))
    threads = int(config.get("num_threads") or 1)
    samples = steps * int(config["batch_size"]) * int(config.get("grad_accum", 1)) * world
    return Compute(steps, samples, float(summary["wall_time_s"]) * world * threads)


def equal_compute_steps(runs: Path, baseline: str, lineage: list[str]) -> tuple[int, Compute, Compute]:
    """``(extra_steps, lineage_compute, baseline_compute)``: steps to add to ``baseline`` to match ``lineage``."""
    total = Compute(0, 0, 0.0)
    for name in lineage:
        total = total + run_compute(runs / name)
    base = run_compute(runs / baseline)
    config = _read(runs / baseline / "train_config.json")
    per_step_samples = int(config["batch_size"]) * int(config.get("grad_accum", 1))
    per_step_core_s = base.core_s / max(1, base.steps)
    need_samples = max(0, total.samples - base.samples)
    need_core_s = max(0.0, total.core_s - base.core_s)
    extra = max(math.ceil(need_samples / per_step_samples), math.ceil(need_core_s / per_step_core_s) if per_step_core_s else 0)
    return max(1, extra), total, base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, type=Path, help="folder holding the run directories")
    parser.add_argument("--baseline", required=True, help="the AR run to continue")
    parser.add_argument("--lineage", required=True, nargs="+", help="every run the student's training went through")
    args = parser.parse_args(argv)
    try:
        extra, total, base = equal_compute_steps(args.runs, args.baseline, args.lineage)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"lineage: {total.samples} samples, {total.core_s / 60:.1f} core-min; baseline {args.baseline}: "
          f"{base.samples} samples, {base.core_s / 60:.1f} core-min; continue it by {extra} steps", file=sys.stderr)
    print(extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
