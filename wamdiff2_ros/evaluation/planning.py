"""Open-loop planning metrics: waypoint L2 in both conventions and ego-box collisions with agents.

Two L2 conventions are in use and are easy to confuse, so both are reported with
explicit names:

* ``l2_at_{t}s`` (UniAD / VAD style): the error of the waypoint *at* time t.
* ``l2_upto_{t}s`` (ST-P3 style): the mean error over all waypoints *up to* t.

``l2_{t}s`` and ``l2_avg`` are short aliases of the UniAD-style ``l2_at_*`` values;
``l2_mean_all_waypoints`` (= ``l2_upto_4s``) is the plain mean over the 8 waypoints.
Collision uses the same ego box as NAVSIM (rear-axle poses, Pacifica footprint) against
the ground-truth boxes at each waypoint time.
"""

from __future__ import annotations

import numpy as np

from wamdiff2_ros.evaluation.geometry import boxes_corners
from wamdiff2_ros.evaluation.scene import AgentBoxes
from wamdiff2_ros.geometry import PACIFICA, VehicleParameters, convex_overlap, ego_corners

HORIZONS_S = (1, 2, 3, 4)


def _xy(trajectory: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(trajectory, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] not in (2, 3):
        raise ValueError(f"{name} must have shape (N, 2) or (N, 3), got {array.shape}")
    return array[:, :2]


def l2_errors(prediction: np.ndarray, ground_truth: np.ndarray) -> np.ndarray:
    """Euclidean error (N,) of each predicted waypoint against the ground truth."""
    pred, gt = _xy(prediction, "prediction"), _xy(ground_truth, "ground truth")
    if pred.shape != gt.shape:
        raise ValueError(f"prediction has {len(pred)} waypoints, ground truth {len(gt)}")
    return np.hypot(*(pred - gt).T)


def l2_metrics(prediction: np.ndarray, ground_truth: np.ndarray, interval_s: float = 0.5) -> dict[str, float]:
    """L2 at 1-4 s in both conventions, their averages and the mean over all waypoints."""
    errors = l2_errors(prediction, ground_truth)
    out: dict[str, float] = {}
    at, upto = [], []
    for t in HORIZONS_S:
        k = int(round(t / interval_s))
        if k > len(errors):
            continue
        at.append(float(errors[k - 1]))
        upto.append(float(errors[:k].mean()))
        out[f"l2_at_{t}s"] = at[-1]
        out[f"l2_upto_{t}s"] = upto[-1]
        out[f"l2_{t}s"] = at[-1]
    if at:
        out["l2_at_avg"] = float(np.mean(at))
        out["l2_upto_avg"] = float(np.mean(upto))
        out["l2_avg"] = out["l2_at_avg"]
    out["l2_mean_all_waypoints"] = float(errors.mean())
    return out


def collisions_per_step(
    poses: np.ndarray, agents: AgentBoxes, vehicle: VehicleParameters = PACIFICA, interval_s: float = 0.5
) -> np.ndarray:
    """Whether the ego box at each waypoint (N,) overlaps any valid ground-truth box at that time."""
    poses = np.asarray(poses, dtype=np.float64)
    if poses.shape[1] == 2:
        from wamdiff2_ros.model.codecs import waypoint_headings

        poses = np.column_stack([poses, waypoint_headings(poses)])
    if agents.num_agents == 0:
        return np.zeros(len(poses), bool)
    times = (np.arange(len(poses)) + 1) * interval_s
    boxes, valid, _ = agents.at_times(times)
    ego = ego_corners(poses, vehicle)[:, None]  # (N, 1, 4, 2)
    hit = convex_overlap(ego, boxes_corners(boxes)) & valid  # (N, A)
    return hit.any(axis=1)


def collision_metrics(
    prediction: np.ndarray, agents: AgentBoxes, interval_s: float = 0.5, vehicle: VehicleParameters = PACIFICA
) -> dict[str, float]:
    """``collision`` (any step) and ``collision_{t}s`` (any step up to t), each 0 or 1."""
    hits = collisions_per_step(prediction, agents, vehicle, interval_s)
    out = {"collision": float(hits.any())}
    for t in HORIZONS_S:
        k = int(round(t / interval_s))
        if k <= len(hits):
            out[f"collision_{t}s"] = float(hits[:k].any())
    return out
