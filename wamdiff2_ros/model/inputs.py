"""Model inputs for one prompt: chat formatting, image tokens and Qwen3-VL 3D (mRoPE) positions.

The prompt is one user turn (the images, then the question) followed by the start of the
assistant turn, in Qwen's chat format::

    <|im_start|>user\\n<|vision_start|><|image_pad|>...<|vision_end|>QUESTION<|im_end|>\\n<|im_start|>assistant\\n

``<image>`` placeholders in the question (the reference's conversation format) mark where
each image goes; without placeholders the images come first, in order. The response that
the model produces (and is trained on) is the answer followed by ``<|im_end|>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from wamdiff2_ros.model.processor import VISION_BLOCK
from wamdiff2_ros.model.prompts import PROMPT_FORMATS, apply_prompt_format
from wamdiff2_ros.model.tokenizer import IM_END, IM_START

if TYPE_CHECKING:  # pragma: no cover
    from wamdiff2_ros.model.loader import WamDiff2

IMAGE_PLACEHOLDER = "<image>"


def chat_prompt(question: str, num_images: int) -> str:
    """The chat-formatted prompt text with one vision block per image."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    n_placeholders = question.count(IMAGE_PLACEHOLDER)
    if n_placeholders:
        if n_placeholders != num_images:
            raise ValueError(f"the question has {n_placeholders} {IMAGE_PLACEHOLDER} placeholders but {num_images} images were given")
        content = question.replace(IMAGE_PLACEHOLDER, VISION_BLOCK)
    else:
        content = VISION_BLOCK * num_images + question
    return f"{IM_START}user\n{content}{IM_END}\n{IM_START}assistant\n"


def encode_response(vla: WamDiff2, answer: str) -> torch.LongTensor:
    """(1, R) token ids of ``answer`` followed by the end token ``<|im_end|>``."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a str, got {type(answer).__name__}")
    ids = vla.tokenizer(answer, add_special_tokens=False)["input_ids"]
    return torch.tensor([list(ids) + [vla.end_token_id]], dtype=torch.long)


def prompt_position_ids(vla: WamDiff2, inputs: dict[str, torch.Tensor]) -> torch.LongTensor:
    """(3, B, L) mRoPE positions of a prompt, from transformers' ``Qwen3VLModel.get_rope_index``."""
    input_ids = inputs["input_ids"]
    if "image_grid_thw" not in inputs:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return positions.view(1, 1, -1).expand(3, input_ids.shape[0], -1).clone()
    position_ids, _ = vla.model.model.get_rope_index(
        input_ids,
        mm_token_type_ids=inputs["mm_token_type_ids"],
        image_grid_thw=inputs["image_grid_thw"],
        attention_mask=inputs.get("attention_mask"),
    )
    return position_ids


def build_inputs(
    vla: WamDiff2,
    question: str,
    images: Sequence[np.ndarray] | None = None,
    *,
    answer: str | None = None,
    max_pixels: int | None = None,
    vision: dict[str, torch.Tensor] | None = None,
    with_positions: bool = True,
) -> dict[str, torch.Tensor]:
    """Tensors for one prompt (batch of 1) on the model's device.

    Keys: ``input_ids`` (1, L), ``attention_mask`` (1, L), ``mm_token_type_ids`` (1, L),
    ``position_ids`` (3, 1, L) (Qwen3-VL mRoPE), and with images ``pixel_values`` and
    ``image_grid_thw`` (n, 3). With ``answer=`` also ``response_ids`` (1, R): the answer's
    tokens and ``<|im_end|>`` (not yet padded to a multiple of the block size).
    ``max_pixels`` is the resolution budget per image (default: the processor's).
    ``vision``: ``images`` already turned into patches (``processor.images_to_patches``),
    shared by several prompts about the same images (see :func:`build_frame_inputs`).
    ``with_positions=False`` leaves out ``position_ids`` (the decoders compute their own).
    The question is put in the checkpoint's prompt format (``vla.prompt_format``, see
    :func:`wamdiff2_ros.model.prompts.apply_prompt_format`) first.
    """
    question = apply_prompt_format(question, getattr(vla, "prompt_format", PROMPT_FORMATS[0]))
    if vla.processor is None and images:
        raise ValueError("this checkpoint has no image processor (no preprocessor_config.json); cannot take images")
    images = list(images) if images is not None else []
    text = chat_prompt(question, len(images))
    if vla.processor is not None:
        inputs = vla.processor(text, images, max_pixels=max_pixels, return_tensors="pt", vision=vision)
    else:
        enc = vla.tokenizer([text], add_special_tokens=False, return_tensors="pt")
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        inputs["mm_token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    device = vla.device
    inputs = {k: v.to(device) for k, v in inputs.items()}
    if "pixel_values" in inputs:
        inputs["pixel_values"] = inputs["pixel_values"].to(vla.dtype)
    if with_positions:
        inputs["position_ids"] = prompt_position_ids(vla, inputs)
    if answer is not None:
        inputs["response_ids"] = encode_response(vla, answer).to(device)
    return inputs


def build_frame_inputs(
    vla: WamDiff2,
    questions: Sequence[str],
    images: Sequence[np.ndarray] | None = None,
    *,
    max_pixels: int | None = None,
) -> list[dict[str, torch.Tensor]]:
    """:func:`build_inputs` for several questions about one frame set, the images resized and patched once.

    Every returned prompt holds the same ``pixel_values`` and ``image_grid_thw`` tensors
    (the same objects, already on the model's device and dtype), which is what
    ``decoding.encode_prefix`` expects of one frame set. No ``position_ids``: the
    decoders compute them (this keeps a frame's preparation off the planning latency).
    """
    images = list(images) if images is not None else []
    vision = None
    if images and vla.processor is not None:
        patches = vla.processor.images_to_patches(images, max_pixels)
        vision = {"pixel_values": patches["pixel_values"].to(vla.device, vla.dtype),
                  "image_grid_thw": patches["image_grid_thw"].to(vla.device)}
    return [build_inputs(vla, question, images, max_pixels=max_pixels, vision=vision, with_positions=False)
            for question in questions]
