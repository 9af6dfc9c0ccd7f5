"""Closed loop in the synthetic world: sim_node -> drive_node -> waypoint_follower_node -> sim_node.

    ros2 launch wamdiff2_ros sim.launch.py [seed:=7] [model_path:=DIR]
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    config = os.path.join(get_package_share_directory("wamdiff2_ros"), "config")
    return LaunchDescription([
        DeclareLaunchArgument("seed", default_value="7", description="synthetic world seed"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(package="wamdiff2_ros", executable="sim_node", name="sim_node", output="screen",
             parameters=[os.path.join(config, "sim.yaml"), {"seed": LaunchConfiguration("seed")}]),
        Node(package="wamdiff2_ros", executable="drive_node", name="drive_node", output="screen",
             parameters=[os.path.join(config, "drive.yaml"), {"model_path": LaunchConfiguration("model_path")}]),
        Node(package="wamdiff2_ros", executable="waypoint_follower_node", name="waypoint_follower_node",
             output="screen", parameters=[os.path.join(config, "follower.yaml")]),
    ])
