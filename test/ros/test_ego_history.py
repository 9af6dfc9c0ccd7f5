"""ros.ego_history: a frame set gets the ego state of its own stamp, whatever order the topics arrive in."""

from __future__ import annotations

import pytest

from wamdiff2_ros.ros.ego_history import EgoHistory

MS = 1_000_000
TIMEOUT = 1000 * MS


def test_state_of_the_frames_stamp_not_the_newest():
    history = EgoHistory()
    for k, v in enumerate((3.0, 4.0, 5.0)):
        history.add_accel(k * 50 * MS, 0.5 * k, 0.1)
        history.add_odometry(k * 50 * MS, v, 0.0)
    ego, ok, used = history.at(50 * MS, TIMEOUT)
    assert ok and used == 50 * MS
    assert ego.velocity == (4.0, 0.0) and ego.acceleration == (0.5, 0.1)


def test_waits_for_odometry_and_acceleration_of_the_stamp():
    history = EgoHistory()
    assert history.reached(100 * MS)  # nothing ever came: nothing to wait for
    assert not history.reached(100 * MS, first=True)  # unless the first odometry is waited for (require_ego)
    history.add_accel(50 * MS, 0.0, 0.0)
    history.add_odometry(50 * MS, 3.0, 0.0)
    assert not history.reached(100 * MS)
    history.add_odometry(100 * MS, 3.5, 0.0)  # the odometry beat its acceleration
    assert not history.reached(100 * MS)
    history.add_accel(100 * MS, 1.0, 0.0)
    assert history.reached(100 * MS) and history.reached(100 * MS, first=True)
    assert history.at(100 * MS, TIMEOUT)[0].acceleration == (1.0, 0.0)


def test_without_an_acceleration_topic_odometry_is_differentiated():
    history = EgoHistory(accel_expected=False)
    history.add_odometry(0, 2.0, 0.0)
    history.add_odometry(100 * MS, 3.0, 0.5)
    assert history.reached(100 * MS)
    ego, ok, _ = history.at(100 * MS, TIMEOUT)
    assert ok and ego.acceleration == pytest.approx((10.0, 5.0))


def test_out_of_order_arrival_and_nearest_stamp():
    history = EgoHistory(accel_expected=False)
    history.add_odometry(200 * MS, 6.0, 0.0)
    history.add_odometry(100 * MS, 5.0, 0.0)  # late
    ego, ok, used = history.at(110 * MS, TIMEOUT)
    assert ok and used == 100 * MS and ego.velocity == (5.0, 0.0)
    # differentiated against its predecessor in stamp order, not arrival order: none before it
    assert ego.acceleration == (0.0, 0.0)


def test_state_too_far_from_the_frame_is_none_and_acceleration_is_clipped():
    history = EgoHistory(accel_expected=False)
    history.add_odometry(0, 0.0, 0.0)
    history.add_odometry(20 * MS, 5.0, 0.0)  # 250 m/s^2 differentiated
    assert history.at(20 * MS, TIMEOUT)[0].acceleration == (20.0, 0.0)
    ego, ok, used = history.at(5000 * MS, TIMEOUT)
    assert not ok and used is None and ego.velocity == (0.0, 0.0)
