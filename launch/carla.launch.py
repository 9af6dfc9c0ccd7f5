"""Drive a CARLA vehicle through the CARLA ROS bridge (start the bridge and the ego vehicle first).

    ros2 launch wamdiff2_ros carla.launch.py [role_name:=ego_vehicle] [control:=ackermann|carla_control]
        [use_sim_time:=true] [namespace:=ego_vehicle] [model_path:=DIR]

The bridge publishes /carla/<role>/rgb_front/image (bgra8) and /carla/<role>/odometry;
config/carla.yaml maps them onto drive_node. ``control:=ackermann`` (default): the
follower publishes ackermann_msgs/AckermannDrive (speed, steering angle, acceleration)
on /carla/<role>/ackermann_cmd and this file starts the bridge's
``carla_ackermann_control`` node, which turns it into CarlaEgoVehicleControl.
``control:=carla_control``: the follower itself publishes carla_msgs/CarlaEgoVehicleControl
(throttle, brake, steer from its speed PID) on /carla/<role>/vehicle_control_cmd.
Frame ids are the role name (the bridge's frames). The bridge runs synchronous mode
on /clock: keep ``use_sim_time:=true``.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    config = os.path.join(get_package_share_directory("wamdiff2_ros"), "config")
    role = LaunchConfiguration("role_name")
    control = LaunchConfiguration("control")
    namespace = LaunchConfiguration("namespace")
    sim_time = LaunchConfiguration("use_sim_time")
    ackermann = PythonExpression(["'", control, "' == 'ackermann'"])
    command_topic = PythonExpression(["'/carla/", role, "/ackermann_cmd' if '", control,
                                      "' == 'ackermann' else '/carla/", role, "/vehicle_control_cmd'"])
    return LaunchDescription([
        DeclareLaunchArgument("role_name", default_value="ego_vehicle", description="CARLA ego role name"),
        DeclareLaunchArgument("control", default_value="ackermann",
                              description="ackermann (via carla_ackermann_control) or carla_control (direct)"),
        DeclareLaunchArgument("use_sim_time", default_value="true", description="follow the bridge's /clock"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of our nodes (e.g. the role)"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        DeclareLaunchArgument("planning_rate_hz", default_value="10.0", description="plans per second at most"),
        DeclareLaunchArgument("perception_rate_hz", default_value="1.0", description="boxes per second at most; 0 = off"),
        DeclareLaunchArgument("understanding_rate_hz", default_value="0.5",
                              description="rationales per second at most; 0 = off"),
        Node(package="wamdiff2_ros", executable="drive_node", name="drive_node", namespace=namespace, output="screen",
             parameters=[os.path.join(config, "carla.yaml"),
                         {"model_path": LaunchConfiguration("model_path"), "use_sim_time": sim_time,
                          "base_frame": role,
                          "planning_rate_hz": LaunchConfiguration("planning_rate_hz"),
                          "perception_rate_hz": LaunchConfiguration("perception_rate_hz"),
                          "understanding_rate_hz": LaunchConfiguration("understanding_rate_hz"),
                          "camera_topics": [["/carla/", role, "/rgb_front/image"]],
                          "ego_topic": ["/carla/", role, "/odometry"]}]),
        Node(package="wamdiff2_ros", executable="waypoint_follower_node", name="waypoint_follower_node",
             namespace=namespace, output="screen",
             parameters=[os.path.join(config, "carla.yaml"),
                         {"use_sim_time": sim_time, "output": control, "cmd_topic": command_topic,
                          "odometry_topic": ["/carla/", role, "/odometry"], "base_frame": role}]),
        Node(package="carla_ackermann_control", executable="carla_ackermann_control_node",
             name="carla_ackermann_control", output="screen", condition=IfCondition(ackermann),
             parameters=[{"role_name": role, "use_sim_time": sim_time}]),
    ])
