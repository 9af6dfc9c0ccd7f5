"""Where the test-only interface packages (test/interfaces: ackermann_msgs, carla_msgs) are, and an env that sees them.

`tools/build_ros.sh` builds them into ``build/test_interfaces/install`` (colcon's
isolated layout). Processes get them through PYTHONPATH, LD_LIBRARY_PATH and
AMENT_PREFIX_PATH; the product's own environment (tools/ros_env.sh) never does.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PREFIX = REPO / "build" / "test_interfaces" / "install"
PACKAGES = ("ackermann_msgs", "carla_msgs")


def interfaces_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus the test-only interface packages; fails the test when they were not built."""
    missing = [p for p in PACKAGES if not (PREFIX / p / "share" / p / "package.xml").is_file()]
    if missing:
        message = f"test-only interfaces {missing} not built under {PREFIX}: run `make setup` (tools/build_ros.sh)"
        if os.environ.get("WAMDIFF2_REQUIRE_ROS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    out = dict(env)
    py = f"python{sys.version_info.major}.{sys.version_info.minor}"

    def prepend(key: str, paths: list[pathlib.Path]) -> None:
        out[key] = os.pathsep.join([*(str(p) for p in paths), *([out[key]] if out.get(key) else [])])

    prepend("PYTHONPATH", [PREFIX / p / "lib" / py / "site-packages" for p in PACKAGES])
    prepend("LD_LIBRARY_PATH", [PREFIX / p / "lib" for p in PACKAGES])
    prepend("AMENT_PREFIX_PATH", [PREFIX / p for p in PACKAGES])
    return out


def without_interfaces(env: dict[str, str]) -> dict[str, str]:
    """``env`` with every path of the test-only prefix removed (as a deployment without them)."""
    out = dict(env)
    for key in ("PYTHONPATH", "LD_LIBRARY_PATH", "AMENT_PREFIX_PATH"):
        if key in out:
            out[key] = os.pathsep.join(p for p in out[key].split(os.pathsep) if str(PREFIX) not in p)
    return out
