"""Per-task pacing and latency book-keeping for drive_node (pure Python, no rclpy).

:class:`RateGate` says whether a task runs on a frame set, judged on the frame sets' own
stamps (sensor time), not on when a worker happens to be free: each run takes a slot on a
grid one period apart, and a set is due when its stamp is at most half a period before the
next slot. At equal camera and task rates every set is therefore due, whatever the wake-up
latency of the worker; at a faster camera the average rate is the task's, exactly. (A gate on
the time of the last start lets each wake-up latency push the next start later, so at equal
rates the plan's wait grew to most of a period before a set was dropped and the phase reset.)
Stamps that go back (a replay restarted) start a new grid. :class:`TaskBook` keeps each
task's recent latencies and output times for /diagnostics.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

#: a frame set this fraction of a period before the next slot is still due (camera jitter, a faster camera)
EARLY_FRACTION = 0.5


@dataclass
class RateGate:
    """Whether one task runs on a frame set; stamps are integer nanoseconds of sensor time."""

    slot_ns: int | None = None  # the grid slot of the last run
    last_stamp_ns: int | None = None

    def _fresh_grid(self, stamp_ns: int) -> bool:
        return self.slot_ns is None or self.last_stamp_ns is None or stamp_ns < self.last_stamp_ns

    def due(self, rate_hz: float, stamp_ns: int) -> bool:
        """True when the task runs on the set stamped ``stamp_ns`` (never for a rate of 0: the task is off)."""
        if rate_hz <= 0:
            return False
        if self._fresh_grid(stamp_ns):
            return True
        period_ns = 1e9 / rate_hz
        return stamp_ns >= self.slot_ns + period_ns * (1.0 - EARLY_FRACTION)

    def start(self, rate_hz: float, stamp_ns: int) -> None:
        """The task runs on the set stamped ``stamp_ns``: it takes the next slot (or the stamp, when later)."""
        if self._fresh_grid(stamp_ns) or rate_hz <= 0:
            self.slot_ns = stamp_ns
        else:
            self.slot_ns = max(int(self.slot_ns + 1e9 / rate_hz), stamp_ns)
        self.last_stamp_ns = stamp_ns


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
