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


DEFAULT_THRESHOLD = 0.9  # the decode confidence threshold of a checkpoint that names none (the paper table's)
THRESHOLD_KEY = "confidence_threshold"  # in generation_config.json: the checkpoint's own decode default


def own_threshold(directory: str | os.PathLike | None) -> float | None:
    """The decode confidence threshold a checkpoint ships with (``generation_config.json``), or None.

    A value that is not a number in [0, 1] is an error, not a silent default.
    """
    import json

    if directory is None:
        return None
    path = Path(directory) / "generation_config.json"
    if not path.is_file():
        return None
    value = json.loads(path.read_text()).get(THRESHOLD_KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{path}: {THRESHOLD_KEY} = {value!r} is not a number in [0, 1]")
    return float(value)


def decode_threshold(given: float | None, directory: str | os.PathLike | None) -> float:
    """``given`` when it is set (>= 0), else the checkpoint's own threshold, else :data:`DEFAULT_THRESHOLD`."""
    if given is not None and given >= 0:
        return float(given)
    own = own_threshold(directory)
    return DEFAULT_THRESHOLD if own is None else own


def write_own_threshold(directory: str | os.PathLike, threshold: float) -> None:
    """Record ``threshold`` as the checkpoint's own decode default in its ``generation_config.json``."""
    import json

    if isinstance(threshold, bool) or not 0.0 <= float(threshold) <= 1.0:
        raise ValueError(f"threshold {threshold!r} is not a number in [0, 1]")
    path = Path(directory) / "generation_config.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data[THRESHOLD_KEY] = float(threshold)
    path.write_text(json.dumps(data, indent=2) + "\n")
