"""Conversation JSON of a sample, in the reference layout: build, validate, read its question and answer.

::

    {"datasource": "navsim", "id": "43ebecce459052f2", "image": ["CAM_F0/xx.jpg"],
     "conversations": [{"from": "human", "value": "...<image>..."},
                       {"from": "gpt", "value": "2.26,-0.17,..."}]}

The human turn's text is :mod:`~wamdiff2_ros.model.prompts`, the gpt turn's an answer of
:mod:`~wamdiff2_ros.model.codecs`. Validation never raises: it returns the normalized
object or a :class:`~wamdiff2_ros.model.codecs.ParseError`. Pure Python; never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wamdiff2_ros.model.codecs import ParseError, clip_text, never_raises
from wamdiff2_ros.model.prompts import IMAGE_PLACEHOLDER

__all__ = ["make_conversation", "validate_conversation", "conversation_question", "conversation_answer"]


def make_conversation(datasource: str, sample_id: str, images: Sequence[str], question: str, answer: str) -> dict:
    """One sample in the reference conversation JSON layout (validated)."""
    if isinstance(images, str):
        raise ValueError("images must be a sequence of paths, got a single string")
    obj = {
        "datasource": datasource,
        "id": sample_id,
        "image": list(images),
        "conversations": [{"from": "human", "value": question}, {"from": "gpt", "value": answer}],
    }
    checked = validate_conversation(obj)
    if isinstance(checked, ParseError):
        raise ValueError(f"invalid conversation: {checked.reason}")
    return checked


def _conversation_problem(obj: object) -> str | dict:
    if not isinstance(obj, Mapping):
        return f"a conversation must be a JSON object, got {type(obj).__name__}"
    for key in ("datasource", "id", "image", "conversations"):
        if key not in obj:
            return f"missing key {key!r}"
    for key in ("datasource", "id"):
        value = obj[key]
        if not isinstance(value, str) or not value.strip():
            return f"{key!r} must be a non-empty string, got {clip_text(value)[:60]}"
    images = obj["image"]
    if isinstance(images, str):
        images = [images]
    if not isinstance(images, list | tuple):
        return f"'image' must be a list of paths, got {type(images).__name__}"
    for index, path in enumerate(images):
        if not isinstance(path, str) or not path.strip():
            return f"'image'[{index}] must be a non-empty path string, got {clip_text(path)[:60]}"
    turns = obj["conversations"]
    if not isinstance(turns, list | tuple) or not turns:
        return "'conversations' must be a non-empty list of turns"
    normalized: list[dict] = []
    expected_role = "human"
    placeholders = 0
    for index, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            return f"conversations[{index}] must be an object, got {type(turn).__name__}"
        if "from" not in turn or "value" not in turn:
            return f"conversations[{index}] needs 'from' and 'value'"
        role, value = turn["from"], turn["value"]
        if not isinstance(value, str):
            return f"conversations[{index}]['value'] must be a string, got {type(value).__name__}"
        if role == "system" and index == 0:
            placeholders += value.count(IMAGE_PLACEHOLDER)
        elif role != expected_role:
            return f"conversations[{index}] is from {clip_text(role)[:30]}, expected {expected_role!r}"
        elif role == "human":
            if not value.strip():
                return f"conversations[{index}] (human) is empty"
            placeholders += value.count(IMAGE_PLACEHOLDER)
            expected_role = "gpt"
        else:
            if IMAGE_PLACEHOLDER in value:
                return f"conversations[{index}] (gpt) contains {IMAGE_PLACEHOLDER!r}"
            expected_role = "human"
        normalized.append(dict(turn))
    if expected_role != "human":
        return "the last human turn has no gpt answer"
    if placeholders != len(images):
        return f"{placeholders} {IMAGE_PLACEHOLDER} placeholder(s) but {len(images)} image(s)"
    result = dict(obj)
    result["image"] = list(images)
    result["conversations"] = normalized
    return result


@never_raises("conversation")
def validate_conversation(obj: object) -> dict | ParseError:
    """Check a sample's keys, types, turn order and ``<image>`` count; return a normalized copy.

    Tolerated: extra keys (kept), ``image`` as a single path string (made a list),
    a leading ``system`` turn, several human/gpt rounds. An empty gpt value is
    allowed (prompt-only evaluation files).
    """
    checked = _conversation_problem(obj)
    if isinstance(checked, str):
        return ParseError(checked, clip_text(obj), "conversation")
    return checked


def conversation_question(obj: Mapping) -> str:
    """Value of the first human turn of a (valid) conversation."""
    return next(turn["value"] for turn in obj["conversations"] if turn["from"] == "human")


def conversation_answer(obj: Mapping) -> str:
    """Value of the first gpt turn of a (valid) conversation."""
    return next(turn["value"] for turn in obj["conversations"] if turn["from"] == "gpt")
