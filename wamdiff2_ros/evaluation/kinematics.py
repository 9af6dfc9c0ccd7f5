"""Ego kinematics from planned waypoints and NAVSIM's comfort test on them.

NAVSIM scores a plan after tracking it with an LQR controller and a bicycle model at
10 Hz. Here the plan itself is resampled to 10 Hz with a cubic Hermite spline that
starts at the ego's current velocity, and velocities, accelerations and yaw rates come
from its derivatives. The comfort bounds and the Savitzky-Golay estimates (window,
order, derivative per term) are NAVSIM's (``pdm_comfort_metrics``), re-implemented in
numpy; the tracking controller is not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# NAVSIM / nuPlan comfort bounds
MAX_ABS_MAG_JERK = 8.37  # m/s^3
MAX_ABS_LAT_ACCEL = 4.89  # m/s^2
MAX_LON_ACCEL = 2.40  # m/s^2
MIN_LON_ACCEL = -4.05  # m/s^2
MAX_ABS_YAW_ACCEL = 1.93  # rad/s^2
MAX_ABS_LON_JERK = 4.13  # m/s^3
MAX_ABS_YAW_RATE = 0.95  # rad/s

STEP_S = 0.1  # NAVSIM's simulation interval


@dataclass
class EgoStates:
    """Ego states on a regular time grid, in the current ego frame."""

    times_s: np.ndarray  # (T,)
    poses: np.ndarray  # (T, 3) rear-axle x, y, heading
    velocity: np.ndarray  # (T, 2) frame velocity
    acceleration_lon: np.ndarray  # (T,) along the heading
    acceleration_lat: np.ndarray  # (T,) to the left of the heading

    @property
    def speed(self) -> np.ndarray:
        return np.hypot(self.velocity[:, 0], self.velocity[:, 1])


def _hermite(values: np.ndarray, tangents: np.ndarray, knots: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, ...]:
    """Cubic Hermite spline through (knots, values) with ``tangents``; value, 1st and 2nd derivative at ``times``."""
    idx = np.clip(np.searchsorted(knots, times, side="right") - 1, 0, len(knots) - 2)
    h = (knots[idx + 1] - knots[idx])[:, None]
    s = ((times - knots[idx]) / h[:, 0])[:, None]
    p0, p1 = values[idx], values[idx + 1]
    m0, m1 = tangents[idx] * h, tangents[idx + 1] * h
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
    e00, e10, e01, e11 = 12 * s - 6, 6 * s - 4, -12 * s + 6, 6 * s - 2
    value = h00 * p0 + h10 * m0 + h01 * p1 + h11 * m1
    first = (d00 * p0 + d10 * m0 + d01 * p1 + d11 * m1) / h
    second = (e00 * p0 + e10 * m0 + e01 * p1 + e11 * m1) / h**2
    return value, first, second


def resample_plan(
    waypoints: np.ndarray,
    *,
    interval_s: float = 0.5,
    step_s: float = STEP_S,
    initial_velocity: np.ndarray | None = None,
) -> EgoStates:
    """Plan (N, 2|3) at ``interval_s`` from the origin -> states every ``step_s`` from t = 0 to the last pose.

    Positions follow a cubic Hermite spline through the origin and the waypoints with
    finite-difference tangents (the first tangent is ``initial_velocity`` when given).
    Headings are the waypoints' own when given (N, 3), else the direction of travel.
    """
    wps = np.asarray(waypoints, dtype=np.float64)
    if wps.ndim != 2 or wps.shape[1] not in (2, 3) or len(wps) < 1:
        raise ValueError(f"waypoints must have shape (N, 2) or (N, 3), got {wps.shape}")
    n = len(wps)
    knots = np.arange(n + 1) * interval_s
    xy = np.vstack([np.zeros((1, 2)), wps[:, :2]])
    tangents = np.gradient(xy, knots, axis=0) if n >= 2 else np.repeat((xy[1:] - xy[:1]) / interval_s, 2, axis=0)
    if initial_velocity is not None:
        tangents[0] = np.asarray(initial_velocity, dtype=np.float64).reshape(-1)[:2]
    times = np.round(np.arange(0.0, knots[-1] + 1e-9, step_s), 9)
    pos, vel, acc = _hermite(xy, tangents, knots, times)
    speed = np.hypot(vel[:, 0], vel[:, 1])
    if wps.shape[1] == 3:
        head_knots = np.concatenate([[0.0], np.unwrap(wps[:, 2])])
        head_tangents = np.gradient(head_knots, knots)
        heading = _hermite(head_knots[:, None], head_tangents[:, None], knots, times)[0][:, 0]
    else:
        heading = np.arctan2(vel[:, 1], vel[:, 0])
        slow = speed < 0.1
        if slow.any():  # standing still: keep the last meaningful heading (0 at the start)
            last = 0.0
            for i in range(len(heading)):
                if slow[i]:
                    heading[i] = last
                else:
                    last = heading[i]
    cos, sin = np.cos(heading), np.sin(heading)
    acc_lon = acc[:, 0] * cos + acc[:, 1] * sin
    acc_lat = -acc[:, 0] * sin + acc[:, 1] * cos
    return EgoStates(times, np.column_stack([pos, heading]), vel, acc_lon, acc_lat)


@lru_cache(maxsize=64)
def _savgol_matrix(n: int, window: int, polyorder: int, deriv: int, delta: float) -> np.ndarray:
    """(n, n) matrix M with ``M @ y`` the Savitzky-Golay estimate of ``y``'s ``deriv``-th derivative."""
    half = (window - 1) // 2
    matrix = np.zeros((n, n))
    offsets = np.arange(window, dtype=np.float64)
    factorial = float(np.prod(np.arange(1, deriv + 1))) if deriv else 1.0
    for i in range(n):
        lo = min(max(i - half, 0), n - window)
        vander = np.vander((offsets + lo - i) * delta, polyorder + 1, increasing=True)  # (window, p+1)
        if deriv <= polyorder:
            matrix[i, lo : lo + window] = np.linalg.pinv(vander)[deriv] * factorial
    return matrix


def savgol(y: np.ndarray, window: int, polyorder: int, deriv: int = 0, delta: float = 1.0) -> np.ndarray:
    """Savitzky-Golay estimate of ``y`` (or its ``deriv``-th derivative) along the last axis.

    Same as ``scipy.signal.savgol_filter(..., mode="interp")``: a least-squares polynomial
    over a sliding window; the first and last half-windows use the edge window's fit.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[-1]
    window = min(window, n)
    if polyorder >= window:
        raise ValueError(f"savgol: polyorder {polyorder} must be below window {window}")
    return y @ _savgol_matrix(n, window, polyorder, deriv, float(delta)).T


def comfort_terms(states: EgoStates) -> dict[str, float]:
    """Largest magnitude of each NAVSIM comfort quantity over the plan, NAVSIM's estimators."""
    n = len(states.times_s)
    dt = float(np.mean(np.diff(states.times_s))) if n > 1 else STEP_S
    lon = savgol(states.acceleration_lon, n, 2)
    lat = savgol(states.acceleration_lat, n, 2)
    mag = np.hypot(states.acceleration_lon, states.acceleration_lat)
    jerk = savgol(savgol(mag, 8, 2), n, 2, deriv=1, delta=dt)
    lon_jerk = savgol(savgol(states.acceleration_lon, 8, 2), n, 2, deriv=1, delta=dt)
    heading = np.unwrap(states.poses[:, 2])
    yaw_rate = savgol(heading, 5, 2, deriv=1, delta=dt)
    yaw_accel = savgol(heading, 5, 3, deriv=2, delta=dt) if n >= 5 else np.zeros(n)
    return {
        "lon_acceleration_max": float(lon.max()),
        "lon_acceleration_min": float(lon.min()),
        "lat_acceleration_abs_max": float(np.abs(lat).max()),
        "jerk_abs_max": float(np.abs(jerk).max()),
        "lon_jerk_abs_max": float(np.abs(lon_jerk).max()),
        "yaw_rate_abs_max": float(np.abs(yaw_rate).max()),
        "yaw_acceleration_abs_max": float(np.abs(yaw_accel).max()),
    }


def comfort_violations(terms: dict[str, float]) -> list[str]:
    """Names of the NAVSIM comfort bounds that ``terms`` break (empty when comfortable)."""
    checks = {
        "lon_acceleration_max": terms["lon_acceleration_max"] >= MAX_LON_ACCEL,
        "lon_acceleration_min": terms["lon_acceleration_min"] <= MIN_LON_ACCEL,
        "lat_acceleration": terms["lat_acceleration_abs_max"] >= MAX_ABS_LAT_ACCEL,
        "jerk": terms["jerk_abs_max"] >= MAX_ABS_MAG_JERK,
        "lon_jerk": terms["lon_jerk_abs_max"] >= MAX_ABS_LON_JERK,
        "yaw_rate": terms["yaw_rate_abs_max"] >= MAX_ABS_YAW_RATE,
        "yaw_acceleration": terms["yaw_acceleration_abs_max"] >= MAX_ABS_YAW_ACCEL,
    }
    return [name for name, broken in checks.items() if broken]
