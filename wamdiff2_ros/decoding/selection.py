"""Vectorised unmask selection of one denoise step (device-side, no host sync).

Same rule as ``reference.select_to_commit``, for all rows at once: commit every
masked position whose softmax confidence is >= the threshold; a row with none
commits its single most confident masked position (first index on ties); at the
step cap every masked position is committed. Tensors are updated in place.

The mask token itself is never a prediction: its logit is dropped before the
softmax (a trained model gives it ~0 probability anyway; a random one may not).

``digit_table`` (``DecodeConfig.digits_in_order``, our own addition, not the paper's
rule): a position predicted to be a digit waits while its left neighbour is still
masked and predicted to be a digit too, so the digits of a number are committed most
significant first, each seeing the ones before it, while different numbers still
decode in parallel. Parallel decoding otherwise commits the tens and the units of
``9.8`` / ``10.1`` independently (``00.1``, ``19.8``). The leftmost masked position
is always eligible, so a step always commits something.
"""

from __future__ import annotations

import torch


def predict(logits: torch.Tensor, mask_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(confidence, token) per position: softmax max and argmax over the vocabulary without the mask token."""
    drop = torch.tensor([mask_token_id], device=logits.device)
    scores = logits.float().index_fill(-1, drop, float("-inf"))  # out of place: the caller's logits stay intact
    return torch.softmax(scores, dim=-1).max(dim=-1)


def digit_token_table(tokenizer, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(V,) bool: True at the ids of the single-digit tokens ``0`` ... ``9``."""
    if tokenizer is None:
        raise ValueError("digits_in_order needs the model's tokenizer (this model has none)")
    table = torch.zeros(vocab_size, dtype=torch.bool)
    for digit in "0123456789":
        ids = tokenizer.encode(digit, add_special_tokens=False)
        if len(ids) != 1 or not 0 <= ids[0] < vocab_size:
            raise ValueError(f"the tokenizer writes {digit!r} as {ids}, not one token of the vocabulary")
        table[ids[0]] = True
    return table.to(device)


def waiting_digits(pred: torch.Tensor, masked: torch.Tensor, digit_table: torch.Tensor) -> torch.Tensor:
    """(r, B) bool: masked positions predicted as a digit whose left neighbour is masked and predicted as a digit."""
    digit = digit_table[pred] & masked
    waits = torch.zeros_like(masked)
    waits[:, 1:] = digit[:, 1:] & digit[:, :-1]
    return waits


def commit_step(logits: torch.Tensor, ids: torch.Tensor, confidence: torch.Tensor, masked: torch.Tensor,
                threshold: float, fill_all: bool, mask_token_id: int, digit_table: torch.Tensor | None = None) -> None:
    """Update ``ids`` (r, B) long, ``confidence`` (r, B) float, ``masked`` (r, B) bool from (r, B, V) logits."""
    step_conf, step_pred = predict(logits, mask_token_id)
    if fill_all:
        pick = masked.clone()
    else:
        eligible = masked if digit_table is None else masked & ~waiting_digits(step_pred, masked, digit_table)
        sure = eligible & (step_conf >= threshold)
        ranked = step_conf.masked_fill(~eligible, -1.0)
        best = torch.zeros_like(masked).scatter_(1, ranked.argmax(dim=1, keepdim=True), True) & eligible
        pick = torch.where(sure.any(dim=1, keepdim=True), sure, best)
    ids.copy_(torch.where(pick, step_pred, ids))
    confidence.copy_(torch.where(pick, step_conf, confidence))
    masked.logical_and_(~pick)
