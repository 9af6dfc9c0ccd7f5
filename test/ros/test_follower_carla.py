"""The follower's CARLA outputs on the wire: AckermannDrive(Stamped) and CarlaEgoVehicleControl.

ackermann_msgs and carla_msgs are not on PyPI; the test-only packages of
test/interfaces declare the same package names, message names and fields, so the
follower (a real process) publishes exactly the types the CARLA bridge subscribes to,
and a second process decodes them.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pytest
from conftest import process_output

sys.path.append(str(pathlib.Path(__file__).parent))  # test/ros helpers (pytest runs in importlib mode)
from iface_env import interfaces_env, without_interfaces
from test_waypoint_follower import _odometry, _trajectory

pytestmark = pytest.mark.ros
ROLE = "/carla/ego_vehicle"
OUTPUTS = {  # output kind -> (message type, command topic)
    "ackermann": ("ackermann_msgs/msg/AckermannDrive", f"{ROLE}/ackermann_cmd"),
    "ackermann_stamped": ("ackermann_msgs/msg/AckermannDriveStamped", f"{ROLE}/ackermann_cmd_stamped"),
    "carla_control": ("carla_msgs/msg/CarlaEgoVehicleControl", f"{ROLE}/vehicle_control_cmd"),
}
WHEELBASE, MAX_STEER = 2.9, 0.7
DRIVING = {  # a command that drives (not the stop command sent while there is no plan)
    "ackermann": lambda m: m["speed"] > 0,
    "ackermann_stamped": lambda m: m["drive"]["speed"] > 0,
    "carla_control": lambda m: m["throttle"] > 0 or m["steer"] != 0,
}


def _read(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _drive_left_then_right(peer, files, stamp0: int) -> dict[str, dict[str, list[dict]]]:
    """Feed a left curve, then a right one (odometry at 3 m/s, plan at 5 m/s); what each output sent for each."""
    from nav_msgs.msg import Odometry

    from wamdiff2_ros.msg import Trajectory

    odom_pub = peer.node.create_publisher(Odometry, f"{ROLE}/odometry", 10)
    traj_pub = peer.node.create_publisher(Trajectory, "/wamdiff2/trajectory", 10)
    assert peer.spin_until(lambda: peer.node.count_subscribers("/wamdiff2/trajectory") >= len(files), 60)
    seen: dict[str, dict[str, list[dict]]] = {}
    for phase, curvature, offset in (("left", 0.05, 0), ("right", -0.05, 3_000_000_000)):
        marks = {kind: len(_read(path)) for kind, path in files.items()}
        for k in range(10):
            odom_pub.publish(_odometry(stamp0 + offset + k * 50_000_000, 3.0))
            peer.spin_for(0.02)
        traj_pub.publish(_trajectory(stamp0 + offset, curvature))
        deadline = time.monotonic() + 30

        def driving(marks: dict[str, int] = marks) -> dict[str, list[dict]]:
            return {kind: [m for m in _read(path)[marks[kind]:] if DRIVING[kind](m)] for kind, path in files.items()}

        while time.monotonic() < deadline and not all(len(v) >= 3 for v in driving().values()):
            peer.spin_for(0.1)
        seen[phase] = driving()
        for kind, msgs in seen[phase].items():
            assert msgs, f"{kind}: no driving command after the {phase} plan: {_read(files[kind])[-3:]}"
    return seen


def test_carla_outputs_carry_speed_steering_and_pedals(repo, ros_env, processes, ros_peer, tmp_path):
    env = interfaces_env(ros_env)
    files = {}
    for kind, (type_name, topic) in OUTPUTS.items():
        files[kind] = tmp_path / f"{kind}.jsonl"
        processes.python([str(repo / "test" / "ros" / "iface_peer.py"), type_name, topic, str(files[kind])], env, cwd=repo)
        processes.python(
            ["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args", "-r", f"__node:=follower_{kind}",
             "-p", f"output:={kind}", "-p", f"cmd_topic:={topic}", "-p", f"odometry_topic:={ROLE}/odometry",
             "-p", "trajectory_topic:=/wamdiff2/trajectory", "-p", f"wheelbase:={WHEELBASE}",
             "-p", f"max_steering_angle:={MAX_STEER}", "-p", "base_frame:=ego_vehicle"],
            env, cwd=repo,
        )
    seen = _drive_left_then_right(ros_peer, files, 1_000_000_000_000)
    # pure pursuit on a circle of curvature k asks for about k: steering angle ~ atan(L k) = 0.144 rad
    for phase, sign in (("left", 1.0), ("right", -1.0)):
        drive = seen[phase]["ackermann"][-1]
        assert 0.07 < sign * drive["steering_angle"] < 0.3, (phase, drive)
        assert 4.0 < drive["speed"] < 6.0, f"speed is the plan's target speed (5 m/s), got {drive}"
        assert drive["acceleration"] > 0.0
        stamped = seen[phase]["ackermann_stamped"][-1]
        assert stamped["header"]["frame_id"] == "ego_vehicle"
        assert 0.07 < sign * stamped["drive"]["steering_angle"] < 0.3 and 4.0 < stamped["drive"]["speed"] < 6.0
        control = seen[phase]["carla_control"][-1]
        assert 0.07 / MAX_STEER < -sign * control["steer"] < 0.3 / MAX_STEER, f"CARLA steers right for +steer: {control}"
        assert control["throttle"] > 0.0 and control["brake"] == 0.0, f"3 m/s below a 5 m/s plan: {control}"
        assert control["header"]["frame_id"] == "ego_vehicle"
        assert not control["hand_brake"] and not control["reverse"]


def test_missing_message_package_stops_the_node_naming_it(repo, ros_env, processes):
    proc = processes.python(
        ["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args", "-p", "output:=carla_control"],
        without_interfaces(ros_env), cwd=repo,
    )
    assert proc.wait(timeout=60) == 2, process_output(proc)
    out = process_output(proc)
    assert "carla_msgs" in out and "CarlaEgoVehicleControl" in out and "Traceback" not in out, out


# Fields of the public definitions: ros-drivers/ackermann_msgs (msg/AckermannDrive.msg,
# AckermannDriveStamped.msg) and carla-simulator/ros-carla-msgs (msg/CarlaEgoVehicleControl.msg, 081fdcd).
PUBLIC_FIELDS = {
    "ackermann_msgs/msg/AckermannDrive": {"steering_angle": "float", "steering_angle_velocity": "float",
                                          "speed": "float", "acceleration": "float", "jerk": "float"},
    "ackermann_msgs/msg/AckermannDriveStamped": {"header": "std_msgs/Header", "drive": "ackermann_msgs/AckermannDrive"},
    "carla_msgs/msg/CarlaEgoVehicleControl": {"header": "std_msgs/Header", "throttle": "float", "steer": "float",
                                              "brake": "float", "hand_brake": "boolean", "reverse": "boolean",
                                              "gear": "int32", "manual_gear_shift": "boolean"},
}
PROBE = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    package, kind, cls = name.split("/")
    out[name] = getattr(importlib.import_module(package + "." + kind), cls).get_fields_and_field_types()
print(json.dumps(out))
"""


def test_test_interfaces_declare_the_public_fields(repo, ros_env):
    run = subprocess.run([sys.executable, "-c", PROBE, *PUBLIC_FIELDS], env=interfaces_env(ros_env), cwd=repo,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == PUBLIC_FIELDS
