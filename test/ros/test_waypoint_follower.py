"""The waypoint follower (a real node in its own process) steers towards a curved plan."""

from __future__ import annotations

import math

import numpy as np


def _odometry(stamp_ns: int, speed: float):
    from nav_msgs.msg import Odometry

    from wamdiff2_ros.ros.msg_utils import fill_stamp

    msg = Odometry()
    fill_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id, msg.child_frame_id = "map", "base_link"
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = speed
    return msg


def _trajectory(stamp_ns: int, curvature: float, speed: float = 5.0):
    from wamdiff2_ros.msg import Trajectory, Waypoint
    from wamdiff2_ros.ros.msg_utils import fill_stamp

    msg = Trajectory(valid=True, source="model", block_size=32)
    fill_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id = "base_link"
    for i in range(1, 9):
        s = speed * 0.5 * i  # arc length
        if abs(curvature) < 1e-9:
            x, y, heading = s, 0.0, 0.0
        else:
            heading = s * curvature
            x, y = math.sin(heading) / curvature, (1 - math.cos(heading)) / curvature
        wp = Waypoint(x=x, y=y, heading=heading)
        fill_stamp(wp.time_from_start, int(0.5e9 * i))
        msg.waypoints.append(wp)
    return msg


def _yaw_rate_for(peer, curvature: float, stamp_ns: int) -> float:
    from geometry_msgs.msg import Twist  # noqa: F401  (type used by the subscription)

    box = peer.inbox["/wamdiff2_test/cmd_vel"]
    odom_pub, traj_pub = peer.publishers
    for k in range(10):
        odom_pub.publish(_odometry(stamp_ns + k * 50_000_000, 5.0))
        peer.spin_for(0.02)
    box.clear()
    traj_pub.publish(_trajectory(stamp_ns, curvature))
    assert peer.spin_until(lambda: len([m for m in box if abs(m.angular.z) > 1e-3]) >= 3, timeout=20), "no steering"
    return float(np.median([m.angular.z for m in box if abs(m.angular.z) > 1e-3]))


def test_follower_steers_left_and_right(repo, ros_env, processes, ros_peer):
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry

    from wamdiff2_ros.msg import Trajectory

    processes.python(
        ["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args",
         "-p", "trajectory_topic:=/wamdiff2_test/trajectory", "-p", "odometry_topic:=/wamdiff2_test/odom",
         "-p", "cmd_topic:=/wamdiff2_test/cmd_vel"],
        ros_env, cwd=repo,
    )
    ros_peer.listen(Twist, "/wamdiff2_test/cmd_vel")
    ros_peer.publishers = (
        ros_peer.node.create_publisher(Odometry, "/wamdiff2_test/odom", 10),
        ros_peer.node.create_publisher(Trajectory, "/wamdiff2_test/trajectory", 10),
    )
    assert ros_peer.spin_until(lambda: ros_peer.node.count_subscribers("/wamdiff2_test/trajectory") > 0, 30)
    base = 1_000_000_000_000
    left = _yaw_rate_for(ros_peer, +0.05, base)
    right = _yaw_rate_for(ros_peer, -0.05, base + 2_000_000_000)
    assert left > 0.05, f"left curve gave yaw rate {left}"
    assert right < -0.05, f"right curve gave yaw rate {right}"
    # pure pursuit on a circle of curvature k at ~5 m/s asks for roughly v*k = 0.25 rad/s
    assert 0.1 < left < 0.5 and -0.5 < right < -0.1


def test_sim_time_tick_waits_for_its_odometry(repo, ros_env, processes, ros_peer):
    """Under use_sim_time a tick whose odometry lost the race to /clock is commanded once that odometry is in,
    from it (a lock-step simulator's step is driven from its own state), not from the step before."""
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from rosgraph_msgs.msg import Clock

    from wamdiff2_ros.msg import Trajectory
    from wamdiff2_ros.ros.msg_utils import fill_stamp

    processes.python(
        ["-m", "wamdiff2_ros.ros.waypoint_follower_node", "--ros-args", "-p", "use_sim_time:=true",
         "-p", "odometry_wait_s:=2.0", "-p", "trajectory_topic:=/wf/trajectory", "-p", "odometry_topic:=/wf/odom",
         "-p", "cmd_topic:=/wf/cmd_vel"],
        ros_env, cwd=repo,
    )  # fmt: skip
    box = ros_peer.listen(Twist, "/wf/cmd_vel")
    odom_pub = ros_peer.node.create_publisher(Odometry, "/wf/odom", 10)
    traj_pub = ros_peer.node.create_publisher(Trajectory, "/wf/trajectory", 10)
    clock_pub = ros_peer.node.create_publisher(Clock, "/clock", 10)
    assert ros_peer.spin_until(lambda: ros_peer.node.count_subscribers("/clock") > 0, 30)
    assert ros_peer.spin_until(lambda: ros_peer.node.count_subscribers("/wf/odom") > 0, 30)
    step = 50_000_000

    def tick(k: int) -> None:
        clock = Clock()
        fill_stamp(clock.clock, k * step)
        clock_pub.publish(clock)

    for k in range(1, 11):  # in order: odometry of the step, then its clock tick
        odom_pub.publish(_odometry(k * step, 5.0))
        ros_peer.spin_for(0.05)
        if k == 2:
            traj_pub.publish(_trajectory(2 * step, 0.0, speed=5.0))
            ros_peer.spin_for(0.1)
        tick(k)
        ros_peer.spin_for(0.1)
    assert ros_peer.spin_until(lambda: len(box) >= 5, 10), "no commands on sim time"
    assert box[-1].linear.x > 4.0, [m.linear.x for m in box]
    box.clear()
    tick(11)  # the clock first; the odometry of step 11 (the car slowed to 1 m/s) comes later
    ros_peer.spin_for(0.5)
    assert len(box) == 0, "the tick was commanded before its odometry came"
    odom_pub.publish(_odometry(11 * step, 1.0))
    assert ros_peer.spin_until(lambda: len(box) >= 1, 5)
    ros_peer.spin_for(0.2)
    assert len(box) == 1 and box[0].linear.x < 2.0, [m.linear.x for m in box]
