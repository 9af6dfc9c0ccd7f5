"""waypoint_follower_node: Trajectory + Odometry -> geometry_msgs/Twist (pure pursuit + PID).

The plan is in the ego frame at its stamp; the follower anchors it to the odometry
pose at that stamp and re-expresses it in the current ego frame at every control
tick, so it keeps following while the next plan is computed. ``angular.z`` > 0
turns left (REP 103); publish on ``/carla/<role>/twist`` for the CARLA bridge.
A plan older than ``max_plan_age_s``, or none, brings the vehicle to a stop.
"""

from __future__ import annotations

import math
import sys
from collections import deque

import numpy as np

from wamdiff2_ros.ros.params import in_range, spec
from wamdiff2_ros.control import FollowerLimits, PurePursuit, from_frame, to_frame

PARAMS = [
    spec("trajectory_topic", "/wamdiff2/trajectory", "wamdiff2_ros/Trajectory to follow"),
    spec("odometry_topic", "/ego/odometry", "nav_msgs/Odometry of the vehicle (pose in a fixed frame, twist in base_link)"),
    spec("cmd_topic", "/wamdiff2/cmd_vel", "geometry_msgs/Twist output (linear.x m/s, angular.z rad/s, left positive)"),
    spec("control_rate_hz", 20.0, "control ticks per second", in_range(1.0, 200.0)),
    spec("max_plan_age_s", 2.0, "stop when the newest plan is older than this", in_range(0.1, 60.0)),
    spec("follow_fallback", True, "also follow plans flagged valid=false (constant-velocity fallback)"),
    spec("max_speed", 15.0, "m/s", in_range(0.0, 70.0)),
    spec("max_accel", 3.0, "m/s^2", in_range(0.1, 20.0)),
    spec("max_decel", 6.0, "m/s^2", in_range(0.1, 20.0)),
    spec("max_yaw_rate", 1.0, "rad/s", in_range(0.01, 5.0)),
    spec("max_lateral_accel", 4.0, "m/s^2", in_range(0.1, 20.0)),
]


def yaw_from_quaternion(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class WaypointFollower:
    def __init__(self, node) -> None:
        from geometry_msgs.msg import Twist
        from nav_msgs.msg import Odometry

        from wamdiff2_ros.msg import Trajectory
        from wamdiff2_ros.ros.params import declare

        self.node = node
        self.p = declare(node, PARAMS)
        self.controller = PurePursuit(
            FollowerLimits(
                max_speed=self.p["max_speed"], max_accel=self.p["max_accel"], max_decel=self.p["max_decel"],
                max_yaw_rate=self.p["max_yaw_rate"], max_lateral_accel=self.p["max_lateral_accel"],
            )
        )
        self.poses: deque[tuple[int, float, float, float]] = deque(maxlen=400)
        self.speed = 0.0
        self.plan_world: np.ndarray | None = None
        self.plan_times: np.ndarray | None = None
        self.plan_stamp = 0
        self.last_tick_ns: int | None = None
        self.rejected = 0
        self.pub = node.create_publisher(Twist, self.p["cmd_topic"], 10)
        node.create_subscription(Odometry, self.p["odometry_topic"], self.on_odometry, 20)
        node.create_subscription(Trajectory, self.p["trajectory_topic"], self.on_trajectory, 10)
        node.create_timer(1.0 / self.p["control_rate_hz"], self.on_tick)

    def on_odometry(self, msg) -> None:
        from wamdiff2_ros.ros.msg_utils import stamp_to_ns

        p = msg.pose.pose
        values = (p.position.x, p.position.y, msg.twist.twist.linear.x, p.orientation.z, p.orientation.w)
        if not all(math.isfinite(v) for v in values):
            self.rejected += 1
            return
        self.poses.append((stamp_to_ns(msg.header.stamp), p.position.x, p.position.y, yaw_from_quaternion(p.orientation)))
        self.speed = float(msg.twist.twist.linear.x)

    def pose_at(self, stamp_ns: int) -> tuple[float, float, float] | None:
        if not self.poses:
            return None
        best = min(self.poses, key=lambda item: abs(item[0] - stamp_ns))
        return best[1], best[2], best[3]

    def on_trajectory(self, msg) -> None:
        from wamdiff2_ros.ros.msg_utils import stamp_to_ns

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
        from geometry_msgs.msg import Twist

        now = self.poses[-1][0] if self.poses else None
        twist = Twist()
        if now is None or self.plan_world is None or (now - self.plan_stamp) / 1e9 > self.p["max_plan_age_s"]:
            self.controller.pid.reset()
            twist.linear.x = max(0.0, self.speed - self.p["max_decel"] / self.p["control_rate_hz"])
            self.pub.publish(twist)
            return
        dt = 1.0 / self.p["control_rate_hz"]
        pose = self.poses[-1][1:]
        path_ego = to_frame(self.plan_world, pose)
        elapsed = (now - self.plan_stamp) / 1e9
        v_cmd, yaw_rate, _ = self.controller.command(path_ego, self.plan_times, elapsed, self.speed, dt)
        twist.linear.x, twist.angular.z = v_cmd, yaw_rate
        self.pub.publish(twist)


def main(argv: list[str] | None = None) -> int:
    from wamdiff2_ros.ros.node_main import run_node

    return run_node("waypoint_follower_node", WaypointFollower, argv)


if __name__ == "__main__":
    sys.exit(main())
