"""Every policy on every route, in parallel processes, with a progress bar; results aggregated per policy.

Jobs are (policy, route) pairs. With ``workers > 1`` they run in a spawn-context process
pool, torch at one thread per worker; each worker loads a checkpoint once and keeps it.
Results come back in a fixed order (policy, then route), whatever finished first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.closed_loop.policies import PolicySpec, make_policy
from wamdiff2_ros.evaluation.closed_loop.routes import RouteSpec
from wamdiff2_ros.evaluation.closed_loop.runner import RouteResult, RunSettings, run_route
from wamdiff2_ros.evaluation.closed_loop.scoring import PENALTIES

_POLICIES: dict[PolicySpec, Any] = {}


def _init_worker(threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass


def run_job(policy: PolicySpec, route: RouteSpec, settings: RunSettings, progress: bool = False) -> RouteResult:
    """One route with one policy (the policy object is cached per process); ``progress``: a simulated-time bar."""
    if policy not in _POLICIES:
        _POLICIES[policy] = make_policy(policy)
    if not progress:
        return run_route(route, _POLICIES[policy], policy.name, settings)
    from tqdm import tqdm

    with tqdm(total=route.timeout_s, desc=f"  {route.name}", unit="sim s", leave=False, file=sys.stderr,
              bar_format="{desc}: {bar} {n:.1f}/{total:.0f} sim s [{elapsed}]") as bar:  # fmt: skip

        def advance(time_s: float) -> None:
            bar.update(max(time_s - bar.n, 0.0))

        return run_route(route, _POLICIES[policy], policy.name, settings, on_plan=advance)


def run_benchmark(policies: Sequence[PolicySpec], routes: Sequence[RouteSpec], settings: RunSettings | None = None,
                  workers: int = 1, threads: int = 1, progress: bool = True) -> list[RouteResult]:
    """All (policy, route) results, ordered by policy then route."""
    settings = settings or RunSettings()
    jobs = [(p, r) for p in policies for r in routes]
    # checkpoints first (slowest), so the pool ends with the short baseline routes
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][0].kind != "model")
    results: dict[int, RouteResult] = {}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), desc="closed loop", unit="route", file=sys.stderr)

    def done(i: int, result: RouteResult) -> None:
        results[i] = result
        if bar is not None:
            m = result.metrics
            bar.set_postfix_str(f"{result.policy} {result.route}: DS {m['driving_score']:.2f} "
                                f"RC {m['route_completion']:.2f} {m['end_reason']}")  # fmt: skip
            bar.update(1)

    try:
        if workers <= 1:
            _init_worker(threads)
            for i in order:
                done(i, run_job(*jobs[i], settings, progress=progress))
        else:
            import multiprocessing as mp

            with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                     initializer=_init_worker, initargs=(threads,)) as pool:  # fmt: skip
                pending = {pool.submit(run_job, *jobs[i], settings): i for i in order}
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done(pending.pop(future), future.result())
    finally:
        if bar is not None:
            bar.close()
    return [results[i] for i in range(len(jobs))]


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def aggregate(results: Sequence[RouteResult]) -> dict[str, dict[str, Any]]:
    """Per policy: means over routes, infraction totals and rates per km, comfort and closed-loop PDMS."""
    by_policy: dict[str, list[RouteResult]] = {}
    for r in results:
        by_policy.setdefault(r.policy, []).append(r)
    out = {}
    for policy, rows in by_policy.items():
        metrics = [r.metrics for r in rows]
        km = sum(m["route_completion"] * m["route_length_m"] for m in metrics) / 1000.0
        totals = {k: int(sum(m["infractions"][k] for m in metrics)) for k in PENALTIES}
        completed = [m["time_to_complete_s"] for m in metrics if m["time_to_complete_s"] is not None]
        pdm_rows = [m["pdm"] for m in metrics if "pdm" in m]
        summary: dict[str, Any] = {
            "routes": len(rows),
            "driving_score": _mean([m["driving_score"] for m in metrics]),
            "route_completion": _mean([m["route_completion"] for m in metrics]),
            "infraction_penalty": _mean([m["infraction_penalty"] for m in metrics]),
            "routes_completed": sum(m["completed"] for m in metrics),
            "routes_clean": sum(m["clean"] for m in metrics),
            "infractions": totals,
            "collisions_at_fault": sum(m["collisions_at_fault"] for m in metrics),
            "collisions_not_at_fault": sum(m["collisions_not_at_fault"] for m in metrics),
            "red_light_violations": totals["red_light"],
            "off_road_m": round(sum(m["off_road_m"] for m in metrics), 2),
            "stuck_s": round(sum(m["stuck_s"] for m in metrics), 2),
            "km_driven_on_route": round(km, 4),
            "infractions_per_km": round(sum(totals.values()) / km, 3) if km > 0 else None,
            "time_to_complete_s": _mean(completed),
            "end_reasons": {k: sum(m["end_reason"] == k for m in metrics) for k in sorted({m["end_reason"] for m in metrics})},
            "lon_jerk_abs_p95": _mean([m["comfort"]["lon_jerk_abs_p95"] for m in metrics if "lon_jerk_abs_p95" in m["comfort"]]),
            "lat_accel_abs_p95": _mean([m["comfort"]["lat_accel_abs_p95"] for m in metrics if "lat_accel_abs_p95" in m["comfort"]]),
            "uncomfortable_share": _mean([m["comfort"]["uncomfortable_share"] for m in metrics
                                          if "uncomfortable_share" in m["comfort"]]),
            "closed_loop_pdms": _mean([p["pdms"] for p in pdm_rows if "pdms" in p]),
            "pdm": {k: _mean([p[k] for p in pdm_rows if k in p]) for k in ("nc", "dac", "ddc", "ttc", "comfort", "ep")},
        }  # fmt: skip
        plans = [r.plans for r in rows if r.plans.get("plans")]
        if plans and any("fallback_rate" in p for p in plans):
            n = sum(p["plans"] for p in plans)
            summary["plans"] = n
            summary["fallback_rate"] = round(sum(p["fallbacks"] for p in plans) / n, 4)
            summary["plan_latency_ms_mean"] = round(sum(p["latency_ms_mean"] * p["plans"] for p in plans) / n, 1)
            thresholds = sorted({p["confidence_threshold"] for p in plans if "confidence_threshold" in p})
            if thresholds:
                summary["confidence_threshold"] = thresholds[0] if len(thresholds) == 1 else thresholds
        summary["wall_s"] = round(sum(r.wall_s for r in rows), 1)
        out[policy] = summary
    return out
