"""ROS 2 side: rclpy nodes, message conversion and bag I/O (the only room using rclpy)."""
