"""Paired speed: `wamdiff2 bench paired-speed` as a script (the code: wamdiff2_ros/bench/paired_speed.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.bench.paired_speed import main

if __name__ == "__main__":
    sys.exit(main())
