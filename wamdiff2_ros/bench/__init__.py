"""Benchmarks and sweeps, one module each: every one is a sub-command of ``wamdiff2 bench``, prints a table and writes JSON.

``bench/*.py`` at the repository root are launchers of these modules (``python bench/decode.py``
is ``wamdiff2 bench decode``), except ``bench/ros_latency.py``: it starts ROS nodes with rclpy,
which only ``wamdiff2_ros.ros`` may import, and this room may not import that one.
"""
