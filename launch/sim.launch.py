"""Closed loop in the synthetic world: sim_node -> drive_node -> waypoint_follower_node -> sim_node.

    ros2 launch wamdiff2_ros sim.launch.py [seed:=7] [model_path:=DIR] [namespace:=car1] [use_sim_time:=true]

With ``use_sim_time:=true`` sim_node publishes simulation time on /clock and the
other two nodes follow it.
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
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(package="wamdiff2_ros", executable="sim_node", name="sim_node", namespace=namespace, output="screen",
             parameters=[os.path.join(config, "sim.yaml"),
                         {"seed": LaunchConfiguration("seed"), "publish_clock": sim_time}]),
        Node(package="wamdiff2_ros", executable="drive_node", name="drive_node", namespace=namespace, output="screen",
             parameters=[os.path.join(config, "drive.yaml"),
                         {"model_path": LaunchConfiguration("model_path"), "use_sim_time": sim_time}]),
        Node(package="wamdiff2_ros", executable="waypoint_follower_node", name="waypoint_follower_node",
             namespace=namespace, output="screen",
             parameters=[os.path.join(config, "follower.yaml"), {"use_sim_time": sim_time}]),
    ])
