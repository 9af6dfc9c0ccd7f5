"""Synthetic-world benchmark: same as `wamdiff2 bench synth` (see wamdiff2_ros/data/synth_bench.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.data.synth_bench import add_arguments, run_from_args  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/synth.py", description="frames per second of the synthetic world")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
