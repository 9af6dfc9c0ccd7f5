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


def _assembled(text: str, reject_backwards: bool):
    """What DrivingAgent.assemble drives for a planning answer ``text`` (no model needed: nothing is decoded)."""
    from wamdiff2_ros.agent import DrivingAgent, FrameContext, TaskOutput
    from wamdiff2_ros.decoding.config import DecodeConfig, DecodeStats

    agent = DrivingAgent(object(), DecodeConfig(), reject_backwards=reject_backwards)
    value, error = parse_task_answer("planning", text)
    stats = DecodeStats(engine="fast", block_size=32, prompt_tokens=1, generated_tokens=1, forwards=1,
                        tokens_per_forward=1.0, prefill_ms=0.0, decode_ms=1.0, decode_tokens_per_second=1.0)
    ctx = FrameContext(("CAM_F0",), EGO, "straight", {}, {})
    ctx.outputs["planning"] = TaskOutput("planning", "q", text, value, error, 0.9, stats)
    return agent.assemble(ctx)


def test_the_backwards_gate_drives_the_fallback_for_a_plan_that_lost_a_digit():
    lost = WAYPOINTS.copy()
    lost[6, 0] = 1.2  # "12.00" decoded as "1.20": parses, but the car would have to reverse
    assert codecs.plan_goes_backwards(lost) and not codecs.plan_goes_backwards(WAYPOINTS)
    text = codecs.encode_planning(lost)
    ungated = _assembled(text, reject_backwards=False)
    assert ungated.valid and ungated.source == "model"  # off by default: every parsed plan is driven
    gated = _assembled(text, reject_backwards=True)
    assert not gated.valid and gated.source == "fallback:plan_goes_backwards"
    np.testing.assert_array_equal(gated.trajectory, constant_velocity_trajectory(EGO))
    fine = _assembled(codecs.encode_planning(WAYPOINTS), reject_backwards=True)
    assert fine.valid and fine.source == "model"


def test_a_residual_answer_is_driven_as_constant_velocity_plus_the_residual():
    """A ``cv1`` checkpoint's answer is the departure from the constant-velocity plan of the ego's velocity."""
    text = codecs.encode_planning(WAYPOINTS, "cv1", EGO.velocity)
    trajectory, fell_back = plan_or_fallback(text, EGO, plan_style="cv1")
    assert not fell_back
    np.testing.assert_allclose(trajectory[:, :2], WAYPOINTS, atol=0.05 + 1e-9)
    absolute, _ = plan_or_fallback(text, EGO)  # read as absolute waypoints it is another plan
    assert np.abs(absolute[:, :2] - WAYPOINTS).max() > 10.0
    still = EgoMotion((float("nan"), 0.0), (0.0, 0.0))  # no finite velocity: the residual is the plan
    trajectory, _ = plan_or_fallback(text, still, plan_style="cv1")
    np.testing.assert_allclose(trajectory[:, :2], codecs.parse_planning(text).waypoints)


def test_the_agent_answers_in_its_checkpoints_plan_style(tmp_path):
    from types import SimpleNamespace

    from wamdiff2_ros.agent import DrivingAgent
    from wamdiff2_ros.decoding.config import DecodeConfig
    from wamdiff2_ros.model.checkpoints import write_plan_style

    config = DecodeConfig(block_size=32)
    assert DrivingAgent(SimpleNamespace(path=tmp_path), config).plan_style == "plain"
    write_plan_style(tmp_path, "cv1")
    assert DrivingAgent(SimpleNamespace(path=tmp_path), config).plan_style == "cv1"
