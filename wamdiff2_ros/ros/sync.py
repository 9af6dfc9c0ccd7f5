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
    """Keeps the last few frames per camera and emits the newest set in which every live camera matches.

    A frame matches when its stamp is within ``slop_ns`` of the reference camera's
    (the first camera). A camera silent for ``camera_timeout_ns`` of receive time is
    "stopped": sets are then emitted without it (listed in ``missing``). A frame
    whose stamp is not newer than the last emitted set is out of order and dropped;
    a frame older than the newest stamp seen by more than ``stale_ns`` is stale.

    Each camera keeps its ``history`` newest frames, not only its latest: a busy
    receiver takes queued callbacks camera by camera, so the reference camera's next
    frame can arrive before another camera's frame of the current set, and with one
    frame per camera that set could never complete. ``counts["emitted"]`` and
    ``counts["skipped"]`` (reference frames passed over for a newer complete set: a
    frame of theirs never came) say how many sets got through; drive_node reports
    both on /diagnostics (8 raw 512x256 cameras over best-effort DDS lost a frame of
    about a third of the sets on the 2-core CPU; JPEG images none, docs/BENCHMARKS.md).
    """

    cameras: Sequence[str]
    slop_ns: int = 50_000_000
    camera_timeout_ns: int = 1_000_000_000
    stale_ns: int = 2_000_000_000
    history: int = 4
    frames: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)  # per camera, oldest first
    last_seen_ns: dict[str, int] = field(default_factory=dict)
    last_emitted_ns: int = -1
    newest_ns: int = -1
    counts: Counter = field(default_factory=Counter)
    started_ns: int | None = None

    def __post_init__(self) -> None:
        if not self.cameras:
            raise ValueError("at least one camera is needed")
        if self.history < 1:
            raise ValueError(f"history must be >= 1, got {self.history}")
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
        queue = self.frames.setdefault(camera, [])
        if queue and queue[-1][0] > stamp_ns:  # a camera's own stream went back
            self.counts["out_of_order"] += 1
            return None
        queue.append((stamp_ns, payload))
        del queue[:-self.history]
        return self.try_emit(now_ns)

    def _match(self, camera: str, ref_stamp: int) -> tuple[int, Any] | None:
        """The camera's frame nearest ``ref_stamp`` within the slop (the newer on ties), if any."""
        near = [f for f in self.frames.get(camera, ()) if abs(f[0] - ref_stamp) <= self.slop_ns]
        return min(reversed(near), key=lambda f: abs(f[0] - ref_stamp)) if near else None

    def try_emit(self, now_ns: int) -> FrameSet | None:
        stopped = set(self.stopped(now_ns)) - {self.reference}
        for ref_stamp, ref_payload in reversed(self.frames.get(self.reference, [])):  # newest reference first
            frames: dict[str, Any] = {self.reference: ref_payload}
            used = {self.reference: ref_stamp}
            missing: list[str] = []
            for camera in self.cameras[1:]:
                match = self._match(camera, ref_stamp)
                if match is not None:
                    used[camera], frames[camera] = match
                elif camera in stopped:
                    missing.append(camera)
                else:
                    break  # this camera's frame of the set has not come (yet)
            else:
                return self._emit(ref_stamp, used, frames, tuple(missing))
        return None

    def _emit(self, ref_stamp: int, used: dict[str, int], frames: dict[str, Any],
              missing: tuple[str, ...]) -> FrameSet:
        """Emit the set at ``ref_stamp``; every frame it used (``used``: camera -> stamp) or older goes."""
        self.counts["skipped"] += sum(1 for stamp, _ in self.frames[self.reference] if stamp < ref_stamp)
        for camera, queue in self.frames.items():
            keep_after = used.get(camera, ref_stamp)
            queue[:] = [f for f in queue if f[0] > keep_after]
        self.last_emitted_ns = ref_stamp
        self.counts["emitted"] += 1
        return FrameSet(ref_stamp, frames, missing)
