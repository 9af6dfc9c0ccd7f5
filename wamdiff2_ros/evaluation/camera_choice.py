"""Shipping rule v4 as code: does the 8-camera lineage's student replace the shipped (front-camera) student?

The rule (``docs/runs/paper.yaml``, written before any of the lineage's runs) is non-inferiority on the
front camera plus the new capability, both on validation data, at the shipped student's thresholds:

(a) front camera, open loop: plans parsed >= the shipped student's - ``PARSE_MARGIN``; on the samples where
    both parse, mean L2 <= ``L2_RATIO`` x the shipped student's (rule v3's guard 1);
(b) front camera, closed loop (the same routes): paired driving score against the shipped student with mean
    >= ``DS_MARGIN``, and at-fault collisions <= the shipped student's + ``EXTRA_COLLISIONS``;
(c) eight cameras, open loop (the same scenes with every camera): plans parsed >= ``EIGHT_PARSE`` and mean L2
    on every sample (fallback in) <= ``EIGHT_L2_RATIO`` x its own front-camera L2 of (a).

Inputs are paper-table stores (``paper_table score``; the 8-camera one with ``--cameras all``) and closed-loop
benchmark JSONs (``wamdiff2 eval closed-loop --json``; several files are merged)::

    python -m wamdiff2_ros.evaluation.camera_choice --store runs/paper5/val_l2.json --split-name val-l2 \\
        --eight-store runs/paper5/val_l2_cam8.json --eight-split-name val-l2-cam8 \\
        --closed-loop runs/thr/cl_val2_t03.json --closed-loop runs/paper5/cl_val2.json \\
        --shipped fix1-b32-s3-t03u07=fix1-t0.3 --candidate cam8-b32-s3-t03u07=cam8 --json runs/paper5/choice.json
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

DS_MARGIN = -0.02
EXTRA_COLLISIONS = 1
EIGHT_PARSE = 0.90
EIGHT_L2_RATIO = 1.10


def decide(candidate: dict[str, Any], shipped: dict[str, Any], front_l2: float | None,
           eight: dict[str, Any]) -> dict[str, Any]:
    """Rule v4 on ``student_row`` results of the candidate and the shipped student.

    ``front_l2``: the candidate's front-camera planning L2 on every sample; ``eight``: its 8-camera planning
    aggregate (``parse_rate``, ``l2``).
    """
    ratio = candidate["matched_l2_ratio"]
    ds = candidate["ds_diff_vs_shipped"]["mean"]
    eight_ratio = eight["l2"] / front_l2 if eight.get("l2") is not None and front_l2 else None
    checks = {
        "a_parse": candidate["parse_rate"] >= shipped["parse_rate"] - PARSE_MARGIN,
        "a_l2": ratio is not None and ratio <= L2_RATIO,
        "b_driving_score": ds is not None and ds >= DS_MARGIN,
        "b_collisions": candidate["at_fault_collisions"] <= shipped["at_fault_collisions"] + EXTRA_COLLISIONS,
        "c_parse": eight.get("parse_rate") is not None and eight["parse_rate"] >= EIGHT_PARSE,
        "c_l2": eight_ratio is not None and eight_ratio <= EIGHT_L2_RATIO,
    }
    return {"checks": checks, "eight_l2_ratio": eight_ratio, "replace": all(checks.values())}


def markdown(candidate: dict[str, Any], shipped: dict[str, Any], front_l2: float | None, eight: dict[str, Any],
             decision: dict[str, Any]) -> str:
    c, d = decision["checks"], candidate["ds_diff_vs_shipped"]
    return check_table([
        check_line("(a) front plans parsed", fmt_num(candidate["parse_rate"], 2), fmt_num(shipped["parse_rate"], 2),
                   f">= shipped - {PARSE_MARGIN}", c["a_parse"]),
        check_line(f"(a) front matched L2 (n={candidate['matched_n']})", fmt_num(candidate["matched_l2"]),
                   fmt_num(candidate["matched_l2_shipped"]),
                   f"ratio {fmt_num(candidate['matched_l2_ratio'])} <= {L2_RATIO}", c["a_l2"]),
        check_line(f"(b) closed-loop DS ({candidate['routes']} routes)", fmt_num(candidate["driving_score"]),
                   fmt_num(shipped["driving_score"]),
                   f"paired {fmt_num(d['mean'], 3)} [{fmt_num(d['low'])}, {fmt_num(d['high'])}] >= {DS_MARGIN}",
                   c["b_driving_score"]),
        check_line("(b) at-fault collisions", str(candidate["at_fault_collisions"]), str(shipped["at_fault_collisions"]),
                   f"<= shipped + {EXTRA_COLLISIONS}", c["b_collisions"]),
        check_line("(c) 8-camera plans parsed", fmt_num(eight.get("parse_rate"), 2), "–", f">= {EIGHT_PARSE}",
                   c["c_parse"]),
        check_line("(c) 8-camera L2, every sample", f"{fmt_num(eight.get('l2'))} (front {fmt_num(front_l2)})", "–",
                   f"ratio {fmt_num(decision['eight_l2_ratio'])} <= {EIGHT_L2_RATIO}", c["c_l2"]),
    ], decision["replace"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.camera_choice",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="paper table store: both students, front camera")
    parser.add_argument("--split-name", required=True)
    parser.add_argument("--eight-store", required=True, help="paper table store: the candidate, eight cameras")
    parser.add_argument("--eight-split-name", required=True)
    parser.add_argument("--closed-loop", action="append", required=True,
                        help="closed-loop benchmark JSON (repeatable; merged): both students on the same routes")
    parser.add_argument("--shipped", required=True, help="ROW=POLICY of the shipped student")
    parser.add_argument("--candidate", required=True, help="ROW=POLICY of the 8-camera student")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    (shipped_key, shipped_policy), (key, policy) = row_policy_pairs(parser, [args.shipped, args.candidate])
    front = read_store(Path(args.store)).get(args.split_name) or {}
    eight_split = read_store(Path(args.eight_store)).get(args.eight_split_name) or {}
    closed = merged_closed_loop(args.closed_loop)
    missing = ([k for k in (shipped_key, key) if k not in front] + [p for p in (shipped_policy, policy) if p not in closed]
               + ([] if key in eight_split else [f"{key} (eight cameras)"]))
    if missing:
        print(f"error: not scored: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = {k: student_row(k, p, front[k]["records"], front[k]["aggregate"]["planning"]["parse_rate"], closed[p],
                           front[shipped_key]["records"], closed[shipped_policy], n_boot=args.bootstrap)
            for k, p in ((shipped_key, shipped_policy), (key, policy))}
    front_l2 = front[key]["aggregate"]["planning"]["l2"]
    eight = eight_split[key]["aggregate"]["planning"]
    decision = decide(rows[key], rows[shipped_key], front_l2, eight)
    print(markdown(rows[key], rows[shipped_key], front_l2, eight, decision))
    write_choice(args.json, {"rows": rows, "front_l2": front_l2, "eight": eight, "decision": decision})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
