"""drive_node's per-task pacing (RateGate) and latency book (TaskBook): pure Python, no ROS."""

from __future__ import annotations

import pytest

from wamdiff2_ros.ros.task_rates import RateGate, TaskBook

MS = 1_000_000


def test_gate_waits_one_period_on_the_node_clock():
    gate = RateGate()
    assert gate.due(2.0, 0, 0)  # never started
    gate.start(1000 * MS, 0)
    assert not gate.due(2.0, 1400 * MS, 1 * MS)
    assert gate.due(2.0, 1500 * MS, 2 * MS)
    assert gate.wait_s(2.0, 1495 * MS) == pytest.approx(0.005)


def test_rate_zero_turns_the_task_off():
    gate = RateGate()
    assert not gate.due(0.0, 0, 0)
    gate.start(0, 0)
    assert not gate.due(0.0, 10**12, 10**12)


def test_clock_jumping_back_or_standing_still_holds_nothing_up():
    gate = RateGate()
    gate.start(5000 * MS, 0)
    assert gate.due(1.0, 4000 * MS, 1 * MS)  # replay restarted: the clock went back
    gate.start(5000 * MS, 0)
    assert not gate.due(1.0, 5100 * MS, 10 * MS)
    assert not gate.due(1.0, 5100 * MS, 900 * MS)  # paused /clock, less than a period of wall time
    assert gate.due(1.0, 5100 * MS, 1200 * MS)  # paused for more than a period of wall time


def test_book_percentiles_and_output_rate():
    book = TaskBook()
    assert book.percentiles() == {} and book.rate_hz(0) == 0.0
    for i in range(11):
        book.add(100.0 + i, i * 200 * MS)  # 5 Hz
    assert book.percentiles()["p50"] == pytest.approx(105.0)
    assert book.rate_hz(2000 * MS) == pytest.approx(5.0)
    assert book.rate_hz(60_000 * MS) == 0.0  # nothing in the last 5 s


def test_book_stage_medians():
    book = TaskBook()
    assert book.stage_medians() == {}
    book.add(50.0, 0)  # an output without stage marks leaves the stages alone
    for i, wait in enumerate((1.0, 2.0, 30.0)):
        book.add(100.0, i * MS, {"wait": wait, "prepare": 10.0, "decode": 60.0 + i, "publish": 0.5})
    medians = book.stage_medians()
    assert medians == {"wait": 2.0, "prepare": 10.0, "decode": 61.0, "publish": 0.5}
