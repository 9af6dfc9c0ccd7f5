"""The replay's clock: log time advancing at ``speed`` x wall time, held while paused, never going back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ReplayClock:
    """Log time in integer nanoseconds; None until the first :meth:`jump`."""

    def __init__(self, speed: float, wall_ns: Callable[[], int] = time.monotonic_ns) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        self.speed, self.wall_ns = speed, wall_ns
        self.lock = threading.Lock()
        self.anchor: int | None = None
        self.anchor_wall = 0
        self.paused = False

    def _now(self) -> int | None:
        if self.anchor is None or self.paused:
            return self.anchor
        return self.anchor + int((self.wall_ns() - self.anchor_wall) * self.speed)

    def now(self) -> int | None:
        with self.lock:
            return self._now()

    def jump(self, stamp_ns: int) -> None:
        """Move to ``stamp_ns`` (forward only: a clock that went back would fool every timeout)."""
        with self.lock:
            current = self._now()
            self.anchor = stamp_ns if current is None else max(stamp_ns, current)
            self.anchor_wall = self.wall_ns()

    def set_paused(self, paused: bool) -> None:
        with self.lock:
            if paused != self.paused:
                self.anchor, self.anchor_wall, self.paused = self._now(), self.wall_ns(), paused
