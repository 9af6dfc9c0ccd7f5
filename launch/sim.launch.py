"""Closed loop in the synthetic world: sim_node -> drive_node -> waypoint_follower_node -> sim_node.

    ros2 launch wamdiff2_ros sim.launch.py [seed:=7] [model_path:=DIR] [namespace:=car1] [use_sim_time:=true]
        [route_index:=5 route_seed:=0 lockstep:=true]

With ``use_sim_time:=true`` sim_node publishes simulation time on /clock and the
other two nodes follow it. ``route_index`` >= 0 drives a closed-loop benchmark route,
scored on sim/route_metrics; ``lockstep:=true`` (with ``use_sim_time:=true``) makes the
world wait for each plan, so planning takes no simulated time (as in-process).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    config = os.path.join(get_package_share_directory("wamdiff2_ros"), "config")
    namespace = LaunchConfiguration("namespace")
    sim_time = LaunchConfiguration("use_sim_time")
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the three nodes and topics"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="sim_node publishes /clock"),
        DeclareLaunchArgument("seed", default_value="7", description="synthetic world seed"),
        DeclareLaunchArgument("route_index", default_value="-1", description="benchmark route (-1 = free world)"),
        DeclareLaunchArgument("route_seed", default_value="0", description="seed of the route set"),
        DeclareLaunchArgument("lockstep", default_value="false", description="route mode: wait for every plan"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(package="wamdiff2_ros", executable="sim_node", name="sim_node", namespace=namespace, output="screen",
             parameters=[os.path.join(config, "sim.yaml"),
                         {"seed": LaunchConfiguration("seed"), "publish_clock": sim_time,
                          "route_index": LaunchConfiguration("route_index"),
                          "route_seed": LaunchConfiguration("route_seed"),
                          "lockstep": LaunchConfiguration("lockstep")}]),
        Node(package="wamdiff2_ros", executable="drive_node", name="drive_node", namespace=namespace, output="screen",
             parameters=[os.path.join(config, "drive.yaml"),
                         {"model_path": LaunchConfiguration("model_path"), "use_sim_time": sim_time,
                          "require_ego": LaunchConfiguration("lockstep")}]),
        Node(package="wamdiff2_ros", executable="waypoint_follower_node", name="waypoint_follower_node",
             namespace=namespace, output="screen",
             parameters=[os.path.join(config, "follower.yaml"), {"use_sim_time": sim_time}]),
    ])
