"""drive_node's per-task pacing (RateGate) and latency book (TaskBook): pure Python, no ROS."""

from __future__ import annotations

import random

import pytest

from wamdiff2_ros.ros.task_rates import RateGate, TaskBook

MS = 1_000_000


def test_gate_runs_once_per_period_on_the_stamps():
    gate = RateGate()
    assert gate.due(2.0, 0)  # never run
    gate.start(2.0, 1000 * MS)
    assert not gate.due(2.0, 1200 * MS)  # less than half a period on: passed over
    assert gate.due(2.0, 1250 * MS)  # half a period before the next slot (1500 ms)
    gate.start(2.0, 1250 * MS)
    assert gate.slot_ns == 1500 * MS  # an early set takes the slot, so the grid does not move earlier
    assert not gate.due(2.0, 1700 * MS) and gate.due(2.0, 1750 * MS)


def test_rate_zero_turns_the_task_off():
    gate = RateGate()
    assert not gate.due(0.0, 0)
    gate.start(1.0, 0)
    assert not gate.due(0.0, 10**12)


def test_stamps_going_back_start_a_new_grid():
    gate = RateGate()
    gate.start(1.0, 5000 * MS)
    assert gate.due(1.0, 4000 * MS)  # replay restarted
    gate.start(1.0, 4000 * MS)
    assert gate.slot_ns == 4000 * MS
    assert not gate.due(1.0, 4400 * MS) and gate.due(1.0, 4500 * MS)


def _waits(camera_hz: float, rate_hz: float, frames: int = 600) -> tuple[int, list[int]]:
    """Runs and the stamps they ran on, for a camera with 0-30 ms of jitter on every stamp."""
    rng = random.Random(0)
    gate, ran = RateGate(), []
    for k in range(frames):
        stamp = int(k * 1e9 / camera_hz) + rng.randrange(0, 30) * MS
        if gate.due(rate_hz, stamp):
            gate.start(rate_hz, stamp)
            ran.append(stamp)
    return len(ran), ran


def test_equal_rates_run_every_set_and_faster_cameras_keep_the_average():
    """At equal rates no set is passed over (a gate on the last start's time drifted and skipped sets); at a
    faster camera the average rate is the task's."""
    runs, _ = _waits(10.0, 10.0)
    assert runs == 600
    runs, stamps = _waits(30.0, 10.0, frames=900)  # 30 s
    assert abs(runs - 300) <= 2
    assert min(b - a for a, b in zip(stamps, stamps[1:], strict=False)) >= 50 * MS
    runs, _ = _waits(10.0, 4.0, frames=600)  # 60 s at 4 Hz
    assert abs(runs - 240) <= 2


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
