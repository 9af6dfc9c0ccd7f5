"""The driving agent asks the rationale question the shipped checkpoints were trained on."""

from wamdiff2_ros.agent import DEFAULT_QUESTION, EgoMotion, constant_velocity_trajectory
from wamdiff2_ros.data.samples import QUESTIONS


def test_default_rationale_question_is_the_trained_one():
    assert DEFAULT_QUESTION == QUESTIONS["next_action"]


def test_constant_velocity_fallback_keeps_speed_and_ignores_nan():
    plan = constant_velocity_trajectory(EgoMotion((4.0, 0.0), (0.0, 0.0)))
    assert plan.shape == (8, 3) and plan[-1, 0] == 16.0 and plan[:, 1].max() == 0.0
    still = constant_velocity_trajectory(EgoMotion((float("nan"), 0.0), (0.0, 0.0)))
    assert (still == 0.0).all()
