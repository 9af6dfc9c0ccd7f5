"""bag_recorder_node: record topics into a rosbag2 (MCAP or sqlite3) without ros2 bag.

`ros2 bag record` is not on PyPI. This node subscribes to each topic with
``raw=True`` (serialized CDR, no decode/encode) and writes it with the `rosbags`
library, message definitions embedded (this package's from msg/, the rest from the
Kilted typestore), so `ros2 bag`, Foxglove and `wamdiff2 bag eval` open the result.
Topics are given as ``topic:package/msg/Type``. Images use sensor-data QoS.
"""

from __future__ import annotations

import importlib
import sys
import threading

from wamdiff2_ros.data.bags import BagWriter
from wamdiff2_ros.ros.node_main import run_node
from wamdiff2_ros.ros.params import ParameterError, declare, one_of, spec

PARAMS = [
    spec("output", "", "bag folder to create (must not exist)"),
    spec("storage", "mcap", "rosbag2 storage", one_of("mcap", "sqlite3")),
    spec("topics", ["/wamdiff2/trajectory:wamdiff2_ros/msg/Trajectory"], "topic:package/msg/Type entries"),
]
SENSOR_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage", "sensor_msgs/msg/PointCloud2")


def message_class(type_name: str):
    """The rclpy message class of ``package/msg/Type``."""
    package, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def parse_topics(entries) -> list[tuple[str, str]]:
    out = []
    for entry in entries:
        topic, _, type_name = str(entry).rpartition(":")
        if not topic.startswith("/") or type_name.count("/") != 2:
            raise ParameterError(f"topics entry {entry!r} is not '/topic:package/msg/Type'")
        out.append((topic, type_name))
    return out


class BagRecorder:
    def __init__(self, node) -> None:
        # in the method: rclpy exists only in a ROS install; the module imports without
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

        self.node = node
        self.p = declare(node, PARAMS)
        if not self.p["output"]:
            raise ParameterError("parameter 'output' is empty: give the bag folder to create")
        topics = parse_topics(self.p["topics"])
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        try:
            self.bag = BagWriter(self.p["output"], storage=self.p["storage"])
        except Exception as exc:
            raise ParameterError(f"cannot create bag {self.p['output']}: {exc}") from exc
        self.bag.__enter__()
        self.closed = False
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        for topic, type_name in topics:
            try:
                cls = message_class(type_name)
            except (ImportError, AttributeError, ValueError) as exc:
                raise ParameterError(f"unknown message type {type_name!r} for {topic}: {exc}") from exc
            self.bag.add_topic(topic, type_name)
            self.counts[topic] = 0
            qos = qos_profile_sensor_data if type_name in SENSOR_TYPES else reliable
            node.create_subscription(cls, topic, lambda data, t=topic: self.on_message(t, data), qos, raw=True)
        node.get_logger().info(f"recording {len(topics)} topics to {self.p['output']} ({self.p['storage']})")
        # close the bag as soon as the context shuts down (SIGINT), before node and DDS teardown, so a teardown
        # that stalls until the launcher's SIGKILL still leaves a complete bag
        node.context.on_shutdown(self.shutdown)

    def on_message(self, topic: str, data: bytes) -> None:
        now = self.node.get_clock().now().nanoseconds
        with self.lock:
            if self.closed:
                return
            self.bag.write_raw(topic, now, data)
            self.counts[topic] += 1

    def shutdown(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.bag.__exit__(None, None, None)
        print(f"bag closed: {sum(self.counts.values())} messages", flush=True)


def main(argv: list[str] | None = None) -> int:
    return run_node("bag_recorder_node", BagRecorder, argv)


if __name__ == "__main__":
    sys.exit(main())
