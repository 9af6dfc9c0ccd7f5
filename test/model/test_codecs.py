"""Tests for the answer codecs: strict parsers that never raise, round trips, conversations."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wamdiff2_ros.model import codecs as c
from wamdiff2_ros.model import conversation, prompts

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

finite_coord = st.floats(min_value=-c.MAX_ABS_POSITION_M, max_value=c.MAX_ABS_POSITION_M, allow_nan=False)
waypoint_arrays = st.lists(finite_coord, min_size=16, max_size=16).map(lambda v: np.asarray(v).reshape(8, 2))


def _number_text(value: float) -> str:
    return f"{value:.2f}"


# --------------------------------------------------------------------------- never raises


@SETTINGS
@given(st.text())
def test_parsers_never_raise_on_random_unicode(text: str) -> None:
    for task in (*c.TASKS, "bogus"):
        result = c.parse_answer(task, text)
        assert isinstance(result, c.ParseError | c.PlanningAnswer | list | str)


@SETTINGS
@given(st.text(alphabet="0123456789.,-+ eE;()[]\n\tnaifNAIF<|>_mdvehiclCAM", max_size=200))
def test_parsers_never_raise_on_number_like_text(text: str) -> None:
    for task in c.TASKS:
        result = c.parse_answer(task, text)
        assert isinstance(result, c.ParseError | c.PlanningAnswer | list | str)


@SETTINGS
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(),
        st.binary(),
        st.lists(st.integers()),
        st.dictionaries(st.text(), st.integers()),
    )
)
def test_parsers_return_parse_error_for_non_text(value: object) -> None:
    for task in c.TASKS:
        assert isinstance(c.parse_answer(task, value), c.ParseError)  # type: ignore[arg-type]
    assert isinstance(conversation.validate_conversation(value), c.ParseError)


@SETTINGS
@given(waypoint_arrays, st.integers(min_value=0, max_value=120))
def test_truncated_planning_outputs_are_rejected_or_shorter(waypoints: np.ndarray, cut: int) -> None:
    text = c.encode_planning(waypoints)
    truncated = text[: min(cut, len(text) - 1)]
    result = c.parse_planning(truncated)
    # A truncated answer can only parse if the cut fell inside the last number.
    if not isinstance(result, c.ParseError):
        assert truncated.count(",") == 15
        np.testing.assert_allclose(
            result.waypoints.reshape(-1)[:15], np.asarray(waypoints).reshape(-1)[:15], atol=0.0051
        )


@pytest.mark.parametrize("count", [1, 2, 15, 17, 32])
def test_planning_wrong_count_is_rejected_with_reason(count: int) -> None:
    text = ",".join(["1.00"] * count)
    result = c.parse_planning(text)
    assert isinstance(result, c.ParseError)
    assert "16" in result.reason
    assert result.task == "planning"


@pytest.mark.parametrize(
    "bad",
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "1e3",
        "1E-2",
        "+1.00",
        "1e999",
        "0x10",
        "1_000",
        "١٢",
        "1.2.3",
        "",
        " ",
        "--1",
    ],
)
def test_planning_rejects_non_plain_numbers(bad: str) -> None:
    text = ",".join(["1.00"] * 15 + [bad])
    result = c.parse_planning(text)
    assert isinstance(result, c.ParseError), bad
    assert "item 16" in result.reason


@pytest.mark.parametrize("value", ["200.01", "-250", "9999999", "1000000.5"])
def test_planning_rejects_huge_coordinates(value: str) -> None:
    result = c.parse_planning(",".join([value] + ["1.00"] * 15))
    assert isinstance(result, c.ParseError)
    assert "beyond" in result.reason


def test_planning_rejects_overlong_text_quickly() -> None:
    result = c.parse_planning("1," * 1_000_000)
    assert isinstance(result, c.ParseError)
    assert "characters" in result.reason


def test_planning_tolerates_whitespace_and_end_tokens() -> None:
    numbers = [f"{i * 0.5:.2f}" for i in range(16)]
    text = "\n  " + ", ".join(numbers) + " <|im_end|><|endoftext|><|im_end|>\n"
    result = c.parse_planning(text)
    assert isinstance(result, c.PlanningAnswer)
    np.testing.assert_allclose(result.waypoints.reshape(-1), np.arange(16) * 0.5)
    # an end token in the middle is not tolerated
    middle = ",".join(numbers[:8]) + "<|im_end|>," + ",".join(numbers[8:])
    assert isinstance(c.parse_planning(middle), c.ParseError)
    # neither are brackets or a trailing comma
    assert isinstance(c.parse_planning("[" + ",".join(numbers) + "]"), c.ParseError)
    assert isinstance(c.parse_planning(",".join(numbers) + ","), c.ParseError)


def test_reference_answer_parses() -> None:
    text = "2.26,-0.17,4.43,-0.70,6.52,-1.55,8.48,-2.64,10.28,-3.88,11.99,-5.25,13.76,-6.83,15.59,-8.59"
    result = c.parse_planning(text)
    assert isinstance(result, c.PlanningAnswer)
    assert result.waypoints.shape == (8, 2)
    assert result.waypoints.dtype == np.float64
    assert result.waypoints[0].tolist() == [2.26, -0.17]
    assert result.waypoints[-1].tolist() == [15.59, -8.59]
    assert c.encode_planning(result) == text
    np.testing.assert_allclose(result.times_s, np.arange(1, 9) * 0.5)


# --------------------------------------------------------------------------- planning round trip


@SETTINGS
@given(waypoint_arrays)
def test_planning_round_trip(waypoints: np.ndarray) -> None:
    text = c.encode_planning(waypoints)
    assert "e" not in text and "-0.00" not in text and " " not in text
    assert len(text.split(",")) == 16
    result = c.parse_planning(text)
    assert isinstance(result, c.PlanningAnswer), result
    np.testing.assert_allclose(result.waypoints, waypoints, atol=0.005 + 1e-9, rtol=0)
    assert c.encode_planning(result.waypoints) == text  # encoding is idempotent


@pytest.mark.parametrize(("style", "decimals"), [("fixed", 2), ("fixed1", 1)])
@SETTINGS
@given(waypoints=waypoint_arrays)
def test_fixed_planning_round_trip(style: str, decimals: int, waypoints: np.ndarray) -> None:
    half_step = 0.5 * 10.0**-decimals
    text = c.encode_planning(waypoints, style)
    assert " " not in text
    for item in text.split(","):  # below 100 m every number is dd.d(d) or -dd.d(d), never a negative zero
        magnitude = item.lstrip("-")
        assert not (item.startswith("-") and float(magnitude) == 0.0), item
        assert len(magnitude) == 3 + decimals or float(magnitude) >= 100.0 - half_step, item
    result = c.parse_planning(text)
    assert isinstance(result, c.PlanningAnswer), result
    np.testing.assert_allclose(result.waypoints, waypoints, atol=half_step + 1e-9, rtol=0)
    assert c.encode_planning(result.waypoints, style) == text


def test_fixed_planning_style_is_zero_padded() -> None:
    plan = [[5.16, 0.0], [10.34, -0.01], [15.5, -0.004], [19.996, -10.71], [41.63, 0.0], [0, 0], [1, 2], [123.4, 4]]
    assert c.encode_planning(plan, "fixed") == ("05.16,00.00,10.34,-00.01,15.50,00.00,20.00,-10.71,41.63,00.00,"
                                                "00.00,00.00,01.00,02.00,123.40,04.00")
    assert c.encode_planning(plan) == "5.16,0.00,10.34,-0.01,15.50,0.00,20.00,-10.71,41.63,0.00,0.00,0.00,1.00,2.00,123.40,4.00"
    assert c.encode_planning(plan, "fixed1") == ("05.2,00.0,10.3,00.0,15.5,00.0,20.0,-10.7,41.6,00.0,"
                                                 "00.0,00.0,01.0,02.0,123.4,04.0")
    with pytest.raises(ValueError, match="style"):
        c.encode_planning(plan, "wide")


def test_fixed_plan_numbers_take_the_same_number_of_tokens() -> None:
    """The point of the fixed styles: every number after the first is 6 tokens (``fixed1``: 5), whatever its sign
    and size; the plain style's widths vary."""
    from wamdiff2_ros.model.tokenizer import wrap_tokenizer

    tokenizer = wrap_tokenizer()
    plan = [[2.06, -0.31], [3.9, -1.16], [9.97, -2.47], [10.07, -4.14], [17.13, -9.06], [27.47, -10.2], [37.87, 0.0],
            [48.31, 3.57]]
    for style, width in (("fixed", 6), ("fixed1", 5), ("plain", None)):
        text = c.encode_planning(plan, style)
        widths = [len(tokenizer.encode("," + item, add_special_tokens=False)) for item in text.split(",")[1:]]
        if width is None:
            assert len(set(widths)) > 1, widths
        else:
            assert set(widths) == {width}, (style, widths)


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((7, 2)),
        np.zeros(16),
        np.zeros((8, 3)),
        np.full((8, 2), np.nan),
        np.full((8, 2), np.inf),
        np.full((8, 2), 300.0),
    ],
)
def test_encode_planning_validates(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="waypoints"):
        c.encode_planning(bad)


def test_planning_answer_is_immutable_and_comparable() -> None:
    answer = c.PlanningAnswer(np.ones((8, 2)))
    with pytest.raises(ValueError):
        answer.waypoints[0, 0] = 5.0
    assert answer == c.PlanningAnswer(np.ones((8, 2)))
    assert answer != c.PlanningAnswer(np.zeros((8, 2)))
    with pytest.raises(ValueError, match="shape"):
        c.PlanningAnswer(np.ones((4, 2)))


# --------------------------------------------------------------------------- commands


@pytest.mark.parametrize("name", prompts.DRIVING_COMMANDS)
def test_command_one_hot_round_trip(name: str) -> None:
    vec = prompts.command_to_one_hot(name)
    assert vec.shape == (4,) and vec.sum() == 1
    assert vec[prompts.DRIVING_COMMANDS.index(name)] == 1
    assert prompts.command_from_one_hot(vec) == name
    assert prompts.command_from_one_hot(vec.astype(np.float32).tolist()) == name


def test_command_order_is_navsim() -> None:
    assert prompts.command_from_one_hot([1, 0, 0, 0]) == "left"
    assert prompts.command_from_one_hot([0, 1, 0, 0]) == "straight"
    assert prompts.command_from_one_hot([0, 0, 1, 0]) == "right"
    assert prompts.command_from_one_hot([0, 0, 0, 1]) == "unknown"


@pytest.mark.parametrize(
    "bad",
    [
        [0, 0, 0, 0],
        [1, 1, 0, 0],
        [0.5, 0.5, 0, 0],
        [1, 0, 0],
        [1, 0, 0, 0, 0],
        [np.nan, 1, 0, 0],
        "left",
        [[1, 0, 0, 0]],
    ],
)
def test_command_from_one_hot_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="driving command"):
        prompts.command_from_one_hot(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["forward", "", 3, None])
def test_command_to_one_hot_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="driving command"):
        prompts.command_to_one_hot(bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- perception


boxes_strategy = st.builds(
    c.Box,
    label=st.sampled_from(prompts.LABELS),
    x=finite_coord,
    y=finite_coord,
    z=st.floats(min_value=-10, max_value=10),
    length=st.floats(min_value=0, max_value=c.MAX_BOX_SIZE_M),
    width=st.floats(min_value=0, max_value=c.MAX_BOX_SIZE_M),
    height=st.floats(min_value=0, max_value=c.MAX_BOX_SIZE_M),
    yaw=st.floats(min_value=-20, max_value=20),
    bbox=st.one_of(
        st.none(),
        st.tuples(*[st.floats(min_value=0, max_value=500)] * 2, *[st.floats(min_value=0, max_value=500)] * 2).map(
            lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3])
        ),
    ),
    camera=st.sampled_from(("",) + prompts.CAMERAS),
)


@SETTINGS
@given(st.lists(boxes_strategy, max_size=6))
def test_perception_round_trip(boxes: list[c.Box]) -> None:
    text = c.encode_perception(boxes)
    result = c.parse_perception(text)
    assert isinstance(result, list), result
    assert len(result) == len(boxes)
    for got, want in zip(result, boxes, strict=True):
        assert got.label == want.label and got.camera == want.camera
        for name in ("x", "y", "z", "length", "width", "height"):
            assert abs(getattr(got, name) - getattr(want, name)) <= 0.005 + 1e-9, name
        yaw_error = abs(math.remainder(got.yaw - want.yaw, 2 * math.pi))
        assert yaw_error <= 0.005 + 1e-9
        assert -math.pi - 0.01 <= got.yaw <= math.pi + 0.01
        if want.bbox is None:
            assert got.bbox is None
        else:
            assert got.bbox is not None
            np.testing.assert_allclose(got.bbox, want.bbox, atol=0.5 + 1e-9)
    # newline-separated items parse the same
    assert c.parse_perception(text.replace("; ", "\n")) == result


def test_empty_perception_is_none() -> None:
    assert c.encode_perception([]) == "none"
    assert c.parse_perception("none") == []
    assert c.parse_perception(" None <|im_end|>") == []
    assert isinstance(c.parse_perception(""), c.ParseError)


def test_perception_format_is_documented_example() -> None:
    text = "vehicle(12.30,-1.50,0.80,4.50,1.90,1.60,0.05) CAM_F0 [412,380,596,540]; traffic_cone(3.00,1.00,0.00,0.30,0.30,0.70,0.00);"
    boxes = c.parse_perception(text)
    assert isinstance(boxes, list) and len(boxes) == 2
    assert boxes[0] == c.Box(
        "vehicle", 12.3, -1.5, 0.8, 4.5, 1.9, 1.6, 0.05, bbox=(412, 380, 596, 540), camera="CAM_F0"
    )
    assert boxes[1].label == "traffic_cone" and boxes[1].bbox is None and boxes[1].camera == ""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("car(1,2,3,4,5,6,0)", "unknown label"),
        ("vehicle(1,2,3,4,5,6)", "7 numbers"),
        ("vehicle(1,2,3,4,5,6,0,1)", "7 numbers"),
        ("vehicle(1,2,3,-4,5,6,0)", "size"),
        ("vehicle(1,2,3,4,5,6,4.0)", "yaw"),
        ("vehicle(900,2,3,4,5,6,0)", "centre"),
        ("vehicle(nan,2,3,4,5,6,0)", "plain decimal"),
        ("vehicle(1,2,3,4,5,6,0) CAM_X9", "unknown camera"),
        ("vehicle(1,2,3,4,5,6,0) [1,2,3]", "4 numbers"),
        ("vehicle(1,2,3,4,5,6,0) [10,20,5,30]", "x1 <= x2"),
        ("vehicle(1,2,3,4,5,6,0) [10,20,50,1300]", "0-1000"),
        ("vehicle(1,2,3,4,5,6,0); garbage", "box 2"),
        ("vehicle(1,2,3,4,5,6,0", "is not label"),
    ],
)
def test_perception_rejects_with_reason(text: str, reason: str) -> None:
    result = c.parse_perception(text)
    assert isinstance(result, c.ParseError), result
    assert reason in result.reason


def test_perception_rejects_too_many_boxes() -> None:
    text = "; ".join(["pedestrian(1,2,0,1,1,1,0)"] * (c.MAX_BOXES + 1))
    result = c.parse_perception(text)
    assert isinstance(result, c.ParseError)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"label": "car"},
        {"x": float("nan")},
        {"length": -1.0},
        {"camera": "CAM_Z1"},
        {"bbox": (1.0, 2.0, 3.0)},
        {"bbox": (1.0, 2.0, 3.0, float("inf"))},
        {"yaw": "north"},
    ],
)
def test_box_rejects_bad_fields(kwargs: dict) -> None:
    fields = {"label": "vehicle", "x": 1.0, "y": 0.0, "z": 0.0, "length": 4.0, "width": 2.0, "height": 1.5, "yaw": 0.0}
    fields.update(kwargs)
    with pytest.raises(ValueError, match="box|camera|label"):
        c.Box(**fields)


def test_encode_perception_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="200"):
        c.encode_perception([c.Box("vehicle", 500.0, 0, 0, 4, 2, 1.5, 0)])
    with pytest.raises(ValueError, match="bbox"):
        c.encode_perception([c.Box("vehicle", 5.0, 0, 0, 4, 2, 1.5, 0, bbox=(10, 10, 5, 20))])
    with pytest.raises(ValueError, match="single Box"):
        c.encode_perception(c.Box("vehicle", 5.0, 0, 0, 4, 2, 1.5, 0))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- understanding


def test_understanding_parses_and_rejects() -> None:
    assert (
        c.parse_understanding("  The light ahead is red, so we stop.<|im_end|>")
        == "The light ahead is red, so we stop."
    )
    assert c.parse_understanding("Line one.\nLine two.") == "Line one.\nLine two."
    for bad, reason in [
        ("", "empty"),
        ("   <|im_end|>", "empty"),
        ("ab\x00cd", "control"),
        ("ok \x1b[31m", "control"),
        ("x" * (c.MAX_UNDERSTANDING_CHARS + 1), "characters"),
        ("stop <|im_start|> go", "special token"),
        ("<think>\nhmm</think> go", "special token"),
        ("a <|vision_pad|><|vision_pad|>", "special token"),
        ("see <image>", "placeholder"),
        ("bad \ufffd bytes", "U+FFFD"),
    ]:
        result = c.parse_understanding(bad)
        assert isinstance(result, c.ParseError), bad
        assert reason in result.reason, (bad, result.reason)


@SETTINGS
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="<\ufffd"), max_size=300))
def test_understanding_round_trip(text: str) -> None:
    """Text without control characters, '<' or U+FFFD comes back stripped; blank text is an error."""
    result = c.parse_understanding(text)
    if text.strip():
        assert result == text.strip()
        assert c.encode_understanding(text) == result
    else:
        assert isinstance(result, c.ParseError)


def test_parse_answer_dispatch() -> None:
    assert isinstance(c.parse_answer("planning", ",".join(["0.00"] * 16)), c.PlanningAnswer)
    assert c.parse_answer("perception", "none") == []
    assert c.parse_answer("understanding", "hi") == "hi"
    unknown = c.parse_answer("driving", "hi")
    assert isinstance(unknown, c.ParseError) and "unknown task" in unknown.reason
    assert c.encode_answer("planning", np.zeros((8, 2))) == ",".join(["0.00"] * 16)
    assert c.encode_answer("perception", []) == "none"
    with pytest.raises(ValueError, match="unknown task"):
        c.encode_answer("driving", "x")


# --------------------------------------------------------------------------- questions


def test_planning_question_reference_layout() -> None:
    q = prompts.planning_question("right", (4.66, -0.09), (0.17, -1.53))
    lines = q.split("\n")
    assert lines[0] == "Here is a front-view image from a driving vehicle: <image>"
    assert lines[1] == "The navigation information is: right"
    assert lines[2] == "The current position is (0.00,0.00)"
    assert lines[3] == "The current velocity is: (4.66,-0.09) and current accelerate is: (0.17,-1.53)"
    assert lines[4].startswith("Instruction:") and "4 seconds" in lines[4] and "8 new waypoints" in lines[4]
    assert q.count("<image>") == 1
    custom = prompts.planning_question("left", (0.0, -0.0001), (0, 0), instruction="Instruction: go {n}")
    assert custom.endswith("Instruction: go 8")
    assert "(0.00,0.00)" in custom.split("\n")[3]  # no "-0.00"


@pytest.mark.parametrize(
    ("num_images", "cameras"),
    [
        (1, ("CAM_F0",)),
        (3, ("CAM_F0", "CAM_L0", "CAM_R0")),
        (8, prompts.CAMERAS),
        (4, ("CAM_F0",)),
        (4, ("CAM_F0", "CAM_B0")),
    ],
)
def test_questions_have_one_placeholder_per_image(num_images: int, cameras: tuple[str, ...]) -> None:
    questions = [
        prompts.planning_question("straight", (1, 0), (0, 0), num_images=num_images, cameras=cameras),
        prompts.perception_question(num_images=num_images, cameras=cameras),
        prompts.understanding_question("What is the ego vehicle doing?", num_images=num_images, cameras=cameras),
    ]
    for q in questions:
        assert q.count("<image>") == num_images
        for cam in cameras if len(cameras) > 1 else ():
            assert cam in q
        conv = conversation.make_conversation("navsim", "id0", [f"{i}.jpg" for i in range(num_images)], q, "none")
        assert not isinstance(conversation.validate_conversation(conv), c.ParseError)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"command": "forward"}, "driving command"),
        ({"velocity": (1.0,)}, "velocity"),
        ({"velocity": (float("nan"), 0.0)}, "velocity"),
        ({"acceleration": "fast"}, "acceleration"),
        ({"num_images": 0}, "num_images"),
        ({"num_images": 3, "cameras": ("CAM_F0", "CAM_L0")}, "multiple"),
        ({"cameras": ("CAM_X0",)}, "unknown camera"),
        ({"cameras": ()}, "at least one"),
        ({"num_images": 2, "cameras": ("CAM_F0", "CAM_F0")}, "repeated"),
        ({"instruction": "Instruction: {speed}"}, "template"),
        ({"instruction": "look at <image>"}, "<image>"),
    ],
)
def test_planning_question_rejects(kwargs: dict, match: str) -> None:
    args = {"command": "left", "velocity": (1.0, 0.0), "acceleration": (0.0, 0.0)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        prompts.planning_question(**args)


def test_understanding_question_rejects() -> None:
    for bad in ("", "   ", "where is <image>?", "x" * 3000, 5):
        with pytest.raises(ValueError, match="question"):
            prompts.understanding_question(bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- conversations


def _sample() -> dict:
    return conversation.make_conversation(
        "navsim",
        "43ebecce459052f2",
        ["CAM_F0/a.jpg"],
        prompts.planning_question("right", (4.66, -0.09), (0.17, -1.53)),
        "none",
    )


def test_make_conversation_layout() -> None:
    conv = _sample()
    assert list(conv) == ["datasource", "id", "image", "conversations"]
    assert conv["image"] == ["CAM_F0/a.jpg"]
    assert [t["from"] for t in conv["conversations"]] == ["human", "gpt"]
    assert set(conv["conversations"][0]) == {"from", "value"}
    assert conversation.conversation_question(conv).startswith("Here is")
    assert conversation.conversation_answer(conv) == "none"
    assert conversation.validate_conversation(conv) == conv
    with pytest.raises(ValueError, match="placeholder"):
        conversation.make_conversation("navsim", "x", [], "no image here <image>", "a")
    with pytest.raises(ValueError, match="single string"):
        conversation.make_conversation("navsim", "x", "a.jpg", "<image>", "a")  # type: ignore[arg-type]


def _broken(mutate) -> dict:
    conv = _sample()
    mutate(conv)
    return conv


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.pop("id"), "missing key 'id'"),
        (lambda d: d.pop("conversations"), "missing key 'conversations'"),
        (lambda d: d.update(id=7), "'id' must be a non-empty string"),
        (lambda d: d.update(datasource=""), "'datasource'"),
        (lambda d: d.update(image=[1]), "'image'[0]"),
        (lambda d: d.update(image={"a": 1}), "'image' must be a list"),
        (lambda d: d.update(image=[]), "1 <image> placeholder(s) but 0 image(s)"),
        (lambda d: d.update(image=["a.jpg", "b.jpg"]), "but 2 image(s)"),
        (lambda d: d.update(conversations=[]), "non-empty list"),
        (lambda d: d.update(conversations="hi"), "non-empty list"),
        (lambda d: d["conversations"].reverse(), "expected 'human'"),
        (lambda d: d["conversations"].pop(), "no gpt answer"),
        (lambda d: d["conversations"][0].update(value=3), "must be a string"),
        (lambda d: d["conversations"][0].pop("from"), "needs 'from' and 'value'"),
        (lambda d: d["conversations"][1].update({"from": "assistant"}), "expected 'gpt'"),
        (lambda d: d["conversations"][1].update(value="<image>"), "(gpt) contains"),
        (lambda d: d["conversations"].__setitem__(0, "text"), "must be an object"),
    ],
)
def test_validate_conversation_failures(mutate, reason: str) -> None:
    result = conversation.validate_conversation(_broken(mutate))
    assert isinstance(result, c.ParseError), result
    assert reason in result.reason, result.reason
    assert result.task == "conversation"


def test_validate_conversation_tolerances() -> None:
    conv = _sample()
    conv["image"] = "CAM_F0/a.jpg"
    conv["extra"] = 1
    conv["conversations"].insert(0, {"from": "system", "value": "You drive."})
    result = conversation.validate_conversation(conv)
    assert isinstance(result, dict)
    assert result["image"] == ["CAM_F0/a.jpg"] and result["extra"] == 1
    assert conv["image"] == "CAM_F0/a.jpg"  # the input is not modified


@SETTINGS
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda ch: (
            st.lists(ch, max_size=3)
            | st.dictionaries(
                st.sampled_from(["datasource", "id", "image", "conversations", "from", "value"]), ch, max_size=6
            )
        ),
        max_leaves=20,
    )
)
def test_validate_conversation_never_raises(obj: object) -> None:
    result = conversation.validate_conversation(obj)
    assert isinstance(result, c.ParseError | dict)


def test_codecs_import_without_torch() -> None:
    code = "import sys, wamdiff2_ros.model.codecs; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_residual_plan_style_writes_the_departure_from_constant_velocity() -> None:
    """``cv1``: fixed1 numbers of the plan minus the constant-velocity plan of the prompt's velocity; a steady car
    answers zeros, and ``plan_waypoints`` gives the waypoints back (to the 0.05 m of one decimal)."""
    velocity = (6.7, 0.4)
    steady = c.constant_velocity_waypoints(velocity)
    np.testing.assert_allclose(steady[1], [6.7, 0.4])  # 1 s
    assert set(c.encode_planning(steady, "cv1", velocity).split(",")) == {"00.0"}
    braking = steady.copy()
    braking[:, 0] -= 0.5 * 2.0 * c.waypoint_times() ** 2  # -2 m/s^2
    text = c.encode_planning(braking, "cv1", velocity)
    assert text.startswith("-00.2,00.0,-01.0,00.0,") and text.endswith("-16.0,00.0")
    answer = c.parse_planning(text)
    assert isinstance(answer, c.PlanningAnswer)
    np.testing.assert_allclose(c.plan_waypoints(answer, "cv1", velocity), braking, atol=0.05 + 1e-9, rtol=0)
    np.testing.assert_array_equal(c.plan_waypoints(answer, "fixed1", velocity), answer.waypoints)  # absolute styles
    np.testing.assert_allclose(c.constant_velocity_waypoints((float("nan"), 1.0)), np.zeros((8, 2)))
    with pytest.raises(ValueError, match="velocity"):
        c.encode_planning(braking, "cv1")
