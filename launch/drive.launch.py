"""Launch the WAM-Diff2 driving node with its parameter file.

    ros2 launch wamdiff2_ros drive.launch.py [model_path:=DIR] [params_file:=FILE] [device:=cuda]
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
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "drive.yaml"),
                              description="drive_node parameter file"),
        DeclareLaunchArgument("model_path", default_value="",
                              description="checkpoint directory ('' = shipped default)"),
        DeclareLaunchArgument("device", default_value="cpu", description="cpu or cuda[:N]"),
        DeclareLaunchArgument("block_size", default_value="32", description="diffusion block size"),
        Node(
            package="wamdiff2_ros",
            executable="drive_node",
            name="drive_node",
            output="screen",
            parameters=[
                LaunchConfiguration("params_file"),
                {
                    "model_path": LaunchConfiguration("model_path"),
                    "device": LaunchConfiguration("device"),
                    "block_size": LaunchConfiguration("block_size"),
                },
            ],
        ),
    ])
