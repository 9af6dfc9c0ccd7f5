"""Question texts for the three tasks: cameras, driving command, ego telemetry, instructions.

The human turn of a sample follows the reference conversation format: a line that
introduces the camera images, one ``<image>`` placeholder per image (the processor
replaces each with that image's vision tokens, in order), then the telemetry lines
and an instruction. For planning the telemetry lines keep the reference's layout
(navigation command, current position, velocity and acceleration as 2-decimal
pairs), since a released WAM-Diff2 checkpoint was trained on that layout::

    Here is a front-view image from a driving vehicle: <image>
    The navigation information is: right
    The current position is (0.00,0.00)
    The current velocity is: (4.66,-0.09) and current accelerate is: (0.17,-1.53)
    Instruction: ... predict ... the next 4 seconds as 8 new waypoints ...

The instruction sentence can be replaced with ``instruction=`` (for example with
the exact wording a checkpoint was trained on).

Prompt formats (:data:`PROMPT_FORMATS`), a property of each checkpoint (its config's
``prompt_format``, read by ``model.loader``): ``wamdiff2_ros`` is the wording above, the
one this package's checkpoints were trained on; ``reference`` is the reference's
training format word for word, the one a released WAM-Diff2 checkpoint was trained on::

    Here is a front-view images from a driving vehicle: <image>
    The navigation information is: right
    ...
    Instruction: Based on the visual motion cues from the image (such as the relative
    speed of other vehicles and the changing distance to the intersection) and the
    provided telemetry, predict the optimal driving action for the next 4 seconds with
    8 new waypoints.

laid out as the reference's dataset does before the chat template: the text is split at
each ``<image>``, each piece stripped of surrounding whitespace, and the pieces and images
interleaved, so the prompt reads ``...vehicle:<image>The navigation information...``
(:func:`reference_layout`). :func:`apply_prompt_format` turns a question of this
module into a checkpoint's format; ``model.inputs.build_inputs`` applies it for the
model it is given. The reference publishes the planning format only (one front image);
perception and understanding questions keep their wording under its image line and
layout.

Image order: with several cameras and ``num_images = frames * len(cameras)`` the
images are camera-major, each camera's frames oldest first, cameras in the order
given. Velocity and acceleration are in the ego frame (x forward, y left), m/s and
m/s^2 (REP 103). This module is pure Python + numpy; it never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "CAMERAS",
    "CAMERA_VIEWS",
    "DRIVING_COMMANDS",
    "IMAGE_PLACEHOLDER",
    "LABELS",
    "NUM_WAYPOINTS",
    "WAYPOINT_INTERVAL_S",
    "PLANNING_INSTRUCTION",
    "PERCEPTION_INSTRUCTION",
    "PROMPT_FORMATS",
    "REFERENCE_PLANNING_INSTRUCTION",
    "REFERENCE_PREAMBLE",
    "apply_prompt_format",
    "check_prompt_format",
    "default_prompt_format",
    "reference_layout",
    "command_from_one_hot",
    "command_to_one_hot",
    "format_number",
    "image_preamble",
    "planning_question",
    "perception_question",
    "understanding_question",
]

#: NAVSIM's eight cameras; the reference uses ``CAM_F0`` only.
CAMERAS: tuple[str, ...] = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")

#: How each camera is named in the question text.
CAMERA_VIEWS: dict[str, str] = {
    "CAM_F0": "front",
    "CAM_L0": "front-left",
    "CAM_L1": "left",
    "CAM_L2": "rear-left",
    "CAM_R0": "front-right",
    "CAM_R1": "right",
    "CAM_R2": "rear-right",
    "CAM_B0": "back",
}

#: NAVSIM ``driving_command`` one-hot order.
DRIVING_COMMANDS: tuple[str, ...] = ("left", "straight", "right", "unknown")

#: NAVSIM box classes a perception answer may name.
LABELS: tuple[str, ...] = (
    "vehicle",
    "pedestrian",
    "bicycle",
    "traffic_cone",
    "barrier",
    "czone_sign",
    "generic_object",
)

#: Placeholder the processor replaces with one image's vision tokens.
IMAGE_PLACEHOLDER = "<image>"

#: Planning answers: 8 waypoints 0.5 s apart (4 s horizon).
NUM_WAYPOINTS = 8
WAYPOINT_INTERVAL_S = 0.5

#: Longest free-text question accepted by :func:`understanding_question`.
MAX_QUESTION_CHARS = 2000

PLANNING_INSTRUCTION = (
    "Instruction: Using the motion cues in the {images} (how fast other road users move "
    "relative to the ego vehicle, how close the next intersection is) together with the "
    "telemetry above, predict the ego vehicle's driving for the next {horizon:g} seconds "
    "as {n} new waypoints."
)

#: Question formats a checkpoint can be trained on; the first is this package's original one.
PROMPT_FORMATS: tuple[str, ...] = ("wamdiff2_ros", "reference")

#: The reference's image line of its training samples, word for word ("images" included).
REFERENCE_PREAMBLE = "Here is a front-view images from a driving vehicle: <image>"

#: The reference's planning instruction of its training samples, word for word.
REFERENCE_PLANNING_INSTRUCTION = (
    "Instruction: Based on the visual motion cues from the image (such as the relative speed of other "
    "vehicles and the changing distance to the intersection) and the provided telemetry, predict the "
    "optimal driving action for the next 4 seconds with 8 new waypoints."
)

PERCEPTION_INSTRUCTION = (
    "Instruction: Detect the objects around the ego vehicle in the {images}. Answer one "
    "object per item, items separated by ';', each written as "
    "label(x,y,z,length,width,height,yaw) with the label one of {labels}, the box centre "
    "and size in metres in the ego frame (x forward, y left, z up) and the yaw in radians, "
    "optionally followed by the camera and its image box [x1,y1,x2,y2] on a 0-1000 scale. "
    "Answer none if there is no object."
)


def format_number(value: float, decimals: int = 2) -> str:
    """Fixed-point text of ``value`` with ``decimals`` digits; never ``-0.00``."""
    text = f"{float(value):.{decimals}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return text


def format_number_fixed(value: float, int_digits: int = 2, decimals: int = 2) -> str:
    """Zero-padded text of ``value``: ``int_digits`` integer digits, ``decimals`` digits, ``-`` for negatives.

    ``8.3 -> "08.30"``, ``-13.571 -> "-13.57"``; never ``-00.00``. A value that needs more integer digits
    gets them (``123.40``): the width is fixed below ``10 ** int_digits``.
    """
    text = format_number(value, decimals)
    sign = "-" if text.startswith("-") else ""
    return sign + text.lstrip("-").zfill(int_digits + 1 + decimals)


def command_to_one_hot(name: str) -> np.ndarray:
    """NAVSIM one-hot vector (int64, length 4) of a driving command name."""
    if not isinstance(name, str):
        raise ValueError(f"driving command must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if key not in DRIVING_COMMANDS:
        raise ValueError(f"unknown driving command {name!r}; expected one of {', '.join(DRIVING_COMMANDS)}")
    vec = np.zeros(len(DRIVING_COMMANDS), dtype=np.int64)
    vec[DRIVING_COMMANDS.index(key)] = 1
    return vec


def command_from_one_hot(vec: Sequence[float] | np.ndarray) -> str:
    """Driving command name of a NAVSIM one-hot vector (exactly one 1, the rest 0)."""
    try:
        arr = np.asarray(vec, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"driving command vector is not numeric: {exc}") from None
    if arr.shape != (len(DRIVING_COMMANDS),):
        raise ValueError(f"driving command vector must have shape ({len(DRIVING_COMMANDS)},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"driving command vector has non-finite values: {arr.tolist()}")
    ones = np.isclose(arr, 1.0)
    zeros = np.isclose(arr, 0.0)
    if not np.all(ones | zeros) or int(ones.sum()) != 1:
        raise ValueError(f"driving command vector must be one-hot (one 1, three 0), got {arr.tolist()}")
    return DRIVING_COMMANDS[int(np.argmax(ones))]


def _check_cameras(num_images: int, cameras: Sequence[str]) -> tuple[tuple[str, ...], int]:
    """Validate the camera list and image count; return (cameras, frames per camera)."""
    if isinstance(cameras, str):
        cameras = (cameras,)
    cams = tuple(cameras)
    if not cams:
        raise ValueError("cameras must name at least one camera")
    for cam in cams:
        if cam not in CAMERAS:
            raise ValueError(f"unknown camera {cam!r}; expected some of {', '.join(CAMERAS)}")
    if len(set(cams)) != len(cams):
        raise ValueError(f"cameras are repeated: {list(cams)}")
    if isinstance(num_images, bool) or not isinstance(num_images, int | np.integer) or num_images < 1:
        raise ValueError(f"num_images must be a positive integer, got {num_images!r}")
    if num_images % len(cams):
        raise ValueError(
            f"num_images={num_images} is not a multiple of the {len(cams)} camera(s) {list(cams)} "
            "(images are camera-major, the same number of frames per camera)"
        )
    return cams, int(num_images) // len(cams)


def _images_word(num_images: int) -> str:
    return "image" if num_images == 1 else "images"


def image_preamble(num_images: int = 1, cameras: Sequence[str] = ("CAM_F0",)) -> str:
    """Opening line(s) that introduce the images, one ``<image>`` per image."""
    cams, frames = _check_cameras(num_images, cameras)
    if len(cams) == 1:
        view = CAMERA_VIEWS[cams[0]]
        if frames == 1:
            return f"Here is a {view}-view image from a driving vehicle: {IMAGE_PLACEHOLDER}"
        return f"Here are {frames} consecutive {view}-view images from a driving vehicle, oldest first: " + " ".join(
            [IMAGE_PLACEHOLDER] * frames
        )
    frames_text = "" if frames == 1 else f", {frames} consecutive frames per camera, oldest first"
    lines = [f"Here are images from {len(cams)} cameras of a driving vehicle{frames_text}:"]
    for cam in cams:
        lines.append(f"{CAMERA_VIEWS[cam]} view ({cam}): " + " ".join([IMAGE_PLACEHOLDER] * frames))
    return "\n".join(lines)


def _pair(name: str, value: Sequence[float]) -> str:
    try:
        items = [float(v) for v in value]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of numbers (x forward, y left), got {value!r}") from None
    if len(items) != 2:
        raise ValueError(f"{name} must be a pair (x forward, y left), got {len(items)} values")
    if not all(math.isfinite(v) for v in items):
        raise ValueError(f"{name} must be finite, got {items}")
    return f"({format_number(items[0])},{format_number(items[1])})"


def planning_question(
    command: str,
    velocity: tuple[float, float],
    acceleration: tuple[float, float],
    num_images: int = 1,
    cameras: Sequence[str] = ("CAM_F0",),
    instruction: str | None = None,
    prompt_format: str = PROMPT_FORMATS[0],
) -> str:
    """Human turn of a planning sample.

    ``command`` is a :data:`DRIVING_COMMANDS` name (see :func:`command_from_one_hot`),
    ``velocity``/``acceleration`` are ego-frame (x, y) in m/s and m/s^2.
    ``instruction`` replaces the instruction line (it may use ``{images}``,
    ``{horizon}`` and ``{n}``). ``prompt_format="reference"`` gives the reference's
    wording and layout (:func:`apply_prompt_format`).
    """
    if not isinstance(command, str) or command.strip().lower() not in DRIVING_COMMANDS:
        raise ValueError(f"unknown driving command {command!r}; expected one of {', '.join(DRIVING_COMMANDS)}")
    preamble = image_preamble(num_images, cameras)
    template = PLANNING_INSTRUCTION if instruction is None else instruction
    _check_template(template)
    lines = [
        preamble,
        f"The navigation information is: {command.strip().lower()}",
        "The current position is (0.00,0.00)",
        f"The current velocity is: {_pair('velocity', velocity)} and current accelerate is: "
        f"{_pair('acceleration', acceleration)}",
        template.format(images=_images_word(num_images), horizon=NUM_WAYPOINTS * WAYPOINT_INTERVAL_S, n=NUM_WAYPOINTS),
    ]
    return apply_prompt_format("\n".join(lines), prompt_format)


def perception_question(num_images: int = 1, cameras: Sequence[str] = ("CAM_F0",)) -> str:
    """Human turn of a perception sample (answer format: see ``codecs.encode_perception``)."""
    preamble = image_preamble(num_images, cameras)
    return preamble + "\n" + PERCEPTION_INSTRUCTION.format(images=_images_word(num_images), labels=", ".join(LABELS))


def understanding_question(question: str, num_images: int = 1, cameras: Sequence[str] = ("CAM_F0",)) -> str:
    """Human turn of a driving-understanding sample: the images, then the caller's question."""
    if not isinstance(question, str):
        raise ValueError(f"question must be a string, got {type(question).__name__}")
    text = question.strip()
    if not text:
        raise ValueError("question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise ValueError(f"question has {len(text)} characters, more than {MAX_QUESTION_CHARS}")
    if IMAGE_PLACEHOLDER in text:
        raise ValueError(f"question must not contain {IMAGE_PLACEHOLDER!r}; images are added by num_images/cameras")
    return image_preamble(num_images, cameras) + "\n" + text


def _check_template(template: str) -> None:
    if not isinstance(template, str) or not template.strip():
        raise ValueError("instruction must be a non-empty string")
    if IMAGE_PLACEHOLDER in template:
        raise ValueError(f"instruction must not contain {IMAGE_PLACEHOLDER!r}")
    try:
        template.format(images="images", horizon=4.0, n=NUM_WAYPOINTS)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"instruction is not a valid template (fields: images, horizon, n): {exc}") from None


def check_prompt_format(name: str) -> str:
    """``name`` if it is one of :data:`PROMPT_FORMATS`, else a ValueError naming them."""
    if name not in PROMPT_FORMATS:
        raise ValueError(f"unknown prompt format {name!r}; expected one of {', '.join(PROMPT_FORMATS)}")
    return name


def default_prompt_format(model_type: str | None) -> str:
    """The format of a checkpoint whose config names none: the reference's for ``wam_diff2``, else ours."""
    return "reference" if model_type == "wam_diff2" else PROMPT_FORMATS[0]


def reference_layout(value: str) -> str:
    """The reference dataset's placement of images in a human turn: split at ``<image>``, strip, interleave.

    ``"A: <image>\nB"`` becomes ``"A:<image>B"`` (the chat template joins the content
    items without separators).
    """
    parts = value.split(IMAGE_PLACEHOLDER)
    out: list[str] = []
    for i, part in enumerate(parts):
        if part.strip():
            out.append(part.strip())
        if i < len(parts) - 1:
            out.append(IMAGE_PLACEHOLDER)
    return "".join(out)


def _our_planning_instruction(num_images: int = 1) -> str:
    return PLANNING_INSTRUCTION.format(images=_images_word(num_images), horizon=NUM_WAYPOINTS * WAYPOINT_INTERVAL_S,
                                       n=NUM_WAYPOINTS)


def _reference_body(lines: list[str]) -> list[str]:
    """The question's lines after the images, our planning instruction in the reference's words."""
    if lines and lines[-1] in (_our_planning_instruction(1), _our_planning_instruction(2)):
        lines = [*lines[:-1], REFERENCE_PLANNING_INSTRUCTION]
    return lines


def apply_prompt_format(question: str, prompt_format: str) -> str:
    """A question of this module in ``prompt_format`` (idempotent; ``wamdiff2_ros`` returns it unchanged).

    ``reference``: our one-front-image line becomes :data:`REFERENCE_PREAMBLE`, our
    planning instruction becomes :data:`REFERENCE_PLANNING_INSTRUCTION`, and the text is
    laid out with :func:`reference_layout`. Questions with several cameras or frames have
    no reference wording (the reference trains on the front camera alone): their image
    lines stay ours (:func:`image_preamble`), the rest is converted and laid out the same
    way, so a reference-format checkpoint still takes the node's eight cameras; so does a
    single camera other than the front one (``data.camera_subsets=random``). Any other
    opening is a ValueError.
    """
    check_prompt_format(prompt_format)
    if not isinstance(question, str):
        raise ValueError(f"question must be a string, got {type(question).__name__}")
    if prompt_format == PROMPT_FORMATS[0]:
        return question
    laid_out_preamble = reference_layout(REFERENCE_PREAMBLE)
    if question.startswith(laid_out_preamble):
        return question  # already in the reference format
    ours = image_preamble(1, ("CAM_F0",)) + "\n"
    if question.startswith(ours):
        body = question[len(ours):]
    elif question.startswith(REFERENCE_PREAMBLE + "\n"):
        body = question[len(REFERENCE_PREAMBLE) + 1:]
    elif question.startswith(("Here are ", "Here is a ")) and IMAGE_PLACEHOLDER in question:
        if reference_layout(question) == question:
            return question  # several images, already laid out
        lines = question.split("\n")
        last_image = max(i for i, line in enumerate(lines) if IMAGE_PLACEHOLDER in line)
        preamble, body_lines = lines[: last_image + 1], lines[last_image + 1:]
        return reference_layout("\n".join([*preamble, *_reference_body(body_lines)]))
    else:
        raise ValueError("the reference prompt format opens with the images (one front-camera image in the"
                         f" reference's words, or our lines for other cameras); this question starts {question[:60]!r}")
    return reference_layout(REFERENCE_PREAMBLE + "\n" + "\n".join(_reference_body(body.split("\n"))))
