"""Comfort over a driven route: longitudinal acceleration and jerk, lateral acceleration, yaw rate.

From the ego's speed and yaw rate sampled every step. Derivatives use a Savitzky-Golay
fit over a 0.5 s window (NAVSIM's estimator family, :func:`~wamdiff2_ros.evaluation.kinematics.savgol`);
lateral acceleration is ``speed x yaw rate``. The share of time outside NAVSIM's comfort
bounds (the same constants as its per-plan comfort term) is reported next to the peaks
and 95th percentiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.kinematics import (
    MAX_ABS_LAT_ACCEL,
    MAX_ABS_LON_JERK,
    MAX_ABS_YAW_RATE,
    MAX_LON_ACCEL,
    MIN_LON_ACCEL,
    savgol,
)

WINDOW_S = 0.5


def comfort_metrics(times_s: np.ndarray, speed: np.ndarray, yaw_rate: np.ndarray) -> dict[str, Any]:
    """Peaks, 95th percentiles and time share outside NAVSIM's bounds; empty values for < 5 samples."""
    t = np.asarray(times_s, dtype=np.float64)
    v = np.asarray(speed, dtype=np.float64)
    w = np.asarray(yaw_rate, dtype=np.float64)
    if len(t) < 5:
        return {"samples": int(len(t))}
    dt = float(np.median(np.diff(t)))
    if not dt > 0:
        return {"samples": int(len(t))}
    window = max(5, int(round(WINDOW_S / dt)) | 1)
    window = min(window, len(t) if len(t) % 2 else len(t) - 1)
    lon = savgol(v, window, 2, deriv=1, delta=dt)
    jerk = savgol(lon, window, 2, deriv=1, delta=dt)
    lat = savgol(v * w, window, 2)
    yaw = savgol(w, window, 2)
    outside = (lon >= MAX_LON_ACCEL) | (lon <= MIN_LON_ACCEL) | (np.abs(lat) >= MAX_ABS_LAT_ACCEL)
    outside |= (np.abs(jerk) >= MAX_ABS_LON_JERK) | (np.abs(yaw) >= MAX_ABS_YAW_RATE)

    def r(x: float) -> float:
        return round(float(x), 3)

    return {
        "samples": int(len(t)),
        "lon_accel_max": r(lon.max()),
        "lon_accel_min": r(lon.min()),
        "lon_jerk_abs_max": r(np.abs(jerk).max()),
        "lon_jerk_abs_p95": r(np.percentile(np.abs(jerk), 95)),
        "lon_jerk_abs_mean": r(np.abs(jerk).mean()),
        "lat_accel_abs_max": r(np.abs(lat).max()),
        "lat_accel_abs_p95": r(np.percentile(np.abs(lat), 95)),
        "yaw_rate_abs_max": r(np.abs(yaw).max()),
        "uncomfortable_share": r(outside.mean()),
    }
