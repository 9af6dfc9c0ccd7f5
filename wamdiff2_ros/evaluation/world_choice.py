"""Shipping rule v5 as code: does the world-rules lineage's student replace the shipped student?

The rule (``docs/runs/paper.yaml``, written before any of the lineage's runs) judges each model in its own
world (its checkpoint's ``world_rules``), on validation data, at the shipped student's thresholds:

(a) closed loop on a new route set: paired driving score against the shipped student with mean
    > ``DS_MARGIN`` (0), at-fault collisions <= the shipped student's + ``EXTRA_COLLISIONS``;
(b) open loop, front camera, on the same validation worlds rendered under each model's rules (so two
    stores, one per model, with the same sample ids and ground truth): plans parsed >= the shipped
    student's - ``PARSE_MARGIN``, and on the samples where both parse, mean L2 <= ``L2_RATIO`` x the
    shipped student's;
(c) the scene tasks on the same splits as (b): QA >= the shipped student's - ``QA_MARGIN`` and image
    mAP@0.5 >= the shipped student's - ``MAP_MARGIN``.

::

    python -m wamdiff2_ros.evaluation.world_choice \\
        --store runs/v5/val_l2_new.json --split-name val-l2 --shipped-store runs/v5/val_l2_old.json \\
        --closed-loop runs/v5/cl_seed3_shipped.json --closed-loop runs/v5/cl_seed3_candidate.json \\
        --shipped shipped=shipped --candidate world=world --json runs/v5/choice.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wamdiff2_ros.evaluation.paper_table import read_store
from wamdiff2_ros.evaluation.student_choice import (
    L2_RATIO,
    PARSE_MARGIN,
    add_output_arguments,
    check_line,
    check_table,
    fmt_num,
    merged_closed_loop,
    row_policy_pairs,
    student_row,
    write_choice,
)

DS_MARGIN = 0.0
EXTRA_COLLISIONS = 1
QA_MARGIN = 0.02
MAP_MARGIN = 0.002


def same_worlds(records: Sequence[dict[str, Any]], shipped_records: Sequence[dict[str, Any]]) -> list[str]:
    """Planning sample ids whose ground-truth plan differs between the two stores (or is missing in one).

    The two splits render the same worlds under other rules; the trajectories they are scored on must agree.
    """
    gt = {r["id"]: r.get("gt") for r in shipped_records if r["task"] == "planning"}
    ours = {r["id"]: r.get("gt") for r in records if r["task"] == "planning"}
    return sorted(i for i in set(gt) | set(ours) if gt.get(i) is None or gt.get(i) != ours.get(i))


def decide(candidate: dict[str, Any], shipped: dict[str, Any]) -> dict[str, Any]:
    """Rule v5 on ``student_row`` results plus each model's ``qa`` and ``map_50``."""
    ds = candidate["ds_diff_vs_shipped"]["mean"]
    ratio = candidate["matched_l2_ratio"]
    checks = {
        "a_driving_score": ds is not None and ds > DS_MARGIN,
        "a_collisions": candidate["at_fault_collisions"] <= shipped["at_fault_collisions"] + EXTRA_COLLISIONS,
        "b_parse": candidate["parse_rate"] >= shipped["parse_rate"] - PARSE_MARGIN,
        "b_l2": ratio is not None and ratio <= L2_RATIO,
        "c_qa": candidate["qa"] is not None and shipped["qa"] is not None and candidate["qa"] >= shipped["qa"] - QA_MARGIN,
        "c_map": candidate["map_50"] is not None and shipped["map_50"] is not None
        and candidate["map_50"] >= shipped["map_50"] - MAP_MARGIN,
    }
    return {"checks": checks, "replace": all(checks.values())}


def markdown(candidate: dict[str, Any], shipped: dict[str, Any], decision: dict[str, Any]) -> str:
    c, d = decision["checks"], candidate["ds_diff_vs_shipped"]
    return check_table([
        check_line(f"(a) closed-loop DS ({candidate['routes']} routes)", fmt_num(candidate["driving_score"]),
                   fmt_num(shipped["driving_score"]),
                   f"paired {fmt_num(d['mean'])} [{fmt_num(d['low'])}, {fmt_num(d['high'])}] > {DS_MARGIN:g}",
                   c["a_driving_score"]),
        check_line("(a) at-fault collisions", str(candidate["at_fault_collisions"]), str(shipped["at_fault_collisions"]),
                   f"<= shipped + {EXTRA_COLLISIONS}", c["a_collisions"]),
        check_line("(b) plans parsed", fmt_num(candidate["parse_rate"], 2), fmt_num(shipped["parse_rate"], 2),
                   f">= shipped - {PARSE_MARGIN}", c["b_parse"]),
        check_line(f"(b) matched L2 (n={candidate['matched_n']})", fmt_num(candidate["matched_l2"]),
                   fmt_num(candidate["matched_l2_shipped"]),
                   f"ratio {fmt_num(candidate['matched_l2_ratio'])} <= {L2_RATIO}", c["b_l2"]),
        check_line("(c) QA", fmt_num(candidate["qa"]), fmt_num(shipped["qa"]), f">= shipped - {QA_MARGIN}", c["c_qa"]),
        check_line("(c) image mAP@0.5", fmt_num(candidate["map_50"], 4), fmt_num(shipped["map_50"], 4),
                   f">= shipped - {MAP_MARGIN}", c["c_map"]),
    ], decision["replace"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.world_choice",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="paper table store: the candidate on its rules' split")
    parser.add_argument("--shipped-store", required=True, help="paper table store: the shipped student on its own")
    parser.add_argument("--split-name", required=True, help="the split's name in both stores")
    parser.add_argument("--closed-loop", action="append", required=True,
                        help="closed-loop benchmark JSON (repeatable; merged): both students on the same routes")
    parser.add_argument("--shipped", required=True, help="ROW=POLICY of the shipped student")
    parser.add_argument("--candidate", required=True, help="ROW=POLICY of the candidate")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    (shipped_key, shipped_policy), (key, policy) = row_policy_pairs(parser, [args.shipped, args.candidate])
    ours = read_store(Path(args.store)).get(args.split_name) or {}
    theirs = read_store(Path(args.shipped_store)).get(args.split_name) or {}
    closed = merged_closed_loop(args.closed_loop)
    missing = ([f"{key} (store)"] if key not in ours else []) + ([f"{shipped_key} (shipped store)"] if shipped_key
                                                                 not in theirs else [])
    missing += [p for p in (policy, shipped_policy) if p not in closed]
    if missing:
        print(f"error: not scored: {', '.join(missing)}", file=sys.stderr)
        return 2
    differ = same_worlds(ours[key]["records"], theirs[shipped_key]["records"])
    if differ:
        print(f"error: the two splits disagree on {len(differ)} planning samples' ground truth (e.g. {differ[:3]}): "
              "not the same worlds", file=sys.stderr)
        return 2
    rows = {}
    for k, p, entry in ((shipped_key, shipped_policy, theirs[shipped_key]), (key, policy, ours[key])):
        agg = entry["aggregate"]
        rows[k] = student_row(k, p, entry["records"], agg["planning"]["parse_rate"], closed[p],
                              theirs[shipped_key]["records"], closed[shipped_policy], n_boot=args.bootstrap)
        rows[k]["qa"] = agg["understanding"]["accuracy"]
        rows[k]["map_50"] = agg["perception"]["map_50"]
    decision = decide(rows[key], rows[shipped_key])
    print(markdown(rows[key], rows[shipped_key], decision))
    write_choice(args.json, {"rows": rows, "decision": decision})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
