"""Ego state by stamp: a frame set is planned on the odometry (and acceleration) of its own stamp.

drive_node keeps the last odometry and acceleration messages here and, when a worker
prepares a frame set, asks for the state nearest the set's stamp. Taking just the newest
state instead races the images: odometry and images travel on different topics, so the
state of a frame can arrive after the frame (a lock-step simulator then plans on the
previous step's state, and its run differs from the in-process one). No rclpy here.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from wamdiff2_ros.agent import EgoMotion

ACCEL_PAIRING_NS = 500_000_000  # an acceleration this close to the odometry's stamp goes with it
MIN_DIFF_DT_NS = 10_000_000  # below this, differentiating two odometry twists is noise
ACCEL_LIMIT = 20.0  # m/s^2, clip


class EgoHistory:
    """The last ``depth`` odometry twists and accelerations (base_link), looked up by stamp."""

    def __init__(self, depth: int = 64, accel_expected: bool = True) -> None:
        self.odometry: deque[tuple[int, float, float]] = deque(maxlen=depth)  # (stamp ns, vx, vy)
        self.accels: deque[tuple[int, float, float]] = deque(maxlen=depth)  # (stamp ns, ax, ay)
        self.accel_expected = accel_expected

    def add_odometry(self, stamp_ns: int, vx: float, vy: float) -> None:
        self.odometry.append((int(stamp_ns), float(vx), float(vy)))

    def add_accel(self, stamp_ns: int, ax: float, ay: float) -> None:
        self.accels.append((int(stamp_ns), float(ax), float(ay)))

    @property
    def newest_stamp_ns(self) -> int | None:
        return max(s for s, _, _ in self.odometry) if self.odometry else None

    def reached(self, stamp_ns: int, first: bool = False) -> bool:
        """True when waiting longer cannot give a better state for ``stamp_ns``.

        That is: no odometry ever came (nothing to wait for, unless ``first``: the caller
        waits for the first odometry too), or odometry stamped at or after ``stamp_ns`` is
        here and so is an acceleration (when accelerations are expected and have come before).
        """
        newest = self.newest_stamp_ns
        if newest is None:
            return not first
        if newest < stamp_ns:
            return False
        return not (self.accel_expected and self.accels) or max(s for s, _, _ in self.accels) >= stamp_ns

    def at(self, stamp_ns: int, timeout_ns: int) -> tuple[EgoMotion, bool, int | None]:
        """(state, ok, odometry stamp) nearest ``stamp_ns``; ok=False (zero state) when none is within ``timeout_ns``."""
        if not self.odometry:
            return EgoMotion(), False, None
        entries = sorted(self.odometry)
        index = min(range(len(entries)), key=lambda i: abs(entries[i][0] - stamp_ns))
        stamp, vx, vy = entries[index]
        if abs(stamp - stamp_ns) > timeout_ns:
            return EgoMotion(), False, None
        ax = ay = 0.0
        accel = min(self.accels, key=lambda a: abs(a[0] - stamp), default=None)
        if accel is not None and abs(accel[0] - stamp) < ACCEL_PAIRING_NS:
            ax, ay = accel[1], accel[2]
        elif index > 0 and stamp - entries[index - 1][0] > MIN_DIFF_DT_NS:
            before, vx0, vy0 = entries[index - 1]
            dt = (stamp - before) / 1e9
            ax, ay = (vx - vx0) / dt, (vy - vy0) / dt
        clip = lambda a: float(np.clip(a, -ACCEL_LIMIT, ACCEL_LIMIT))  # noqa: E731
        return EgoMotion((vx, vy), (clip(ax), clip(ay))), True, stamp
