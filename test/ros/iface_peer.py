"""A standalone rclpy subscriber for messages the test process cannot import (test-only interfaces).

    python iface_peer.py package/msg/Type /topic OUT.jsonl

Appends every message it receives to OUT.jsonl as one JSON object per line (fields
via message_to_dict), flushed, until SIGINT.
"""

from __future__ import annotations

import importlib
import json
import sys

import rclpy
from rclpy.executors import ExternalShutdownException

from wamdiff2_ros.ros.msg_utils import message_to_dict


def main(type_name: str, topic: str, out: str) -> int:
    package, kind, name = type_name.split("/")
    cls = getattr(importlib.import_module(f"{package}.{kind}"), name)
    rclpy.init()
    node = rclpy.create_node("wamdiff2_iface_peer")
    with open(out, "a") as sink:

        def on_message(msg) -> None:
            sink.write(json.dumps(message_to_dict(msg)) + "\n")
            sink.flush()

        node.create_subscription(cls, topic, on_message, 10)
        try:
            rclpy.spin(node)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
