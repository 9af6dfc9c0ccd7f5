"""Where the shipped checkpoints are: the embedded defaults of the demo, nodes and benchmarks.

Search order for a checkpoint name: ``$WAMDIFF2_CHECKPOINTS/<name>``, the source
tree's ``checkpoints/<name>``, then ``share/wamdiff2_ros/checkpoints/<name>`` of every
prefix in ``$AMENT_PREFIX_PATH`` (the colcon install). A directory counts when it
holds a ``config.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STUDENT = "wamdiff2-tiny-b32"
DEFAULT_AR = "wamdiff2-tiny-ar"


def checkpoint_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("WAMDIFF2_CHECKPOINTS"):
        dirs.append(Path(os.environ["WAMDIFF2_CHECKPOINTS"]))
    dirs.append(Path(__file__).resolve().parents[2] / "checkpoints")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share" / "wamdiff2_ros" / "checkpoints")
    return dirs


def default_checkpoint(name: str = DEFAULT_STUDENT) -> Path | None:
    """The first directory named ``name`` that holds a checkpoint, or None."""
    for base in checkpoint_dirs():
        candidate = base / name
        if (candidate / "config.json").is_file():
            return candidate
    return None
