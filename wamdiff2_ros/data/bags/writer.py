"""Writing rosbag2 bags without rclpy: :class:`BagWriter` (MCAP by default, or sqlite3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wamdiff2_ros.data.bags.typestore import BagError, get_typestore

__all__ = ["STORAGE_IDS", "BagWriter"]

STORAGE_IDS = ("mcap", "sqlite3")


class BagWriter:
    """Write messages of any registered type into a rosbag2 (MCAP default, or sqlite3).

    Use as a context manager::

        with BagWriter(path, storage="mcap") as bag:
            bag.write("/planning/trajectory", stamp_ns, trajectory_message(bag.typestore, wps, stamp_ns))
    """

    def __init__(self, path: str | Path, *, storage: str = "mcap", distro: str = "kilted") -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer  # optional: only when bags are used

        if storage not in STORAGE_IDS:
            raise BagError(f"unknown bag storage {storage!r}; choose one of {', '.join(STORAGE_IDS)}")
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"bag output {self.path} already exists; rosbag2 writes a new folder")
        self.typestore = get_typestore(distro)
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        self._writer = Writer(self.path, version=9, storage_plugin=plugin)
        self._connections: dict[str, Any] = {}

    def __enter__(self) -> BagWriter:
        self._writer.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self._writer.close()

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Declare ``topic`` with ROS type name ``msgtype`` (e.g. ``wamdiff2_ros/msg/Trajectory``)."""
        if topic in self._connections:
            return
        self._connections[topic] = self._writer.add_connection(topic, msgtype, typestore=self.typestore)

    def write(self, topic: str, stamp_ns: int, msg: Any) -> None:
        """Serialise ``msg`` (CDR) and write it on ``topic`` at receive time ``stamp_ns``."""
        msgtype = msg.__msgtype__
        self.add_topic(topic, msgtype)
        data = self.typestore.serialize_cdr(msg, msgtype)
        self._writer.write(self._connections[topic], int(stamp_ns), data)

    def write_raw(self, topic: str, stamp_ns: int, data: bytes) -> None:
        """Write already serialized CDR ``data`` on a topic declared with :meth:`add_topic`."""
        if topic not in self._connections:
            raise BagError(f"topic {topic} was not declared with add_topic")
        self._writer.write(self._connections[topic], int(stamp_ns), bytes(data))
