"""sim_node (a real process) moves the synthetic world's ego as Twist commands say, and reports it."""

from __future__ import annotations

import math
import time

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


def test_route_mode_scores_the_benchmark_route_and_stops_at_its_end(repo, ros_env, processes, ros_peer):
    """Route mode without a planner: time starts at the first command, the ego is the bicycle from t = 0,
    the route monitor's metrics come on sim/route_metrics, and the node ends with the route."""
    import json

    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from wamdiff2_ros.evaluation.closed_loop.routes import build_route, route_spec

    sim = processes.python(
        ["-m", "wamdiff2_ros.ros.sim_node", "--ros-args", "-p", "route_index:=5", "-p", "route_seed:=0",
         "-p", "route_timeout_s:=3.0", "-p", "trajectory_topic:=''", "-p", "image_width:=128", "-p", "image_height:=64",
         "-p", "real_time_factor:=4.0"],
        ros_env, cwd=repo,
    )  # fmt: skip
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    metrics = ros_peer.listen(String, "/sim/route_metrics", latched)
    odom = ros_peer.listen(Odometry, "/ego/odometry")
    cmd = ros_peer.node.create_publisher(Twist, "/wamdiff2/cmd_vel", 10)
    assert ros_peer.spin_until(lambda: len(odom) > 0 and len(metrics) > 0, 60), process_output(sim)
    first = json.loads(metrics[-1].data)
    assert first["final"] is False and first["end_reason"] is None and first["route"] == "r05_straight_red"
    ros_peer.spin_for(1.0)  # no command yet: the world waits at t = 0
    assert odom[-1].header.stamp == odom[0].header.stamp
    ego = build_route(route_spec(5, 0)).world.ego_state()
    assert abs(odom[0].pose.pose.position.x - ego.x) < 1e-6 and abs(odom[0].twist.twist.linear.x - ego.speed) < 1e-6
    stop = Twist()  # brake to a standstill on an open road: stuck once the grace time is over
    done = lambda: any(json.loads(m.data)["final"] for m in metrics)  # noqa: E731
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not done():
        cmd.publish(stop)
        ros_peer.spin_for(0.05)
    assert done(), process_output(sim)
    final = next(json.loads(m.data) for m in metrics if json.loads(m.data)["final"])
    assert final["end_reason"] == "timeout" and 3.0 <= final["sim_time_s"] < 3.2
    assert 0.0 < final["route_completion"] < 0.2 and final["driving_score"] == final["route_completion_on_road"]
    assert final["infractions"] == {"collision_pedestrian": 0, "collision_vehicle": 0, "collision_static": 0,
                                    "red_light": 0}  # fmt: skip
    assert final["stuck_s"] > 0.0 and odom[-1].twist.twist.linear.x == 0.0
    assert sim.wait(timeout=15) == 0, process_output(sim)
