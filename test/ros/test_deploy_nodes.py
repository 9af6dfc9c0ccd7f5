"""Deployment behaviour of the nodes as real processes over DDS.

- two drive nodes in /car1 and /car2 on one DDS domain: outputs stay in their
  namespace, frames are the base_frame parameter, neither plans on the other's input;
- a route command published (transient local) before a drive node starts still
  reaches it;
- images flooded while /diagnostics publishes at 100 Hz never end the node;
- an integer for a float parameter is taken as a float, a string is refused with a
  message and no traceback, and `ros2 param describe` (the DescribeParameters
  service) shows the ranges.
"""

from __future__ import annotations

import itertools
import time

import pytest
from conftest import process_output
from helpers_ros import stamped_image, stamped_odometry

pytestmark = pytest.mark.ros
T0 = 1_800_000_000_000_000_000
_stamps = itertools.count(1)


def _stamp() -> int:
    return T0 + next(_stamps) * 500_000_000


def _drive_args(*extra: str) -> list[str]:
    return ["-m", "wamdiff2_ros.ros.drive_node", "--ros-args", "-p", "model_path:=preset:tiny", "-p", "tasks:=[planning]",
            "-p", "max_new_tokens:=16", "-p", "accel_topic:=''", *extra]


def _status(diagnostics, name: str) -> dict[str, str]:
    for msg in reversed(diagnostics):
        for status in msg.status:
            if status.name == f"wamdiff2_ros: {name}":
                return {kv.key: kv.value for kv in status.values}
    return {}


class Vehicle:
    """Publishers into one namespace and the plans that come out of it."""

    def __init__(self, peer, ns: str) -> None:
        from nav_msgs.msg import Odometry
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import Image

        from wamdiff2_ros.msg import Trajectory

        self.peer, self.ns = peer, ns
        self.image_pub = peer.node.create_publisher(Image, f"/{ns}/cameras/CAM_F0/image", qos_profile_sensor_data)
        self.odom_pub = peer.node.create_publisher(Odometry, f"/{ns}/ego/odometry", 10)
        self.plans = peer.listen(Trajectory, f"/{ns}/wamdiff2/trajectory")
        self.sent: list[int] = []

    def send(self) -> int:
        stamp = _stamp()
        self.odom_pub.publish(stamped_odometry(stamp))
        self.peer.spin_for(0.05)
        self.image_pub.publish(stamped_image(stamp))
        self.sent.append(stamp)
        return stamp


def test_two_vehicles_by_namespace_and_a_command_sent_before_start(repo, ros_env, processes, ros_peer):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from wamdiff2_ros.msg import DrivingCommand
    from wamdiff2_ros.ros.msg_utils import stamp_to_ns

    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    command_pub = ros_peer.node.create_publisher(DrivingCommand, "/car1/driving_command", latched)
    command_pub.publish(DrivingCommand(command=DrivingCommand.LEFT))  # before any drive node exists
    diagnostics = ros_peer.listen(DiagnosticArray, "/diagnostics")
    cars = {ns: Vehicle(ros_peer, ns) for ns in ("car1", "car2")}
    procs = {ns: processes.python(_drive_args("-r", f"__ns:=/{ns}", "-p", f"base_frame:={ns}/base_link"), ros_env, cwd=repo)
             for ns in cars}
    ready = lambda: all(_status(diagnostics, f"{ns}/drive_node").get("model_state") == "ready" for ns in cars)  # noqa: E731
    assert ros_peer.spin_until(lambda: ready() or any(p.poll() is not None for p in procs.values()), 120), (
        process_output(procs["car1"]) + process_output(procs["car2"]))
    assert ros_peer.spin_until(lambda: all(ros_peer.node.count_subscribers(f"/{ns}/cameras/CAM_F0/image") == 1
                                           for ns in cars), 30), "each camera topic must have exactly its own driver"
    car1, car2 = cars["car1"], cars["car2"]
    for _ in range(3):
        stamp = car1.send()
        assert ros_peer.spin_until(lambda s=stamp: any(stamp_to_ns(p.header.stamp) == s for p in car1.plans), 60), (
            process_output(procs["car1"]))
    ros_peer.spin_for(1.0)
    assert not car2.plans, "car2 planned on car1's images"
    stamp = car2.send()
    assert ros_peer.spin_until(lambda: any(stamp_to_ns(p.header.stamp) == stamp for p in car2.plans), 60)
    ros_peer.spin_for(1.0)
    assert {stamp_to_ns(p.header.stamp) for p in car1.plans} <= set(car1.sent)
    assert {stamp_to_ns(p.header.stamp) for p in car2.plans} <= set(car2.sent)
    assert {p.header.frame_id for p in car1.plans} == {"car1/base_link"}
    assert {p.header.frame_id for p in car2.plans} == {"car2/base_link"}
    assert _status(diagnostics, "car1/drive_node")["driving_command"] == "left", "the latched command was lost"
    assert _status(diagnostics, "car2/drive_node")["driving_command"] == "unknown"


def test_image_flood_with_fast_diagnostics_never_ends_the_node(repo, ros_env, processes, ros_peer):
    from diagnostic_msgs.msg import DiagnosticArray

    diagnostics = ros_peer.listen(DiagnosticArray, "/diagnostics")
    proc = processes.python(_drive_args("-r", "__ns:=/flood", "-p", "diagnostics_rate_hz:=100.0",
                                        "-p", "max_rate_hz:=100.0", "-p", "camera_timeout_s:=0.05"), ros_env, cwd=repo)
    car = Vehicle(ros_peer, "flood")
    assert ros_peer.spin_until(lambda: _status(diagnostics, "flood/drive_node").get("model_state") == "ready"
                               or proc.poll() is not None, 120), process_output(proc)
    assert ros_peer.spin_until(lambda: ros_peer.node.count_subscribers("/flood/cameras/CAM_F0/image") == 1, 30)
    image = stamped_image(_stamp())
    end = time.monotonic() + 8.0
    sent = 0
    while time.monotonic() < end:  # thousands of images
        stamp = _stamp()
        image.header.stamp.sec, image.header.stamp.nanosec = divmod(stamp, 1_000_000_000)
        car.image_pub.publish(image)
        sent += 1
        time.sleep(0.001)  # about 1 kHz: faster, Fast DDS refuses the publisher's own writes
        if sent % 50 == 0:
            car.odom_pub.publish(stamped_odometry(stamp))
            ros_peer.executor.spin_once(timeout_sec=0)
    marker = len(diagnostics)
    assert ros_peer.spin_until(lambda: len(diagnostics) > marker + 20, 20), "diagnostics stopped"
    assert proc.poll() is None, process_output(proc)
    status = _status(diagnostics, "flood/drive_node")
    output = process_output(proc)
    assert "Traceback" not in output and "mutated" not in output, output[-3000:]
    assert int(status["inferences"]) > 0 and status["inference_errors"] == "0", status
    assert sent > 1000, f"only {sent} images sent"


def test_float_parameters_take_integers_refuse_strings_and_describe_ranges(repo, ros_env, processes, ros_peer):
    from rcl_interfaces.srv import DescribeParameters, GetParameters

    good = processes.python(["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args", "-r", "__ns:=/params",
                             "-p", "max_speed:=10", "-p", "control_rate_hz:=20"], ros_env, cwd=repo)
    bad = processes.python(["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args", "-r", "__ns:=/bad",
                            "-p", "max_speed:=fast"], ros_env, cwd=repo)
    assert bad.wait(timeout=60) == 2, process_output(bad)
    out = process_output(bad)
    assert "max_speed" in out and "must be a number" in out and "Traceback" not in out, out
    describe = ros_peer.node.create_client(DescribeParameters, "/params/waypoint_follower_node/describe_parameters")
    get = ros_peer.node.create_client(GetParameters, "/params/waypoint_follower_node/get_parameters")
    assert ros_peer.spin_until(lambda: describe.service_is_ready() and get.service_is_ready(), 60), process_output(good)
    answer = describe.call_async(DescribeParameters.Request(names=["max_speed", "control_rate_hz", "output"]))
    assert ros_peer.spin_until(answer.done, 20)
    speed, rate, output = answer.result().descriptors
    assert speed.floating_point_range[0].from_value == 0.0 and speed.floating_point_range[0].to_value == 70.0
    assert rate.floating_point_range[0].to_value == 200.0
    assert not output.floating_point_range and not output.integer_range and "twist" in output.additional_constraints
    values = get.call_async(GetParameters.Request(names=["max_speed"]))
    assert ros_peer.spin_until(values.done, 20)
    value = values.result().values[0]
    assert value.type == 3 and value.double_value == 10.0, "max_speed:=10 should be the float 10.0"


def test_missing_checkpoint_stops_drive_node_with_where_it_looked(repo, ros_env, processes, tmp_path):
    proc = processes.python(["-m", "wamdiff2_ros.ros.drive_node", "--ros-args", "-p", f"model_path:={tmp_path / 'gone'}"],
                            ros_env, cwd=repo)
    assert proc.wait(timeout=120) == 2, process_output(proc)
    out = process_output(proc)
    assert str(tmp_path / "gone") in out and "no config.json" in out and "Traceback" not in out, out
    assert "random weights" not in out
