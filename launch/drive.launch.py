"""Launch the WAM-Diff2 driving node with its parameter file.

    ros2 launch wamdiff2_ros drive.launch.py [namespace:=car1] [use_sim_time:=true] [model_path:=DIR]
        [params_file:=FILE] [device:=cuda] [base_frame:=car1/base_link]
        [planning_rate_hz:=10.0] [perception_rate_hz:=1.0] [understanding_rate_hz:=0.5] (0 = task off)

The plan is published as soon as it is decoded; perception and the rationale run at
their own rates and never delay it. Outputs are relative (``<namespace>/wamdiff2/...``); inputs are the parameter file's
topics, relative by default, so a namespace moves a whole vehicle.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("wamdiff2_ros")
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node and its topics"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock (bag, simulator)"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "drive.yaml"),
                              description="drive_node parameter file"),
        DeclareLaunchArgument("model_path", default_value="",
                              description="checkpoint directory ('' = the installed shipped student)"),
        DeclareLaunchArgument("device", default_value="cpu", description="cpu or cuda[:N]"),
        DeclareLaunchArgument("block_size", default_value="32", description="diffusion block size"),
        DeclareLaunchArgument("base_frame", default_value="base_link", description="frame id of the outputs"),
        DeclareLaunchArgument("planning_rate_hz", default_value="10.0", description="plans per second at most; 0 = off"),
        DeclareLaunchArgument("perception_rate_hz", default_value="1.0",
                              description="perception decodes per second at most (never delays a plan); 0 = off"),
        DeclareLaunchArgument("understanding_rate_hz", default_value="0.5",
                              description="rationales per second at most (never delays a plan); 0 = off"),
        Node(
            package="wamdiff2_ros",
            executable="drive_node",
            name="drive_node",
            namespace=LaunchConfiguration("namespace"),
            output="screen",
            parameters=[
                LaunchConfiguration("params_file"),
                {
                    "model_path": LaunchConfiguration("model_path"),
                    "device": LaunchConfiguration("device"),
                    "block_size": LaunchConfiguration("block_size"),
                    "base_frame": LaunchConfiguration("base_frame"),
                    "planning_rate_hz": LaunchConfiguration("planning_rate_hz"),
                    "perception_rate_hz": LaunchConfiguration("perception_rate_hz"),
                    "understanding_rate_hz": LaunchConfiguration("understanding_rate_hz"),
                    "use_sim_time": LaunchConfiguration("use_sim_time"),
                },
            ],
        ),
    ])
