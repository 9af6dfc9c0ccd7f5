"""Shared pytest fixtures: repository paths, isolated ROS 2 environments, process cleanup."""

from __future__ import annotations

import importlib.util
import itertools
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
_domain_counter = itertools.count()


def ros_available() -> bool:
    """True when rclpy and the colcon-built `wamdiff2_ros.msg` can be imported."""
    try:
        return importlib.util.find_spec("rclpy") is not None and importlib.util.find_spec("wamdiff2_ros.msg") is not None
    except ImportError:
        return False


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
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str((os.getpid() * 7 + next(_domain_counter)) % 100 + 1)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


class Processes:
    """Starts child processes and always stops them (SIGINT, then SIGKILL)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
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


@pytest.fixture
def processes():
    procs = Processes()
    yield procs
    procs.stop_all()


class RosPeer:
    """An rclpy node inside the test process, in its own context and DDS domain."""

    def __init__(self, env: dict[str, str], name: str = "wamdiff2_test_peer") -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(env["ROS_DOMAIN_ID"]))
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.inbox: dict[str, list] = {}

    def listen(self, msg_type, topic: str, qos=10) -> list:
        box = self.inbox.setdefault(topic, [])
        self.node.create_subscription(msg_type, topic, box.append, qos)
        return box

    def spin_until(self, predicate, timeout: float = 30.0, step: float = 0.05) -> bool:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=step)
            if predicate():
                return True
        return predicate()

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, timeout=seconds)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


@pytest.fixture
def ros_peer(ros_env):
    peer = RosPeer(ros_env)
    yield peer
    peer.close()
