"""Start this package's nodes as separate processes (the demo, benchmarks), launch-free.

launch_ros is not on PyPI; this is the small part of it the demo needs: each node is
``python -m wamdiff2_ros.ros.<module> --ros-args --params-file config/<file>.yaml
-p name:=value ...`` in an environment with its own ROS_DOMAIN_ID, output to a log
file, stopped with SIGINT (then SIGKILL).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

NODE_MODULES = {
    "drive_node": "wamdiff2_ros.ros.drive_node",
    "navsim_replay_node": "wamdiff2_ros.ros.replay_node",
    "waypoint_follower_node": "wamdiff2_ros.ros.waypoint_follower_node",
    "sim_node": "wamdiff2_ros.ros.sim_node",
    "bag_recorder_node": "wamdiff2_ros.ros.recorder_node",
}


def config_dir() -> Path:
    """config/ of the source tree, else share/wamdiff2_ros/config of the colcon install."""
    source = Path(__file__).resolve().parents[2] / "config"
    if source.is_dir():
        return source
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        candidate = Path(prefix) / "share" / "wamdiff2_ros" / "config"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("cannot find the wamdiff2_ros config/ directory")


def isolated_env(domain_id: int | None = None) -> dict[str, str]:
    """This environment with a private DDS domain on localhost (parallel runs never meet)."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id if domain_id is not None else random.randint(1, 100))
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class NodeProcess:
    name: str
    proc: subprocess.Popen
    log_path: Path

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class NodeGroup:
    env: dict[str, str]
    log_dir: Path
    nodes: list[NodeProcess] = field(default_factory=list)

    def start(self, name: str, params: dict | None = None, params_file: str | None = None,
              remap: dict[str, str] | None = None) -> NodeProcess:
        import yaml

        self.log_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", NODE_MODULES[name], "--ros-args"]
        if params_file:
            args += ["--params-file", str(config_dir() / params_file)]
        if params:  # a file of its own: values with ':' or '[' need YAML quoting, not shell escapes
            overrides = self.log_dir / f"{name}.params.yaml"
            overrides.write_text(yaml.safe_dump({name: {"ros__parameters": dict(params)}}))
            args += ["--params-file", str(overrides)]
        for src, dst in (remap or {}).items():
            args += ["-r", f"{src}:={dst}"]
        log_path = self.log_dir / f"{name}.log"
        log = open(log_path, "w")  # handed to the child process
        proc = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        node = NodeProcess(name, proc, log_path)
        self.nodes.append(node)
        return node

    def stop_all(self, order: list[str] | None = None) -> dict[str, int]:
        ranked = sorted(self.nodes, key=lambda n: (order or []).index(n.name) if n.name in (order or []) else -1)
        return {n.name: n.stop() for n in ranked}
