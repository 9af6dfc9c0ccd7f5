"""rosbag2 without rclpy: this package's message types, message builders, bag writing and forgiving reading.

Built on the ``rosbags`` library, so bags can be written and read where no ROS 2 is
installed (CI, a training cluster). Modules, by job:

    typestore  message definitions (``.msg``) and the rosbags typestore; BagError
    builders   Header, Trajectory and DetectionArray messages
    writer     BagWriter (MCAP or sqlite3)
    reader     read_messages, read_trajectories (TrajectoryRecord)
    salvage    what a truncated or corrupt bag still holds; BagReadReport

``rosbags`` itself is imported only when a bag is opened or a typestore built.
"""

from __future__ import annotations

from wamdiff2_ros.data.bags.builders import detection_array_message, header, trajectory_message
from wamdiff2_ros.data.bags.reader import TrajectoryRecord, read_messages, read_trajectories, trajectory_from_message
from wamdiff2_ros.data.bags.salvage import BagReadReport
from wamdiff2_ros.data.bags.typestore import (
    DETECTION_ARRAY_TYPE,
    TRAJECTORY_TYPE,
    BagError,
    find_message_definitions,
    get_typestore,
    message_definition_dirs,
)
from wamdiff2_ros.data.bags.writer import STORAGE_IDS, BagWriter

__all__ = [
    "DETECTION_ARRAY_TYPE",
    "STORAGE_IDS",
    "TRAJECTORY_TYPE",
    "BagError",
    "BagReadReport",
    "BagWriter",
    "TrajectoryRecord",
    "detection_array_message",
    "find_message_definitions",
    "get_typestore",
    "header",
    "message_definition_dirs",
    "read_messages",
    "read_trajectories",
    "trajectory_from_message",
    "trajectory_message",
]
