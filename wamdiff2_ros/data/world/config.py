"""Knobs of the synthetic world: route length, ego speed, traffic density, time step, scenario start."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["WorldConfig", "WORLD_RULES", "world_rules", "checked_world_rules"]


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


#: the WorldConfig fields a driving model learns from (what its inputs mean): a model must be run in a world with the
#: rules of its training data (``synth_config.json`` of a split, ``world_rules`` of a checkpoint's generation config)
WORLD_RULES: tuple[str, ...] = ("command_horizon_s", "lamp_visor_deg")
_LIMITS = {"command_horizon_s": (0.0, 60.0), "lamp_visor_deg": (1.0, 90.0)}


def checked_world_rules(rules: dict[str, Any] | None, where: str = "world rules") -> dict[str, float]:
    """Every world rule, each from ``rules`` where given (else WorldConfig's default), checked; unknown keys fail."""
    rules = dict(rules or {})
    unknown = sorted(set(rules) - set(WORLD_RULES))
    if unknown:
        raise ValueError(f"{where}: unknown world rule(s) {unknown}; expected some of {list(WORLD_RULES)}")
    defaults = {f.name: f.default for f in fields(WorldConfig) if f.name in WORLD_RULES}
    out = {}
    for key in WORLD_RULES:
        value = rules.get(key, defaults[key])
        low, high = _LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low <= value <= high:
            raise ValueError(f"{where}: {key} = {value!r} is not a number in [{low:g}, {high:g}]")
        out[key] = float(value)
    return out


def world_rules(config: WorldConfig) -> dict[str, float]:
    """The world rules of ``config``."""
    return checked_world_rules({key: getattr(config, key) for key in WORLD_RULES})

