"""Shipping rule v5 (evaluation.world_choice): the world-rules student replaces the shipped one only when it drives
better on new routes and is no worse open loop (plans, QA, perception), each model on data of its own rules."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.evaluation.student_choice import closed_loop_by_policy, student_row
from wamdiff2_ros.evaluation.world_choice import decide, main, same_worlds

from .choice_fixture import records, routes

SHIPPED = records([2.0, 2.0, 2.0, 2.0])


def _rows(cand_records, scores, collisions=0, qa=0.50, map_50=0.010):
    closed = closed_loop_by_policy(routes("cand", scores, collisions) + routes("ship", [0.40, 0.40, 0.40]))
    cand = student_row("cand", "cand", cand_records, 1.0, closed["cand"], SHIPPED, closed["ship"], n_boot=200)
    ship = student_row("ship", "ship", SHIPPED, 1.0, closed["ship"], SHIPPED, closed["ship"], n_boot=200)
    cand.update(qa=qa, map_50=map_50)
    ship.update(qa=0.50, map_50=0.010)
    return cand, ship


def test_better_driving_and_no_worse_open_loop_replaces():
    cand, ship = _rows(records([2.1, 2.1, 2.1, 2.1]), [0.45, 0.40, 0.50], collisions=1, qa=0.49, map_50=0.009)
    decision = decide(cand, ship)
    assert decision["replace"] and all(decision["checks"].values())


@pytest.mark.parametrize(("cand_records", "scores", "collisions", "qa", "map_50", "failing"), [
    (SHIPPED, [0.40, 0.40, 0.40], 0, 0.5, 0.01, "a_driving_score"),  # a tie is not better: mean > 0 is required
    (SHIPPED, [0.5, 0.5, 0.5], 2, 0.5, 0.01, "a_collisions"),  # 2 at-fault collisions against 0 + 1
    (records([2.0, None, None, 2.0]), [0.5, 0.5, 0.5], 0, 0.5, 0.01, "b_parse"),
    (records([2.3, 2.3, 2.3, 2.3]), [0.5, 0.5, 0.5], 0, 0.5, 0.01, "b_l2"),  # 1.15x the shipped L2
    (SHIPPED, [0.5, 0.5, 0.5], 0, 0.47, 0.01, "c_qa"),  # QA 0.03 below
    (SHIPPED, [0.5, 0.5, 0.5], 0, 0.5, 0.007, "c_map"),  # mAP 0.003 below
])
def test_each_check_can_refuse(cand_records, scores, collisions, qa, map_50, failing):
    cand, ship = _rows(cand_records, scores, collisions, qa, map_50)
    if failing == "b_parse":
        cand["parse_rate"] = 0.5
    decision = decide(cand, ship)
    assert not decision["replace"]
    assert [k for k, ok in decision["checks"].items() if not ok] == [failing]


def test_the_two_splits_must_be_the_same_worlds():
    assert same_worlds(SHIPPED, records([1.0, 1.0, 1.0, 1.0])) == []
    moved = records([1.0, 1.0, 1.0, 1.0])
    moved[2]["gt"] = [[9.0, 0.0]]
    assert same_worlds(moved, SHIPPED) == ["s2"]
    assert same_worlds(records([1.0] * 3), SHIPPED) == ["s3"]  # a sample only one split has


def _store(path, key, recs, qa=0.5, map_50=0.01):
    aggregate = {"planning": {"parse_rate": 1.0, "l2": 2.0}, "understanding": {"accuracy": qa},
                 "perception": {"map_50": map_50}}
    path.write_text(json.dumps({"val": {key: {"records": recs, "aggregate": aggregate}}}))


def test_command_line_reads_one_store_per_world_and_writes_the_decision(tmp_path, capsys):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    _store(new, "cand", SHIPPED)
    _store(old, "ship", SHIPPED)
    cl_ship, cl_cand = tmp_path / "a.json", tmp_path / "b.json"
    cl_ship.write_text(json.dumps({"results": routes("ship (ckpt)", [0.4, 0.4])}))
    cl_cand.write_text(json.dumps({"results": routes("cand", [0.45, 0.4])}))
    out = tmp_path / "choice.json"
    args = ["--store", str(new), "--shipped-store", str(old), "--split-name", "val", "--closed-loop", str(cl_ship),
            "--closed-loop", str(cl_cand), "--shipped", "ship=ship", "--candidate", "cand=cand", "--bootstrap", "100",
            "--json", str(out)]
    assert main(args) == 0
    assert "Decision: the candidate replaces the shipped student." in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["decision"]["replace"] and saved["rows"]["cand"]["qa"] == 0.5
    _store(new, "cand", records([1.0] * 3))  # one sample short: not the same worlds
    assert main(args) == 2
    assert "not the same worlds" in capsys.readouterr().err


def test_rule_v7_compares_each_students_ratio_to_its_own_ar(tmp_path, capsys):
    """``--ar-rows``: (b) asks for a lower matched L2 ratio to the student's own AR than the shipped student's to its AR,
    not L2 within 1.10x of the shipped student's (a candidate 1.25x the shipped student's L2 can pass, and fail)."""
    store = tmp_path / "val.json"
    stores = {"cand": records([2.5] * 4), "ship": SHIPPED, "cand-ar": records([2.0] * 4), "ship-ar": records([1.0] * 4)}
    aggregate = {"planning": {"parse_rate": 1.0}, "understanding": {"accuracy": 0.5}, "perception": {"map_50": 0.01}}
    store.write_text(json.dumps({"val": {k: {"records": r, "aggregate": aggregate} for k, r in stores.items()}}))
    cl = tmp_path / "cl.json"
    cl.write_text(json.dumps({"results": routes("ship", [0.4, 0.4]) + routes("cand", [0.45, 0.4])}))
    args = ["--store", str(store), "--shipped-store", str(store), "--split-name", "val", "--closed-loop", str(cl),
            "--shipped", "ship=ship", "--candidate", "cand=cand", "--bootstrap", "100", "--json",
            str(tmp_path / "choice.json")]
    assert main(args) == 0  # rule v5: 2.5 m is 1.25x the shipped student's 2.0
    assert not json.loads((tmp_path / "choice.json").read_text())["decision"]["checks"]["b_l2"]
    assert main(args + ["--ar-rows", "cand-ar=ship-ar"]) == 0  # rule v7: 1.25x its AR against 2.0x
    saved = json.loads((tmp_path / "choice.json").read_text())
    assert saved["decision"]["replace"] and saved["rows"]["cand"]["own_ar"]["ratio"] == pytest.approx(1.25)
    assert "(b) matched L2 / own AR's" in capsys.readouterr().out
    stores["cand-ar"] = records([1.0] * 4)  # 2.5x its AR against the shipped student's 2.0x: refused
    store.write_text(json.dumps({"val": {k: {"records": r, "aggregate": aggregate} for k, r in stores.items()}}))
    assert main(args + ["--ar-rows", "cand-ar=ship-ar"]) == 0
    assert not json.loads((tmp_path / "choice.json").read_text())["decision"]["checks"]["b_l2"]
    assert main(args + ["--ar-rows", "cand-ar=missing"]) == 2
