"""Waypoint following: pure pursuit for the curvature, PID for the speed (numpy only; follower node and closed loop).

Sign convention (REP 103): x forward, y left, yaw counter-clockwise. A target point
to the left (y > 0) gives a positive curvature, a positive yaw rate
(``geometry_msgs/Twist.angular.z``) and a positive Ackermann steering angle
(``ackermann_msgs/AckermannDrive.steering_angle``, left positive): the vehicle turns
left. The steering angle of a bicycle model with wheelbase L is
``atan(L * curvature)`` (:func:`steering_angle`). CARLA's own
``CarlaEgoVehicleControl.steer`` is the opposite: -1 is full left, so
:func:`pedal_command` negates it; throttle and brake come from the speed PID's
acceleration command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class FollowerLimits:
    max_speed: float = 15.0  # m/s
    max_accel: float = 3.0  # m/s^2
    max_decel: float = 6.0  # m/s^2 (positive number)
    max_yaw_rate: float = 1.0  # rad/s
    max_lateral_accel: float = 4.0  # m/s^2
    min_lookahead: float = 3.0  # m
    max_lookahead: float = 15.0  # m
    lookahead_time: float = 1.0  # s: lookahead = clamp(v * time)


@dataclass
class SpeedPid:
    kp: float = 1.0
    ki: float = 0.1
    kd: float = 0.0
    integral: float = 0.0
    previous_error: float | None = None
    integral_limit: float = 5.0

    def __call__(self, error: float, dt: float) -> float:
        self.integral = float(np.clip(self.integral + error * dt, -self.integral_limit, self.integral_limit))
        derivative = 0.0 if self.previous_error is None or dt <= 0 else (error - self.previous_error) / dt
        self.previous_error = error
        return self.kp * error + self.ki * self.integral + self.kd * derivative

    def reset(self) -> None:
        self.integral, self.previous_error = 0.0, None


def to_frame(points_xy: np.ndarray, pose: tuple[float, float, float]) -> np.ndarray:
    """Express world points in the frame of ``pose`` = (x, y, yaw)."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    d = np.asarray(points_xy, dtype=float) - np.array([x, y])
    return np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]], axis=1)


def from_frame(points_xy: np.ndarray, pose: tuple[float, float, float]) -> np.ndarray:
    """Express points given in the frame of ``pose`` in the world frame."""
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    p = np.asarray(points_xy, dtype=float)
    return np.stack([x + c * p[:, 0] - s * p[:, 1], y + s * p[:, 0] + c * p[:, 1]], axis=1)


def lookahead_point(path_xy: np.ndarray, distance: float) -> np.ndarray:
    """Point at arc length ``distance`` along the polyline starting at the origin (ego frame)."""
    pts = np.vstack([np.zeros((1, 2)), np.asarray(path_xy, dtype=float)])
    seg = np.diff(pts, axis=0)
    lengths = np.hypot(seg[:, 0], seg[:, 1])
    cumulative = np.concatenate([[0.0], np.cumsum(lengths)])
    if cumulative[-1] < 1e-6:
        return np.array([distance, 0.0])
    if distance >= cumulative[-1]:  # beyond the end: extend along the last segment
        direction = seg[-1] / max(lengths[-1], 1e-6)
        return pts[-1] + direction * (distance - cumulative[-1])
    i = int(np.searchsorted(cumulative, distance, side="right") - 1)
    frac = (distance - cumulative[i]) / max(lengths[i], 1e-9)
    return pts[i] + frac * seg[i]


def target_speed(path_xy: np.ndarray, times: np.ndarray, elapsed: float, preview: float = 0.5) -> float:
    """Speed the plan asks for ``elapsed + preview`` seconds after its stamp."""
    pts = np.vstack([np.zeros((1, 2)), np.asarray(path_xy, dtype=float)])
    t = np.concatenate([[0.0], np.asarray(times, dtype=float)])
    speeds = np.hypot(*np.diff(pts, axis=0).T) / np.maximum(np.diff(t), 1e-3)
    mids = 0.5 * (t[1:] + t[:-1])
    return float(np.interp(elapsed + preview, mids, speeds))


@dataclass
class PurePursuit:
    """Turns a plan (in the current ego frame) and the current speed into a Twist command."""

    limits: FollowerLimits = field(default_factory=FollowerLimits)
    pid: SpeedPid = field(default_factory=SpeedPid)

    def command(self, path_ego: np.ndarray, times: np.ndarray, elapsed: float, speed: float, dt: float) -> tuple[float, float, dict]:
        lim = self.limits
        lookahead = float(np.clip(abs(speed) * lim.lookahead_time, lim.min_lookahead, lim.max_lookahead))
        target = lookahead_point(path_ego, lookahead)
        distance_sq = float(target @ target)
        curvature = 0.0 if distance_sq < 1e-6 else 2.0 * float(target[1]) / distance_sq
        v_ref = float(np.clip(target_speed(path_ego, times, elapsed), 0.0, lim.max_speed))
        accel = float(np.clip(self.pid(v_ref - speed, dt), -lim.max_decel, lim.max_accel))
        v_cmd = float(np.clip(speed + accel * max(dt, 0.0), 0.0, lim.max_speed))
        yaw_rate = v_cmd * curvature
        yaw_limit = lim.max_yaw_rate
        if v_cmd > 0.1:
            yaw_limit = min(yaw_limit, lim.max_lateral_accel / v_cmd)
        yaw_rate = float(np.clip(yaw_rate, -yaw_limit, yaw_limit))
        return v_cmd, yaw_rate, {"lookahead": lookahead, "target": target.tolist(), "curvature": curvature, "v_ref": v_ref,
                                 "accel": accel}


def steering_angle(curvature: float, wheelbase: float, max_steering_angle: float = math.pi / 2) -> float:
    """Front-wheel angle (rad, left positive) of a kinematic bicycle driving ``curvature`` (1/m)."""
    if wheelbase <= 0 or max_steering_angle <= 0:
        raise ValueError(f"wheelbase ({wheelbase}) and max_steering_angle ({max_steering_angle}) must be > 0")
    if not math.isfinite(curvature):
        return 0.0
    return float(np.clip(math.atan(wheelbase * curvature), -max_steering_angle, max_steering_angle))


@dataclass(frozen=True)
class AckermannCommand:
    """What ``ackermann_msgs/AckermannDrive`` carries: target speed, steering angle, acceleration."""

    speed: float  # m/s, forward
    steering_angle: float  # rad, left positive
    acceleration: float  # m/s^2, magnitude the vehicle may use to reach ``speed`` (> 0)
    curvature: float  # 1/m, left positive (for logs and tests)


@dataclass(frozen=True)
class PedalCommand:
    """What ``carla_msgs/CarlaEgoVehicleControl`` carries: throttle, brake in [0, 1]; steer in [-1, 1], -1 left."""

    throttle: float
    brake: float
    steer: float


def ackermann_command(path_ego: np.ndarray, times: np.ndarray, elapsed: float, speed: float, controller: PurePursuit,
                      wheelbase: float, max_steering_angle: float, dt: float) -> AckermannCommand:
    """Pure pursuit + speed PID as an Ackermann drive command.

    The speed is the plan's target speed (``v_ref``, the receiver runs its own speed
    loop, as ``carla_ackermann_control`` does); the acceleration is the magnitude our
    PID asks for, at least 0.1 m/s^2 (0 would mean "as fast as possible").
    """
    lim = controller.limits
    _, _, info = controller.command(path_ego, times, elapsed, speed, dt)
    curvature = info["curvature"]
    v_ref = float(info["v_ref"])
    if v_ref > 0.1:  # the same lateral-acceleration limit as the yaw-rate output
        curvature = float(np.clip(curvature, -lim.max_lateral_accel / v_ref**2, lim.max_lateral_accel / v_ref**2))
    angle = steering_angle(curvature, wheelbase, max_steering_angle)
    return AckermannCommand(v_ref, angle, max(abs(float(info["accel"])), 0.1), curvature)


def pedal_command(accel: float, angle: float, limits: FollowerLimits, max_steering_angle: float) -> PedalCommand:
    """Acceleration command and steering angle -> CARLA throttle, brake and steer.

    Positive acceleration is throttle ``accel / max_accel``, negative is brake
    ``-accel / max_decel`` (never both); ``steer = -angle / max_steering_angle``
    (CARLA steers right for positive values).
    """
    if not (math.isfinite(accel) and math.isfinite(angle)):
        return PedalCommand(0.0, 1.0, 0.0)
    throttle = float(np.clip(accel / limits.max_accel, 0.0, 1.0)) if accel > 0 else 0.0
    brake = float(np.clip(-accel / limits.max_decel, 0.0, 1.0)) if accel < 0 else 0.0
    steer = float(np.clip(-angle / max_steering_angle, -1.0, 1.0))
    return PedalCommand(throttle, brake, steer)
