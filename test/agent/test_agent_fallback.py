"""The one parse-then-fallback rule: what the agent drives for a planning answer text."""

import numpy as np

from wamdiff2_ros.agent import EgoMotion, constant_velocity_trajectory, parse_task_answer, plan_or_fallback
from wamdiff2_ros.model import codecs

EGO = EgoMotion((5.0, 0.5), (0.0, 0.0))
WAYPOINTS = np.array([[2.0 * (i + 1), 0.1 * i] for i in range(8)])


def test_a_parsed_answer_is_driven_with_headings():
    trajectory, fell_back = plan_or_fallback(codecs.encode_planning(WAYPOINTS), EGO)
    assert not fell_back and trajectory.shape == (8, 3)
    np.testing.assert_allclose(trajectory[:, :2], WAYPOINTS, atol=1e-2)
    np.testing.assert_allclose(trajectory[:, 2], codecs.waypoint_headings(trajectory[:, :2]))


def test_unparsable_or_cut_off_answers_fall_back_to_constant_velocity():
    fallback = constant_velocity_trajectory(EGO)
    for text, finished in (("turn left, probably", True), (codecs.encode_planning(WAYPOINTS), False), ("", True)):
        trajectory, fell_back = plan_or_fallback(text, EGO, finished=finished)
        assert fell_back
        np.testing.assert_array_equal(trajectory, fallback)


def test_parse_task_answer_gives_a_value_or_a_reason():
    value, error = parse_task_answer("planning", codecs.encode_planning(WAYPOINTS))
    assert error is None and len(value.waypoints) == 8
    value, error = parse_task_answer("planning", codecs.encode_planning(WAYPOINTS), finished=False, max_new_tokens=7)
    assert value is None and error == "no end token within max_new_tokens=7"
    value, error = parse_task_answer("understanding", "")
    assert value is None and error
