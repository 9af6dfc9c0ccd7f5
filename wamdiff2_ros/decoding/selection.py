"""Vectorised unmask selection of one denoise step (device-side, no host sync).

Same rule as ``reference.select_to_commit``, for all rows at once: commit every
masked position whose softmax confidence is >= the threshold; a row with none
commits its single most confident masked position (first index on ties); at the
step cap every masked position is committed. Tensors are updated in place.

The mask token itself is never a prediction: its logit is dropped before the
softmax (a trained model gives it ~0 probability anyway; a random one may not).

With ``end_id`` (``DecodeConfig.end_in_order``) a position predicting the end token is
committed only once every earlier position of its block is committed or is committed
in the same step; until then it stays masked (and is no candidate for the single
most confident commit, unless it is the first masked position).
"""

from __future__ import annotations

import torch


def predict(logits: torch.Tensor, mask_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(confidence, token) per position: softmax max and argmax over the vocabulary without the mask token."""
    drop = torch.tensor([mask_token_id], device=logits.device)
    scores = logits.float().index_fill(-1, drop, float("-inf"))  # out of place: the caller's logits stay intact
    return torch.softmax(scores, dim=-1).max(dim=-1)


def commit_step(logits: torch.Tensor, ids: torch.Tensor, confidence: torch.Tensor, masked: torch.Tensor,
                threshold: float, fill_all: bool, mask_token_id: int, end_id: int | None = None) -> None:
    """Update ``ids`` (r, B) long, ``confidence`` (r, B) float, ``masked`` (r, B) bool from (r, B, V) logits."""
    step_conf, step_pred = predict(logits, mask_token_id)
    if fill_all:
        pick = masked.clone()
    else:
        sure = masked & (step_conf >= threshold)
        eligible = masked
        if end_id is not None:
            ends = step_pred == end_id
            # an end is kept where no position at or before it stays masked after this step
            stays = masked & ~sure
            sure = sure & (~ends | (stays.cumsum(dim=1) == 0))
            first = masked & (masked.cumsum(dim=1) == 1)
            eligible = masked & (~ends | first)
        ranked = step_conf.masked_fill(~eligible, -1.0)
        best = torch.zeros_like(masked).scatter_(1, ranked.argmax(dim=1, keepdim=True), True) & eligible
        pick = torch.where(sure.any(dim=1, keepdim=True), sure, best)
    ids.copy_(torch.where(pick, step_pred, ids))
    confidence.copy_(torch.where(pick, step_conf, confidence))
    masked.logical_and_(~pick)
