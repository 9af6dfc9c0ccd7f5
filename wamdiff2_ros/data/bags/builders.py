"""Builders of this package's rosbag2 messages: headers, ``Trajectory`` and ``DetectionArray``.

Messages are instances of a rosbags typestore's classes
(:func:`~wamdiff2_ros.data.bags.typestore.get_typestore`), ready for
:meth:`~wamdiff2_ros.data.bags.writer.BagWriter.write`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from wamdiff2_ros.data.bags.typestore import DETECTION_ARRAY_TYPE, TRAJECTORY_TYPE
from wamdiff2_ros.model.codecs import waypoint_headings

__all__ = ["header", "trajectory_message", "detection_array_message"]


def _stamp(typestore: Any, stamp_ns: int) -> Any:
    Time = typestore.types["builtin_interfaces/msg/Time"]
    return Time(sec=int(stamp_ns // 1_000_000_000), nanosec=int(stamp_ns % 1_000_000_000))


def header(typestore: Any, stamp_ns: int, frame_id: str = "base_link") -> Any:
    """A ``std_msgs/Header`` for ``stamp_ns`` (nanoseconds since the epoch)."""
    Header = typestore.types["std_msgs/msg/Header"]
    return Header(stamp=_stamp(typestore, stamp_ns), frame_id=frame_id)


def _as_waypoints(waypoints: Any) -> np.ndarray:
    array = np.asarray(waypoints, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] not in (2, 3):
        raise ValueError(f"waypoints must have shape (N, 2) or (N, 3) (x, y[, heading]); got {array.shape}")
    if array.shape[1] == 2:
        array = np.concatenate([array, waypoint_headings(array)[:, None]], axis=1)
    return array


def trajectory_message(
    typestore: Any,
    waypoints: Any,
    stamp_ns: int,
    *,
    interval_s: float = 0.5,
    valid: bool = True,
    source: str = "model",
    block_size: int = 0,
    confidence: float = 1.0,
    scene_token: str = "",
    frame_id: str = "base_link",
) -> Any:
    """A ``wamdiff2_ros/msg/Trajectory`` from (N, 2|3) waypoints spaced ``interval_s`` apart."""
    array = _as_waypoints(waypoints)
    Waypoint = typestore.types["wamdiff2_ros/msg/Waypoint"]
    Duration = typestore.types["builtin_interfaces/msg/Duration"]
    points = []
    for i, (x, y, heading) in enumerate(array):
        t_ns = int(round((i + 1) * interval_s * 1e9))
        points.append(
            Waypoint(
                x=float(x),
                y=float(y),
                heading=float(heading),
                time_from_start=Duration(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000),
            )
        )
    Trajectory = typestore.types[TRAJECTORY_TYPE]
    return Trajectory(
        header=header(typestore, stamp_ns, frame_id),
        waypoints=points,
        valid=bool(valid),
        source=str(source),
        block_size=int(block_size),
        confidence=float(confidence),
        scene_token=str(scene_token),
    )


def detection_array_message(typestore: Any, boxes: Sequence[Any], stamp_ns: int, frame_id: str = "base_link") -> Any:
    """A ``wamdiff2_ros/msg/DetectionArray`` from box objects with label, x, y, z, length, width, height, yaw
    (and optional ``score``, ``camera``, ``bbox``), e.g. ``wamdiff2_ros.model.codecs.Box``."""
    Detection = typestore.types["wamdiff2_ros/msg/Detection"]
    Point = typestore.types["geometry_msgs/msg/Point"]
    Vector3 = typestore.types["geometry_msgs/msg/Vector3"]
    detections = []
    for box in boxes:
        bbox = getattr(box, "bbox", None)
        detections.append(
            Detection(
                label=str(box.label),
                score=float(getattr(box, "score", 1.0) or 1.0),
                center=Point(x=float(box.x), y=float(box.y), z=float(box.z)),
                size=Vector3(x=float(box.length), y=float(box.width), z=float(box.height)),
                yaw=float(box.yaw),
                camera=str(getattr(box, "camera", "") or ""),
                bbox=np.asarray(bbox if bbox is not None else (0, 0, 0, 0), dtype=np.float32).reshape(4),
            )
        )
    DetectionArray = typestore.types[DETECTION_ARRAY_TYPE]
    return DetectionArray(header=header(typestore, stamp_ns, frame_id), detections=detections)
