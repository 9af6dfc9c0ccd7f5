"""Generic helpers for ROS 2 messages: message <-> plain dict, stamps, durations."""

from __future__ import annotations

import array
from typing import Any

import numpy as np


def message_to_dict(msg: Any) -> Any:
    """Convert a rosidl-generated message (recursively) into JSON-friendly builtins."""
    fields = getattr(msg, "get_fields_and_field_types", None)
    if fields is None:
        if isinstance(msg, (list, tuple, array.array, np.ndarray)):
            return [message_to_dict(v) for v in msg]
        if isinstance(msg, (bytes, bytearray)):
            return list(msg)
        if isinstance(msg, np.generic):
            return msg.item()
        return msg
    return {name: message_to_dict(getattr(msg, name)) for name in fields()}


def stamp_to_ns(stamp: Any) -> int:
    """builtin_interfaces/Time (or Duration) -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def fill_stamp(stamp: Any, ns: int) -> Any:
    """Write integer nanoseconds into a builtin_interfaces/Time or Duration in place."""
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)
    return stamp
