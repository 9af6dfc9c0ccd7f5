"""Shared `main` for the nodes: init rclpy, build the node object, spin, stop cleanly."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from wamdiff2_ros.ros.params import ParameterError


def run_node(name: str, factory: Callable[[Any], Any], argv: list[str] | None = None) -> int:
    """Run ``factory(node)`` inside a fresh rclpy node until Ctrl-C / SIGINT / SIGTERM.

    A refused parameter ends the process with exit code 2 and the reason on the log.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=argv if argv is not None else sys.argv)
    node = rclpy.create_node(name)
    obj = None
    code = 0
    try:
        obj = factory(node)
        rclpy.spin(node)
    except ParameterError as exc:
        node.get_logger().fatal(str(exc))
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # SIGINT/SIGTERM shut the context down; a spin racing with it raises RCLError
        # ("context is not valid"). That is a clean stop, anything else is not.
        if node.context.ok():
            raise
    finally:
        if obj is not None and hasattr(obj, "shutdown"):
            obj.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return code
