"""Shipping rule v3 (evaluation.student_choice): order by closed-loop driving score, guards, replace only when better."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.evaluation.student_choice import closed_loop_by_policy, decide, main, student_row

from .choice_fixture import records, routes

SHIPPED = records([2.0, 2.0, None, 2.0])  # parse rate 0.75


def _row(key, records, parse_rate, scores, collisions=0):
    closed = closed_loop_by_policy(routes(key, scores, collisions) + routes("shipped (ckpt)", [0.4, 0.4, 0.4]))
    return student_row(key, key, records, parse_rate, closed[key], SHIPPED, closed["shipped"], n_boot=200)


def test_best_driver_that_passes_the_guards_replaces_the_shipped_student():
    shipped = _row("shipped", SHIPPED, 0.75, [0.4, 0.4, 0.4])
    sloppy = _row("sloppy", records([2.5, 2.5, 2.0, 2.5]), 1.0, [0.9, 0.9, 0.9])  # drives best, L2 1.25x on matched
    crash = _row("crash", records([2.0, 2.0, 2.0, 2.0]), 1.0, [0.8, 0.8, 0.8], collisions=1)  # more collisions
    good = _row("good", records([2.1, 2.1, 2.1, 2.1]), 1.0, [0.5, 0.6, 0.4])
    assert sloppy["matched_n"] == 3 and sloppy["matched_l2_ratio"] == pytest.approx(1.25)
    decision = decide([shipped, sloppy, crash, good], "shipped")
    assert decision["order"] == ["sloppy", "crash", "good", "shipped"]
    passes = {v["row"]: v["passes"] for v in decision["verdicts"]}
    assert passes == {"sloppy": False, "crash": False, "good": True, "shipped": True}
    assert decision["chosen"] == "good" and decision["replace"] and decision["ship"] == "good"
    assert good["ds_diff_vs_shipped"]["mean"] == pytest.approx(0.1)


def test_shipped_student_stays_when_no_candidate_drives_better_and_passes():
    shipped = _row("shipped", SHIPPED, 0.75, [0.4, 0.4, 0.4])
    unparsed = _row("unparsed", records([2.0, None, None, None]), 0.25, [0.9, 0.9, 0.9])  # parse rate too low
    worse = _row("worse", records([1.0, 1.0, 1.0, 1.0]), 1.0, [0.3, 0.3, 0.3])
    decision = decide([shipped, unparsed, worse], "shipped")
    assert decision["chosen"] == "shipped" and not decision["replace"] and decision["ship"] == "shipped"


def test_routes_must_be_the_same():
    closed = closed_loop_by_policy(routes("a", [0.5, 0.5]) + routes("shipped", [0.4, 0.4, 0.4]))
    with pytest.raises(ValueError, match="routes differ"):
        student_row("a", "a", SHIPPED, 0.75, closed["a"], SHIPPED, closed["shipped"])


def test_command_line_reads_the_stores_and_writes_the_decision(tmp_path, capsys):
    store = tmp_path / "store.json"
    store.write_text(json.dumps({"val": {
        "ship": {"records": SHIPPED, "aggregate": {"planning": {"parse_rate": 0.75}}},
        "cand": {"records": records([1.9, 1.9, 1.9, 1.9]), "aggregate": {"planning": {"parse_rate": 1.0}}},
    }}))
    closed = tmp_path / "cl.json"
    closed.write_text(json.dumps({"results": routes("student (ckpt)", [0.4, 0.4]) + routes("c", [0.6, 0.5])}))
    out = tmp_path / "choice.json"
    args = ["--store", str(store), "--split-name", "val", "--closed-loop", str(closed), "--shipped", "ship=student",
            "--candidate", "cand=c", "--bootstrap", "100", "--json", str(out)]
    assert main(args) == 0
    assert "`cand` replaces `ship`" in capsys.readouterr().out
    assert json.loads(out.read_text())["decision"]["ship"] == "cand"
    assert main([*args[:-2], "--candidate", "nope=c"]) == 2  # a row that was not scored
    assert "not scored: nope" in capsys.readouterr().err
