"""Shared pytest fixtures: repository paths, isolated ROS 2 environments, process cleanup; the markers;
a tiny synthetic log and random tiny models (the bench and training tests share them).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

import pytest
from helpers_ros import REPO, RosPeer, ros_available, ros_environment

from wamdiff2_ros.data.synth import synthesize

# The markers `ros` and `slow` (pyproject.toml) are given here, in one place, not in the test files:
# `ros` to every test of test/ros and every test using a ROS fixture (it starts nodes or an rclpy peer),
# `slow` to the tests listed in slow_tests.txt. `make test-fast` runs `-m "not slow and not ros"`.
ROS_ROOM = "test/ros/"
ROS_FIXTURES = {"ros_env", "ros_peer"}
SLOW_TESTS = pathlib.Path(__file__).with_name("slow_tests.txt")


def slow_tests() -> set[str]:
    """Entries of slow_tests.txt: a file (`test/x/test_y.py`) or a test (`...::test_z`, any parameters)."""
    lines = SLOW_TESTS.read_text(encoding="utf-8").splitlines()
    return {line.split("#", 1)[0].strip() for line in lines} - {""}


def pytest_collection_modifyitems(config, items):
    slow = slow_tests()
    for item in items:
        try:
            path = pathlib.Path(item.path).resolve().relative_to(REPO).as_posix()
        except ValueError:  # not a test of this repository
            continue
        name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
        if path.startswith(ROS_ROOM) or ROS_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.ros)
        if {path, f"{path}::{name}", f"{path}::{name.split('[', 1)[0]}"} & slow:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def repo() -> pathlib.Path:
    return REPO


@pytest.fixture
def ros_env() -> dict[str, str]:
    """Environment for ROS processes of one test: its own DDS domain, localhost only.

    Under `make test` (WAMDIFF2_REQUIRE_ROS=1) a missing ROS build is an error, not a skip.
    """
    if not ros_available():
        if os.environ.get("WAMDIFF2_REQUIRE_ROS") == "1":
            pytest.fail("wamdiff2_ros.msg is not importable: run `make setup` and source install/setup.bash")
        pytest.skip("ROS 2 build not on the path (run through `make test` or tools/ros_env.sh)")
    return ros_environment(REPO)


class Processes:
    """Starts child processes and always stops them (SIGINT, then SIGKILL)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
        """Start ``args``; its output goes to a file (``proc.log_path``) so a full pipe never blocks it."""
        log = tempfile.NamedTemporaryFile("w+", prefix="wamdiff2_proc_", suffix=".log", delete=False)
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, text=True, **kwargs)
        proc.log_path = log.name
        self.procs.append(proc)
        return proc

    def python(self, args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
        return self.start([sys.executable, *args], env, **kwargs)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(2)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.unlink(proc.log_path)


def process_output(proc: subprocess.Popen) -> str:
    """What a process started by :class:`Processes` has printed so far."""
    return pathlib.Path(proc.log_path).read_text(errors="replace")


@pytest.fixture
def processes():
    procs = Processes()
    yield procs
    procs.stop_all()


@pytest.fixture
def ros_peer(ros_env):
    peer = RosPeer(ros_env)
    yield peer
    peer.close()


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory):
    """One synthetic log of 14 frames at 64x32 pixels: 3 scenes (planning, perception, one QA each)."""
    root = tmp_path_factory.mktemp("synth")
    synthesize(root, num_logs=1, num_frames=14, seed=3, size=(64, 32), progress=False)
    return root


@pytest.fixture(scope="session")
def random_models(synth_root, tmp_path_factory):
    """A random tiny model saved at B=1 and B=4, and one held-out sample per task from the synthetic log."""
    # imported here: they import torch, and every test session (ROS and data tests too) loads this conftest
    from wamdiff2_ros.evaluation.ladder import heldout_rows, pick
    from wamdiff2_ros.model.loader import init_model

    root = tmp_path_factory.mktemp("sweep")
    vla = init_model("tiny", seed=0)
    vla.with_block_size(1).save(root / "ar")
    vla.with_block_size(4).save(root / "b4")
    samples = pick(heldout_rows(vla, synth_root, root / "cache"), 1)
    return root, vla, samples


@pytest.fixture(scope="module")
def shipped():
    """The shipped student (checkpoints/wamdiff2-tiny-b32), loaded once per module, one torch thread."""
    import torch

    from wamdiff2_ros.model.checkpoints import default_checkpoint
    from wamdiff2_ros.model.loader import load_model

    path = default_checkpoint()
    if path is None:
        pytest.fail("the shipped checkpoint checkpoints/wamdiff2-tiny-b32 is missing")
    torch.set_num_threads(1)
    return load_model(path)
