"""Planning metrics against hand-computed cases: L2 conventions, collisions, NAVSIM comfort and PDM terms."""

import numpy as np
import pytest

from wamdiff2_ros.evaluation.kinematics import comfort_terms, comfort_violations, resample_plan, savgol
from wamdiff2_ros.evaluation.pdm import pdm_terms
from wamdiff2_ros.evaluation.planning import collision_metrics, l2_metrics
from wamdiff2_ros.evaluation.scene import AgentBoxes, SceneGroundTruth
from wamdiff2_ros.evaluation.scoring import aggregate, score_scene, score_scenes

T = np.arange(1, 9) * 0.5


def straight(speed=5.0):
    return np.column_stack([speed * T, np.zeros(8), np.zeros(8)])


def test_offset_by_one_metre_scores_one_everywhere():
    gt = straight()
    metrics = l2_metrics(gt + [0.0, 1.0, 0.0], gt)
    for t in (1, 2, 3, 4):
        assert metrics[f"l2_at_{t}s"] == pytest.approx(1.0)
        assert metrics[f"l2_upto_{t}s"] == pytest.approx(1.0)
    assert metrics["l2_avg"] == metrics["l2_at_avg"] == pytest.approx(1.0)
    assert metrics["l2_upto_avg"] == pytest.approx(1.0)


def test_conventions_differ_on_growing_error():
    gt = straight()
    pred = gt.copy()
    pred[:, 1] = np.arange(1, 9)  # error k at waypoint k
    m = l2_metrics(pred, gt)
    assert m["l2_at_1s"] == pytest.approx(2.0)  # waypoint 2
    assert m["l2_upto_1s"] == pytest.approx(1.5)  # mean(1, 2)
    assert m["l2_at_4s"] == pytest.approx(8.0)
    assert m["l2_upto_4s"] == pytest.approx(4.5)
    assert m["l2_at_avg"] == pytest.approx((2 + 4 + 6 + 8) / 4)
    assert m["l2_upto_avg"] == pytest.approx((1.5 + 2.5 + 3.5 + 4.5) / 4)


def test_trajectory_through_box_collides_and_beside_it_does_not():
    parked = AgentBoxes.constant_velocity(np.array([[12.0, 0.0, 0.0, 4.5, 2.0, 1.5, 0.0]]), names=["vehicle"])
    hit = collision_metrics(straight(), parked)
    assert hit["collision"] == 1.0 and hit["collision_1s"] == 0.0 and hit["collision_4s"] == 1.0
    beside = straight()
    beside[:, 1] = 4.0  # 4 m to the left: boxes 2.3 m and 2 m wide do not touch
    assert collision_metrics(beside, parked)["collision"] == 0.0
    scene = SceneGroundTruth("s", straight(), agents=parked, ego_velocity=[5.0, 0.0])
    terms = pdm_terms(straight(), scene)
    assert terms["nc"] == 0.0 and terms["ttc"] == 0.0 and terms["pdms_without_map_terms"] == 0.0
    assert "pdms" not in terms  # no map, no PDMS


def test_static_object_collision_scores_half():
    cone = AgentBoxes.constant_velocity(np.array([[12.0, 0.0, 0.0, 0.5, 0.5, 1.0, 0.0]]), names=["traffic_cone"])
    terms = pdm_terms(straight(), SceneGroundTruth("s", straight(), agents=cone, ego_velocity=[5.0, 0.0]))
    assert terms["nc"] == 0.5


def test_rear_end_by_faster_agent_is_not_at_fault():
    follower = AgentBoxes.constant_velocity(
        np.array([[-6.0, 0.0, 0.0, 4.5, 2.0, 1.5, 0.0]]), velocities=np.array([[9.0, 0.0]]), names=["vehicle"]
    )
    terms = pdm_terms(straight(), SceneGroundTruth("s", straight(), agents=follower, ego_velocity=[5.0, 0.0]))
    assert terms["nc"] == 1.0


def test_comfort_bounds_trip_where_they_should():
    ok = resample_plan(straight(10.0), initial_velocity=[10.0, 0.0])
    assert comfort_violations(comfort_terms(ok)) == []
    # gentle, constant braking at 1 m/s^2 from 10 m/s is comfortable
    gentle = np.column_stack([10 * T - 0.5 * T**2, np.zeros(8)])
    assert comfort_violations(comfort_terms(resample_plan(gentle, initial_velocity=[10.0, 0.0]))) == []
    # sustained braking at 6 m/s^2 from 20 m/s breaks the -4.05 m/s^2 bound
    brake = np.column_stack([20 * T - 3.0 * T**2, np.zeros(8)])
    assert "lon_acceleration_min" in comfort_violations(comfort_terms(resample_plan(brake, initial_velocity=[20, 0])))
    # accelerating at 4 m/s^2 breaks the 2.40 m/s^2 bound
    push = np.column_stack([5 * T + 2.0 * T**2, np.zeros(8)])
    assert "lon_acceleration_max" in comfort_violations(comfort_terms(resample_plan(push, initial_velocity=[5, 0])))
    # a 1.2 rad heading swing within half a second breaks the yaw-rate bound
    swing = straight().copy()
    swing[4:, 2] = 1.2
    assert "yaw_rate" in comfort_violations(comfort_terms(resample_plan(swing, initial_velocity=[5, 0])))
    # a steady 0.3 rad/s turn does not
    yaw = 0.3 * T
    turn = np.column_stack([5 * np.sin(yaw) / 0.3, 5 * (1 - np.cos(yaw)) / 0.3, yaw])
    assert comfort_violations(comfort_terms(resample_plan(turn, initial_velocity=[5, 0]))) == []


def test_savgol_recovers_polynomial_derivatives():
    x = np.arange(20) * 0.1
    y = 3 * x**2 - x + 2
    assert np.allclose(savgol(y, 7, 2), y)
    assert np.allclose(savgol(y, 7, 2, deriv=1, delta=0.1), 6 * x - 1)
    assert np.allclose(savgol(y, 5, 3, deriv=2, delta=0.1), 6.0)


class StraightRoad:
    """A 7 m wide road along +x in the map frame whose lane runs in +x (y < 0 lane runs -x)."""

    def is_drivable(self, x, y):
        return np.abs(y) <= 7.0

    def lane_heading(self, x, y):
        return np.where(y >= 0, 0.0, np.pi)


def test_map_terms_and_pdms():
    road = StraightRoad()
    pose = np.array([100.0, 2.0, 0.0])  # ego in the +x lane
    scene = SceneGroundTruth("s", straight(), ego_velocity=[5.0, 0.0], ego_pose_global=pose, map=road)
    good = pdm_terms(straight(), scene)
    assert good["dac"] == 1.0 and good["ddc"] == 1.0 and good["pdms"] == pytest.approx(1.0)
    off = straight().copy()
    off[:, 1] = np.linspace(1, 12, 8)  # drifts off the road to the left
    assert pdm_terms(off, scene)["dac"] == 0.0 and pdm_terms(off, scene)["pdms"] == 0.0
    wrong_way = straight().copy()
    wrong_way[:, 1] = -5.0  # in the oncoming lane for the whole horizon
    assert pdm_terms(wrong_way, scene)["ddc"] == 0.0


def test_ego_progress_against_human():
    scene = SceneGroundTruth("s", straight(), ego_velocity=[5.0, 0.0])
    assert pdm_terms(straight(), scene)["ep"] == pytest.approx(1.0)
    half = pdm_terms(straight(2.5), scene)["ep"]
    assert half == pytest.approx(0.5, abs=0.05)


def test_score_scenes_and_aggregate():
    scenes = [SceneGroundTruth(f"s{i}", straight()) for i in range(3)]
    pairs = [(straight() + [0, 1, 0], s) for s in scenes] + [(np.zeros((3, 2)), scenes[0])]
    results = score_scenes(pairs, processes=1, progress=False)
    assert "error" in results[-1]
    summary = aggregate(results)
    assert summary["scenes_scored"] == 3 and summary["l2_avg"] == pytest.approx(1.0)
    assert summary["collision_rate"] == 0.0
    with pytest.raises(ValueError, match="non-finite"):
        score_scene(np.full((8, 2), np.nan), scenes[0])


def test_parallel_scoring_matches_serial():
    scenes = [SceneGroundTruth(f"s{i}", straight(4.0 + 0.1 * i)) for i in range(20)]
    pairs = [(straight(4.0) + [0.0, 0.1 * i, 0.0], s) for i, s in enumerate(scenes)]
    serial = score_scenes(pairs, processes=1, progress=False)
    parallel = score_scenes(pairs, processes=2, progress=False)
    assert [r["token"] for r in parallel] == [r["token"] for r in serial]
    assert [r["l2_avg"] for r in parallel] == pytest.approx([r["l2_avg"] for r in serial])
    assert [r["ep"] for r in parallel] == pytest.approx([r["ep"] for r in serial])
