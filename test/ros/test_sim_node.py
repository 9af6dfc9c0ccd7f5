"""sim_node (a real process) moves the synthetic world's ego as Twist commands say, and reports it."""

from __future__ import annotations

import math

from conftest import process_output


def _yaw(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def test_twist_drives_the_bicycle_and_status_reports(repo, ros_env, processes, ros_peer):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image

    sim = processes.python(
        ["-m", "wamdiff2_ros.ros.sim_node", "--ros-args", "-p", "seed:=3", "-p", "image_width:=128",
         "-p", "image_height:=64", "-p", "camera_rate_hz:=2.0", "-p", "cmd_topic:=/t/cmd"],
        ros_env, cwd=repo,
    )
    odom = ros_peer.listen(Odometry, "/ego/odometry")
    status = ros_peer.listen(DiagnosticArray, "/sim/status")
    from rclpy.qos import qos_profile_sensor_data

    images = ros_peer.listen(Image, "/cameras/CAM_F0/image", qos_profile_sensor_data)
    cmd = ros_peer.node.create_publisher(Twist, "/t/cmd", 10)
    assert ros_peer.spin_until(lambda: len(odom) > 5 and len(images) > 0, 60), process_output(sim)
    assert images[-1].width == 128 and images[-1].height == 64 and images[-1].encoding == "rgb8"
    start = len(odom)
    twist = Twist()
    twist.linear.x, twist.angular.z = 4.0, 0.3
    for _ in range(40):  # 4 s of "turn left at 4 m/s"
        cmd.publish(twist)
        ros_peer.spin_for(0.1)
    turning = odom[start + 20:]
    yaws = [_yaw(o.pose.pose.orientation) for o in turning]
    dyaw = math.remainder(yaws[-1] - yaws[0], 2 * math.pi)
    assert dyaw > 0.1, f"left yaw-rate command should turn left, yaw changed {dyaw:.3f} rad"
    assert turning[-1].twist.twist.linear.x > 1.0
    latest = {kv.key: kv.value for kv in status[-1].status[0].values}
    assert latest["controlled"] == "external"
    assert float(latest["distance_m"]) > 1.0 and int(latest["commands_received"]) > 10
    assert "collisions" in latest and "route_progress_m" in latest
    bad = Twist()
    bad.linear.x = float("nan")
    cmd.publish(bad)
    ros_peer.spin_for(1.0)
    assert sim.poll() is None
