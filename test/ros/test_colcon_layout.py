"""The colcon install space holds one `wamdiff2_ros`: generated messages and our modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = r"""
import json, os, sys
repo = os.path.realpath(sys.argv[1])
# Only the install space may provide wamdiff2_ros: drop the source tree from the path.
sys.path = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != repo]
import wamdiff2_ros, wamdiff2_ros.msg, wamdiff2_ros.cli, wamdiff2_ros.ros.msg_utils
import wamdiff2_ros.model, wamdiff2_ros.decoding, wamdiff2_ros.training, wamdiff2_ros.data, wamdiff2_ros.evaluation
from wamdiff2_ros.msg import Trajectory, Waypoint, Detection, DetectionArray, Rationale, DecodeStats, DrivingCommand
print(json.dumps({
    "path": list(wamdiff2_ros.__path__),
    "msg": wamdiff2_ros.msg.__file__,
    "cli": wamdiff2_ros.cli.__file__,
    "model": wamdiff2_ros.model.__file__,
    "trajectory_type": Trajectory.__module__,
}))
"""


def _install_prefix() -> str:
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if os.path.isfile(os.path.join(prefix, "share", "ament_index", "resource_index", "packages", "wamdiff2_ros")):
            return prefix
    pytest.fail("wamdiff2_ros is not registered in the ament index of AMENT_PREFIX_PATH")


def test_install_space_exposes_messages_and_modules(repo, ros_env, tmp_path):
    prefix = _install_prefix()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo)], cwd=tmp_path, env=ros_env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    for key in ("msg", "cli", "model"):
        assert info[key].startswith(prefix), f"{key} came from {info[key]}, not the install space {prefix}"
    assert info["trajectory_type"].startswith("wamdiff2_ros.msg")


def test_executables_launch_and_config_are_installed(ros_env):
    prefix = _install_prefix()
    for exe in ("drive_node", "navsim_replay_node", "waypoint_follower_node", "sim_node", "bag_recorder_node"):
        path = os.path.join(prefix, "lib", "wamdiff2_ros", exe)
        assert os.access(path, os.X_OK), f"{path} missing or not executable"
    share = os.path.join(prefix, "share", "wamdiff2_ros")
    assert os.path.isfile(os.path.join(share, "package.xml"))
    assert os.path.isdir(os.path.join(share, "launch"))
    assert os.path.isdir(os.path.join(share, "config"))
    for name in ("Waypoint", "Trajectory", "Detection", "DetectionArray", "Rationale", "DecodeStats", "DrivingCommand"):
        assert os.path.isfile(os.path.join(share, "msg", f"{name}.msg")), name
