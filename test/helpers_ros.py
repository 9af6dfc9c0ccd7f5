"""Helpers for tests that run ROS 2 nodes: environments, an in-process peer node."""

from __future__ import annotations

import importlib.util
import itertools
import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
_domain_counter = itertools.count()


def ros_available() -> bool:
    """True when rclpy and the colcon-built `wamdiff2_ros.msg` can be imported."""
    try:
        return importlib.util.find_spec("rclpy") is not None and importlib.util.find_spec("wamdiff2_ros.msg") is not None
    except ImportError:
        return False


def ros_environment(repo: pathlib.Path = REPO) -> dict[str, str]:
    """Environment for the ROS processes of one test: its own DDS domain, localhost only."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str((os.getpid() * 7 + next(_domain_counter)) % 100 + 1)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(repo), env.get("PYTHONPATH", "")])
    return env


def stamped_image(stamp_ns: int):
    """A 64x32 rgb8 sensor_msgs/Image stamped ``stamp_ns``, its pixels seeded by the stamp."""
    import numpy as np
    from sensor_msgs.msg import Image

    from wamdiff2_ros.ros.image_conversion import rgb_to_image
    from wamdiff2_ros.ros.msg_utils import fill_stamp

    pixels = np.random.default_rng(stamp_ns % 997).integers(0, 255, (32, 64, 3), dtype=np.uint8)
    msg = rgb_to_image(Image, pixels, "rgb8")
    fill_stamp(msg.header.stamp, stamp_ns)
    return msg


def stamped_odometry(stamp_ns: int, speed: float = 3.0):
    """A nav_msgs/Odometry stamped ``stamp_ns``: identity orientation, ``speed`` m/s forward."""
    from nav_msgs.msg import Odometry

    from wamdiff2_ros.ros.msg_utils import fill_stamp

    msg = Odometry()
    fill_stamp(msg.header.stamp, stamp_ns)
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = speed
    return msg


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
