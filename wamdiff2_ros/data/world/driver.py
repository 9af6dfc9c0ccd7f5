"""Driver model of the synthetic world's vehicles and autopilot ego: how each picks its next acceleration.

Car following is the Intelligent Driver Model (:func:`idm`) towards the nearest obstacle:
the road user in the mover's corridor ahead (:func:`corridor_gaps`), a stop line it must
wait at (red, yellow it can still stop for, or a full exit lane: :func:`stop_line_gap`),
or the edge of an intersection it must yield at (:func:`yield_gap`). The desired speed
is capped for curves ahead (:func:`curve_speed_limit`); a scripted hard stop overrides
the result (:func:`scripted_brake`). A mover is the ego or a vehicle;
lists of movers put the ego first (index 0).
"""

from __future__ import annotations

import math

import numpy as np

from wamdiff2_ros.data.world.agents import Ego, Vehicle
from wamdiff2_ros.data.world.lanes import DENSE_STEP, LanePath
from wamdiff2_ros.data.world.map import STOP_LINE_SETBACK, RoadMap

__all__ = [
    "IntersectionTraffic",
    "idm",
    "curve_speed_limit",
    "occupancy",
    "stop_line_gap",
    "approaches",
    "yield_gap",
    "corridor_gaps",
    "scripted_brake",
]

_CORRIDOR_HALF_WIDTH = 1.9
_LOOKAHEAD = 55  # dense samples (m) checked for obstacles ahead of the front bumper
_SPEED_LOOKAHEAD = 60  # m checked for curves ahead
_COMFORT_DECEL = 1.5

#: Traffic at intersections (see :func:`approaches`).
IntersectionTraffic = tuple[dict[tuple[int, int], list[tuple[str, float, float]]], dict[int, list[int]]]


def idm(v: float, v0: float, gap: float, dv: float, s0: float = 2.5, headway: float = 1.4,
        a_max: float = 1.6, b: float = 2.2) -> float:
    """Intelligent Driver Model acceleration; ``gap`` = inf for free road, ``dv`` = v - v_leader."""
    free = 1.0 - (v / max(v0, 0.1)) ** 4
    if not math.isfinite(gap):
        return a_max * free
    s_star = s0 + max(0.0, v * headway + v * dv / (2.0 * math.sqrt(a_max * b)))
    return a_max * (free - (s_star / max(gap, 0.1)) ** 2)


def curve_speed_limit(path: LanePath, s: float, desired: float) -> float:
    """Desired speed capped so that curves ahead can be taken at <= 2.2 m/s^2 lateral acceleration."""
    i0 = int(s / DENSE_STEP)
    v_sq = path.v_curve_sq[i0 : i0 + _SPEED_LOOKAHEAD]
    if not len(v_sq):
        return desired
    ahead = np.arange(len(v_sq)) * DENSE_STEP + (i0 * DENSE_STEP - s)
    return float(min(desired, np.sqrt(np.min(v_sq + 2.0 * _COMFORT_DECEL * np.maximum(ahead, 0.0)))))


def occupancy(road_map: RoadMap, movers: list[Ego | Vehicle]) -> dict[int, tuple[float, float]]:
    """Per lane: (rear of the last vehicle measured from the lane start, its speed).

    A vehicle on a connector occupies the start of the lane the connector leads to.
    """
    out: dict[int, tuple[float, float]] = {}
    for mover in movers:
        rear = mover.rear_offset
        lane_id, s_in = mover.path.lane_at(mover.s)
        lane = road_map.lanes[lane_id]
        if lane.kind == "connector":
            lane_id, s_in, rear = lane.successors[0], 0.0, 0.0
        value = (s_in - rear, mover.speed)
        if lane_id not in out or value[0] < out[lane_id][0]:
            out[lane_id] = value
    return out


def stop_line_gap(road_map: RoadMap, time_s: float, path: LanePath, s: float, front_offset: float, speed: float,
                  length: float, lane_occupancy: dict[int, tuple[float, float]], ego_path: LanePath) -> float:
    """Distance from the front bumper to the first stop line ahead where the vehicle must wait (inf if none).

    It waits for red (and yellow when it can still stop comfortably) and, on green, when the lane
    behind the intersection has no room for it (don't block the box). On the ego's route
    (``path is ego_path``) the end of the route counts as a stop line.
    """
    best = math.inf
    for (s_stop, inter, arm), exit_lane in zip(path.stops, path.stop_exits, strict=True):
        dist = s_stop - s - front_offset
        if dist < -0.5 or dist > 80.0:
            continue
        state = road_map.intersections[inter].signal_state(arm % 2, time_s)
        must_stop = state == "red"
        if state == "yellow":
            # go only if the stop line is reached while still yellow, or stopping is impossible
            remaining = road_map.intersections[inter].yellow_remaining(arm % 2, time_s)
            must_stop = dist > speed * remaining and dist > speed * speed / (2 * 6.0)
        if not must_stop and dist < 25.0 and exit_lane in lane_occupancy:
            room, other_speed = lane_occupancy[exit_lane]
            must_stop = room < length + 3.0 and other_speed < 3.0
        if must_stop:
            best = max(dist, 0.05)
            break
    if path is ego_path:
        best = min(best, max(path.length - s - front_offset, 0.05))
    return best


def approaches(movers: list[Ego | Vehicle]) -> IntersectionTraffic:
    """Traffic at intersections.

    Returns (approaching, occupied): vehicles within 60 m of their next connector by (intersection,
    approach arm) as (turn, metres from front bumper to the connector, speed), negative while on it;
    and the connectors with a vehicle on them (``id(mover)`` is not needed: a list of connector ids
    per occupying vehicle, keyed by the vehicle's index, 0 = ego).
    """
    approaching: dict[tuple[int, int], list[tuple[str, float, float]]] = {}
    occupied: dict[int, list[int]] = {}
    for index, mover in enumerate(movers):
        front_s = mover.s + mover.front_offset
        rear_s = mover.s - mover.rear_offset
        for s_in, s_out, inter, arm, turn, lane_id in mover.path.turns:
            if rear_s > s_out:
                continue  # has left this connector
            if front_s > s_in:
                occupied.setdefault(index, []).append(lane_id)
            if s_in - front_s < 60.0:
                approaching.setdefault((inter, arm), []).append((turn, s_in - front_s, mover.speed))
            break
    return approaching, occupied


def yield_gap(index: int, mover: Ego | Vehicle, front: float, traffic: IntersectionTraffic,
              conflicts: dict[int, set[int]]) -> float:
    """Right of way at intersections: wait before entering while a conflicting connector is occupied,
    and turn left only through a gap in the opposing traffic (permissive left)."""
    approaching, occupied = traffic
    front_s = mover.s + front
    for s_in, s_out, inter, arm, turn, lane_id in mover.path.turns:
        if front_s > s_in + 0.5:
            if front_s < s_out:
                return math.inf  # committed inside the intersection
            continue
        if s_in - front_s > 40.0:
            return math.inf
        wait_at = s_in - front_s - 0.3  # the intersection's edge
        s_stop = s_in - STOP_LINE_SETBACK
        if front_s < s_stop - 0.3:
            wait_at = s_stop - front_s  # the stop line
        lane_conflicts = conflicts.get(lane_id, set())
        for other, lanes in occupied.items():
            if other != index and any(c in lane_conflicts for c in lanes):
                return max(wait_at, 0.05)
        if turn == "left":
            for other_turn, other_dist, other_speed in approaching.get((inter, (arm + 2) % 4), []):
                if other_turn == "left":
                    continue
                if other_dist < 0.0 or other_dist / max(other_speed, 0.5) < 4.5:
                    # pull up to the intersection and wait there (leaves on yellow when the stream stops)
                    return max(s_in - front_s - 0.3, 0.05)
        return math.inf
    return math.inf


def corridor_gaps(movers: list[tuple[int, Ego | Vehicle]], xy: np.ndarray, half: np.ndarray,
                  agent_speed: np.ndarray, heading: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gap to the nearest road user in each mover's corridor ahead, and its speed along the mover's path.

    ``movers`` are (index into the agent arrays, mover). A road user is in the corridor when it is
    within 1.9 m of the mover's path in the next 55 m. When two movers on crossing paths see each
    other, the one farther from the conflict yields.
    """
    m = len(movers)
    samples = np.zeros((m, _LOOKAHEAD, 3))
    valid = np.zeros((m, _LOOKAHEAD), dtype=bool)
    start_dist = np.zeros(m)
    for k, (_index, mover) in enumerate(movers):
        path = mover.path
        i0 = int(math.ceil((mover.s + mover.front_offset) / DENSE_STEP))
        rows = path.dense[i0 : i0 + _LOOKAHEAD]
        samples[k, : len(rows)] = rows
        valid[k, : len(rows)] = True
        start_dist[k] = i0 * DENSE_STEP - mover.s
    d2 = ((samples[:, :, None, :2] - xy[None, None]) ** 2).sum(-1)  # (m, L, N)
    hit = (d2 < _CORRIDOR_HALF_WIDTH**2) & valid[:, :, None]
    index = np.array([i for i, _ in movers])
    hit[np.arange(m), :, index] = False
    any_hit = hit.any(axis=1)  # (m, N)
    first = hit.argmax(axis=1)  # (m, N)
    dist = np.where(any_hit, start_dist[:, None] + first * DENSE_STEP, np.inf)  # reference -> conflict
    # crossing conflicts seen from both sides: the mover farther from the conflict keeps the obstacle
    n = len(xy)
    full = np.full((n, n), np.inf)
    full[index] = dist
    mutual = np.isfinite(full) & np.isfinite(full.T)
    crossing = np.abs(np.angle(np.exp(1j * (heading[:, None] - heading[None, :])))) > math.radians(35)
    order_key = full + 1e-6 * np.arange(n)[:, None]
    yields_to_me = mutual & crossing & (order_key < order_key.T)  # I am closer: ignore the other
    dist = np.where(yields_to_me[index], np.inf, dist)
    fronts = np.array([mv.front_offset for _, mv in movers])
    gap = dist - fronts[:, None] - half[None, :]
    best = np.argmin(gap, axis=1)
    rows = np.arange(m)
    best_gap = gap[rows, best]
    path_heading = samples[rows, first[rows, best], 2]
    along = agent_speed[best] * np.cos(heading[best] - path_heading)
    gaps = np.where(np.isfinite(best_gap), np.maximum(best_gap, 0.05), np.inf)
    return gaps, np.where(np.isfinite(best_gap), np.maximum(along, 0.0), 0.0)


def scripted_brake(vehicle: Vehicle, a: float, dt: float, time_s: float, ego_x: float, ego_y: float) -> float:
    """Acceleration of a vehicle with a scripted hard stop (:class:`~wamdiff2_ros.data.world.agents.BrakeEvent`),
    given its driver model's ``a``; advances the event's state."""
    event = vehicle.brake
    assert event is not None
    if event.state == "pending" and time_s >= event.after_s:
        x, y, _ = vehicle.path.poly.pose_at(vehicle.s)
        if math.hypot(x - ego_x, y - ego_y) <= event.trigger_gap:
            event.state, event.started_at = "braking", time_s
    if event.state == "braking":
        a = min(a, -event.decel)
        if vehicle.speed + a * dt <= 0.0:
            event.state, event.hold_until = "holding", time_s + event.hold_s
    elif event.state == "holding":
        if time_s >= event.hold_until:
            event.state = "done"
        else:
            a = min(a, 0.0)
    return a
