"""Closed-loop metrics on hand-made ego trajectories: completion, collisions and fault, red lights, off-road,
stuck time, deviation, timeout, comfort and the driving score."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wamdiff2_ros.data.world import EGO_LENGTH, EGO_REAR_AXLE_TO_CENTER, AgentBox, LanePath, scripted_road_map
from wamdiff2_ros.evaluation.closed_loop.comfort import comfort_metrics
from wamdiff2_ros.evaluation.closed_loop.monitor import EgoSample, MonitorLimits, RouteMonitor
from wamdiff2_ros.evaluation.closed_loop.scoring import PENALTIES, driving_score, infraction_penalty

FRONT = EGO_REAR_AXLE_TO_CENTER + EGO_LENGTH / 2
DT = 0.1


@pytest.fixture(scope="module")
def road():
    """A straight route through one intersection (no buildings), 80 m before and after."""
    road_map = scripted_road_map(np.random.default_rng(0), [("straight", 80.0), ("intersection", "straight"),
                                                            ("straight", 80.0)], buildings=False)  # fmt: skip
    inter = road_map.intersections[0]
    inter.green_s, inter.yellow_s, inter.all_red_s, inter.offset_s = (20.0, 20.0), 3.0, 2.0, 0.0
    return road_map


def _monitor(road_map, timeout=120.0, max_stuck=25.0) -> RouteMonitor:
    path = LanePath(road_map, road_map.route)
    return RouteMonitor(road_map, road_map.route, 10.0, path.length - 20.0, MonitorLimits(timeout, max_stuck))


def _pose(monitor: RouteMonitor, s: float, lateral: float = 0.0) -> tuple[float, float, float]:
    x, y, h = monitor.path.poly.pose_at(s)
    return x - lateral * math.sin(h), y + lateral * math.cos(h), h


def _drive(monitor, t0, s0, s1, speed, agents=(), lateral=0.0):
    """Feed samples from s0 to s1 at ``speed``; returns the time and arc length reached."""
    t, s = t0, s0
    while s < s1 and not monitor.done:
        x, y, h = _pose(monitor, s, lateral)
        monitor.update(EgoSample(t, x, y, h, speed, 0.0), agents(t, s) if callable(agents) else agents)
        t += DT
        s += speed * DT
    return t, s


def _box(name, x, y, yaw, speed=0.0, token="a1", length=4.5, width=1.9) -> AgentBox:
    return AgentBox(token, name, x, y, 0.8, length, width, 1.6, yaw, speed * math.cos(yaw), speed * math.sin(yaw), speed)


def test_clean_drive_completes_with_full_score(road):
    road.intersections[0].offset_s = 0.0  # route axis green for the first 20 s
    m = _monitor(road)
    _drive(m, 0.0, 10.0, m.goal_s + 1.0, 10.0)
    r = m.finish()
    assert r["end_reason"] == "completed" and r["completed"] and r["clean"]
    assert r["route_completion"] == 1.0 and r["driving_score"] == 1.0
    assert r["time_to_complete_s"] == pytest.approx((m.goal_s - 10.0) / 10.0, abs=0.2)
    assert r["distance_m"] == pytest.approx(m.goal_s - 10.0, abs=1.5)
    assert r["infractions"] == dict.fromkeys(PENALTIES, 0) and r["stuck_s"] == 0.0


def test_red_light_counted_once_and_penalised(road):
    inter = road.intersections[0]
    inter.offset_s = 25.0  # t in [0, 15): route axis red
    assert inter.signal_state(0, 3.0) == "red"
    m = _monitor(road)
    _drive(m, 0.0, 10.0, m.goal_s + 1.0, 12.0)
    r = m.finish()
    assert r["red_light_violations"] == 1 and r["infractions"]["red_light"] == 1
    assert r["driving_score"] == pytest.approx(PENALTIES["red_light"])
    red = [e for e in m.events if e.kind == "red_light"]
    stop_s = m.path.stops[0][0]
    sx, sy, _ = m.path.poly.pose_at(stop_s)
    assert math.hypot(red[0].x - sx, red[0].y - sy) < 0.5  # marked at the stop line
    inter.offset_s = 0.0


def test_waiting_at_red_is_not_stuck_but_standing_on_green_is(road):
    inter = road.intersections[0]
    stop_s = LanePath(road, road.route).stops[0][0]
    wait_s = stop_s - FRONT - 2.0
    inter.offset_s = 25.0  # red for 15 s from t = 0
    m = _monitor(road)
    x, y, h = _pose(m, wait_s)
    for k in range(100):  # 10 s stopped at a red light
        m.update(EgoSample(k * DT, x, y, h, 0.0, 0.0))
    assert m.stuck_s == 0.0
    inter.offset_s = 0.0  # green from t = 0
    m = _monitor(road, max_stuck=5.0)
    for k in range(100):
        m.update(EgoSample(k * DT, x, y, h, 0.0, 0.0))
    r = m.finish()
    assert r["end_reason"] == "blocked" and r["stuck_s"] == pytest.approx(5.0, abs=0.15)
    assert r["route_completion"] < 0.5 and r["driving_score"] == r["route_completion"]
    assert [e.kind for e in m.events] == ["stuck"]


def test_standing_behind_a_stopped_vehicle_is_not_stuck(road):
    road.intersections[0].offset_s = 0.0
    m = _monitor(road)
    x, y, h = _pose(m, 30.0)
    lx, ly, lh = _pose(m, 30.0 + FRONT + 6.0)
    lead = [_box("vehicle", lx, ly, lh)]
    for k in range(60):
        m.update(EgoSample(k * DT, x, y, h, 0.0, 0.0), lead)
    assert m.stuck_s == 0.0


def test_collisions_are_counted_once_and_attributed(road):
    road.intersections[0].offset_s = 0.0
    # moving ego runs into a standing vehicle: at fault, vehicle
    m = _monitor(road)
    sx, sy, sh = _pose(m, 40.0)
    parked = [_box("vehicle", sx, sy, sh, 0.0, "parked")]
    _drive(m, 0.0, 10.0, 50.0, 8.0, parked)
    events = [e for e in m.events if e.kind == "collision"]
    assert len(events) == 1 and events[0].detail["at_fault"] and events[0].detail["with"] == "vehicle"
    assert events[0].detail["why"] == "ego front bumper"
    r = m.finish("aborted")
    assert r["infractions"]["collision_vehicle"] == 1 and r["infraction_penalty"] == pytest.approx(0.6)
    # standing ego rear-ended by a moving vehicle: not at fault
    m = _monitor(road)
    x, y, h = _pose(m, 40.0)

    def rear(t, s):
        bx, by, bh = _pose(m, 40.0 - 6.0 + 4.0 * t)
        return [_box("vehicle", bx, by, bh, 4.0, "follower")]

    for k in range(20):
        m.update(EgoSample(k * DT, x, y, h, 0.0, 0.0), rear(k * DT, 0.0))
    events = [e for e in m.events if e.kind == "collision"]
    assert len(events) == 1 and not events[0].detail["at_fault"] and events[0].detail["why"] == "ego stopped"
    assert m.finish()["collisions_not_at_fault"] == 1 and m.finish()["infraction_penalty"] == 1.0
    # moving ego hits a pedestrian: at fault, pedestrian
    m = _monitor(road)
    px, py, ph = _pose(m, 40.0)
    ped = [_box("pedestrian", px, py, ph + math.pi / 2, 1.2, "ped", 0.5, 0.6)]
    _drive(m, 0.0, 10.0, 50.0, 8.0, ped)
    r = m.finish("aborted")
    assert r["infractions"]["collision_pedestrian"] == 1
    assert r["driving_score"] == pytest.approx(r["route_completion_on_road"] * 0.5, abs=1e-3)
    # a moving vehicle side-swipes the ego in its lane: not the ego's fault
    m = _monitor(road)

    def swipe(t, s):
        bx, by, bh = _pose(m, s + 1.0, 1.9)
        return [_box("vehicle", bx, by, bh, 8.0, "swiper")]

    _drive(m, 0.0, 10.0, 20.0, 8.0, swipe)
    event = next(e for e in m.events if e.kind == "collision")
    assert not event.detail["at_fault"] and event.detail["why"] == "side contact, ego in its lane"


def test_static_collision_with_a_building():
    road_map = scripted_road_map(np.random.default_rng(3), [("straight", 120.0)], buildings=True)
    b = road_map.buildings[0]
    m = RouteMonitor(road_map, road_map.route, 5.0, 100.0)
    m.update(EgoSample(0.0, b.x - EGO_REAR_AXLE_TO_CENTER * math.cos(b.yaw),
                       b.y - EGO_REAR_AXLE_TO_CENTER * math.sin(b.yaw), b.yaw, 3.0, 0.0))  # fmt: skip
    r = m.finish("aborted")
    assert r["infractions"]["collision_static"] == 1 and r["off_road_events"] == 1


def test_off_road_distance_reduces_completion(road):
    road.intersections[0].offset_s = 0.0
    m = _monitor(road)
    t, s = _drive(m, 0.0, 10.0, 40.0, 10.0)
    t, s = _drive(m, t, s, 60.0, 10.0, lateral=-4.0)  # right wheels on the sidewalk for 20 m
    _drive(m, t, s, m.goal_s + 1.0, 10.0)
    r = m.finish()
    assert r["off_road_events"] == 1 and 19.0 <= r["off_road_m"] <= 24.5  # 20 m plus the sideways jump
    length = m.goal_s - m.start_s
    assert r["route_completion"] == 1.0
    assert r["route_completion_on_road"] == pytest.approx(1.0 - r["off_road_m"] / length, abs=1e-3)
    assert r["driving_score"] == r["route_completion_on_road"] and not r["clean"]


def test_route_deviation_and_timeout_end_the_route(road):
    road.intersections[0].offset_s = 0.0
    m = _monitor(road)
    t, s = _drive(m, 0.0, 10.0, 30.0, 10.0)
    _drive(m, t, s, 60.0, 10.0, lateral=-9.0)
    assert m.finish()["end_reason"] == "route_deviation"
    m = _monitor(road, timeout=3.0)
    _drive(m, 0.0, 10.0, m.goal_s, 1.0)
    r = m.finish()
    assert r["end_reason"] == "timeout" and 0.0 < r["route_completion"] < 0.05 and not r["completed"]


def test_bad_input_is_refused(road):
    m = _monitor(road)
    with pytest.raises(ValueError, match="finite"):
        m.update(EgoSample(0.0, float("nan"), 0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="start"):
        RouteMonitor(road, road.route, 50.0, 10.0)


def test_comfort_on_known_signals():
    t = np.arange(0.0, 20.0, 0.05)
    calm = comfort_metrics(t, np.full_like(t, 10.0), np.zeros_like(t))
    assert calm["lon_jerk_abs_max"] < 1e-6 and calm["lat_accel_abs_max"] < 1e-6 and calm["uncomfortable_share"] == 0
    turning = comfort_metrics(t, np.full_like(t, 10.0), np.full_like(t, 0.3))
    assert turning["lat_accel_abs_p95"] == pytest.approx(3.0, abs=1e-3)
    braking = np.clip(10.0 - 8.0 * np.clip(t - 5.0, 0.0, None), 0.0, None)  # 8 m/s^2 stop
    hard = comfort_metrics(t, braking, np.zeros_like(t))
    assert hard["lon_accel_min"] < -6.0 and hard["uncomfortable_share"] > 0.0 and hard["lon_jerk_abs_max"] > 10.0
    assert comfort_metrics(t[:3], t[:3], t[:3]) == {"samples": 3}


def test_driving_score_coefficients():
    assert PENALTIES == {"collision_pedestrian": 0.5, "collision_vehicle": 0.6, "collision_static": 0.65,
                         "red_light": 0.7}  # fmt: skip
    score, penalty = driving_score(0.8, {"collision_vehicle": 2, "red_light": 1})
    assert penalty == pytest.approx(0.6 * 0.6 * 0.7) and score == pytest.approx(0.8 * penalty)
    assert infraction_penalty({}) == 1.0
    with pytest.raises(ValueError, match="unknown"):
        infraction_penalty({"speeding": 1})
    with pytest.raises(ValueError, match="completion"):
        driving_score(1.5, {})


def test_paired_driving_score_differences_over_shared_routes():
    from wamdiff2_ros.evaluation.closed_loop.report import paired_ds

    results = [{"route": f"r{i}", "policy": "student (tiny)", "driving_score": 0.5 + 0.1 * (i % 2)} for i in range(6)]
    results += [{"route": f"r{i}", "policy": "constant-velocity", "driving_score": 0.4} for i in range(5)]
    p = paired_ds(results, "student", "constant-velocity", n=2000)
    assert p["routes"] == 5 and p["wins"] == 5 and p["losses"] == 0  # r5 has no baseline run
    assert abs(p["mean"] - 0.14) < 1e-9 and 0.099 <= p["low"] <= p["mean"] <= p["high"] <= 0.201
    assert paired_ds(results, "student", "ar") is None
