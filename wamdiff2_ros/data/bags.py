"""rosbag2 helpers without rclpy: a typestore with this package's messages, bag writing and reading.

Built on the ``rosbags`` library, so bags can be written and read where no ROS 2 is
installed (CI, a training cluster). The typestore is ROS 2 Kilted's (or Jazzy's) with
the ``wamdiff2_ros/msg/*`` definitions registered from the ``.msg`` texts, found in
``$AMENT_PREFIX_PATH/*/share/wamdiff2_ros/msg`` first and then in the source tree's
``msg/`` next to the package.

Reading is forgiving: a truncated or corrupt bag yields every message that could be
read, and the problem is reported as text (:class:`BagReadReport`), never raised as a
traceback from deep inside the storage plugin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.model.codecs import waypoint_headings  # noqa: F401  (re-exported for bag users)

PACKAGE = "wamdiff2_ros"
TRAJECTORY_TYPE = "wamdiff2_ros/msg/Trajectory"
DETECTION_ARRAY_TYPE = "wamdiff2_ros/msg/DetectionArray"
STORAGE_IDS = ("mcap", "sqlite3")
DISTROS = ("kilted", "jazzy")


class BagError(RuntimeError):
    """A bag or the message definitions cannot be used; the message says what and where."""


# ---------------------------------------------------------------------------------------
# message definitions and typestore


def message_definition_dirs() -> list[Path]:
    """Candidate folders holding this package's ``.msg`` files, in search order."""
    dirs: list[Path] = []
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share" / PACKAGE / "msg")
    dirs.append(Path(__file__).resolve().parents[2] / "msg")
    return dirs


def find_message_definitions() -> Path:
    """The first folder with ``Trajectory.msg`` in it; :class:`BagError` naming the places looked in."""
    tried = message_definition_dirs()
    for directory in tried:
        if (directory / "Trajectory.msg").is_file():
            return directory
    raise BagError(
        "cannot find the wamdiff2_ros message definitions (Trajectory.msg); looked in: "
        + ", ".join(str(d) for d in tried)
        + ". Source install/setup.bash of a colcon build, or run from the source tree."
    )


@lru_cache(maxsize=4)
def _typestore(distro: str, msg_dir: str) -> Any:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    stores = {"kilted": Stores.ROS2_KILTED, "jazzy": Stores.ROS2_JAZZY}
    store = get_typestore(stores[distro])
    types: dict[str, Any] = {}
    for path in sorted(Path(msg_dir).glob("*.msg")):
        name = f"{PACKAGE}/msg/{path.stem}"
        try:
            types.update(get_types_from_msg(path.read_text(encoding="utf-8"), name))
        except Exception as exc:  # rosbags raises its own parser errors
            raise BagError(f"cannot parse message definition {path}: {exc}") from exc
    store.register(types)
    return store


def get_typestore(distro: str = "kilted") -> Any:
    """A rosbags typestore for ROS 2 ``distro`` with the ``wamdiff2_ros/msg/*`` types registered."""
    if distro not in DISTROS:
        raise BagError(f"unknown ROS 2 distro {distro!r}; choose one of {', '.join(DISTROS)}")
    return _typestore(distro, str(find_message_definitions()))


# ---------------------------------------------------------------------------------------
# message building and decoding


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


# ---------------------------------------------------------------------------------------
# writing


class BagWriter:
    """Write messages of any registered type into a rosbag2 (MCAP default, or sqlite3).

    Use as a context manager::

        with BagWriter(path, storage="mcap") as bag:
            bag.write("/planning/trajectory", stamp_ns, trajectory_message(bag.typestore, wps, stamp_ns))
    """

    def __init__(self, path: str | Path, *, storage: str = "mcap", distro: str = "kilted") -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

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


# ---------------------------------------------------------------------------------------
# reading


@dataclass
class BagReadReport:
    """What reading a bag managed: message counts and the problems met (empty when clean)."""

    path: str
    messages_read: int = 0
    messages_skipped: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}"


def _storage_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.suffix in (".mcap", ".db3"))


class _Truncated(Exception):
    pass


def _take(buffer: memoryview, offset: int, size: int) -> tuple[bytes, int]:
    if size < 0 or offset + size > len(buffer):
        raise _Truncated
    return bytes(buffer[offset : offset + size]), offset + size


def _uint(buffer: memoryview, offset: int, size: int) -> tuple[int, int]:
    raw, offset = _take(buffer, offset, size)
    return int.from_bytes(raw, "little"), offset


def _string(buffer: memoryview, offset: int) -> tuple[str, int]:
    size, offset = _uint(buffer, offset, 4)
    raw, offset = _take(buffer, offset, size)
    return raw.decode("utf-8", "replace"), offset


def _mcap_records(
    buffer: memoryview, state: dict[str, dict[int, Any]], report: BagReadReport, where: str
) -> Iterator[tuple[str, str, int, bytes]]:
    """Walk MCAP records in ``buffer``; messages of known channels are yielded, a cut-off tail is reported.

    A chunk whose end is missing is walked as far as its (uncompressed) bytes go, which is
    what a recording killed mid-chunk leaves behind.
    """
    offset = 0
    while offset < len(buffer):
        try:
            opcode, body = _uint(buffer, offset, 1)
            length, body = _uint(buffer, body, 8)
        except _Truncated:
            report.problems.append(f"{where}: ends inside a record header; the rest is lost")
            return
        end = body + length
        cut = end > len(buffer)
        record = buffer[body : min(end, len(buffer))]
        try:
            if opcode == 0x03 and not cut:  # Schema: id, name, encoding, data
                schema_id, o = _uint(record, 0, 2)
                name, o = _string(record, o)
                state["schemas"][schema_id] = name
            elif opcode == 0x04 and not cut:  # Channel: id, schema_id, topic, ...
                channel_id, o = _uint(record, 0, 2)
                schema_id, o = _uint(record, o, 2)
                topic, o = _string(record, o)
                state["channels"][channel_id] = (topic, state["schemas"].get(schema_id, ""))
            elif opcode == 0x05 and not cut:  # Message: channel, sequence, log_time, publish_time, data
                channel_id, o = _uint(record, 0, 2)
                log_time, o = _uint(record, o + 4, 8)
                if channel_id in state["channels"]:
                    topic, msgtype = state["channels"][channel_id]
                    yield topic, msgtype, log_time, bytes(record[o + 8 :])
            elif opcode == 0x06:  # Chunk: start, end, size, crc, compression, records
                compression, o = _string(record, 28)
                _, o = _uint(record, o, 8)
                inner = record[o:]
                if compression:
                    if cut:
                        raise _Truncated
                    inner = memoryview(_decompress(bytes(inner), compression))
                yield from _mcap_records(inner, state, report, where + " (chunk)")
                if cut:
                    return
        except _Truncated:
            report.problems.append(f"{where}: a record at byte {offset} is cut off; the rest is lost")
            return
        except Exception as exc:
            report.problems.append(f"{where}: unreadable record at byte {offset} ({_describe(exc)})")
            return
        if cut:
            report.problems.append(f"{where}: ends inside a record at byte {offset}; read what came before")
            return
        offset = end


def _decompress(data: bytes, compression: str) -> bytes:
    if compression == "zstd":
        import zstandard  # type: ignore[import-not-found]

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if compression == "lz4":
        import lz4.frame  # type: ignore[import-not-found]

        return lz4.frame.decompress(data)
    raise ValueError(f"unsupported chunk compression {compression!r}")


def _salvage_mcap(path: Path, report: BagReadReport) -> Iterator[tuple[str, str, int, bytes]]:
    """Linear scan of an MCAP file up to where it breaks (no summary or footer needed)."""
    data = path.read_bytes()
    if data[:5] != b"\x89MCAP":
        report.problems.append(f"{path.name}: not an MCAP file (bad magic)")
        return
    state: dict[str, dict[int, Any]] = {"schemas": {}, "channels": {}}
    yield from _mcap_records(memoryview(data)[8:], state, report, path.name)


def _sqlite_rows(path: Path, report: BagReadReport, name: str) -> Iterator[tuple[str, str, int, bytes]]:
    import sqlite3

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        topics = {row[0]: (row[1], row[2]) for row in db.execute("SELECT id, name, type FROM topics")}
        cursor = db.execute("SELECT topic_id, timestamp, data FROM messages ORDER BY id")
        while True:
            try:
                row = cursor.fetchone()
            except sqlite3.DatabaseError as exc:
                report.problems.append(f"{name}: sqlite3 rows unreadable from here on ({_describe(exc)})")
                break
            if row is None:
                break
            if row[0] in topics:
                yield topics[row[0]][0], topics[row[0]][1], int(row[1]), bytes(row[2])
    finally:
        db.close()


def _salvage_sqlite(path: Path, report: BagReadReport) -> Iterator[tuple[str, str, int, bytes]]:
    """Row-by-row read of a rosbag2 sqlite3 file, stopping at the first unreadable page.

    A truncated file claims more pages in its header than it has, which makes SQLite
    refuse it outright; a private copy with the page count corrected reads up to the cut.
    """
    import sqlite3
    import tempfile

    try:
        yield from _sqlite_rows(path, report, path.name)
        return
    except sqlite3.DatabaseError as exc:
        first_error = _describe(exc)
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big") if len(data) >= 100 and data[:16] == b"SQLite format 3\x00" else 0
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or len(data) < page_size:
        report.problems.append(f"{path.name}: not a readable sqlite3 file ({first_error})")
        return
    pages = len(data) // page_size
    del data[pages * page_size :]
    data[28:32] = pages.to_bytes(4, "big")
    with tempfile.TemporaryDirectory(prefix="wamdiff2_bag_") as tmp:
        repaired = Path(tmp) / path.name
        repaired.write_bytes(bytes(data))
        try:
            yield from _sqlite_rows(repaired, report, path.name)
        except sqlite3.DatabaseError as exc:
            report.problems.append(f"{path.name}: sqlite3 tables unreadable ({first_error}; {_describe(exc)})")


def _raw_messages(path: Path, report: BagReadReport) -> Iterator[tuple[str, str, int, bytes]]:
    """Raw messages through rosbags; on failure, a salvaging scan of the storage files."""
    from rosbags.rosbag2 import Reader

    seen: set[tuple[str, int, int]] = set()
    failed = False
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:
        report.problems.append(f"cannot open bag {path} normally ({_describe(exc)}); salvaging what is readable")
        failed = True
    if not failed:
        try:
            for connection, receive_ns, raw in reader.messages():
                seen.add((connection.topic, int(receive_ns), hash(bytes(raw))))
                yield connection.topic, connection.msgtype, int(receive_ns), bytes(raw)
        except Exception as exc:
            report.problems.append(
                f"bag {path} is unreadable after {len(seen)} messages (truncated or corrupt?): "
                f"{_describe(exc)}; salvaging what is readable"
            )
            failed = True
        finally:
            try:
                reader.close()
            except Exception as exc:
                report.problems.append(f"closing bag {path} failed: {_describe(exc)}")
    if not failed:
        return
    files = _storage_files(path)
    if not files:
        report.problems.append(f"no .mcap or .db3 file found in {path}")
    for file in files:
        salvage = _salvage_mcap if file.suffix == ".mcap" else _salvage_sqlite
        for topic, msgtype, receive_ns, raw in salvage(file, report):
            key = (topic, receive_ns, hash(raw))
            if key not in seen:
                seen.add(key)
                yield topic, msgtype, receive_ns, raw


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
    for topic, msgtype, receive_ns, raw in _raw_messages(path, report):
        if (msgtypes is not None and msgtype not in msgtypes) or (topics is not None and topic not in topics):
            continue
        try:
            msg = typestore.deserialize_cdr(raw, msgtype)
        except Exception as exc:
            report.messages_skipped += 1
            if report.messages_skipped <= 3:
                report.problems.append(
                    f"skipped an undecodable {msgtype} message on {topic} at {receive_ns} ns: {_describe(exc)}"
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
