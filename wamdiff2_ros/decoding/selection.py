"""Vectorised unmask selection of one denoise step (device-side, no host sync).

Same rule as ``reference.select_to_commit``, for all rows at once: commit every
masked position whose softmax confidence is >= the threshold; a row with none
commits its single most confident masked position (first index on ties); at the
step cap every masked position is committed. Tensors are updated in place.
"""

from __future__ import annotations

import torch


def commit_step(logits: torch.Tensor, ids: torch.Tensor, confidence: torch.Tensor, masked: torch.Tensor,
                threshold: float, fill_all: bool) -> None:
    """Update ``ids`` (r, B) long, ``confidence`` (r, B) float, ``masked`` (r, B) bool from (r, B, V) logits."""
    step_conf, step_pred = torch.softmax(logits.float(), dim=-1).max(dim=-1)
    if fill_all:
        pick = masked.clone()
    else:
        sure = masked & (step_conf >= threshold)
        ranked = step_conf.masked_fill(~masked, -1.0)
        best = torch.zeros_like(masked).scatter_(1, ranked.argmax(dim=1, keepdim=True), True) & masked
        pick = torch.where(sure.any(dim=1, keepdim=True), sure, best)
    ids.copy_(torch.where(pick, step_pred, ids))
    confidence.copy_(torch.where(pick, step_conf, confidence))
    masked.logical_and_(~pick)
