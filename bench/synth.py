"""Synthetic-world benchmark: `wamdiff2 bench synth` as a script (the code: wamdiff2_ros/bench/synth.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.bench.synth import main

if __name__ == "__main__":
    sys.exit(main())
