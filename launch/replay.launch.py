"""Replay NAVSIM logs into the driving node (lock-step by default), like a bag with --clock.

    ros2 launch wamdiff2_ros replay.launch.py logs_dir:=.../navsim_logs/test sensor_blobs_dir:=.../sensor_blobs/test
        [lockstep:=false speed:=0.25] [use_sim_time:=true] [namespace:=car1]

With ``use_sim_time:=true`` the replay publishes its log time on /clock and the driver
follows it (timeouts and rates in log time, whatever the speed or a pause:
``ros2 param set /navsim_replay_node paused true``).
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
    namespace = LaunchConfiguration("namespace")
    sim_time = LaunchConfiguration("use_sim_time")
    return LaunchDescription([
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes and their topics"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="replay publishes /clock and the driver follows it"),
        DeclareLaunchArgument("logs_dir", description="navsim_logs/<split> directory"),
        DeclareLaunchArgument("sensor_blobs_dir", description="sensor_blobs/<split> directory"),
        DeclareLaunchArgument("lockstep", default_value="true", description="next frame after each plan"),
        DeclareLaunchArgument("speed", default_value="1.0", description="playback speed (when not lock-step)"),
        DeclareLaunchArgument("model_path", default_value="", description="checkpoint ('' = shipped default)"),
        Node(
            package="wamdiff2_ros",
            executable="drive_node",
            name="drive_node",
            namespace=namespace,
            output="screen",
            parameters=[os.path.join(config, "drive.yaml"),
                        {"model_path": LaunchConfiguration("model_path"), "use_sim_time": sim_time}],
        ),
        Node(
            package="wamdiff2_ros",
            executable="navsim_replay_node",
            name="navsim_replay_node",
            namespace=namespace,
            output="screen",
            parameters=[
                os.path.join(config, "replay.yaml"),
                {
                    "logs_dir": LaunchConfiguration("logs_dir"),
                    "sensor_blobs_dir": LaunchConfiguration("sensor_blobs_dir"),
                    "lockstep": LaunchConfiguration("lockstep"),
                    "speed": LaunchConfiguration("speed"),
                    "publish_clock": sim_time,
                },
            ],
        ),
    ])
