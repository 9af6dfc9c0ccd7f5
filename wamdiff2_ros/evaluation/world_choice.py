"""Shipping rules v5 and v7 as code: does a lineage's student replace the shipped student?

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

Rule v7 (the residual-plan lineage, ``--ar-rows``) is the same with one split for both and (b)'s L2 check
replaced: the candidate's matched-subset L2 ratio to its own equal-compute AR below the shipped student's ratio
to the shipped AR.

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

from wamdiff2_ros.evaluation.paper_table import matched, read_store
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


def own_ar_ratio(records: Sequence[dict[str, Any]], ar_records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A student's matched-subset L2 ratio to its own AR baseline (the samples where both plans parse)."""
    both = matched(records, ar_records)
    return {"n": both["n"], "student": both["mean_a"], "ar": both["mean_b"], "ratio": both["ratio"]}


def decide(candidate: dict[str, Any], shipped: dict[str, Any]) -> dict[str, Any]:
    """Rule v5 on ``student_row`` results plus each model's ``qa`` and ``map_50``; rule v7 where both rows carry
    ``own_ar`` (:func:`own_ar_ratio`): (b)'s L2 check is then the candidate's ratio to its own AR below the shipped
    student's ratio to the shipped AR."""
    ds = candidate["ds_diff_vs_shipped"]["mean"]
    ratio = candidate["matched_l2_ratio"]
    if "own_ar" in candidate and "own_ar" in shipped:
        mine, theirs = candidate["own_ar"]["ratio"], shipped["own_ar"]["ratio"]
        l2_ok = mine is not None and theirs is not None and mine < theirs
    else:
        l2_ok = ratio is not None and ratio <= L2_RATIO
    checks = {
        "a_driving_score": ds is not None and ds > DS_MARGIN,
        "a_collisions": candidate["at_fault_collisions"] <= shipped["at_fault_collisions"] + EXTRA_COLLISIONS,
        "b_parse": candidate["parse_rate"] >= shipped["parse_rate"] - PARSE_MARGIN,
        "b_l2": l2_ok,
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
        _l2_line(candidate, shipped, c["b_l2"]),
        check_line("(c) QA", fmt_num(candidate["qa"]), fmt_num(shipped["qa"]), f">= shipped - {QA_MARGIN}", c["c_qa"]),
        check_line("(c) image mAP@0.5", fmt_num(candidate["map_50"], 4), fmt_num(shipped["map_50"], 4),
                   f">= shipped - {MAP_MARGIN}", c["c_map"]),
    ], decision["replace"])


def _l2_line(candidate: dict[str, Any], shipped: dict[str, Any], ok: bool) -> str:
    if "own_ar" in candidate and "own_ar" in shipped:
        mine, theirs = candidate["own_ar"], shipped["own_ar"]
        return check_line("(b) matched L2 / own AR's", f"{fmt_num(mine['ratio'])} (n={mine['n']})",
                          f"{fmt_num(theirs['ratio'])} (n={theirs['n']})", "< shipped's", ok)
    return check_line(f"(b) matched L2 (n={candidate['matched_n']})", fmt_num(candidate["matched_l2"]),
                      fmt_num(candidate["matched_l2_shipped"]),
                      f"ratio {fmt_num(candidate['matched_l2_ratio'])} <= {L2_RATIO}", ok)


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
    parser.add_argument("--ar-rows", default=None, metavar="CANDIDATE_AR=SHIPPED_AR",
                        help="rule v7: each student's AR row (in --store and --shipped-store); (b) compares the "
                             "students' matched-subset L2 ratios to their own ARs")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    (shipped_key, shipped_policy), (key, policy) = row_policy_pairs(parser, [args.shipped, args.candidate])
    ours = read_store(Path(args.store)).get(args.split_name) or {}
    theirs = read_store(Path(args.shipped_store)).get(args.split_name) or {}
    closed = merged_closed_loop(args.closed_loop)
    missing = ([f"{key} (store)"] if key not in ours else []) + ([f"{shipped_key} (shipped store)"] if shipped_key
                                                                 not in theirs else [])
    missing += [p for p in (policy, shipped_policy) if p not in closed]
    ar_rows = args.ar_rows.partition("=")[::2] if args.ar_rows else None
    if ar_rows:
        missing += ([f"{ar_rows[0]} (store)"] if ar_rows[0] not in ours else [])
        missing += ([f"{ar_rows[1]} (shipped store)"] if ar_rows[1] not in theirs else [])
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
    if ar_rows:
        rows[key]["own_ar"] = own_ar_ratio(ours[key]["records"], ours[ar_rows[0]]["records"])
        rows[shipped_key]["own_ar"] = own_ar_ratio(theirs[shipped_key]["records"], theirs[ar_rows[1]]["records"])
    decision = decide(rows[key], rows[shipped_key])
    print(markdown(rows[key], rows[shipped_key], decision))
    write_choice(args.json, {"rows": rows, "decision": decision})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
