"""Replay NAVSIM logs into the driving node (lock-step by default) and follow its plans.

    ros2 launch wamdiff2_ros replay.launch.py logs_dir:=.../navsim_logs/test sensor_blobs_dir:=.../sensor_blobs/test
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("wamdiff2_ros")
    config = os.path.join(share, "config")
    return LaunchDescription([
        DeclareLaunchArgument("logs_dir", description="navsim_logs/<split> directory"),
        DeclareLaunchArgument("sensor_blobs_dir", description="sensor_blobs/<split> directory"),
        DeclareLaunchArgument("lockstep", default_value="true", description="next frame after each plan"),
        DeclareLaunchArgument("speed", default_value="1.0", description="playback speed (when not lock-step)"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(
            package="wamdiff2_ros",
            executable="drive_node",
            name="drive_node",
            output="screen",
            parameters=[os.path.join(config, "drive.yaml"), {"model_path": LaunchConfiguration("model_path")}],
        ),
        Node(
            package="wamdiff2_ros",
            executable="navsim_replay_node",
            name="navsim_replay_node",
            output="screen",
            parameters=[
                os.path.join(config, "replay.yaml"),
                {
                    "logs_dir": LaunchConfiguration("logs_dir"),
                    "sensor_blobs_dir": LaunchConfiguration("sensor_blobs_dir"),
                    "lockstep": LaunchConfiguration("lockstep"),
                    "speed": LaunchConfiguration("speed"),
                },
            ],
        ),
    ])
