"""rosbag2 message types without rclpy: a rosbags typestore with this package's messages registered.

The typestore is ROS 2 Kilted's (or Jazzy's) with the ``wamdiff2_ros/msg/*``
definitions registered from the ``.msg`` texts, found in
``$AMENT_PREFIX_PATH/*/share/wamdiff2_ros/msg`` first and then in the source tree's
``msg/`` next to the package.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "PACKAGE",
    "TRAJECTORY_TYPE",
    "DETECTION_ARRAY_TYPE",
    "DISTROS",
    "BagError",
    "message_definition_dirs",
    "find_message_definitions",
    "get_typestore",
]

PACKAGE = "wamdiff2_ros"
TRAJECTORY_TYPE = "wamdiff2_ros/msg/Trajectory"
DETECTION_ARRAY_TYPE = "wamdiff2_ros/msg/DetectionArray"
DISTROS = ("kilted", "jazzy")


class BagError(RuntimeError):
    """A bag or the message definitions cannot be used; the message says what and where."""



def message_definition_dirs() -> list[Path]:
    """Candidate folders holding this package's ``.msg`` files, in search order."""
    dirs: list[Path] = []
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share" / PACKAGE / "msg")
    dirs.append(Path(__file__).resolve().parents[3] / "msg")
    return dirs


def find_message_definitions() -> Path:
    """The first folder with ``Trajectory.msg`` in it; :class:`BagError` naming the places looked in."""
    tried = message_definition_dirs()
    for directory in tried:
        if (directory / "Trajectory.msg").is_file():
            return directory
    raise BagError(
        "cannot find the wamdiff2_ros message definitions (Trajectory.msg); looked in: "
        + ", ".join(str(d) for d in tried)
        + ". Source install/setup.bash of a colcon build, or run from the source tree."
    )


@lru_cache(maxsize=4)
def _typestore(distro: str, msg_dir: str) -> Any:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore  # optional: only when bags are used

    stores = {"kilted": Stores.ROS2_KILTED, "jazzy": Stores.ROS2_JAZZY}
    store = get_typestore(stores[distro])
    types: dict[str, Any] = {}
    for path in sorted(Path(msg_dir).glob("*.msg")):
        name = f"{PACKAGE}/msg/{path.stem}"
        try:
            types.update(get_types_from_msg(path.read_text(encoding="utf-8"), name))
        except Exception as exc:  # rosbags raises its own parser errors
            raise BagError(f"cannot parse message definition {path}: {exc}") from exc
    store.register(types)
    return store


def get_typestore(distro: str = "kilted") -> Any:
    """A rosbags typestore for ROS 2 ``distro`` with the ``wamdiff2_ros/msg/*`` types registered."""
    if distro not in DISTROS:
        raise BagError(f"unknown ROS 2 distro {distro!r}; choose one of {', '.join(DISTROS)}")
    return _typestore(distro, str(find_message_definitions()))
