"""Answer codecs: encode targets as answer text, parse model text strictly.

Three answer formats, one per task (``TASKS``):

planning
    8 waypoints (x forward, y left) in metres in the ego frame at the input stamp,
    0.5 s apart (0.5 s ... 4.0 s), written ``x1,y1,x2,y2,...,x8,y8`` with 2 decimals,
    e.g. ``2.26,-0.17,4.43,-0.70,...``.
perception
    boxes separated by ``"; "`` (the parser also splits on newlines), each
    ``label(x,y,z,length,width,height,yaw)`` optionally followed by a camera name and
    an image box: ``vehicle(12.30,-1.50,0.80,4.50,1.90,1.60,0.05) CAM_F0 [412,380,596,540]``.
    Centre and size are metres in the ego frame, yaw radians in [-pi, pi] (all 2
    decimals); the image box is ``[x1,y1,x2,y2]`` on Qwen3-VL's relative 0-1000 scale
    (integers, x1 <= x2, y1 <= y2). Labels are NAVSIM's (:data:`LABELS`). No box is
    written ``none``.
understanding
    free text.

Parsers never raise: they return the typed result or a :class:`ParseError` with a
reason. All of them tolerate surrounding whitespace and any number of trailing end
tokens (``<|im_end|>``, ``<|endoftext|>``). Planning numbers may have spaces or
newlines around them; numbers are plain decimals (``-12``, ``3.5``) - no exponent,
sign ``+``, ``nan`` or ``inf``. Perception tolerates empty items (a trailing ``;``),
any whitespace between an item's parts and a case-insensitive ``none``.

Question texts are :mod:`~wamdiff2_ros.model.prompts`; the conversation JSON of a
sample is :mod:`~wamdiff2_ros.model.conversation`. Pure Python + numpy; never imports torch.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wamdiff2_ros.geometry import wrap_angle
from wamdiff2_ros.model.prompts import (
    CAMERAS,
    IMAGE_PLACEHOLDER,
    LABELS,
    NUM_WAYPOINTS,
    WAYPOINT_INTERVAL_S,
    format_number,
    format_number_fixed,
)

__all__ = [
    "TASKS",
    "END_TOKEN_TEXT",
    "END_TOKEN_TEXTS",
    "NO_BOXES_TEXT",
    "MAX_ABS_POSITION_M",
    "MAX_BOX_SIZE_M",
    "MAX_BOXES",
    "MAX_UNDERSTANDING_CHARS",
    "ParseError",
    "PlanningAnswer",
    "Box",
    "waypoint_times",
    "PLAN_STYLES",
    "RESIDUAL_STYLES",
    "constant_velocity_waypoints",
    "plan_waypoints",
    "encode_planning",
    "parse_planning",
    "encode_perception",
    "parse_perception",
    "encode_understanding",
    "parse_understanding",
    "encode_answer",
    "parse_answer",
    "waypoint_headings",
    "clip_text",
    "never_raises",
]

TASKS: tuple[str, ...] = ("planning", "perception", "understanding")

#: Qwen's end-of-turn token; training pads responses with it.
END_TOKEN_TEXT = "<|im_end|>"
#: End tokens a parser strips from the end of an answer (any number, any order).
END_TOKEN_TEXTS: tuple[str, ...] = (END_TOKEN_TEXT, "<|endoftext|>")

NO_BOXES_TEXT = "none"

#: Largest |coordinate| of a waypoint or box centre, metres.
MAX_ABS_POSITION_M = 200.0
#: Largest box length/width/height, metres.
MAX_BOX_SIZE_M = 100.0
#: Most boxes one perception answer may hold.
MAX_BOXES = 256
#: Largest |yaw| a parsed box may have (pi written with 2 decimals, plus slack).
MAX_ABS_YAW = math.pi + 0.01
#: Image boxes are on Qwen3-VL's relative 0..1000 scale.
BBOX_SCALE = 1000.0
#: Longest understanding answer, characters (after stripping).
MAX_UNDERSTANDING_CHARS = 4000
#: Longest raw text the planning/perception parsers look at.
MAX_PLANNING_CHARS = 2000
MAX_PERCEPTION_CHARS = 64 * MAX_BOXES
#: ParseError.text keeps at most this many characters of the offending text.
MAX_ERROR_TEXT_CHARS = 1000

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
#: Qwen special-token text (``<|im_start|>``, ``<|vision_pad|>``, ...) and Qwen3's tag tokens.
_SPECIAL_TOKEN = re.compile(r"<\|[^<>|\s]{1,64}\|>|</?(?:think|tool_call|tool_response)>")
_BOX_ITEM = re.compile(
    r"(?P<label>[A-Za-z_]+)\s*\((?P<values>[^()]*)\)"
    r"(?:\s*(?P<camera>CAM_[A-Z][0-9]))?"
    r"(?:\s*\[(?P<bbox>[^\[\]]*)\])?"
)
_ALLOWED_CONTROL = frozenset("\n\t\r")


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class ParseError:
    """Why a text could not be turned into a typed value (returned, never raised)."""

    reason: str
    text: str
    task: str = ""

    def __str__(self) -> str:
        prefix = f"{self.task}: " if self.task else ""
        return f"{prefix}{self.reason}"


@dataclass(frozen=True, eq=False)
class PlanningAnswer:
    """Eight ego-frame waypoints, shape (8, 2) float64, x forward, y left, metres."""

    waypoints: np.ndarray

    def __post_init__(self) -> None:
        arr = np.array(self.waypoints, dtype=np.float64)
        if arr.shape != (NUM_WAYPOINTS, 2):
            raise ValueError(f"waypoints must have shape ({NUM_WAYPOINTS}, 2), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("waypoints must be finite")
        arr.setflags(write=False)
        object.__setattr__(self, "waypoints", arr)

    @property
    def times_s(self) -> np.ndarray:
        """Time of each waypoint after the input stamp, seconds (0.5 ... 4.0)."""
        return waypoint_times()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlanningAnswer):
            return NotImplemented
        return bool(np.array_equal(self.waypoints, other.waypoints))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Box:
    """One 3-D box in the ego frame (metres, radians) with an optional image box.

    ``bbox`` is ``(x1, y1, x2, y2)`` on the relative 0-1000 scale of the image of
    ``camera`` (one of :data:`CAMERAS`, or ``""`` when not tied to a camera).
    """

    label: str
    x: float
    y: float
    z: float
    length: float
    width: float
    height: float
    yaw: float
    bbox: tuple[float, float, float, float] | None = None
    camera: str = ""

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"unknown box label {self.label!r}; expected one of {', '.join(LABELS)}")
        if not isinstance(self.camera, str) or (self.camera and self.camera not in CAMERAS):
            raise ValueError(f"unknown camera {self.camera!r}; expected one of {', '.join(CAMERAS)} or ''")
        for name in ("x", "y", "z", "length", "width", "height", "yaw"):
            value = getattr(self, name)
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"box {name} must be a number, got {value!r}") from None
            if not math.isfinite(number):
                raise ValueError(f"box {name} must be finite, got {number}")
            object.__setattr__(self, name, number)
        for name in ("length", "width", "height"):
            if getattr(self, name) < 0:
                raise ValueError(f"box {name} must be >= 0, got {getattr(self, name)}")
        if self.bbox is not None:
            try:
                bbox = tuple(float(v) for v in self.bbox)
            except (TypeError, ValueError):
                raise ValueError(f"box bbox must be 4 numbers (x1, y1, x2, y2), got {self.bbox!r}") from None
            if len(bbox) != 4 or not all(math.isfinite(v) for v in bbox):
                raise ValueError(f"box bbox must be 4 finite numbers (x1, y1, x2, y2), got {self.bbox!r}")
            object.__setattr__(self, "bbox", bbox)


def waypoint_times() -> np.ndarray:
    """Times of the planning waypoints after the input stamp, seconds: 0.5, 1.0, ..., 4.0."""
    return WAYPOINT_INTERVAL_S * np.arange(1, NUM_WAYPOINTS + 1, dtype=np.float64)


def waypoint_headings(xy: np.ndarray) -> np.ndarray:
    """Heading of each waypoint of a path from the ego origin: the direction of travel into it.

    A waypoint that does not move from the previous one keeps the previous heading
    (0 for the first), so a standing vehicle does not spin.
    """
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    delta = np.diff(np.vstack([np.zeros((1, 2)), xy]), axis=0)
    heading = np.arctan2(delta[:, 1], delta[:, 0])
    still = np.hypot(delta[:, 0], delta[:, 1]) < 1e-6
    for i in np.flatnonzero(still):
        heading[i] = heading[i - 1] if i > 0 else 0.0
    return heading


# --------------------------------------------------------------------------- helpers


BACKWARDS_TOLERANCE_M = 0.5  # a plan "goes backwards" when x drops by more than this between waypoints


def plan_goes_backwards(waypoints: np.ndarray | Sequence[Sequence[float]],
                        tolerance_m: float = BACKWARDS_TOLERANCE_M) -> bool:
    """The plan's forward coordinate x drops by more than ``tolerance_m`` between consecutive waypoints.

    Well-formed but kinematically wrong for a car that does not reverse: no ground-truth plan
    of the synthetic world does it, and parallel decoding makes it by losing a digit where a
    number grows one (``9.80,...,1.10`` for ``11.10``), which the strict parser cannot see.
    """
    x = np.asarray(waypoints, dtype=float)[:, 0]
    return bool(np.any(np.diff(x) < -float(tolerance_m)))


def clip_text(text: object) -> str:
    """``text`` (or its repr) cut to :data:`MAX_ERROR_TEXT_CHARS`, for :attr:`ParseError.text`."""
    if isinstance(text, str):
        return text[:MAX_ERROR_TEXT_CHARS]
    try:
        return repr(text)[:MAX_ERROR_TEXT_CHARS]
    except Exception:  # noqa: BLE001 - a broken __repr__ must not escape
        return f"<{type(text).__name__}>"


def never_raises(task: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Turn any exception escaping a parser into a ParseError (a last line of defence)."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def inner(text: object, *args: Any, **kwargs: Any) -> Any:
            try:
                return func(text, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - parsers promise not to raise
                return ParseError(f"internal parser error: {type(exc).__name__}: {exc}", clip_text(text), task)

        return inner

    return wrap


def _strip_answer(text: str) -> str:
    """Strip whitespace and trailing end tokens."""
    stripped = text.strip()
    changed = True
    while changed:
        changed = False
        for token in END_TOKEN_TEXTS:
            if stripped.endswith(token):
                stripped = stripped[: -len(token)].rstrip()
                changed = True
    return stripped


def _parse_numbers(chunk: str, what: str) -> list[float] | str:
    """Comma-separated plain decimals -> floats, or the reason they are not."""
    items = chunk.split(",")
    values: list[float] = []
    for index, item in enumerate(items):
        token = item.strip()
        if not token:
            return f"{what}: item {index + 1} is empty"
        if not _NUMBER.fullmatch(token):
            return f"{what}: item {index + 1} ({token[:40]!r}) is not a plain decimal number"
        values.append(float(token))
    return values


def _check_position(name: str, value: float) -> None:
    if not math.isfinite(value) or abs(value) > MAX_ABS_POSITION_M:
        raise ValueError(f"{name}={value} is not finite or beyond +-{MAX_ABS_POSITION_M:g} m")


# --------------------------------------------------------------------------- planning


#: planning answer styles: ``plain`` numbers (``5.16,0.00,10.34,-0.01``) or ``fixed`` width (``05.16,00.00,10.34,-00.01``,
#: ``prompts.format_number_fixed``); the parser reads both. Fixed width puts every character of a plan at a place that
#: does not depend on how many digits the numbers before it have: a block-diffusion model commits far-ahead commas
#: and points in parallel, and a plain number that grows a digit (``9.97`` -> ``10.07``) shifts everything after it,
#: which is where parallel decoding doubles or loses characters (``9..7``, ``1.10`` for ``11.10``). The tokenizer
#: writes ``,-`` as one token, so ``,05.16`` and ``,-05.16`` take the same number of tokens. ``fixed1`` is the fixed
#: width with 1 decimal (``05.2,00.0,10.3,-00.0``): a plan is 5 tokens a number instead of 6, and the hundredths
#: digit, which a block-diffusion student commits alone at low confidence in about half its denoise steps, is gone
#: (the rounding adds at most 0.05 m a coordinate).
#: ``cv1`` (our own option, not the reference's) writes ``fixed1`` numbers of the plan *minus the constant-velocity
#: plan* of the prompt's ego velocity (``residual_frame``): a car that keeps its speed answers all zeros, and the
#: numbers say only where the plan departs from it (braking, turning), so the first second, which the closed loop's
#: controller reads, no longer needs the model to multiply the prompt's speed by the waypoint times. A ``cv1`` answer
#: parses like any other; :func:`plan_waypoints` adds the constant-velocity plan back.
PLAN_STYLES = ("plain", "fixed", "fixed1", "cv1")
#: styles whose numbers are residuals to the constant-velocity plan
RESIDUAL_STYLES = frozenset({"cv1"})
#: (function, decimals) of each style's numbers
_PLAN_NUMBER = {"plain": (format_number, 2), "fixed": (format_number_fixed, 2), "fixed1": (format_number_fixed, 1),
                "cv1": (format_number_fixed, 1)}


def constant_velocity_waypoints(velocity: Sequence[float]) -> np.ndarray:
    """(8, 2) ego-frame waypoints of keeping ``velocity`` (vx, vy) m/s for 4 s (non-finite: standing still)."""
    vx, vy = (float(v) for v in velocity)
    if not (math.isfinite(vx) and math.isfinite(vy)):
        vx = vy = 0.0
    t = waypoint_times()
    return np.stack([vx * t, vy * t], axis=1)


def plan_waypoints(answer: PlanningAnswer, style: str, velocity: Sequence[float]) -> np.ndarray:
    """(8, 2) ego-frame waypoints a parsed answer of ``style`` means (a residual style adds the constant-velocity
    plan of ``velocity``, the ego velocity its prompt reported)."""
    xy = np.asarray(answer.waypoints, dtype=np.float64)
    return xy + constant_velocity_waypoints(velocity) if style in RESIDUAL_STYLES else xy


def encode_planning(waypoints: np.ndarray | Sequence[Sequence[float]] | PlanningAnswer, style: str = "plain",
                    velocity: Sequence[float] | None = None) -> str:
    """Text of 8 waypoints (x, y) metres: ``x1,y1,...,x8,y8`` in a :data:`PLAN_STYLES` style (2 decimals; ``fixed1``
    and ``cv1`` 1); a residual style needs the prompt's ego ``velocity`` and writes the waypoints minus its
    constant-velocity plan."""
    if style not in PLAN_STYLES:
        raise ValueError(f"planning style {style!r} not in {PLAN_STYLES}")
    if isinstance(waypoints, PlanningAnswer):
        waypoints = waypoints.waypoints
    try:
        arr = np.asarray(waypoints, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"waypoints are not numeric: {exc}") from None
    if arr.shape != (NUM_WAYPOINTS, 2):
        raise ValueError(f"waypoints must have shape ({NUM_WAYPOINTS}, 2), got {arr.shape}")
    if style in RESIDUAL_STYLES:
        if velocity is None:
            raise ValueError(f"planning style {style!r} writes residuals to the constant-velocity plan: give velocity")
        arr = arr - constant_velocity_waypoints(velocity)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"waypoints must be finite, got {arr.tolist()}")
    if np.any(np.abs(arr) > MAX_ABS_POSITION_M):
        raise ValueError(f"waypoints must lie within +-{MAX_ABS_POSITION_M:g} m, got max |v| {np.abs(arr).max():.2f}")
    number, decimals = _PLAN_NUMBER[style]
    return ",".join(number(v, decimals=decimals) for v in arr.reshape(-1))


def _answer_body(text: object, task: str, max_chars: int, empty_reason: str) -> str | ParseError:
    """The answer without surrounding whitespace and end tokens, or the ParseError of a non-text,
    over-long or empty answer (the checks every structured parser starts with)."""
    if not isinstance(text, str):
        return ParseError(f"expected text, got {type(text).__name__}", clip_text(text), task)
    if len(text) > max_chars:
        return ParseError(f"answer has {len(text)} characters, more than {max_chars}", clip_text(text), task)
    body = _strip_answer(text)
    return body if body else ParseError(empty_reason, clip_text(text), task)


@never_raises("planning")
def parse_planning(text: str) -> PlanningAnswer | ParseError:
    """Strictly parse ``x1,y1,...,x8,y8`` (16 plain decimals, |v| <= 200 m)."""

    def fail(reason: str) -> ParseError:
        return ParseError(reason, clip_text(text), "planning")

    body = _answer_body(text, "planning", MAX_PLANNING_CHARS, "empty answer")
    if isinstance(body, ParseError):
        return body
    expected = 2 * NUM_WAYPOINTS
    count = body.count(",") + 1
    if count != expected:
        return fail(f"expected {expected} comma-separated numbers ({NUM_WAYPOINTS} waypoints), got {count} items")
    values = _parse_numbers(body, "waypoints")
    if isinstance(values, str):
        return fail(values)
    worst = max(abs(v) for v in values)
    if worst > MAX_ABS_POSITION_M:
        return fail(f"waypoint coordinate {worst:g} m is beyond +-{MAX_ABS_POSITION_M:g} m")
    return PlanningAnswer(np.asarray(values, dtype=np.float64).reshape(NUM_WAYPOINTS, 2))


# --------------------------------------------------------------------------- perception


def _encode_box(box: Box) -> str:
    if not isinstance(box, Box):
        raise ValueError(f"expected Box, got {type(box).__name__}")
    for name in ("x", "y", "z"):
        _check_position(f"box {name}", getattr(box, name))
    for name in ("length", "width", "height"):
        if getattr(box, name) > MAX_BOX_SIZE_M:
            raise ValueError(f"box {name}={getattr(box, name)} is beyond {MAX_BOX_SIZE_M:g} m")
    values = (box.x, box.y, box.z, box.length, box.width, box.height, wrap_angle(box.yaw))
    text = f"{box.label}(" + ",".join(format_number(v) for v in values) + ")"
    if box.camera:
        text += f" {box.camera}"
    if box.bbox is not None:
        x1, y1, x2, y2 = box.bbox
        if not all(0.0 <= v <= BBOX_SCALE for v in box.bbox):
            raise ValueError(f"box bbox {box.bbox} is outside the 0-{BBOX_SCALE:g} image scale")
        if x1 > x2 or y1 > y2:
            raise ValueError(f"box bbox {box.bbox} must have x1 <= x2 and y1 <= y2")
        text += " [" + ",".join(str(round(v)) for v in box.bbox) + "]"
    return text


def encode_perception(boxes: Sequence[Box]) -> str:
    """Text of a perception answer: boxes joined by ``"; "``, or ``none``."""
    if isinstance(boxes, Box):
        raise ValueError("expected a sequence of Box, got a single Box")
    items = list(boxes)
    if len(items) > MAX_BOXES:
        raise ValueError(f"{len(items)} boxes, more than {MAX_BOXES}")
    if not items:
        return NO_BOXES_TEXT
    return "; ".join(_encode_box(box) for box in items)


def _parse_box(item: str, index: int) -> Box | str:
    match = _BOX_ITEM.fullmatch(item)
    if match is None:
        return f"box {index}: {item[:60]!r} is not label(x,y,z,length,width,height,yaw) [CAMERA] [[x1,y1,x2,y2]]"
    label = match.group("label")
    if label not in LABELS:
        return f"box {index}: unknown label {label[:40]!r}"
    values = _parse_numbers(match.group("values"), f"box {index}")
    if isinstance(values, str):
        return values
    if len(values) != 7:
        return f"box {index}: expected 7 numbers (x,y,z,length,width,height,yaw), got {len(values)}"
    x, y, z, length, width, height, yaw = values
    if max(abs(x), abs(y), abs(z)) > MAX_ABS_POSITION_M:
        return f"box {index}: centre beyond +-{MAX_ABS_POSITION_M:g} m"
    if max(length, width, height) > MAX_BOX_SIZE_M or min(length, width, height) < 0:
        return f"box {index}: size outside [0, {MAX_BOX_SIZE_M:g}] m"
    if abs(yaw) > MAX_ABS_YAW:
        return f"box {index}: yaw {yaw:g} outside [-pi, pi]"
    camera = match.group("camera") or ""
    if camera and camera not in CAMERAS:
        return f"box {index}: unknown camera {camera!r}"
    bbox: tuple[float, float, float, float] | None = None
    if match.group("bbox") is not None:
        numbers = _parse_numbers(match.group("bbox"), f"box {index} image box")
        if isinstance(numbers, str):
            return numbers
        if len(numbers) != 4:
            return f"box {index}: image box needs 4 numbers (x1,y1,x2,y2), got {len(numbers)}"
        if not all(0.0 <= v <= BBOX_SCALE for v in numbers):
            return f"box {index}: image box outside the 0-{BBOX_SCALE:g} scale"
        if numbers[0] > numbers[2] or numbers[1] > numbers[3]:
            return f"box {index}: image box needs x1 <= x2 and y1 <= y2"
        bbox = (numbers[0], numbers[1], numbers[2], numbers[3])
    return Box(label, x, y, z, length, width, height, yaw, bbox=bbox, camera=camera)


@never_raises("perception")
def parse_perception(text: str) -> list[Box] | ParseError:
    """Strictly parse a perception answer into boxes (``none`` -> ``[]``)."""

    def fail(reason: str) -> ParseError:
        return ParseError(reason, clip_text(text), "perception")

    body = _answer_body(text, "perception", MAX_PERCEPTION_CHARS, "empty answer (no boxes is written 'none')")
    if isinstance(body, ParseError):
        return body
    if body.lower() == NO_BOXES_TEXT:
        return []
    items = [item.strip() for item in re.split(r"[;\n]", body)]
    items = [item for item in items if item]
    if not items:
        return fail("only separators, no boxes (no boxes is written 'none')")
    if len(items) > MAX_BOXES:
        return fail(f"{len(items)} boxes, more than {MAX_BOXES}")
    boxes: list[Box] = []
    for index, item in enumerate(items, start=1):
        box = _parse_box(item, index)
        if isinstance(box, str):
            return fail(box)
        boxes.append(box)
    return boxes


# --------------------------------------------------------------------------- understanding


def _understanding_problem(body: str) -> str | None:
    if not body:
        return "empty answer"
    if len(body) > MAX_UNDERSTANDING_CHARS:
        return f"answer has {len(body)} characters, more than {MAX_UNDERSTANDING_CHARS}"
    special = _SPECIAL_TOKEN.search(body)
    if special:
        return f"contains special token {special.group(0)[:40]!r}"
    if IMAGE_PLACEHOLDER in body:
        return f"contains the image placeholder {IMAGE_PLACEHOLDER!r}"
    if "\ufffd" in body:
        return "contains undecodable bytes (U+FFFD)"
    for position, char in enumerate(body):
        if char not in _ALLOWED_CONTROL and unicodedata.category(char) in ("Cc", "Cs"):
            return f"contains control character U+{ord(char):04X} at {position}"
    return None


def encode_understanding(text: str) -> str:
    """Validated answer text of an understanding sample (stripped)."""
    if not isinstance(text, str):
        raise ValueError(f"understanding answer must be a string, got {type(text).__name__}")
    body = text.strip()
    problem = _understanding_problem(body)
    if problem:
        raise ValueError(f"bad understanding answer: {problem}")
    return body


@never_raises("understanding")
def parse_understanding(text: str) -> str | ParseError:
    """Free-text answer, stripped; rejects empty, over-long, control or special-token text."""
    if not isinstance(text, str):
        return ParseError(f"expected text, got {type(text).__name__}", clip_text(text), "understanding")
    if len(text) > 4 * MAX_UNDERSTANDING_CHARS:  # cheap early exit before stripping end tokens
        return ParseError(
            f"answer has {len(text)} characters, far more than {MAX_UNDERSTANDING_CHARS}",
            clip_text(text),
            "understanding",
        )
    body = _strip_answer(text)
    problem = _understanding_problem(body)
    if problem:
        return ParseError(problem, clip_text(text), "understanding")
    return body


# --------------------------------------------------------------------------- dispatch


def encode_answer(task: str, value: Any) -> str:
    """Answer text of ``value`` for ``task`` (waypoints, boxes or text)."""
    if task == "planning":
        return encode_planning(value)
    if task == "perception":
        return encode_perception(value)
    if task == "understanding":
        return encode_understanding(value)
    raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")


def parse_answer(task: str, text: str) -> PlanningAnswer | list[Box] | str | ParseError:
    """Parse model text for ``task``; an unknown task is a ParseError too."""
    if task == "planning":
        return parse_planning(text)
    if task == "perception":
        return parse_perception(text)
    if task == "understanding":
        return parse_understanding(text)
    return ParseError(f"unknown task {clip_text(task)[:40]}; expected one of {', '.join(TASKS)}", clip_text(text))
