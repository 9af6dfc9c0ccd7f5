"""Score plans against scenes (in parallel processes, with a progress bar) and aggregate the results."""

from __future__ import annotations

import math
import multiprocessing as mp
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.pdm import pdm_terms
from wamdiff2_ros.evaluation.planning import collision_metrics, l2_metrics
from wamdiff2_ros.evaluation.scene import SceneGroundTruth

# Keys averaged over scenes; PDM keys present only where they were computed.
MEAN_KEYS = (
    "l2_1s", "l2_2s", "l2_3s", "l2_4s", "l2_avg",
    "l2_at_1s", "l2_at_2s", "l2_at_3s", "l2_at_4s", "l2_at_avg",
    "l2_upto_1s", "l2_upto_2s", "l2_upto_3s", "l2_upto_4s", "l2_upto_avg",
    "l2_mean_all_waypoints",
    "collision", "collision_1s", "collision_2s", "collision_3s", "collision_4s",
    "nc", "ttc", "comfort", "ep", "dac", "ddc", "pdms", "pdms_without_map_terms",
)  # fmt: skip

CONVENTIONS = {
    "l2_at_{t}s": "UniAD-style: error of the waypoint at t",
    "l2_upto_{t}s": "ST-P3-style: mean error of the waypoints up to t",
    "l2_{t}s / l2_avg": "aliases of l2_at_{t}s / l2_at_avg",
    "collision_rate": "fraction of scenes where the ego box overlaps a ground-truth box at any waypoint",
    "pdms": "NAVSIM v1 weighting NC*DAC*(5EP+5TTC+2C)/12, only for scenes with a map",
    "pdms_without_map_terms": "NC*(5EP+5TTC+2C)/12: no DAC, lateral collisions not judged at fault",
    "ep": "ego progress along the logged human trajectory, not NAVSIM's PDM-Closed reference",
}


def score_scene(prediction: np.ndarray, scene: SceneGroundTruth, *, with_pdm: bool = True) -> dict[str, Any]:
    """All planning metrics of one plan (N, 2|3) against ``scene``."""
    prediction = np.asarray(prediction, dtype=np.float64)
    n = len(scene.trajectory)
    if prediction.ndim != 2 or prediction.shape[1] not in (2, 3) or len(prediction) < n:
        raise ValueError(
            f"scene {scene.token}: plan must have at least {n} waypoints of (x, y[, heading]), got {prediction.shape}"
        )
    if not np.all(np.isfinite(prediction)):
        raise ValueError(f"scene {scene.token}: plan has non-finite values")
    prediction = prediction[:n]
    out: dict[str, Any] = {"token": scene.token}
    out.update(l2_metrics(prediction, scene.trajectory, scene.interval_s))
    out.update(collision_metrics(prediction, scene.agents, scene.interval_s))
    if with_pdm:
        out.update(pdm_terms(prediction, scene))
    return out


def _score_job(job: tuple[np.ndarray, SceneGroundTruth, bool]) -> dict[str, Any]:
    prediction, scene, with_pdm = job
    try:
        return score_scene(prediction, scene, with_pdm=with_pdm)
    except ValueError as exc:
        return {"token": scene.token, "error": str(exc)}


def score_scenes(
    pairs: Sequence[tuple[np.ndarray, SceneGroundTruth]],
    *,
    processes: int | None = None,
    with_pdm: bool = True,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Score many (plan, scene) pairs; ``processes`` > 1 uses a process pool (default: CPUs, at most 8).

    A pair that cannot be scored gives ``{"token", "error"}`` instead of raising.
    """
    from tqdm import tqdm

    jobs = [(np.asarray(p, dtype=np.float64), s, with_pdm) for p, s in pairs]
    if processes is None:
        processes = min(8, mp.cpu_count() or 1)
    processes = max(1, min(processes, len(jobs)))
    bar = tqdm(total=len(jobs), desc="scoring scenes", unit="scene", disable=not progress)
    results: list[dict[str, Any]] = []
    if processes == 1 or len(jobs) < 16:
        for job in jobs:
            results.append(_score_job(job))
            bar.update()
    else:
        with mp.get_context("spawn").Pool(processes) as pool:
            for result in pool.imap(_score_job, jobs, chunksize=max(1, len(jobs) // (processes * 8))):
                results.append(result)
                bar.update()
    bar.close()
    return results


def aggregate(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Means of the per-scene metrics; ``collision_rate`` is the mean of ``collision``."""
    results = [r for r in results if "error" not in r]
    out: dict[str, Any] = {"scenes_scored": len(results)}
    for key in MEAN_KEYS:
        values = [float(r[key]) for r in results if key in r and r[key] is not None]
        if values:
            out[key] = float(np.mean(values))
            if key == "pdms":
                out["scenes_with_map"] = len(values)
    if "collision" in out:
        out["collision_rate"] = out["collision"]
    for key in ("l2_avg", "l2_1s", "l2_2s", "l2_3s", "l2_4s", "collision_rate"):
        out.setdefault(key, math.nan)
    comfort_counts: dict[str, int] = {}
    for r in results:
        for name in r.get("comfort_violations", []):
            comfort_counts[name] = comfort_counts.get(name, 0) + 1
    if comfort_counts:
        out["comfort_violation_counts"] = comfort_counts
    out["conventions"] = CONVENTIONS
    return out


def json_safe(value: Any) -> Any:
    """Numbers and containers made JSON-serialisable (inf/nan as strings, numpy scalars as floats)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
