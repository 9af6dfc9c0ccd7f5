"""Prompt preparation shared by both engines: validation, mRoPE positions, block masks.

Batches are left padded (``attention_mask`` zeros first), so every row's response
starts at the same slot ``L`` (the padded prompt length). Slot ``j`` of row ``b`` is
a real prompt token when ``attention_mask[b, j]`` is 1.

Positions follow Qwen3-VL: the prompt gets 3-D mRoPE positions from the model's
``get_rope_index`` (text tokens advance all three axes together, image tokens are
laid out on their grid); response token ``t`` of a row gets text position
``max(prompt positions) + 1 + t`` on all three axes (the "rope delta" rule).

The prompt mask is block-causal in chunks of B counted from each row's first real
token: inside a chunk attention is bidirectional, across chunks causal; B=1 is plain
causal. Pad slots are never attended to (a pad query attends to itself only, so no
softmax row is empty).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


class DecodeInputError(ValueError):
    """The inputs given to a decoder are malformed (names the offending field)."""


@dataclass
class PreparedPrompt:
    """A validated, device-resident prompt batch."""

    input_ids: torch.Tensor  # (b, L) long
    attention_mask: torch.Tensor  # (b, L) bool, True = real token
    pad_lengths: torch.Tensor  # (b,) long, left pad per row
    position_ids: torch.Tensor  # (3, b, L) long mRoPE positions (pads: 0)
    response_start: torch.Tensor  # (b,) long, text position of the first response token
    pixel_values: torch.Tensor | None = None
    image_grid_thw: torch.Tensor | None = None
    mm_token_type_ids: torch.Tensor | None = None

    @property
    def batch_size(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[1])

    @property
    def real_tokens(self) -> int:
        return int(self.attention_mask.sum())

    @property
    def has_images(self) -> bool:
        return self.pixel_values is not None


def _image_token_ids(config) -> tuple[int | None, int | None]:
    return getattr(config, "image_token_id", None), getattr(config, "video_token_id", None)


def prepare_prompt(vla, inputs: dict[str, torch.Tensor], device: torch.device | str) -> PreparedPrompt:
    """Validate ``inputs`` (as built by ``model.inputs.build_inputs``) and compute positions."""
    if not isinstance(inputs, dict) or "input_ids" not in inputs:
        raise DecodeInputError("inputs must be a dict with 'input_ids' (and optionally 'attention_mask', images)")
    input_ids = inputs["input_ids"]
    if not isinstance(input_ids, torch.Tensor) or input_ids.ndim != 2 or input_ids.shape[1] == 0:
        raise DecodeInputError(f"inputs['input_ids'] must be a (batch, length) tensor, got {getattr(input_ids, 'shape', type(input_ids))}")
    if input_ids.dtype not in (torch.long, torch.int32, torch.int64):
        raise DecodeInputError(f"inputs['input_ids'] must hold integer token ids, got {input_ids.dtype}")
    if inputs.get("pixel_values_videos") is not None:
        raise DecodeInputError("video inputs (pixel_values_videos) are not supported by the decoders")
    device = torch.device(device)
    input_ids = input_ids.to(device=device, dtype=torch.long)
    mask = inputs.get("attention_mask")
    if mask is None:
        mask = torch.ones_like(input_ids, dtype=torch.bool)
    else:
        if mask.shape != input_ids.shape:
            raise DecodeInputError(f"inputs['attention_mask'] shape {tuple(mask.shape)} != input_ids shape {tuple(input_ids.shape)}")
        mask = mask.to(device=device).bool()
    # left padding only: once a row has started it never pads again
    started = mask.long().cummax(dim=1).values.bool()
    if bool((started & ~mask).any()):
        raise DecodeInputError("inputs['attention_mask'] must be left padded (zeros before the prompt, none inside or after it)")
    if bool((~mask.any(dim=1)).any()):
        raise DecodeInputError("inputs['attention_mask'] has a row without any real token")
    vocab = int(vla.model.get_input_embeddings().weight.shape[0])
    real_ids = input_ids[mask]
    if int(real_ids.min()) < 0 or int(real_ids.max()) >= vocab:
        raise DecodeInputError(f"inputs['input_ids'] holds ids outside the vocabulary [0, {vocab})")
    pad_lengths = (~mask).sum(dim=1)

    pixel_values = inputs.get("pixel_values")
    grid = inputs.get("image_grid_thw")
    if (pixel_values is None) != (grid is None):
        raise DecodeInputError("inputs must hold both 'pixel_values' and 'image_grid_thw', or neither")
    mm_types = inputs.get("mm_token_type_ids")
    image_id, video_id = _image_token_ids(vla.model.config)
    if pixel_values is not None:
        pixel_values = pixel_values.to(device=device)
        grid = grid.to(device=device, dtype=torch.long)
        if mm_types is None:
            mm_types = torch.zeros_like(input_ids, dtype=torch.int32)
            if image_id is not None:
                mm_types[input_ids == image_id] = 1
            if video_id is not None:
                mm_types[input_ids == video_id] = 2
        mm_types = mm_types.to(device=device)
        position_ids, _ = vla.model.model.get_rope_index(
            input_ids, mm_token_type_ids=mm_types, image_grid_thw=grid, attention_mask=mask.long()
        )
        position_ids = position_ids.masked_fill(~mask[None], 0)
    else:
        text = (mask.long().cumsum(dim=1) - 1).clamp(min=0).masked_fill(~mask, 0)
        position_ids = text[None].expand(3, -1, -1).contiguous()
    response_start = position_ids.amax(dim=(0, 2)) + 1
    return PreparedPrompt(
        input_ids=input_ids,
        attention_mask=mask,
        pad_lengths=pad_lengths,
        position_ids=position_ids,
        response_start=response_start,
        pixel_values=pixel_values,
        image_grid_thw=grid,
        mm_token_type_ids=mm_types,
    )


def prompt_block_mask(attention_mask: torch.Tensor, block_size: int) -> torch.Tensor:
    """(b, L, L) bool block-causal prompt mask (True = may attend), pads excluded.

    Chunk ids count from each row's first real token, so a left-padded row gets the
    same mask as the unpadded prompt would.
    """
    b, length = attention_mask.shape
    pads = (~attention_mask).sum(dim=1, keepdim=True)
    slots = torch.arange(length, device=attention_mask.device)[None]
    chunk = torch.div(slots - pads, block_size, rounding_mode="floor")  # negative for pads
    allowed = (chunk[:, None, :] <= chunk[:, :, None]) & attention_mask[:, None, :] & attention_mask[:, :, None]
    eye = torch.eye(length, dtype=torch.bool, device=attention_mask.device)[None]
    return allowed | eye


def to_model_mask(allowed: torch.Tensor, attn_implementation: str | None, dtype: torch.dtype) -> torch.Tensor:
    """Turn a (b, 1, q, k) bool mask into what transformers' attention expects.

    SDPA takes a boolean mask (True = attend); eager attention adds the mask to the
    scores, so it gets 0 / dtype-min floats.
    """
    if attn_implementation in (None, "sdpa", "flex_attention"):
        return allowed
    zeros = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zeros, torch.finfo(dtype).min)
