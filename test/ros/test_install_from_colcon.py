"""A real `colcon build` (no --symlink-install) into a temporary workspace carries its model and its tests.

- share/wamdiff2_ros/checkpoints holds the shipped student as real files, and
  drive_node started from that install (its own setup.bash, outside the source tree)
  loads it through the ament index;
- `colcon test --packages-select wamdiff2_ros` runs the pytest suite that
  CMakeLists.txt registers with ament_cmake_pytest (one room, to stay quick);
- the test-only interface packages are not in that install.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from conftest import process_output
from helpers_ros import REPO, RosPeer

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def _clean_env(repo) -> dict[str, str]:
    """The venv alone: none of this checkout's install/ or build/ on any path."""
    venv = os.path.dirname(os.path.dirname(sys.executable))
    # (_ROS_WHEELS_BOOTSTRAP_COMPLETE goes too: the PyPI rclpy then sets LD_LIBRARY_PATH itself again)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLCON", "AMENT", "CMAKE_PREFIX", "PYTHONPATH",
                                                                     "LD_LIBRARY_PATH", "ROS_", "_ROS_"))}
    env.update(VIRTUAL_ENV=venv, PATH=f"{venv}/bin:{os.environ['PATH']}", AMENT_PREFIX_PATH=venv,
               CMAKE_PREFIX_PATH=venv, PYTHONUNBUFFERED="1", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    repo = REPO
    ws = tmp_path_factory.mktemp("ws")
    env = _clean_env(repo)
    link_dir = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "wamdiff2_ros",
                            hashlib.sha1(str(repo).encode()).hexdigest()[:12])  # as tools/build_ros.sh
    args = ["colcon", "--log-base", str(ws / "log"), "build", "--base-paths", str(repo),
            "--build-base", str(ws / "build"), "--install-base", str(ws / "install"),
            "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DPython3_NumPy_INCLUDE_DIR={link_dir}/numpy-include", "-DBUILD_TESTING=ON"]
    out = subprocess.run(args, cwd=ws, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    return ws, env


def _sourced(ws, env, command: str) -> list[str]:
    return ["bash", "-c", f". {ws / 'install' / 'setup.bash'} && {command}"]


def test_install_carries_the_shipped_checkpoints_and_no_test_interfaces(workspace):
    ws, _ = workspace
    share = ws / "install" / "wamdiff2_ros" / "share" / "wamdiff2_ros"
    for name in ("wamdiff2-tiny-b32", "wamdiff2-tiny-ar"):
        weights = share / "checkpoints" / name / "model.safetensors"
        assert weights.is_file() and not weights.is_symlink(), f"{weights} not installed as a file"
    installed = {p.name for p in (ws / "install").iterdir()}
    assert "ackermann_msgs" not in installed and "carla_msgs" not in installed
    assert not list((ws / "install").rglob("AckermannDrive*"))


def test_drive_node_from_the_install_loads_the_shipped_student(workspace, ros_env, tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray

    ws, env = workspace
    env = dict(env, ROS_DOMAIN_ID=ros_env["ROS_DOMAIN_ID"])
    log = open(tmp_path / "drive_node.log", "w")  # closed below
    node = subprocess.Popen(_sourced(ws, env, f"exec {ws}/install/wamdiff2_ros/lib/wamdiff2_ros/drive_node --ros-args -p tasks:=[planning]"),
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    node.log_path = str(tmp_path / "drive_node.log")
    peer = RosPeer(ros_env, "install_test_peer")
    try:
        diagnostics = peer.listen(DiagnosticArray, "/diagnostics")

        def model() -> str:
            for msg in reversed(diagnostics):
                for status in msg.status:
                    values = {kv.key: kv.value for kv in status.values}
                    if values.get("model_state") == "ready":
                        return values["model"]
            return ""

        assert peer.spin_until(lambda: model() or node.poll() is not None, 120), process_output(node)
        expected = ws / "install" / "wamdiff2_ros" / "share" / "wamdiff2_ros" / "checkpoints" / "wamdiff2-tiny-b32"
        assert model() == str(expected), f"loaded {model()!r}\n{process_output(node)}"
        assert "random weights" not in process_output(node)
    finally:
        peer.close()
        node.send_signal(2)
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()
        log.close()


def test_colcon_test_runs_the_registered_pytest_suite(workspace, ros_env):
    ws, env = workspace
    env = dict(env, ROS_DOMAIN_ID=ros_env["ROS_DOMAIN_ID"], PYTEST_ADDOPTS="-k 'help_lists or unknown_subcommand'")
    run = subprocess.run(
        _sourced(ws, env, f"colcon --log-base {ws / 'log'} test --packages-select wamdiff2_ros --base-paths "
                          f"{REPO} --build-base {ws / 'build'} "
                          f"--install-base {ws / 'install'} --ctest-args -R pytest_foundation"),
        cwd=ws, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = subprocess.run(["colcon", "test-result", "--test-result-base", str(ws / "build"), "--verbose"],
                            cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 errors, 0 failures" in result.stdout, result.stdout
    junit = list((ws / "build" / "wamdiff2_ros" / "test_results").rglob("pytest_foundation*.xml"))
    assert junit and 'tests="2"' in junit[0].read_text(), "pytest's own report of the two selected tests is missing"
