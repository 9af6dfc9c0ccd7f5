"""Confidence-threshold sweep: same as `wamdiff2 bench sweep` (see wamdiff2_ros/training/sweep.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.training.sweep import sweep, sweep_arguments  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/threshold_sweep.py",
                                     description="planning L2 and QA against tokens per forward over confidence thresholds")
    sweep_arguments(parser)
    return sweep(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
