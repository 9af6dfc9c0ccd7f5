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


def test_a_set_completed_after_the_next_reference_frame_is_still_emitted():
    """A busy receiver takes queued callbacks camera by camera: the reference camera's next frame can come
    before another camera's frame of the current set; that set must not be lost."""
    s = make()
    assert s.add("F", 10 * S, "f10", 0) is None
    assert s.add("F", 10 * S + S // 10, "f10.1", 1) is None  # the reference's next frame overtakes L's
    out = s.add("L", 10 * S, "l10", 2)
    assert out is not None and out.stamp_ns == 10 * S and out.frames == {"F": "f10", "L": "l10"}
    out = s.add("L", 10 * S + S // 10, "l10.1", 3)
    assert out is not None and out.stamp_ns == 10 * S + S // 10 and out.frames == {"F": "f10.1", "L": "l10.1"}
    assert s.counts["emitted"] == 2 and s.counts["skipped"] == 0


def test_newest_complete_set_wins_and_older_reference_frames_are_counted_as_skipped():
    s = make()
    for k in range(3):
        assert s.add("F", 10 * S + k * S // 10, f"f{k}", k) is None
    out = s.add("L", 10 * S + 2 * S // 10, "l2", 3)  # only the newest set is complete
    assert out is not None and out.frames == {"F": "f2", "L": "l2"}
    assert s.counts["skipped"] == 2 and s.counts["emitted"] == 1
    assert s.add("L", 10 * S + S // 10, "l1", 4) is None and s.counts["out_of_order"] == 1  # older than emitted


def test_history_is_bounded():
    s = make(history=2)
    for k in range(5):
        s.add("F", 10 * S + k * S // 10, k, k)
    assert [stamp for stamp, _ in s.frames["F"]] == [10 * S + 3 * S // 10, 10 * S + 4 * S // 10]
    assert s.add("L", 10 * S, "old", 5) is None  # its reference frame is gone: no set
