"""waypoint_follower_node: Trajectory + Odometry -> a drive command (pure pursuit + speed PID).

The plan is in the ego frame at its stamp; the follower anchors it to the odometry
pose at that stamp and re-expresses it in the current ego frame at every control
tick, so it keeps following while the next plan is computed. A plan older than
``max_plan_age_s``, or none, brings the vehicle to a stop. ``output`` picks the
command message:

- ``twist``: geometry_msgs/Twist (``linear.x`` m/s, ``angular.z`` rad/s left positive),
  for ``sim_node`` and diff-drive stacks;
- ``ackermann``: ackermann_msgs/AckermannDrive (speed, steering angle from the
  pure-pursuit curvature and ``wheelbase``, acceleration), what CARLA's
  ``carla_ackermann_control`` reads on ``/carla/<role>/ackermann_cmd``;
- ``ackermann_stamped``: ackermann_msgs/AckermannDriveStamped, the same with a header;
- ``carla_control``: carla_msgs/CarlaEgoVehicleControl (throttle, brake, steer from
  our own speed PID) for ``/carla/<role>/vehicle_control_cmd`` without
  ``carla_ackermann_control``.

ackermann_msgs and carla_msgs are imported only when asked for; a missing one stops
the node with a message naming the package.
"""

from __future__ import annotations

import importlib
import math
import sys
import time
from collections import deque

import numpy as np

from wamdiff2_ros.control import (
    FollowerLimits,
    PurePursuit,
    ackermann_command,
    from_frame,
    pedal_command,
    steering_angle,
    to_frame,
)
from wamdiff2_ros.geometry import yaw_from_quaternion as yaw_from_wxyz
from wamdiff2_ros.ros.msg_utils import stamp_to_ns
from wamdiff2_ros.ros.node_main import run_node
from wamdiff2_ros.ros.params import ParameterError, declare, in_range, one_of, spec

# The message classes (wamdiff2_ros.msg is built by colcon) are imported in the methods
# that use them: they exist only in a ROS install, and this module imports without.

OUTPUTS = {
    "twist": ("geometry_msgs", "Twist"),
    "ackermann": ("ackermann_msgs", "AckermannDrive"),
    "ackermann_stamped": ("ackermann_msgs", "AckermannDriveStamped"),
    "carla_control": ("carla_msgs", "CarlaEgoVehicleControl"),
}
INSTALL_HINTS = {
    "ackermann_msgs": "apt install ros-$ROS_DISTRO-ackermann-msgs (rosdep key ackermann_msgs)",
    "carla_msgs": "build carla_msgs from the CARLA ROS bridge (github.com/carla-simulator/ros-bridge) in your workspace",
}

PARAMS = [
    spec("trajectory_topic", "wamdiff2/trajectory", "wamdiff2_ros/Trajectory to follow"),
    spec("odometry_topic", "ego/odometry", "nav_msgs/Odometry of the vehicle (pose in a fixed frame, twist in base_link)"),
    spec("output", "twist", "command message: twist | ackermann | ackermann_stamped | carla_control",
         one_of(*OUTPUTS)),
    spec("cmd_topic", "wamdiff2/cmd_vel", "topic of the command message"),
    spec("base_frame", "base_link", "frame id of stamped commands"),
    spec("control_rate_hz", 20.0, "control ticks per second (on the node's clock)", in_range(1.0, 200.0)),
    spec("odometry_wait_s", 0.05, "under use_sim_time, a control tick whose odometry (stamped at or after the "
         "tick) has not come yet waits for it at most this long (wall seconds), so a lock-step simulator's step is "
         "commanded from its own state; 0 = command from the newest odometry at once", in_range(0.0, 5.0)),
    spec("max_plan_age_s", 2.0, "stop when the newest plan is older than this", in_range(0.1, 60.0)),
    spec("follow_fallback", True, "also follow plans flagged valid=false (constant-velocity fallback)"),
    spec("max_speed", 15.0, "m/s", in_range(0.0, 70.0)),
    spec("max_accel", 3.0, "m/s^2", in_range(0.1, 20.0)),
    spec("max_decel", 6.0, "m/s^2", in_range(0.1, 20.0)),
    spec("max_yaw_rate", 1.0, "rad/s", in_range(0.01, 5.0)),
    spec("max_lateral_accel", 4.0, "m/s^2", in_range(0.1, 20.0)),
    spec("wheelbase", 2.9, "m, front to rear axle (steering angle = atan(wheelbase * curvature))", in_range(0.5, 10.0)),
    spec("max_steering_angle", 0.7, "rad, the vehicle's front-wheel limit (CARLA steer = -angle / this)",
         in_range(0.05, 1.5)),
]


def yaw_from_quaternion(q) -> float:
    """Yaw of a geometry_msgs/Quaternion (fields x, y, z, w)."""
    return yaw_from_wxyz((q.w, q.x, q.y, q.z))


def output_message_class(output: str):
    """The message class of an ``output`` kind; ParameterError naming the package when it is missing."""
    package, name = OUTPUTS[output]
    try:
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except ImportError as exc:
        raise ParameterError(
            f"output '{output}' needs the ROS message package '{package}' ({package}/msg/{name}), which is not "
            f"installed: {INSTALL_HINTS.get(package, 'install it')} and source its setup file ({exc})"
        ) from exc


class WaypointFollower:
    def __init__(self, node) -> None:
        from nav_msgs.msg import Odometry

        from wamdiff2_ros.msg import Trajectory

        self.node = node
        self.p = declare(node, PARAMS)
        self.limits = FollowerLimits(
            max_speed=self.p["max_speed"], max_accel=self.p["max_accel"], max_decel=self.p["max_decel"],
            max_yaw_rate=self.p["max_yaw_rate"], max_lateral_accel=self.p["max_lateral_accel"],
        )
        self.controller = PurePursuit(self.limits)
        self.poses: deque[tuple[int, float, float, float]] = deque(maxlen=400)
        self.speed = 0.0
        self.plan_world: np.ndarray | None = None
        self.plan_times: np.ndarray | None = None
        self.plan_stamp = 0
        self.rejected = 0
        self.pending_tick: tuple[int, float] | None = None  # (tick time ns, monotonic deadline) waiting for odometry
        self.msg_class = output_message_class(self.p["output"])
        self.pub = node.create_publisher(self.msg_class, self.p["cmd_topic"], 10)
        node.create_subscription(Odometry, self.p["odometry_topic"], self.on_odometry, 20)
        node.create_subscription(Trajectory, self.p["trajectory_topic"], self.on_trajectory, 10)
        node.create_timer(1.0 / self.p["control_rate_hz"], self.on_tick)
        if self.p["odometry_wait_s"] > 0:  # on the steady clock: a pending tick is let go even while /clock pauses
            from rclpy.clock import Clock, ClockType

            node.create_timer(0.01, self.release_late_tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        node.get_logger().info(f"following {self.pub.topic_name} <- {self.p['trajectory_topic']}: "
                               f"{self.p['output']} ({self.msg_class.__module__}.{self.msg_class.__name__})")

    def on_odometry(self, msg) -> None:
        p = msg.pose.pose
        values = (p.position.x, p.position.y, msg.twist.twist.linear.x, p.orientation.z, p.orientation.w)
        if not all(math.isfinite(v) for v in values):
            self.rejected += 1
            return
        self.poses.append((stamp_to_ns(msg.header.stamp), p.position.x, p.position.y, yaw_from_quaternion(p.orientation)))
        self.speed = float(msg.twist.twist.linear.x)
        if self.pending_tick is not None and self.poses[-1][0] >= self.pending_tick[0]:
            self.pending_tick = None
            self.control()

    def pose_at(self, stamp_ns: int) -> tuple[float, float, float] | None:
        if not self.poses:
            return None
        best = min(self.poses, key=lambda item: abs(item[0] - stamp_ns))
        return best[1], best[2], best[3]

    def on_trajectory(self, msg) -> None:
        if not msg.valid and not self.p["follow_fallback"]:
            return
        xy = np.array([[w.x, w.y] for w in msg.waypoints], dtype=float).reshape(-1, 2)
        times = np.array([stamp_to_ns(w.time_from_start) / 1e9 for w in msg.waypoints], dtype=float)
        if len(xy) == 0 or not np.all(np.isfinite(xy)) or np.any(np.diff(np.concatenate([[0.0], times])) <= 0):
            self.rejected += 1
            self.node.get_logger().warning("ignored a malformed trajectory", throttle_duration_sec=2.0)
            return
        stamp = stamp_to_ns(msg.header.stamp)
        pose = self.pose_at(stamp)
        if pose is None:
            return
        self.plan_world, self.plan_times, self.plan_stamp = from_frame(xy, pose), times, stamp

    def on_tick(self) -> None:
        """A control tick: command now, or (sim time) once the odometry of this tick is here."""
        if self.pending_tick is not None:  # the previous tick's odometry never came: command from what there is
            self.command_late_tick()
        tick_ns = self.node.get_clock().now().nanoseconds
        sim_time = bool(self.node.get_parameter("use_sim_time").value)
        if sim_time and self.p["odometry_wait_s"] > 0 and self.poses and self.poses[-1][0] < tick_ns:
            self.pending_tick = (tick_ns, time.monotonic() + self.p["odometry_wait_s"])
            return
        self.control()

    def release_late_tick(self) -> None:
        if self.pending_tick is not None and time.monotonic() >= self.pending_tick[1]:
            self.command_late_tick()

    def command_late_tick(self) -> None:
        """The pending tick's odometry did not come in time: command it from the newest odometry."""
        self.pending_tick = None
        self.node.get_logger().debug("no odometry for a control tick within odometry_wait_s; commanding from "
                                     "the newest", throttle_duration_sec=5.0)
        self.control()

    def control(self) -> None:
        """Command from the newest odometry and plan (a stop without either, or with a plan too old)."""
        now = self.poses[-1][0] if self.poses else None
        dt = 1.0 / self.p["control_rate_hz"]
        if now is None or self.plan_world is None or (now - self.plan_stamp) / 1e9 > self.p["max_plan_age_s"]:
            self.controller.pid.reset()
            self.pub.publish(self.stop_message(dt))
            return
        path_ego = to_frame(self.plan_world, self.poses[-1][1:])
        elapsed = (now - self.plan_stamp) / 1e9
        self.pub.publish(self.drive_message(path_ego, elapsed, dt))

    # ---------------------------------------------------------------- outputs
    def _stamped(self, msg):
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id = self.p["base_frame"]
        return msg

    def drive_message(self, path_ego: np.ndarray, elapsed: float, dt: float):
        output, cls = self.p["output"], self.msg_class
        if output == "twist":
            msg = cls()
            msg.linear.x, msg.angular.z = self.controller.command(path_ego, self.plan_times, elapsed, self.speed, dt)[:2]
            return msg
        if output in ("ackermann", "ackermann_stamped"):
            cmd = ackermann_command(path_ego, self.plan_times, elapsed, self.speed, self.controller,
                                    self.p["wheelbase"], self.p["max_steering_angle"], dt)
            drive = self._ackermann_drive(cmd.speed, cmd.steering_angle, cmd.acceleration)
            return drive if output == "ackermann" else self._stamped(cls(drive=drive))
        _, _, info = self.controller.command(path_ego, self.plan_times, elapsed, self.speed, dt)
        angle = steering_angle(info["curvature"], self.p["wheelbase"], self.p["max_steering_angle"])
        pedal = pedal_command(info["accel"], angle, self.limits, self.p["max_steering_angle"])
        return self._stamped(cls(throttle=pedal.throttle, brake=pedal.brake, steer=pedal.steer))

    def _ackermann_drive(self, speed: float, angle: float, accel: float):
        from ackermann_msgs.msg import AckermannDrive

        return AckermannDrive(speed=float(speed), steering_angle=float(angle), acceleration=float(accel))

    def stop_message(self, dt: float):
        output, cls = self.p["output"], self.msg_class
        if output == "twist":
            msg = cls()
            msg.linear.x = max(0.0, self.speed - self.p["max_decel"] * dt)
            return msg
        if output in ("ackermann", "ackermann_stamped"):
            drive = self._ackermann_drive(0.0, 0.0, self.p["max_decel"])
            return drive if output == "ackermann" else self._stamped(cls(drive=drive))
        return self._stamped(cls(throttle=0.0, brake=1.0, steer=0.0))


def main(argv: list[str] | None = None) -> int:
    return run_node("waypoint_follower_node", WaypointFollower, argv)


if __name__ == "__main__":
    sys.exit(main())
