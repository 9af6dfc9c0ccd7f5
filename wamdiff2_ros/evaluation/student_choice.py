"""Shipping rule v3 as code: which paper-path student ships, chosen between students on validation data.

The rule (``docs/runs/paper.yaml``, written before its data existed): students are taken in order
of their mean closed-loop driving score on a validation route set; the first that passes both
guards is chosen, and it replaces the shipped student when its paired per-route driving-score
difference to the shipped student has a mean above 0. Guard 1 (open loop, a validation split):
plan parse rate at least the shipped student's minus ``PARSE_MARGIN``, and on the samples where
both its and the shipped student's plans parse, mean L2 at most ``L2_RATIO`` x the shipped
student's. Guard 2 (closed loop): at-fault collisions no more than the shipped student's.

Inputs are the paper table's per-sample store (``paper_table score``) and the closed-loop
benchmark's JSON (``wamdiff2 eval closed-loop --json``)::

    python -m wamdiff2_ros.evaluation.student_choice --store runs/val_l2/results.json --split-name val-l2 \\
        --closed-loop runs/cl_val2/closed_loop.json --shipped conv-b32-s3=student \\
        --candidate tiny-b32-s3=old --candidate fix1-b32-s3=fix1 --json runs/val_l2/choice.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.paper_table import matched, read_store
from wamdiff2_ros.evaluation.stats import paired_bootstrap

PARSE_MARGIN = 0.02
L2_RATIO = 1.10


def closed_loop_by_policy(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{policy name (before any ' (checkpoint)' suffix): {route name: that route's result}}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        out.setdefault(str(r["policy"]).split(" (", 1)[0], {})[r["route"]] = r
    return out


def student_row(key: str, policy: str, records: Sequence[dict[str, Any]], parse_rate: float,
                routes: dict[str, dict[str, Any]], shipped_records: Sequence[dict[str, Any]],
                shipped_routes: dict[str, dict[str, Any]], n_boot: int = 10000) -> dict[str, Any]:
    """One student's rule-v3 numbers against the shipped student (same samples, same routes)."""
    if set(routes) != set(shipped_routes):
        raise ValueError(f"{policy}: routes differ from the shipped student's ({sorted(set(routes) ^ set(shipped_routes))})")
    names = sorted(routes)
    ds = np.array([routes[n]["driving_score"] for n in names], dtype=float)
    shipped_ds = np.array([shipped_routes[n]["driving_score"] for n in names], dtype=float)
    both = matched(records, shipped_records)
    return {
        "row": key,
        "policy": policy,
        "driving_score": float(ds.mean()),
        "at_fault_collisions": int(sum(routes[n]["collisions_at_fault"] for n in names)),
        "routes": len(names),
        "ds_diff_vs_shipped": paired_bootstrap(ds - shipped_ds, n=n_boot),
        "parse_rate": float(parse_rate),
        "matched_n": both["n"],
        "matched_l2": both["mean_a"],
        "matched_l2_shipped": both["mean_b"],
        "matched_l2_ratio": both["ratio"],
    }


def decide(rows: Sequence[dict[str, Any]], shipped_key: str) -> dict[str, Any]:
    """Apply the rule to ``student_row`` results (the shipped student's own row included)."""
    shipped = next(r for r in rows if r["row"] == shipped_key)
    ranked = sorted(rows, key=lambda r: -r["driving_score"])
    verdicts = []
    for r in ranked:
        parse_ok = r["parse_rate"] >= shipped["parse_rate"] - PARSE_MARGIN
        l2_ok = r["matched_l2_ratio"] is not None and r["matched_l2_ratio"] <= L2_RATIO
        collisions_ok = r["at_fault_collisions"] <= shipped["at_fault_collisions"]
        verdicts.append({"row": r["row"], "parse_ok": parse_ok, "l2_ok": l2_ok, "collisions_ok": collisions_ok,
                         "passes": parse_ok and l2_ok and collisions_ok})
    chosen = next(v["row"] for v in verdicts if v["passes"])  # the shipped student passes its own guards
    chosen_row = next(r for r in rows if r["row"] == chosen)
    replace = chosen != shipped_key and (chosen_row["ds_diff_vs_shipped"]["mean"] or 0.0) > 0.0
    return {"order": [r["row"] for r in ranked], "verdicts": verdicts, "chosen": chosen,
            "ship": chosen if replace else shipped_key, "replace": replace}


def fmt_num(value: Any, digits: int = 3) -> str:
    """A table cell: ``value`` with ``digits`` decimals, "–" when missing."""
    return "–" if value is None else f"{value:.{digits}f}"


def row_policy_pairs(parser: argparse.ArgumentParser, specs: Sequence[str]) -> list[tuple[str, str]]:
    """``ROW=POLICY`` arguments as (row key, closed-loop policy) pairs; a malformed one is a parser error."""
    pairs = []
    for spec in specs:
        key, sep, policy = spec.partition("=")
        if not sep or not key or not policy:
            parser.error(f"{spec!r}: expected ROW=POLICY")
        pairs.append((key, policy))
    return pairs


CHECK_HEAD = "| check | candidate | shipped | limit | verdict |\n|---|---|---|---|---|"


def check_line(check: str, candidate: str, shipped: str, limit: str, ok: bool) -> str:
    """One row of a non-inferiority rule's table (camera_choice, world_choice)."""
    return f"| {check} | {candidate} | {shipped} | {limit} | {'pass' if ok else '**fail**'} |"


def check_table(lines: Sequence[str], replace: bool) -> str:
    """The rule's table under its head, and the decision."""
    verdict = "the candidate replaces the shipped student" if replace else "the shipped student stays"
    return "\n".join([CHECK_HEAD, *lines]) + f"\n\nDecision: {verdict}.\n"


def merged_closed_loop(files: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """``closed_loop_by_policy`` over the results of several closed-loop benchmark JSONs."""
    return closed_loop_by_policy([r for f in files for r in json.loads(Path(f).read_text())["results"]])


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", type=int, default=10000)
    parser.add_argument("--json", default=None, help="write the rows and the decision here")


def write_choice(path: str | None, payload: dict[str, Any]) -> None:
    """Write a rule's rows and decision to ``path`` (None: nowhere)."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(payload, indent=1) + "\n")


def markdown(rows: Sequence[dict[str, Any]], decision: dict[str, Any], shipped_key: str) -> str:
    verdicts = {v["row"]: v for v in decision["verdicts"]}
    mark = {True: "yes", False: "**no**"}
    lines = [
        "| student | closed-loop DS | DS - shipped [95 %] | at-fault collisions | plans parsed | matched L2 / shipped's (n) "
        "| ratio | guards |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key in decision["order"]:
        r = next(x for x in rows if x["row"] == key)
        d, v = r["ds_diff_vs_shipped"], verdicts[key]
        diff = "–" if key == shipped_key else f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
        name = f"{key} (shipped)" if key == shipped_key else key
        lines.append(
            f"| {name} | {fmt_num(r['driving_score'])} | {diff} | {r['at_fault_collisions']} | {fmt_num(r['parse_rate'], 2)} "
            f"| {fmt_num(r['matched_l2'])} / {fmt_num(r['matched_l2_shipped'])} ({r['matched_n']}) "
            f"| {fmt_num(r['matched_l2_ratio'])} | parse {mark[v['parse_ok']]}, L2 {mark[v['l2_ok']]}, "
            f"collisions {mark[v['collisions_ok']]} |"
        )
    verdict = (f"`{decision['ship']}` replaces `{shipped_key}`" if decision["replace"]
               else f"`{shipped_key}` stays shipped (chosen: `{decision['chosen']}`)")
    return "\n".join(lines) + f"\n\nDecision: {verdict}.\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.student_choice",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="paper table store with the students' validation records")
    parser.add_argument("--split-name", required=True, help="the validation split's name in the store")
    parser.add_argument("--closed-loop", required=True, help="closed-loop benchmark JSON of the same students")
    parser.add_argument("--shipped", required=True, help="ROW=POLICY of the shipped student")
    parser.add_argument("--candidate", action="append", default=[], help="ROW=POLICY of a candidate (repeatable)")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    pairs = row_policy_pairs(parser, [args.shipped, *args.candidate])
    split = read_store(Path(args.store)).get(args.split_name) or {}
    closed = closed_loop_by_policy(json.loads(Path(args.closed_loop).read_text())["results"])
    missing = [k for k, _ in pairs if k not in split] + [p for _, p in pairs if p not in closed]
    if missing:
        print(f"error: not scored: {', '.join(missing)} (store rows: {sorted(k for k in split if not k.startswith('_'))}; "
              f"closed-loop policies: {sorted(closed)})", file=sys.stderr)
        return 2
    shipped_key, shipped_policy = pairs[0]
    rows = [student_row(key, policy, split[key]["records"], split[key]["aggregate"]["planning"]["parse_rate"],
                        closed[policy], split[shipped_key]["records"], closed[shipped_policy], n_boot=args.bootstrap)
            for key, policy in pairs]
    decision = decide(rows, shipped_key)
    print(markdown(rows, decision, shipped_key))
    write_choice(args.json, {"rows": rows, "decision": decision})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
