"""Every custom message crosses Fast DDS between two rclpy processes with its values intact."""

from __future__ import annotations

import json
import math

import pytest
from conftest import process_output


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    return a == b


def test_every_custom_message_over_dds(repo, ros_env, processes, tmp_path):
    from wamdiff2_ros.ros.msg_utils import message_to_dict

    peer = str(repo / "test" / "ros" / "msg_peer.py")
    out = tmp_path / "received.json"
    pub = processes.python([peer, "pub"], ros_env)
    sub = processes.python([peer, "sub", str(out)], ros_env)
    rc = sub.wait(timeout=60)
    assert rc == 0, f"subscriber did not receive every type:\n{process_output(sub)}"
    assert pub.poll() is None, "publisher died"

    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("msg_peer", peer)
    module = importlib.util.module_from_spec(spec)
    sys.modules["msg_peer"] = module
    spec.loader.exec_module(module)
    expected = {name: message_to_dict(m) for name, m in module.samples().items()}
    received = json.loads(out.read_text())
    assert set(received) == set(expected)
    for name in expected:
        assert _close(expected[name], received[name]), f"{name}: sent {expected[name]} got {received[name]}"
    # spot checks that the comparison above is about real values
    assert received["Trajectory"]["waypoints"][7]["x"] == pytest.approx(12.0)
    assert received["Trajectory"]["waypoints"][7]["time_from_start"] == {"sec": 4, "nanosec": 0}
    assert received["Detection"]["bbox"] == pytest.approx([10.0, 20.0, 110.0, 95.5])
    assert received["DrivingCommand"]["command"] == 2
    assert received["DecodeStats"]["engine"] == "fast/sdpa"
