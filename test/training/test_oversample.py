"""data.oversample_starts (start-from-standstill planning rows repeated, nothing else touched) and data.plan_style."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.data.tokenized import oversample_starts, starts_from_standstill
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


def test_config_refuses_a_bad_factor():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.validate()  # the default (1) is fine
    for bad in (0, True):
        cfg.data.oversample_starts = bad
        with pytest.raises(ValueError, match="oversample_starts"):
            cfg.validate()


def test_config_refuses_an_unknown_plan_style():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.data.plan_style = "fixed"
    cfg.validate()
    cfg.data.plan_style = "wide"
    with pytest.raises(ValueError, match="plan_style"):
        cfg.validate()
