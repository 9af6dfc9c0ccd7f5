"""GPU prefix check: `wamdiff2 bench gpu-prefix-check` as a script (code: wamdiff2_ros/bench/gpu_prefix_check.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.bench.gpu_prefix_check import main

if __name__ == "__main__":
    sys.exit(main())
