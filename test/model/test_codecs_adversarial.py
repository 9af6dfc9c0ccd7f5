"""Adversarial property tests for the answer parsers: edited, huge and float-formatted outputs."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wamdiff2_ros.model import codecs as c
from wamdiff2_ros.model import conversation, prompts

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

REFERENCE = "2.26,-0.17,4.43,-0.70,6.52,-1.55,8.48,-2.64,10.28,-3.88,11.99,-5.25,13.76,-6.83,15.59,-8.59"
PERCEPTION = "vehicle(12.30,-1.50,0.80,4.50,1.90,1.60,0.05) CAM_F0 [412,380,596,540]; pedestrian(5.00,2.00,0.00,0.50,0.50,1.80,2.78)"

edit = st.tuples(
    st.sampled_from(["insert", "delete", "replace"]),
    st.integers(min_value=0, max_value=10_000),
    st.text(min_size=1, max_size=3),
)


def _apply(text: str, edits: list[tuple[str, int, str]]) -> str:
    for kind, position, chunk in edits:
        at = position % (len(text) + 1)
        if kind == "insert":
            text = text[:at] + chunk + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + len(chunk) :]
        else:
            text = text[:at] + chunk + text[at + len(chunk) :]
    return text


@SETTINGS
@given(st.lists(edit, min_size=1, max_size=4))
def test_edited_planning_answers_parse_or_fail_cleanly(edits: list[tuple[str, int, str]]) -> None:
    result = c.parse_planning(_apply(REFERENCE, edits))
    if isinstance(result, c.PlanningAnswer):
        assert result.waypoints.shape == (8, 2)
        assert np.all(np.isfinite(result.waypoints))
        assert np.all(np.abs(result.waypoints) <= c.MAX_ABS_POSITION_M)
    else:
        assert isinstance(result, c.ParseError) and result.reason and result.task == "planning"


@SETTINGS
@given(st.lists(edit, min_size=1, max_size=4))
def test_edited_perception_answers_parse_or_fail_cleanly(edits: list[tuple[str, int, str]]) -> None:
    result = c.parse_perception(_apply(PERCEPTION, edits))
    if isinstance(result, list):
        assert len(result) <= 4
        for box in result:
            assert box.label in prompts.LABELS
            assert max(abs(box.x), abs(box.y), abs(box.z)) <= c.MAX_ABS_POSITION_M
            assert 0 <= min(box.length, box.width, box.height)
            assert abs(box.yaw) <= math.pi + 0.01
            assert box.camera in ("", *prompts.CAMERAS)
            if box.bbox is not None:
                assert box.bbox[0] <= box.bbox[2] and box.bbox[1] <= box.bbox[3]
        # whatever parsed re-encodes (2 decimals) and parses back to the same boxes within rounding;
        # a second encode/parse cycle is then exact
        again = c.parse_perception(c.encode_perception(result))
        assert isinstance(again, list) and len(again) == len(result)
        for a, b in zip(again, result, strict=True):
            assert a.label == b.label and a.camera == b.camera
            fields = (a.x - b.x, a.y - b.y, a.z - b.z, a.length - b.length, a.width - b.width, a.height - b.height)
            assert max(abs(d) for d in fields) <= 0.005 + 1e-9
            assert abs(math.remainder(a.yaw - b.yaw, 2 * math.pi)) <= 0.005 + 1e-9
        assert c.parse_perception(c.encode_perception(again)) == again
    else:
        assert isinstance(result, c.ParseError) and result.reason and result.task == "perception"


@SETTINGS
@given(st.lists(st.floats(), min_size=16, max_size=16))
def test_planning_from_python_float_text(values: list[float]) -> None:
    """repr() of any float: accepted exactly when it is finite, in range and not in exponent form."""
    text = ",".join(repr(v) for v in values)
    result = c.parse_planning(text)
    acceptable = all(math.isfinite(v) and abs(v) <= c.MAX_ABS_POSITION_M and "e" not in repr(v) for v in values)
    if acceptable:
        assert isinstance(result, c.PlanningAnswer), result
        assert result.waypoints.reshape(-1).tolist() == values
    else:
        assert isinstance(result, c.ParseError)


@SETTINGS
@given(st.integers(min_value=15, max_value=17), st.integers(min_value=0, max_value=2))
def test_planning_huge_digit_strings(count: int, digits_power: int) -> None:
    big = "9" * (10 ** (digits_power + 1))  # 10, 100, 1000 digits
    text = ",".join([big] + ["1.00"] * (count - 1))
    result = c.parse_planning(text)
    assert isinstance(result, c.ParseError)


@SETTINGS
@given(st.text(min_size=1, max_size=20), st.integers(min_value=1_000, max_value=5_000))
def test_huge_repeated_outputs_are_rejected(chunk: str, repeats: int) -> None:
    text = chunk * repeats
    for task in c.TASKS:
        result = c.parse_answer(task, text)
        if isinstance(result, c.ParseError):
            assert len(result.text) <= 1000
        else:  # only short chunks can fit the understanding limit
            assert task == "understanding" and len(result) <= c.MAX_UNDERSTANDING_CHARS


def test_parse_error_keeps_a_bounded_copy_of_the_text() -> None:
    text = "x" * 100_000
    result = c.parse_understanding(text)
    assert isinstance(result, c.ParseError)
    assert result.text == "x" * 1000
    assert str(result).startswith("understanding: ")


@SETTINGS
@given(
    st.lists(st.floats(min_value=-150, max_value=150), min_size=16, max_size=16),
    st.sampled_from(prompts.DRIVING_COMMANDS),
    st.lists(st.sampled_from(prompts.CAMERAS), min_size=1, max_size=8, unique=True),
    st.integers(min_value=1, max_value=3),
)
def test_conversation_json_round_trip(values: list[float], command: str, cameras: list[str], frames: int) -> None:
    num_images = frames * len(cameras)
    question = prompts.planning_question(command, (values[0], values[1]), (values[2], values[3]), num_images, cameras)
    answer = c.encode_planning(np.asarray(values).reshape(8, 2))
    images = [f"sensor_blobs/{cam}/{i}.jpg" for cam in cameras for i in range(frames)]
    conv = conversation.make_conversation("navsim", "a1b2", images, question, answer)
    loaded = json.loads(json.dumps([conv]))[0]
    assert conversation.validate_conversation(loaded) == conv
    parsed = c.parse_planning(conversation.conversation_answer(loaded))
    assert isinstance(parsed, c.PlanningAnswer)
    np.testing.assert_allclose(parsed.waypoints.reshape(-1), values, atol=0.005 + 1e-9)
    assert f"The navigation information is: {command}" in conversation.conversation_question(loaded)
