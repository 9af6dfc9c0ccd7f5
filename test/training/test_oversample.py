"""data.oversample_starts / oversample_turns: start-from-standstill or turning planning rows repeated, nothing else touched."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.data.tokenized import (
    DataConfig,
    oversample,
    oversample_starts,
    oversample_turns,
    starts_from_standstill,
    turns,
)
from wamdiff2_ros.training.config import TrainConfig


def _row(task, trajectory, rid):
    return {"task": task, "id": rid, "meta": json.dumps({"trajectory": trajectory})}


def _line(first, last):
    return [[first + (last - first) * i / 7, 0.0, 0.0] for i in range(8)]


def test_only_plans_that_move_off_from_a_stop_are_repeated():
    start = _row("planning", _line(0.1, 6.0), "start")
    cruise = _row("planning", _line(4.0, 32.0), "cruise")
    stay = _row("planning", _line(0.0, 0.2), "stay")
    qa = {"task": "understanding", "id": "qa", "meta": "{}"}
    assert [starts_from_standstill(r) for r in (start, cruise, stay, qa)] == [True, False, False, False]
    rows = [start, cruise, stay, qa]
    assert oversample_starts(rows, 1) is rows
    out = oversample_starts(rows, 3)
    assert [r["id"] for r in out] == ["start", "cruise", "stay", "qa", "start", "start"]
    with pytest.raises(ValueError):
        oversample_starts(rows, 0)


def _turn(lateral):
    return [[4.0 * (i + 1), lateral * ((i + 1) / 8) ** 2, 0.0] for i in range(8)]


def test_only_plans_that_end_to_the_side_are_turns():
    left, right, lane_change = (_row("planning", _turn(y), n) for y, n in ((9.0, "left"), (-12.0, "right"), (1.5, "lc")))
    start = _row("planning", _line(0.1, 6.0), "start")
    qa = {"task": "understanding", "id": "qa", "meta": "{}"}
    assert [turns(r) for r in (left, right, lane_change, start, qa)] == [True, True, False, False, False]
    rows = [left, right, lane_change, start, qa]
    assert [r["id"] for r in oversample_turns(rows, 2)] == ["left", "right", "lc", "start", "qa", "left", "right"]
    with pytest.raises(ValueError, match="oversample_turns"):
        oversample_turns(rows, 0)


def test_both_oversamplings_together_copy_each_selected_row_from_the_originals():
    start_turning = _row("planning", [[0.1, 0.0, 0.0]] + _turn(8.0)[1:], "start-turning")
    cruise = _row("planning", _line(4.0, 32.0), "cruise")
    rows = [start_turning, cruise]
    data = DataConfig(logs_dir="x", oversample_starts=2, oversample_turns=3)
    assert [r["id"] for r in oversample(rows, data)] == ["start-turning", "cruise"] + ["start-turning"] * 3
    assert oversample(rows, DataConfig(logs_dir="x")) is rows


@pytest.mark.parametrize("name", ["oversample_starts", "oversample_turns"])
def test_config_refuses_a_bad_factor(name):
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.validate()  # the default (1) is fine
    setattr(cfg.data, name, 0)
    with pytest.raises(ValueError, match=name):
        cfg.validate()
    setattr(cfg.data, name, True)
    with pytest.raises(ValueError, match=name):
        cfg.validate()


def test_config_refuses_an_unknown_plan_style():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.data.plan_style = "fixed"
    cfg.validate()
    cfg.data.plan_style = "wide"
    with pytest.raises(ValueError, match="plan_style"):
        cfg.validate()
