"""Reading what a truncated or corrupt rosbag2 still holds, with the problems reported as text.

:func:`raw_messages` reads a bag through rosbags; when rosbags cannot open or finish
it (a recording killed mid-write, missing metadata, corrupt pages) it scans the storage
files themselves: MCAP record by record (a cut-off chunk as far as its bytes go),
sqlite3 row by row (a truncated file through a copy with its page count corrected).
Problems go into a :class:`BagReadReport`, never out as a traceback from deep inside
the storage plugin.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BagReadReport", "describe_error", "raw_messages"]


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


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of an exception, for a line of a report."""
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
            report.problems.append(f"{where}: unreadable record at byte {offset} ({describe_error(exc)})")
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
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        topics = {row[0]: (row[1], row[2]) for row in db.execute("SELECT id, name, type FROM topics")}
        cursor = db.execute("SELECT topic_id, timestamp, data FROM messages ORDER BY id")
        while True:
            try:
                row = cursor.fetchone()
            except sqlite3.DatabaseError as exc:
                report.problems.append(f"{name}: sqlite3 rows unreadable from here on ({describe_error(exc)})")
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
    try:
        yield from _sqlite_rows(path, report, path.name)
        return
    except sqlite3.DatabaseError as exc:
        first_error = describe_error(exc)
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
            report.problems.append(f"{path.name}: sqlite3 tables unreadable ({first_error}; {describe_error(exc)})")


def raw_messages(path: Path, report: BagReadReport) -> Iterator[tuple[str, str, int, bytes]]:
    """Raw messages through rosbags; on failure, a salvaging scan of the storage files."""
    from rosbags.rosbag2 import Reader  # optional: only when bags are used

    seen: set[tuple[str, int, int]] = set()
    failed = False
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:
        report.problems.append(f"cannot open bag {path} normally ({describe_error(exc)}); salvaging what is readable")
        failed = True
    if not failed:
        try:
            for connection, receive_ns, raw in reader.messages():
                seen.add((connection.topic, int(receive_ns), hash(bytes(raw))))
                yield connection.topic, connection.msgtype, int(receive_ns), bytes(raw)
        except Exception as exc:
            report.problems.append(
                f"bag {path} is unreadable after {len(seen)} messages (truncated or corrupt?): "
                f"{describe_error(exc)}; salvaging what is readable"
            )
            failed = True
        finally:
            try:
                reader.close()
            except Exception as exc:
                report.problems.append(f"closing bag {path} failed: {describe_error(exc)}")
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

