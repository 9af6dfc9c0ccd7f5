"""A standalone rclpy process for the DDS message test: `pub` or `sub` every custom type.

pub: publishes one sample of each custom message (values from `samples()`) on
`/wamdiff2_test/<Type>` until killed. sub: waits for one of each, writes them as JSON
to the given file, and exits 0 (or 1 on timeout).
"""

from __future__ import annotations

import json
import sys
import time

import rclpy
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Vector3
from std_msgs.msg import Header

from wamdiff2_ros import msg as wmsg
from wamdiff2_ros.ros.msg_utils import message_to_dict


def samples() -> dict[str, object]:
    header = Header(stamp=Time(sec=1700000000, nanosec=123456789), frame_id="base_link")
    waypoints = [
        wmsg.Waypoint(x=1.5 * i, y=-0.25 * i, heading=0.01 * i, time_from_start=Duration(sec=i // 2, nanosec=(i % 2) * 500_000_000))
        for i in range(1, 9)
    ]
    detection = wmsg.Detection(
        label="vehicle", score=0.75, center=Point(x=12.5, y=-3.0, z=0.8), size=Vector3(x=4.5, y=1.9, z=1.6),
        yaw=0.3, camera="CAM_F0", bbox=[10.0, 20.0, 110.0, 95.5],
    )
    return {
        "Waypoint": waypoints[0],
        "Trajectory": wmsg.Trajectory(
            header=header, waypoints=waypoints, valid=True, source="model", block_size=32, confidence=0.875,
            scene_token="a1b2c3d4e5f60718",
        ),
        "Detection": detection,
        "DetectionArray": wmsg.DetectionArray(header=header, detections=[detection, wmsg.Detection(label="pedestrian")]),
        "Rationale": wmsg.Rationale(
            header=header, task="understanding", question="Is there a lead vehicle?",
            text="Yes, 12.5 m ahead, slowing.", driving_command="straight",
        ),
        "DecodeStats": wmsg.DecodeStats(
            header=header, engine="fast/sdpa", block_size=32, prompt_tokens=412, generated_tokens=48, forwards=9,
            tokens_per_forward=5.25, prefill_ms=31.5, decode_ms=88.25, decode_tokens_per_second=543.5,
        ),
        "DrivingCommand": wmsg.DrivingCommand(header=header, command=wmsg.DrivingCommand.RIGHT),
    }


def main(role: str, out: str | None = None) -> int:
    rclpy.init()
    node = rclpy.create_node(f"wamdiff2_msg_{role}")
    values = samples()
    received: dict[str, object] = {}
    if role == "pub":
        pubs = {name: node.create_publisher(type(m), f"/wamdiff2_test/{name}", 10) for name, m in values.items()}
        while rclpy.ok():
            for name, m in values.items():
                pubs[name].publish(m)
            rclpy.spin_once(node, timeout_sec=0.1)
        return 0
    for name, m in values.items():
        node.create_subscription(type(m), f"/wamdiff2_test/{name}", lambda msg, n=name: received.setdefault(n, msg), 10)
    deadline = time.monotonic() + 30.0
    while len(received) < len(values) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    with open(out, "w") as f:
        json.dump({n: message_to_dict(m) for n, m in received.items()}, f)
    node.destroy_node()
    rclpy.shutdown()
    return 0 if len(received) == len(values) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
