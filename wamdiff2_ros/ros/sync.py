"""Group camera frames by stamp: newest complete set wins; stale, out-of-order, stopped cameras.

Pure Python (no rclpy) so it is tested directly. Stamps are integer nanoseconds of
the images' headers; ``now_ns`` is the receiving clock (for "a camera that stops").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FrameSet:
    """One synchronized input: the reference camera's stamp and one frame per camera."""

    stamp_ns: int
    frames: dict[str, Any]
    missing: tuple[str, ...] = ()


@dataclass
class FrameSynchronizer:
    """Keeps the latest frame per camera and emits a set once every live camera matches.

    A frame matches when its stamp is within ``slop_ns`` of the reference camera's
    (the first camera). A camera silent for ``camera_timeout_ns`` of receive time is
    "stopped": sets are then emitted without it (listed in ``missing``). A frame
    whose stamp is not newer than the last emitted set is out of order and dropped;
    a frame older than the newest stamp seen by more than ``stale_ns`` is stale.
    ``counts["emitted"]`` counts the sets, ``counts["skipped"]`` the reference frames
    replaced by a newer one before their set was complete (a frame of the set never
    came); drive_node reports both on /diagnostics (8 raw 512x256 cameras over
    best-effort DDS lost a frame of about a third of the sets on the 2-core CPU; JPEG
    images none, docs/BENCHMARKS.md).
    """

    cameras: Sequence[str]
    slop_ns: int = 50_000_000
    camera_timeout_ns: int = 1_000_000_000
    stale_ns: int = 2_000_000_000
    latest: dict[str, tuple[int, Any]] = field(default_factory=dict)
    last_seen_ns: dict[str, int] = field(default_factory=dict)
    last_emitted_ns: int = -1
    newest_ns: int = -1
    counts: Counter = field(default_factory=Counter)
    started_ns: int | None = None

    def __post_init__(self) -> None:
        if not self.cameras:
            raise ValueError("at least one camera is needed")
        self.reference = self.cameras[0]

    def stopped(self, now_ns: int) -> list[str]:
        """Cameras that have not delivered a frame within the timeout (since start, if never)."""
        since = self.started_ns if self.started_ns is not None else now_ns
        return [c for c in self.cameras if now_ns - self.last_seen_ns.get(c, since) > self.camera_timeout_ns]

    def add(self, camera: str, stamp_ns: int, payload: Any, now_ns: int) -> FrameSet | None:
        if camera not in self.cameras:
            self.counts["unknown_camera"] += 1
            return None
        if self.started_ns is None:
            self.started_ns = now_ns
        self.last_seen_ns[camera] = now_ns
        if stamp_ns <= self.last_emitted_ns:
            self.counts["out_of_order"] += 1
            return None
        if self.newest_ns - stamp_ns > self.stale_ns:
            self.counts["stale"] += 1
            return None
        self.newest_ns = max(self.newest_ns, stamp_ns)
        previous = self.latest.get(camera)
        if previous is not None and previous[0] > stamp_ns:
            self.counts["out_of_order"] += 1
            return None
        if camera == self.reference and previous is not None:
            self.counts["skipped"] += 1  # the previous set never completed
        self.latest[camera] = (stamp_ns, payload)
        return self.try_emit(now_ns)

    def try_emit(self, now_ns: int) -> FrameSet | None:
        ref = self.latest.get(self.reference)
        if ref is None:
            return None
        ref_stamp = ref[0]
        stopped = set(self.stopped(now_ns)) - {self.reference}
        frames: dict[str, Any] = {}
        missing: list[str] = []
        for camera in self.cameras:
            entry = self.latest.get(camera)
            if entry is not None and abs(entry[0] - ref_stamp) <= self.slop_ns:
                frames[camera] = entry[1]
            elif camera in stopped:
                missing.append(camera)
            else:
                return None  # wait for this camera
        for camera in frames:
            del self.latest[camera]
        self.last_emitted_ns = ref_stamp
        self.counts["emitted"] += 1
        return FrameSet(ref_stamp, frames, tuple(missing))
