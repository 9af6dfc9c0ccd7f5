"""NAVSIM's PDM score terms for one plan: NC, DAC, DDC, TTC, comfort, ego progress, and the PDMS.

Follows NAVSIM v1's ``PDMScorer`` (thresholds, 0.1 s grid over 4 s, the at-fault
collision rules, TTC's 0/0.3/0.6/0.9 s forward projections, the weighting
``PDMS = NC x DAC x (5 EP + 5 TTC + 2 C) / 12``), with these honest differences:

* the plan is resampled, not tracked by an LQR controller (see ``kinematics``);
* ego progress (EP) is measured along the *logged human trajectory* and normalised by
  the larger of the plan's and the human's progress (NAVSIM uses the route centreline
  and PDM-Closed's best proposal);
* without a map, DAC and DDC are not computed and lateral collisions cannot be judged
  at fault (NAVSIM needs lane membership); the aggregate is then named
  ``pdms_without_map_terms`` = NC x (5 EP + 5 TTC + 2 C) / 12, never ``pdms``;
* with a map (any :class:`~wamdiff2_ros.evaluation.scene.DrivingMap`), "oncoming
  traffic" means driving against the lane heading (no route lanes), and "multiple
  lanes" is not detected, only "off the drivable area".

DDC is reported but, as in NAVSIM v1 (weight 0), does not enter the PDMS.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.geometry import boxes_corners, relative_bearing, to_frame
from wamdiff2_ros.evaluation.kinematics import STEP_S, EgoStates, comfort_terms, comfort_violations, resample_plan
from wamdiff2_ros.evaluation.scene import AGENT_TYPES, STOPPED_SPEED_THRESHOLD, SceneGroundTruth, call_map
from wamdiff2_ros.geometry import PACIFICA, VehicleParameters, convex_overlap, ego_centers, ego_corners, wrap_angle

PROGRESS_WEIGHT = 5.0
TTC_WEIGHT = 5.0
COMFORT_WEIGHT = 2.0
DRIVING_DIRECTION_HORIZON_S = 1.0
DRIVING_DIRECTION_COMPLIANCE_THRESHOLD = 2.0  # m
DRIVING_DIRECTION_VIOLATION_THRESHOLD = 6.0  # m
TTC_STOPPED_SPEED_THRESHOLD = 5e-3  # m/s
PROGRESS_DISTANCE_THRESHOLD = 5.0  # m
TTC_FUTURE_STEPS = (0, 3, 6, 9)  # x 0.1 s
AHEAD_TOLERANCE = np.deg2rad(30.0)  # nuPlan is_agent_ahead
BEHIND_TOLERANCE = np.deg2rad(150.0)  # nuPlan is_agent_behind


def _map_areas(states: EgoStates, scene: SceneGroundTruth, vehicle: VehicleParameters) -> dict[str, np.ndarray]:
    """Per step: off the drivable area (any corner), and against the lane direction (centre)."""
    corners = ego_corners(states.poses, vehicle)  # (T, 4, 2)
    centres = ego_centers(states.poses, vehicle)
    heading = states.poses[:, 2].copy()
    if scene.ego_pose_global is not None:
        corners = to_frame(corners, scene.ego_pose_global)
        centres = to_frame(centres, scene.ego_pose_global)
        heading = heading + scene.ego_pose_global[2]
    drivable = call_map(scene.map.is_drivable, corners[..., 0], corners[..., 1], bool)
    lane_heading = call_map(scene.map.lane_heading, centres[:, 0], centres[:, 1], np.float64)
    against = np.isfinite(lane_heading) & (np.abs(wrap_angle(np.nan_to_num(lane_heading) - heading, method="modulo")) > np.pi / 2)
    return {"non_drivable": ~drivable.all(axis=1), "oncoming": against}


def _progress_along(path: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """Arc-length progress from ``start`` to ``end`` projected onto polyline ``path`` (M, 2)."""
    seg_a, seg_b = path[:-1], path[1:]
    seg = seg_b - seg_a
    seg_len = np.hypot(seg[:, 0], seg[:, 1])
    cum = np.concatenate([[0.0], np.cumsum(seg_len)])

    def project(point: np.ndarray) -> float:
        safe = np.maximum(seg_len**2, 1e-12)
        u = np.clip(((point - seg_a) * seg).sum(1) / safe, 0.0, 1.0)
        closest = seg_a + u[:, None] * seg
        i = int(np.argmin(np.hypot(*(closest - point).T)))
        return float(cum[i] + u[i] * seg_len[i])

    return project(end) - project(start)


def _reference_path(human: np.ndarray, vehicle: VehicleParameters, extension_m: float = 100.0) -> np.ndarray:
    """Centre path of the human trajectory from now, extended straight past its end (a stand-in centreline)."""
    poses = np.vstack([np.zeros((1, 3)), human])
    centres = ego_centers(poses, vehicle)
    direction = np.array([np.cos(poses[-1, 2]), np.sin(poses[-1, 2])])
    return np.vstack([centres, centres[-1] + extension_m * direction])


def pdm_terms(
    prediction: np.ndarray,
    scene: SceneGroundTruth,
    *,
    vehicle: VehicleParameters = PACIFICA,
    use_initial_velocity: bool = True,
) -> dict[str, Any]:
    """All PDM terms of one plan (N, 2|3) against ``scene``; keys described in the module docstring."""
    init_vel = scene.ego_velocity if use_initial_velocity and np.any(scene.ego_velocity) else None
    states = resample_plan(prediction, interval_s=scene.interval_s, initial_velocity=init_vel)
    n = len(states.times_s)
    has_map = scene.map is not None
    areas = _map_areas(states, scene, vehicle) if has_map else None
    off_road = areas["non_drivable"] if areas is not None else np.zeros(n, bool)
    speed = states.speed

    # --- no at-fault collisions (NC) and time to collision (TTC)
    agents = scene.agents
    nc, ttc = 1.0, 1.0
    collision_time = ttc_time = float("inf")
    if agents.num_agents:
        ego_poly = ego_corners(states.poses, vehicle)  # (T, 4, 2)
        max_step = n - 1 + max(TTC_FUTURE_STEPS)
        boxes, valid, velocities = agents.at_times(np.arange(max_step + 1) * STEP_S)
        polys = boxes_corners(boxes)  # (T', A, 4, 2)
        track_speed = np.hypot(velocities[..., 0], velocities[..., 1])
        collided: set[int] = set()
        overlaps = convex_overlap(ego_poly[:, None], polys[:n]) & valid[:n]  # (T, A)
        for k in np.flatnonzero(overlaps.any(axis=1)):
            for a in np.flatnonzero(overlaps[k]):
                if a in collided:
                    continue
                centre = boxes[k, a, :2]
                if speed[k] <= STOPPED_SPEED_THRESHOLD:
                    at_fault = False  # stopped ego
                elif track_speed[k, a] <= STOPPED_SPEED_THRESHOLD:
                    at_fault = True  # stopped track
                elif abs(relative_bearing(states.poses[k], centre)) > BEHIND_TOLERANCE:
                    at_fault = False  # rear collision
                elif convex_overlap(ego_poly[k][[0, 3]], polys[k, a]):
                    at_fault = True  # front bumper
                else:
                    at_fault = bool(off_road[k])  # lateral: at fault only when off the road
                if at_fault:
                    score = 0.0 if agents.names[a] in AGENT_TYPES else 0.5
                    nc = min(nc, score)
                    collision_time = min(collision_time, k * STEP_S)
                else:
                    collided.add(a)
        # TTC: ego box projected forward at constant speed along its heading
        ttc_collided: set[int] = set()
        direction = np.column_stack([np.cos(states.poses[:, 2]), np.sin(states.poses[:, 2])])
        steps = np.array(TTC_FUTURE_STEPS)
        shift = (direction * speed[:, None])[:, None, :] * (steps * STEP_S)[None, :, None]  # (T, S, 2)
        moved = ego_poly[:, None] + shift[:, :, None, :]  # (T, S, 4, 2)
        later = np.arange(n)[:, None] + steps[None, :]  # (T, S)
        ttc_hits = convex_overlap(moved[:, :, None], polys[later]) & valid[later]  # (T, S, A)
        ttc_hits[speed < TTC_STOPPED_SPEED_THRESHOLD] = False
        for k in np.flatnonzero(ttc_hits.any(axis=(1, 2))):
            for si in range(len(steps)):
                j = k + int(steps[si])
                for a in np.flatnonzero(ttc_hits[k, si]):
                    if a in ttc_collided:
                        continue
                    bearing = abs(relative_bearing(states.poses[k], boxes[j, a, :2]))
                    if bearing < AHEAD_TOLERANCE or (off_road[k] and bearing <= BEHIND_TOLERANCE):
                        ttc = 0.0
                        ttc_time = min(ttc_time, k * STEP_S)
                    else:
                        ttc_collided.add(a)

    # --- comfort
    terms = comfort_terms(states)
    violations = comfort_violations(terms)
    comfort = 0.0 if violations else 1.0

    # --- drivable area and driving direction
    dac = ddc = None
    if areas is not None:
        dac = 0.0 if off_road.any() else 1.0
        centres = ego_centers(states.poses, vehicle)
        step_progress = np.concatenate([[0.0], np.hypot(*np.diff(centres, axis=0).T)])
        step_progress[~areas["oncoming"]] = 0.0
        horizon = int(round(DRIVING_DIRECTION_HORIZON_S / STEP_S))
        windows = [step_progress[max(0, k - horizon) : k + 1].sum() for k in range(n)]
        worst = max(windows) if windows else 0.0
        if worst < DRIVING_DIRECTION_COMPLIANCE_THRESHOLD:
            ddc = 1.0
        elif worst < DRIVING_DIRECTION_VIOLATION_THRESHOLD:
            ddc = 0.5
        else:
            ddc = 0.0

    # --- ego progress against the logged human trajectory
    path = _reference_path(scene.trajectory, vehicle)
    centres = ego_centers(states.poses, vehicle)
    plan_progress = max(_progress_along(path, centres[0], centres[-1]), 0.0)
    human_progress = max(_progress_along(path, path[0], path[len(scene.trajectory)]), 0.0)
    multiplier = nc * (dac if dac is not None else 1.0)
    raw = plan_progress * multiplier
    best = max(raw, human_progress)
    if best > PROGRESS_DISTANCE_THRESHOLD:
        ep = raw / best
    else:
        ep = 1.0 if multiplier > 0 else 0.0

    weighted = (PROGRESS_WEIGHT * ep + TTC_WEIGHT * ttc + COMFORT_WEIGHT * comfort) / (
        PROGRESS_WEIGHT + TTC_WEIGHT + COMFORT_WEIGHT
    )
    out: dict[str, Any] = {
        "nc": nc,
        "ttc": ttc,
        "comfort": comfort,
        "ep": float(ep),
        "progress_m": float(plan_progress),
        "human_progress_m": float(human_progress),
        "pdms_without_map_terms": float(nc * weighted),
        "comfort_violations": violations,
        "comfort_terms": terms,
        "time_to_at_fault_collision_s": collision_time,
        "time_to_ttc_infraction_s": ttc_time,
    }
    if dac is not None:
        out["dac"] = dac
        out["ddc"] = ddc
        out["pdms"] = float(nc * dac * weighted)
    return out
