"""The residual-plan probe's checks (docs/runs/paper.yaml, "Residual-plan probe") from its store and closed loop.

``python runs/cvres/judge.py [--closed-loop runs/cvres/cl_seed6.json]``: (a) s-res minus s-ctl L2 on the plans both
parse, 95 % paired bootstrap; (b) each student's matched-subset L2 ratio to its own AR; (c) paired driving score and
at-fault collisions on the route seed; and, not judged, L2 at 1 s of each arm and of constant velocity, parse rates.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from wamdiff2_ros.evaluation.heldout import l2_horizons
from wamdiff2_ros.evaluation.paper_table import matched
from wamdiff2_ros.evaluation.stats import paired_bootstrap


def planning(records):
    return [r for r in records if r["task"] == "planning"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default="runs/cvres/val_l7.json")
    parser.add_argument("--name", default="val-l7")
    parser.add_argument("--closed-loop", default=None)
    args = parser.parse_args()
    split = json.load(open(args.store))[args.name]
    rec = {k: split[k]["records"] for k in ("s-ctl", "s-res", "a-ctl", "a-res") if k in split}
    out = {}
    for key, records in rec.items():
        plans = planning(records)
        parsed = [r for r in plans if r["parsed"]]
        out[key] = {"parsed": len(parsed) / len(plans), "n": len(plans),
                    "l2_all": float(np.mean([np.mean(r["l2_h"]) for r in plans])),
                    "l2_1s_parsed": float(np.mean([r["l2_h_pred"][0] for r in parsed])),
                    "l2_h_parsed": np.mean([r["l2_h_pred"] for r in parsed], axis=0).round(3).tolist()}
    cv = [l2_horizons(np.asarray(r["fallback"]), np.asarray(r["gt"])) for r in planning(next(iter(rec.values())))]
    out["constant_velocity"] = {"l2_h": np.mean(cv, axis=0).round(3).tolist()}
    m = matched(rec["s-res"], rec["s-ctl"])
    a = paired_bootstrap(np.asarray(m["l2_a"]) - np.asarray(m["l2_b"]), reference=m["l2_b"])
    out["a"] = {"n": m["n"], "s_res": m["mean_a"], "s_ctl": m["mean_b"], "diff": a, "holds": a["high"] < 0}
    ratios = {}
    for s, ar in (("s-ctl", "a-ctl"), ("s-res", "a-res")):
        mm = matched(rec[s], rec[ar])
        ratios[s] = {"n": mm["n"], "student": mm["mean_a"], "ar": mm["mean_b"], "ratio": mm["ratio"]}
    out["b"] = {**ratios, "holds": ratios["s-res"]["ratio"] < ratios["s-ctl"]["ratio"]}
    if args.closed_loop:
        cl = json.load(open(args.closed_loop))
        out["c"] = closed_loop(cl)
    print(json.dumps(out, indent=2))


def closed_loop(cl):
    """Paired driving score s-res minus s-ctl over the routes, and their at-fault collisions."""
    rows = {p: {r["route"]: r for r in cl["results"] if r["policy"] == p} for p in ("s-res", "s-ctl")}
    routes = sorted(set(rows["s-res"]) & set(rows["s-ctl"]))
    diff = [rows["s-res"][k]["driving_score"] - rows["s-ctl"][k]["driving_score"] for k in routes]
    boot = paired_bootstrap(diff)
    faults = {p: sum(rows[p][k]["collisions_at_fault"] for k in routes) for p in rows}
    return {"routes": len(routes), "ds_diff": boot, "at_fault": faults,
            "holds": boot["mean"] > 0 and faults["s-res"] <= faults["s-ctl"] + 1}


if __name__ == "__main__":
    main()
