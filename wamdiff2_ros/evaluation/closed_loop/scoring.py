"""Driving score: route completion x the product of infraction penalties (CARLA leaderboard coefficients).

``driving_score = completion_on_road x prod(PENALTIES[k] ** count[k])``; completion on road
is the route completion minus the share of the route driven off the drivable area
(CARLA's off-road rule). Coefficients are the CARLA leaderboard's for the infractions
this world has; stop signs, scenario timeouts and minimum speed have no counterpart
here (a timed-out, blocked or deviated route just keeps the completion it reached).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

PENALTIES: dict[str, float] = {
    "collision_pedestrian": 0.50,
    "collision_vehicle": 0.60,
    "collision_static": 0.65,
    "red_light": 0.70,
}


def infraction_penalty(counts: Mapping[str, int]) -> float:
    """Product of ``PENALTIES[k] ** counts[k]``; unknown keys are refused."""
    unknown = sorted(set(counts) - set(PENALTIES))
    if unknown:
        raise ValueError(f"unknown infraction kinds {unknown}; expected some of {sorted(PENALTIES)}")
    penalty = 1.0
    for kind, n in counts.items():
        if n < 0:
            raise ValueError(f"infraction count {kind}={n} must be >= 0")
        penalty *= PENALTIES[kind] ** n
    return penalty


def driving_score(completion: float, counts: Mapping[str, int]) -> tuple[float, float]:
    """(driving score, infraction penalty) for a completion in [0, 1] and infraction counts."""
    if not (math.isfinite(completion) and 0.0 <= completion <= 1.0):
        raise ValueError(f"completion must be in [0, 1], got {completion}")
    penalty = infraction_penalty(counts)
    return completion * penalty, penalty
