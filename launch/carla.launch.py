"""Drive a CARLA vehicle through the CARLA ROS bridge (start the bridge and the ego vehicle first).

The bridge publishes /carla/<role>/<sensor>/image (bgra8) and /carla/<role>/odometry;
config/carla.yaml maps them onto drive_node; the follower publishes Twist on
/carla/<role>/twist (linear.x m/s, angular.z rad/s, left positive), which the bridge's
twist-to-control converts into throttle, brake and steering.

    ros2 launch wamdiff2_ros carla.launch.py [role_name:=ego_vehicle] [model_path:=DIR]
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    config = os.path.join(get_package_share_directory("wamdiff2_ros"), "config")
    role = LaunchConfiguration("role_name")
    odometry = ["/carla/", role, "/odometry"]  # substitution lists are concatenated
    twist = ["/carla/", role, "/twist"]
    return LaunchDescription([
        DeclareLaunchArgument("role_name", default_value="ego_vehicle", description="CARLA ego role name"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(package="wamdiff2_ros", executable="drive_node", name="drive_node", output="screen",
             parameters=[os.path.join(config, "carla.yaml"), {"model_path": LaunchConfiguration("model_path")}]),
        Node(package="wamdiff2_ros", executable="waypoint_follower_node", name="waypoint_follower_node",
             output="screen",
             parameters=[os.path.join(config, "follower.yaml"), {"odometry_topic": odometry, "cmd_topic": twist}]),
    ])
