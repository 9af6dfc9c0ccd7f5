"""The ego's motion model in closed loop: a rear-axle kinematic bicycle driven by (speed, yaw-rate) commands.

The same model and defaults as ``sim_node`` (wheelbase 2.9 m, steering limit 0.6 rad,
3 m/s^2 up, 6 m/s^2 down), so an in-process route and one run over ROS move the ego
alike. The commanded yaw rate becomes a steering angle ``atan(L * yaw_rate / v)``,
clamped; the commanded speed is reached within the acceleration limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wamdiff2_ros.geometry import wrap_angle


@dataclass
class KinematicBicycle:
    """Rear-axle pose (x, y, yaw), speed ``v``; ``accel`` and ``yaw_rate`` of the last step."""

    x: float
    y: float
    yaw: float
    v: float
    wheelbase: float = 2.9
    max_steer: float = 0.6
    max_accel: float = 3.0
    max_decel: float = 6.0
    accel: float = 0.0
    yaw_rate: float = 0.0

    def step(self, v_cmd: float, yaw_rate_cmd: float, dt: float) -> None:
        """Advance ``dt`` seconds towards speed ``v_cmd`` (m/s) turning at ``yaw_rate_cmd`` (rad/s, left +)."""
        if not (math.isfinite(v_cmd) and math.isfinite(yaw_rate_cmd)):
            v_cmd, yaw_rate_cmd = 0.0, 0.0  # a broken command brakes
        dv = max(-self.max_decel * dt, min(self.max_accel * dt, v_cmd - self.v))
        self.accel = dv / dt if dt > 0 else 0.0
        v_mid = max(0.0, self.v + dv / 2)
        steer = math.atan(self.wheelbase * yaw_rate_cmd / v_mid) if v_mid > 0.1 else 0.0
        steer = max(-self.max_steer, min(self.max_steer, steer))
        self.yaw_rate = v_mid * math.tan(steer) / self.wheelbase
        heading = self.yaw + self.yaw_rate * dt / 2
        self.x += v_mid * math.cos(heading) * dt
        self.y += v_mid * math.sin(heading) * dt
        yaw = self.yaw + self.yaw_rate * dt
        self.yaw = float(wrap_angle(yaw, method="math"))
        self.v = max(0.0, self.v + dv)
