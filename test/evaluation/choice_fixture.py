"""Planning records and closed-loop route results for the shipping-rule tests (student_choice, camera_choice,
world_choice)."""

from __future__ import annotations


def records(l2s: list[float | None]) -> list[dict]:
    """Planning records: None = a plan that did not parse; sample i's ground truth is one waypoint (i, 0)."""
    return [{"id": f"s{i}", "task": "planning", "parsed": l2 is not None, "l2_h_pred": [l2 or 0.0] * 4,
             "gt": [[float(i), 0.0]]} for i, l2 in enumerate(l2s)]


def routes(policy: str, scores: list[float], collisions: int = 0) -> list[dict]:
    """One result per route; the first route has ``collisions`` at-fault collisions."""
    return [{"route": f"r{i:02d}", "policy": policy, "driving_score": s, "collisions_at_fault": collisions if i == 0 else 0}
            for i, s in enumerate(scores)]
