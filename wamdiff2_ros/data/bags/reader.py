"""Reading rosbag2 bags without rclpy: decoded messages, and Trajectory messages as plain records.

Reading is forgiving: a truncated or corrupt bag yields every message that could be
read (:mod:`~wamdiff2_ros.data.bags.salvage`), and the problems are reported in a
:class:`~wamdiff2_ros.data.bags.salvage.BagReadReport`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.data.bags.salvage import BagReadReport, describe_error, raw_messages
from wamdiff2_ros.data.bags.typestore import TRAJECTORY_TYPE, get_typestore

__all__ = ["TrajectoryRecord", "trajectory_from_message", "read_messages", "read_trajectories"]


@dataclass
class TrajectoryRecord:
    """A Trajectory message as plain Python: what evaluation needs from it."""

    stamp_ns: int
    waypoints: np.ndarray  # (N, 3) x, y, heading in the ego frame at the stamp
    times_s: np.ndarray  # (N,) time_from_start in seconds
    valid: bool = True
    source: str = "model"
    block_size: int = 0
    confidence: float = 0.0
    scene_token: str = ""
    topic: str = ""
    receive_ns: int = 0


def trajectory_from_message(msg: Any, *, topic: str = "", receive_ns: int = 0) -> TrajectoryRecord:
    """Decode a deserialised ``wamdiff2_ros/msg/Trajectory`` into a :class:`TrajectoryRecord`."""
    stamp = msg.header.stamp
    wps = np.array([[w.x, w.y, w.heading] for w in msg.waypoints], dtype=np.float64).reshape(-1, 3)
    times = np.array(
        [w.time_from_start.sec + w.time_from_start.nanosec * 1e-9 for w in msg.waypoints], dtype=np.float64
    )
    return TrajectoryRecord(
        stamp_ns=int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec),
        waypoints=wps,
        times_s=times,
        valid=bool(msg.valid),
        source=str(msg.source),
        block_size=int(msg.block_size),
        confidence=float(msg.confidence),
        scene_token=str(msg.scene_token),
        topic=topic,
        receive_ns=int(receive_ns),
    )


def read_messages(
    path: str | Path,
    msgtypes: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    *,
    report: BagReadReport | None = None,
    distro: str = "kilted",
) -> Iterator[tuple[str, str, int, Any]]:
    """Yield ``(topic, msgtype, receive_ns, message)`` from a rosbag2 folder or single ``.mcap``/``.db3`` file.

    Only messages whose type is in ``msgtypes`` (and topic in ``topics``) are decoded.
    A bag that rosbags cannot open or finish (truncated recording, missing metadata,
    corrupt pages) is scanned record by record up to where it breaks. Problems are
    appended to ``report.problems``; nothing is raised except :class:`BagError` when
    the message definitions cannot be found.
    """
    if report is None:
        report = BagReadReport(str(path))
    path = Path(path)
    if not path.exists():
        report.problems.append(f"bag {path} does not exist")
        return
    typestore = get_typestore(distro)
    for topic, msgtype, receive_ns, raw in raw_messages(path, report):
        if (msgtypes is not None and msgtype not in msgtypes) or (topics is not None and topic not in topics):
            continue
        try:
            msg = typestore.deserialize_cdr(raw, msgtype)
        except Exception as exc:
            report.messages_skipped += 1
            if report.messages_skipped <= 3:
                report.problems.append(
                    f"skipped an undecodable {msgtype} message on {topic} at {receive_ns} ns: {describe_error(exc)}"
                )
            continue
        report.messages_read += 1
        yield topic, msgtype, receive_ns, msg


def read_trajectories(
    path: str | Path, topics: Sequence[str] | None = None, *, distro: str = "kilted"
) -> tuple[list[TrajectoryRecord], BagReadReport]:
    """All ``wamdiff2_ros/msg/Trajectory`` messages of a bag and a report of what went wrong, if anything."""
    report = BagReadReport(str(path))
    records = [
        trajectory_from_message(msg, topic=topic, receive_ns=receive_ns)
        for topic, _, receive_ns, msg in read_messages(path, [TRAJECTORY_TYPE], topics, report=report, distro=distro)
    ]
    return records, report
