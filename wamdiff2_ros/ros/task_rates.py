"""Per-task pacing and latency book-keeping for drive_node (pure Python, no rclpy).

:class:`RateGate` says when a task may start again: one period (1 / rate) after its
last start on the node's clock. A clock that jumps back, or stands still for a whole
period of wall time (a paused or finished replay), holds nothing up: a waiting frame
set is a real frame. :class:`TaskBook` keeps each task's recent latencies and output
times for /diagnostics.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np


@dataclass
class RateGate:
    """When one task may start again; times are integer nanoseconds."""

    last_start_ns: int | None = None
    _seen_ns: int | None = None
    _seen_wall_ns: int = 0

    def due(self, rate_hz: float, now_ns: int, wall_ns: int) -> bool:
        """True when the task may start now (never for a rate of 0: the task is off)."""
        if rate_hz <= 0:
            return False
        if self.last_start_ns is None:
            return True
        period_ns = int(1e9 / rate_hz)
        if now_ns < self.last_start_ns or now_ns >= self.last_start_ns + period_ns:
            return True
        if now_ns != self._seen_ns:
            self._seen_ns, self._seen_wall_ns = now_ns, wall_ns
            return False
        return wall_ns - self._seen_wall_ns > period_ns  # the clock stood still for a period

    def wait_s(self, rate_hz: float, now_ns: int) -> float:
        """Seconds until the period ends on the node's clock (a short poll step at most 10 ms)."""
        if rate_hz <= 0 or self.last_start_ns is None:
            return 0.01
        left = (self.last_start_ns + int(1e9 / rate_hz) - now_ns) / 1e9
        return min(0.01, max(0.001, left))

    def start(self, now_ns: int, wall_ns: int) -> None:
        self.last_start_ns = now_ns
        self._seen_ns, self._seen_wall_ns = now_ns, wall_ns


#: where an output's latency goes: the set waits for a worker (and the task's rate), is prepared (images
#: encoded, shared prefix prefilled; ~0 when the other lane did it), is decoded, and is published
STAGES = ("wait", "prepare", "decode", "publish")


@dataclass
class TaskBook:
    """Recent latencies (ms, frame set received -> output published), their stages and output times of one task."""

    latencies_ms: deque = field(default_factory=lambda: deque(maxlen=200))
    published_wall_ns: deque = field(default_factory=lambda: deque(maxlen=50))
    stages_ms: dict = field(default_factory=lambda: {s: deque(maxlen=200) for s in STAGES})

    def add(self, latency_ms: float, wall_ns: int, stages_ms: dict[str, float] | None = None) -> None:
        self.latencies_ms.append(latency_ms)
        self.published_wall_ns.append(wall_ns)
        for stage, ms in (stages_ms or {}).items():
            self.stages_ms[stage].append(ms)

    def stage_medians(self) -> dict[str, float]:
        """Median milliseconds per stage over the recent outputs (stages never recorded are left out)."""
        return {s: float(np.median(v)) for s, v in self.stages_ms.items() if v}

    def percentiles(self) -> dict[str, float]:
        if not self.latencies_ms:
            return {}
        lat = np.asarray(self.latencies_ms)
        return {f"p{q}": float(np.percentile(lat, q)) for q in (50, 95)}

    def rate_hz(self, wall_ns: int, window_s: float = 5.0) -> float:
        """Outputs per second over the last ``window_s`` of wall time."""
        recent = [t for t in self.published_wall_ns if wall_ns - t < window_s * 1e9]
        if len(recent) < 2 or recent[-1] <= recent[0]:
            return 0.0
        return (len(recent) - 1) / ((recent[-1] - recent[0]) / 1e9)
