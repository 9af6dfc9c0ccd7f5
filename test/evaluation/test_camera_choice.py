"""Shipping rule v4 (evaluation.camera_choice): the 8-camera student replaces the shipped one only when it is no
worse on the front camera, open and closed loop, and plans with eight cameras."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.evaluation.camera_choice import decide, main
from wamdiff2_ros.evaluation.student_choice import closed_loop_by_policy, student_row

from .choice_fixture import records, routes

SHIPPED = records([2.0, 2.0, 2.0, 2.0])
GOOD_EIGHT = {"parse_rate": 0.95, "l2": 2.1}


def _rows(records, scores, collisions=0):
    closed = closed_loop_by_policy(routes("cand", scores, collisions) + routes("ship", [0.40, 0.40, 0.40]))
    cand = student_row("cand", "cand", records, 1.0, closed["cand"], SHIPPED, closed["ship"], n_boot=200)
    ship = student_row("ship", "ship", SHIPPED, 1.0, closed["ship"], SHIPPED, closed["ship"], n_boot=200)
    return cand, ship


def test_non_inferior_on_the_front_camera_and_planning_with_eight_replaces():
    cand, ship = _rows(records([2.1, 2.1, 2.1, 2.1]), [0.39, 0.40, 0.40])  # DS -0.003, L2 1.05x
    decision = decide(cand, ship, 2.0, GOOD_EIGHT)
    assert decision["replace"] and all(decision["checks"].values())
    assert decision["eight_l2_ratio"] == pytest.approx(1.05)


@pytest.mark.parametrize(("records", "scores", "collisions", "eight", "failing"), [
    (records([2.3, 2.3, 2.3, 2.3]), [0.4, 0.4, 0.4], 0, GOOD_EIGHT, "a_l2"),  # 1.15x the shipped L2
    (records([2.0, None, None, 2.0]), [0.4, 0.4, 0.4], 0, GOOD_EIGHT, "a_parse"),  # parse rate 0.5
    (SHIPPED, [0.3, 0.3, 0.3], 0, GOOD_EIGHT, "b_driving_score"),  # DS -0.1
    (SHIPPED, [0.4, 0.4, 0.4], 2, GOOD_EIGHT, "b_collisions"),  # 2 at-fault collisions against 0 + 1
    (SHIPPED, [0.4, 0.4, 0.4], 0, {"parse_rate": 0.5, "l2": 2.0}, "c_parse"),  # eight cameras mostly fall back
    (SHIPPED, [0.4, 0.4, 0.4], 0, {"parse_rate": 1.0, "l2": 2.5}, "c_l2"),  # eight cameras 1.25x its front L2
])
def test_each_check_can_refuse(records, scores, collisions, eight, failing):
    cand, ship = _rows(records, scores, collisions)
    if failing == "a_parse":
        cand["parse_rate"] = 0.5
    decision = decide(cand, ship, 2.0, eight)
    assert not decision["replace"]
    assert [k for k, ok in decision["checks"].items() if not ok] == [failing]


def test_command_line_merges_closed_loop_files_and_writes_the_decision(tmp_path, capsys):
    front, eight = tmp_path / "front.json", tmp_path / "eight.json"
    aggregate = {"planning": {"parse_rate": 1.0, "l2": 2.0}}
    front.write_text(json.dumps({"val": {"ship": {"records": SHIPPED, "aggregate": aggregate},
                                         "cand": {"records": SHIPPED, "aggregate": aggregate}}}))
    eight.write_text(json.dumps({"val8": {"cand": {"records": [], "aggregate": {"planning": GOOD_EIGHT}}}}))
    cl_ship, cl_cand = tmp_path / "a.json", tmp_path / "b.json"
    cl_ship.write_text(json.dumps({"results": routes("ship (ckpt)", [0.4, 0.4])}))
    cl_cand.write_text(json.dumps({"results": routes("cand", [0.45, 0.4])}))
    out = tmp_path / "choice.json"
    args = ["--store", str(front), "--split-name", "val", "--eight-store", str(eight), "--eight-split-name", "val8",
            "--closed-loop", str(cl_ship), "--closed-loop", str(cl_cand), "--shipped", "ship=ship",
            "--candidate", "cand=cand", "--bootstrap", "100", "--json", str(out)]
    assert main(args) == 0
    assert "Decision: the candidate replaces the shipped student." in capsys.readouterr().out
    assert json.loads(out.read_text())["decision"]["replace"]
    assert main([*args[:-2], "--eight-split-name", "other"]) == 2
    assert "cand (eight cameras)" in capsys.readouterr().err
