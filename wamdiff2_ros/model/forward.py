"""Training forwards: one transformers Qwen3-VL forward over ``[prefix | clean | noisy]`` (diffusion) or ``[prefix | response]`` (AR).

Prompts of different lengths are left-padded into one batch; every row carries its own
block mask (see :mod:`wamdiff2_ros.model.masks`) as a 4D additive ``attention_mask`` and
its own 3D mRoPE positions, so padding changes nothing for the real tokens (pad rows
attend only to themselves). ``logits_to_keep`` limits the LM head to the tail we need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

from wamdiff2_ros.model.inputs import prompt_position_ids
from wamdiff2_ros.model.masks import (
    block_causal_mask,
    continue_position_ids,
    sequence_block_ids,
    to_additive_4d,
    training_block_mask,
    training_position_ids,
)

if TYPE_CHECKING:  # pragma: no cover
    from wamdiff2_ros.model.loader import WamDiff2

IGNORE_INDEX = -100

InputsLike = Mapping[str, torch.Tensor] | Sequence[Mapping[str, torch.Tensor]]


def _as_list(inputs: InputsLike) -> list[Mapping[str, torch.Tensor]]:
    rows = [inputs] if isinstance(inputs, Mapping) else list(inputs)
    if not rows:
        raise ValueError("no prompts given")
    for i, row in enumerate(rows):
        if "input_ids" not in row:
            raise ValueError(f"prompt {i} has no input_ids (build it with build_inputs)")
        if row["input_ids"].ndim != 2 or row["input_ids"].shape[0] != 1:
            raise ValueError(f"prompt {i}: input_ids must have shape (1, L), got {tuple(row['input_ids'].shape)}")
    return rows


def _as_rows(ids: torch.Tensor | Sequence[torch.Tensor], batch: int, name: str) -> list[torch.Tensor]:
    if isinstance(ids, torch.Tensor):
        ids = ids.unsqueeze(0) if ids.ndim == 1 else ids
        if ids.ndim != 2:
            raise ValueError(f"{name} must have shape (R,) or (B, R), got {tuple(ids.shape)}")
        rows = list(ids)
    else:
        rows = [torch.as_tensor(r).reshape(-1) for r in ids]
    if len(rows) != batch:
        raise ValueError(f"{name} has {len(rows)} rows but there are {batch} prompts")
    return [r.long() for r in rows]


def pack_rows(
    vla: WamDiff2,
    prompts: list[Mapping[str, torch.Tensor]],
    tokens: list[torch.Tensor],
    masks: list[torch.Tensor],
    positions: list[torch.Tensor],
) -> dict[str, torch.Tensor]:
    """Left-pad per-row (ids, bool mask, (3, l) positions) into model kwargs with a 4D additive mask."""
    device = vla.device
    length = max(int(t.shape[0]) for t in tokens)
    batch = len(tokens)
    input_ids = torch.full((batch, length), vla.pad_token_id, dtype=torch.long, device=device)
    mask = torch.zeros((batch, length, length), dtype=torch.bool, device=device)
    mask[:, torch.arange(length), torch.arange(length)] = True  # pad rows see themselves only
    position_ids = torch.zeros((3, batch, length), dtype=torch.long, device=device)
    for b, (ids, m, pos) in enumerate(zip(tokens, masks, positions, strict=True)):
        n = int(ids.shape[0])
        start = length - n
        input_ids[b, start:] = ids.to(device)
        mask[b, start:, start:] = m.to(device)
        if start:
            mask[b, start:, :start] = False
        position_ids[:, b, start:] = pos.to(device)
    kwargs: dict[str, torch.Tensor] = {
        "input_ids": input_ids,
        "attention_mask": to_additive_4d(mask, vla.dtype),
        "position_ids": position_ids,
    }
    pixels = [p["pixel_values"] for p in prompts if "pixel_values" in p]
    if pixels:
        kwargs["pixel_values"] = torch.cat(pixels).to(device=device, dtype=vla.dtype)
        kwargs["image_grid_thw"] = torch.cat([p["image_grid_thw"] for p in prompts if "image_grid_thw" in p]).to(device)
    return kwargs


def _prefix(vla: WamDiff2, prompt: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = prompt["input_ids"][0]
    pos = prompt.get("position_ids")
    if pos is None:
        pos = prompt_position_ids(vla, dict(prompt))
    return ids, pos


def diffusion_batch(
    vla: WamDiff2,
    inputs: InputsLike,
    response_ids: torch.Tensor | Sequence[torch.Tensor],
    noisy_ids: torch.Tensor | Sequence[torch.Tensor],
    *,
    block_size: int | None = None,
) -> dict[str, torch.Tensor]:
    """Model kwargs for the training layout ``[prefix | clean | noisy]`` of each prompt (left-padded)."""
    prompts = _as_list(inputs)
    block = vla.block_size if block_size is None else block_size
    clean = _as_rows(response_ids, len(prompts), "response_ids")
    noisy = _as_rows(noisy_ids, len(prompts), "noisy_ids")
    response_len = int(clean[0].shape[0])
    if any(int(r.shape[0]) != response_len for r in clean + noisy):
        raise ValueError("all responses (clean and noisy) must have the same length; pad them with pad_response()")
    tokens, masks, positions = [], [], []
    for prompt, c, n in zip(prompts, clean, noisy, strict=True):
        ids, pos = _prefix(vla, prompt)
        tokens.append(torch.cat([ids, c.to(ids.device), n.to(ids.device)]))
        masks.append(training_block_mask(int(ids.shape[0]), response_len, block))
        positions.append(training_position_ids(pos, response_len)[:, 0])
    return pack_rows(vla, prompts, tokens, masks, positions)


def diffusion_forward(
    vla: WamDiff2,
    inputs: InputsLike,
    response_ids: torch.Tensor | Sequence[torch.Tensor],
    noisy_ids: torch.Tensor | Sequence[torch.Tensor],
    *,
    block_size: int | None = None,
) -> torch.Tensor:
    """Logits (B, R, V) at the noisy response positions, from ONE forward over ``[prefix | clean | noisy]``.

    ``inputs`` is one :func:`build_inputs` dict or a list of them (one per row); the
    responses are (B, R) with R a multiple of the block size (see ``pad_response``), the
    noisy copy from ``add_block_noise``. No logit shift: logits[b, j] predicts response[b, j].
    """
    kwargs = diffusion_batch(vla, inputs, response_ids, noisy_ids, block_size=block_size)
    response_len = _as_rows(response_ids, kwargs["input_ids"].shape[0], "response_ids")[0].shape[0]
    out = vla.model(**kwargs, use_cache=False, logits_to_keep=int(response_len))
    return out.logits


def ar_forward(
    vla: WamDiff2,
    inputs: InputsLike,
    response_ids: torch.Tensor | Sequence[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal (B=1) forward over ``[prefix | response]``: ``(logits, targets)`` over the last R+1 positions.

    Responses may differ in length. ``targets`` holds the response tokens where the
    position is a response token and ``-100`` elsewhere; :func:`wamdiff2_ros.model.losses.ar_loss`
    shifts them (logits at i predict targets at i+1).
    """
    prompts = _as_list(inputs)
    responses = _as_rows(response_ids, len(prompts), "response_ids")
    tail = max(int(r.shape[0]) for r in responses) + 1
    tokens, masks, positions, targets = [], [], [], []
    for prompt, r in zip(prompts, responses, strict=True):
        ids, pos = _prefix(vla, prompt)
        p_len, r_len = int(ids.shape[0]), int(r.shape[0])
        tokens.append(torch.cat([ids, r.to(ids.device)]))
        masks.append(block_causal_mask(sequence_block_ids(p_len, r_len, 1)))
        positions.append(torch.cat([pos, continue_position_ids(pos, r_len)], dim=-1)[:, 0])
        targets.append(torch.cat([torch.full((p_len,), IGNORE_INDEX, dtype=torch.long), r.cpu()]))
    kwargs = pack_rows(vla, prompts, tokens, masks, positions)
    length = kwargs["input_ids"].shape[1]
    full_targets = torch.full((len(prompts), length), IGNORE_INDEX, dtype=torch.long)
    for b, t in enumerate(targets):
        full_targets[b, length - t.shape[0] :] = t
    out = vla.model(**kwargs, use_cache=False, logits_to_keep=tail)
    return out.logits, full_targets[:, -tail:].to(out.logits.device)
