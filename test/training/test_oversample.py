"""data.oversample_starts / oversample_turns (start-from-standstill or turning planning rows repeated, nothing else
touched) and data.plan_style."""

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


def test_only_plans_that_turn_are_repeated_and_both_oversamplings_add_up():
    left = _row("planning", [[4.0 * i, 0.04 * i * i, 0.0] for i in range(1, 9)], "left")  # 2.56 m left at 4 s
    right = _row("planning", [[4.0 * i, -0.3 * i, 0.0] for i in range(1, 9)], "right")
    straight = _row("planning", _line(4.0, 32.0), "straight")
    start = _row("planning", _line(0.1, 6.0), "start")
    qa = {"task": "understanding", "id": "qa", "meta": "{}"}
    rows = [left, right, straight, start, qa]
    assert [turns(r) for r in rows] == [True, True, False, False, False]
    assert oversample_turns(rows, 1) is rows
    assert [r["id"] for r in oversample_turns(rows, 2)] == ["left", "right", "straight", "start", "qa", "left", "right"]
    both = oversample(rows, DataConfig(logs_dir="x", oversample_starts=2, oversample_turns=3))
    assert sorted(r["id"] for r in both) == sorted(["left"] * 3 + ["right"] * 3 + ["straight", "qa"] + ["start"] * 2)
    with pytest.raises(ValueError):
        oversample_turns(rows, 0)


def test_config_refuses_a_bad_factor():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.validate()  # the default (1) is fine
    for key in ("oversample_starts", "oversample_turns"):
        for bad in (0, True):
            setattr(cfg.data, key, bad)
            with pytest.raises(ValueError, match=key):
                cfg.validate()
        setattr(cfg.data, key, 1)


def test_config_refuses_an_unknown_plan_style():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.data.plan_style = "fixed"
    cfg.validate()
    cfg.data.plan_style = "wide"
    with pytest.raises(ValueError, match="plan_style"):
        cfg.validate()
