"""Where drive_node finds the shipped checkpoint: the ament index first, the source tree last.

Order: ``$WAMDIFF2_CHECKPOINTS``; ``share/wamdiff2_ros/checkpoints`` of the install
that the ament index names (ament_index_python where it imports, else the same
look-up done by hand over ``$AMENT_PREFIX_PATH``); then the source tree's
``checkpoints/`` (a development checkout). A directory counts when it holds a
``config.json``. Nothing is downloaded; a missing checkpoint is an error that lists
every place looked at.
"""

from __future__ import annotations

import os
from pathlib import Path

from wamdiff2_ros.model.checkpoints import DEFAULT_STUDENT

PACKAGE = "wamdiff2_ros"


def share_dirs() -> list[Path]:
    """``share/wamdiff2_ros`` of the install(s) that provide the package, ament index first."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        get_package_share_directory = None
    if get_package_share_directory is not None:
        try:
            return [Path(get_package_share_directory(PACKAGE))]
        except (PackageNotFoundError, LookupError, ValueError):
            return []
    dirs = []  # fallback: the ament index's rule, by hand (a prefix holding the package's marker)
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        marker = Path(prefix) / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE
        if prefix and marker.is_file():
            dirs.append(Path(prefix) / "share" / PACKAGE)
    return dirs


def checkpoint_search_dirs() -> list[Path]:
    """Every directory searched for a named checkpoint, in order."""
    dirs = []
    if os.environ.get("WAMDIFF2_CHECKPOINTS"):
        dirs.append(Path(os.environ["WAMDIFF2_CHECKPOINTS"]))
    dirs += [share / "checkpoints" for share in share_dirs()]
    dirs.append(Path(__file__).resolve().parents[2] / "checkpoints")
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def find_checkpoint(name: str = DEFAULT_STUDENT) -> tuple[Path | None, list[Path]]:
    """(the first ``<dir>/<name>`` holding a config.json or None, the directories looked in)."""
    dirs = checkpoint_search_dirs()
    for base in dirs:
        if (base / name / "config.json").is_file():
            return base / name, dirs
    return None, dirs
