"""Knobs of the synthetic world: route length, ego speed, traffic density, time step, scenario start."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorldConfig"]


@dataclass
class WorldConfig:
    """Knobs of the synthetic world."""

    route_length: float = 600.0  # metres of route ahead of the ego start
    ego_speed: tuple[float, float] = (8.0, 13.0)  # desired speed range, m/s (drawn per world)
    vehicle_density: float = 1.0  # scales how many vehicles spawn
    pedestrian_density: float = 1.0
    intersection_prob: float = 0.45
    dt: float = 0.1  # simulation sub-step, s
    annotation_range: float = 60.0  # boxes within this distance go into ``anns``
    buildings: bool = True
    lateral_wander: float = 0.15  # amplitude of the ego's lateral wander, m
    ego_start_s: float | None = None  # route arc length of the ego's start (None: drawn in 15-25 m)
    ego_initial_speed: float | None = None  # m/s (None: drawn in 0.5-1.0 x the desired speed)
    ego_lane_traffic: bool = True  # spawn random vehicles ahead of / behind the ego in its lane
    respawn_interval_s: float = 0.5  # simulated seconds between traffic respawns (any step size)
    # the driving command's look-ahead (World.route_command): 0 = where the route is 20 m ahead (every split and
    # checkpoint before 2026-12-05); > 0 = the first turn of the route within the distance covered in this many
    # seconds at the ego's speed (+ 5 m, at least 20 m), so the command announces every turn the plan will make
    command_horizon_s: float = 0.0
    # signal lamps sit under visors: a camera sees a head's lit lamp only within this angle of the way the head faces.
    # 60 (every split and checkpoint before 2026-12-05) shows the lit lamp of a cross street's near head beside the
    # ego's own far one, in the other phase (red while the ego's is green); 35 hides it
    lamp_visor_deg: float = 60.0

