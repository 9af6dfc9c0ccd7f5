"""FrameSynchronizer: complete sets, slop, out-of-order and stale frames, stopped cameras."""

from __future__ import annotations

from wamdiff2_ros.ros.sync import FrameSynchronizer

S = 1_000_000_000


def make(**kw) -> FrameSynchronizer:
    return FrameSynchronizer(["F", "L"], slop_ns=kw.pop("slop", S // 20), camera_timeout_ns=S, stale_ns=2 * S, **kw)


def test_waits_for_every_camera_then_emits_reference_stamp():
    s = make()
    assert s.add("F", 10 * S, "f", now_ns=0) is None
    out = s.add("L", 10 * S + S // 100, "l", now_ns=1)
    assert out is not None and out.stamp_ns == 10 * S and out.frames == {"F": "f", "L": "l"} and out.missing == ()


def test_frames_outside_slop_do_not_pair():
    s = make()
    s.add("F", 10 * S, "f", now_ns=0)
    assert s.add("L", 10 * S + S // 5, "l", now_ns=1) is None


def test_out_of_order_and_stale_are_counted():
    s = make()
    s.add("F", 10 * S, 1, 0)
    s.add("L", 10 * S, 1, 0)
    assert s.add("F", 9 * S, 1, 1) is None and s.counts["out_of_order"] == 1
    s.add("F", 20 * S, 1, 2)
    assert s.add("L", 15 * S, 1, 3) is None and s.counts["stale"] == 1


def test_stopped_camera_is_left_out_after_timeout():
    s = make()
    s.add("F", 10 * S, 1, 0)
    s.add("L", 10 * S, 1, 0)
    assert s.add("F", 11 * S, 1, S // 2) is None  # L still live: wait
    out = s.add("F", 12 * S, 2, 2 * S)  # L silent for 2 s > timeout
    assert out is not None and out.missing == ("L",) and out.frames == {"F": 2}


def test_camera_never_seen_is_waited_for_until_timeout():
    s = make()
    assert s.add("F", 10 * S, 1, 0) is None
    out = s.add("F", 11 * S, 1, 2 * S)
    assert out is not None and out.missing == ("L",)


def test_emitted_and_skipped_sets_are_counted():
    s = make()
    s.add("F", 10 * S, "f0", 0)
    s.add("F", 10 * S + S // 10, "f1", 1)  # the set at 10 s never completes: L's frame of it is lost
    out = s.add("L", 10 * S + S // 10, "l1", 2)
    assert out is not None and out.frames == {"F": "f1", "L": "l1"}
    assert s.counts["emitted"] == 1 and s.counts["skipped"] == 1
    s.add("F", 10 * S + 2 * S // 10, "f2", 3)
    assert s.add("L", 10 * S + 2 * S // 10, "l2", 4) is not None
    assert s.counts["emitted"] == 2 and s.counts["skipped"] == 1
