"""Training objectives: block noising, masked-diffusion loss, AR loss and JSD distillation loss.

Padding and normalisation follow the reference implementation (its block collate and
``WeightedCrossEntropy(reduction="mean")``):

- each sample's response (answer + end token) is padded with the end token to ITS OWN
  multiple of the block size B, R_b = ceil(len / B) * B, and that padding is trained on
  (:func:`pad_responses`). In a batch the rows are then filled up to the longest R_b with
  end tokens that are neither noised nor trained nor counted: under the block-causal
  mask the filler blocks come after the sample's own blocks, so they change none of its
  logits;
- one noise level t per block, stratified over the sample's own blocks;
- each row's loss is the SUM over its supervised positions divided by its own padded
  length R_b, then averaged over the rows of the batch (the reference sums over samples
  and divides by the number of samples)::

    L = mean_b [ (1 / R_b) * sum_{j < R_b, j masked} CE(logits[b, j], target[b, j]) / t[b, j] ]

No logit shift: in the diffusion layout logits[b, j] predicts response token j itself.
The AR loss is the usual shifted cross-entropy, averaged over supervised tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

T_MIN = 1e-3  # the reference clamps the uniform draw of each block's t to [T_MIN, 1] before stratifying
T_FLOOR = 1e-6  # guard of the 1/t weight (t is never below T_MIN / blocks in practice)
IGNORE_INDEX = -100


def _rows(response_ids: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
    if isinstance(response_ids, torch.Tensor):
        if response_ids.ndim == 1:
            return [response_ids]
        if response_ids.ndim == 2:
            return list(response_ids)
        raise ValueError(f"response_ids must have shape (R,) or (B, R), got {tuple(response_ids.shape)}")
    rows = [torch.as_tensor(r).reshape(-1) for r in response_ids]
    if not rows:
        raise ValueError("no responses given")
    return rows


def pad_response(
    response_ids: torch.Tensor | Sequence[torch.Tensor], block_size: int, end_token_id: int
) -> torch.LongTensor:
    """Pad responses with the end token to a common length that is a multiple of ``block_size``.

    Accepts (R,), (B, R) or a list of 1D tensors of different lengths; returns (R',) for a
    1D tensor and (B, R') otherwise, with R' = ceil(max R / B) * B (at least one block).
    The padding is trained on, as in the paper.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    rows = _rows(response_ids)
    longest = max(int(r.shape[0]) for r in rows)
    length = max(1, -(-longest // block_size)) * block_size
    out = torch.full((len(rows), length), int(end_token_id), dtype=torch.long, device=rows[0].device)
    for b, r in enumerate(rows):
        out[b, : r.shape[0]] = r.long()
    if isinstance(response_ids, torch.Tensor) and response_ids.ndim == 1:
        return out[0]
    return out


def pad_responses(
    responses: Sequence[torch.Tensor], block_size: int, end_token_id: int
) -> tuple[torch.LongTensor, torch.LongTensor]:
    """``(clean, lengths)``: each response padded with the end token to its OWN multiple of B.

    ``lengths[b]`` = R_b = ceil(len_b / B) * B (at least one block), the sample's padded
    length, which the losses train on and normalise by. ``clean`` is (batch, max R_b):
    row b holds its R_b tokens, then end-token filler up to the longest row (the filler
    is not noised, not trained and not counted; see the module doc).
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    rows = _rows(responses)
    lengths = torch.tensor([max(1, -(-int(r.shape[0]) // block_size)) * block_size for r in rows], dtype=torch.long)
    out = torch.full((len(rows), int(lengths.max())), int(end_token_id), dtype=torch.long, device=rows[0].device)
    for b, r in enumerate(rows):
        out[b, : r.shape[0]] = r.long()
    return out, lengths


def _check_lengths(lengths: torch.Tensor | None, batch: int, length: int) -> torch.Tensor:
    if lengths is None:
        return torch.full((batch,), length, dtype=torch.long)
    lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1).cpu()
    if lengths.shape[0] != batch:
        raise ValueError(f"lengths has {lengths.shape[0]} entries for {batch} rows")
    if bool((lengths < 1).any()) or bool((lengths > length).any()):
        raise ValueError(f"lengths must be in [1, {length}], got {lengths.tolist()}")
    return lengths


def _within(lengths: torch.Tensor, length: int, device: torch.device) -> torch.Tensor:
    """(batch, length) bool: position j is inside row b's own padded response."""
    return torch.arange(length, device=device).unsqueeze(0) < lengths.to(device).unsqueeze(1)


def sample_block_times(
    batch: int, blocks: int, *, generator: torch.Generator | None = None, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """(batch, blocks) noise levels, stratified over (0, 1] per row and shuffled, as the reference's collate.

    Block i of a row gets ``(clamp(u_i, 0.001, 1) + s_i) / blocks`` with u ~ U[0, 1) and a
    random permutation s of 0..blocks-1, so every row covers all noise levels evenly.
    """
    u = torch.rand((batch, blocks), generator=generator).clamp(T_MIN, 1.0)
    strata = torch.stack([torch.randperm(blocks, generator=generator) for _ in range(batch)]).to(u.dtype)
    return ((u + strata) / blocks).to(device)


def add_block_noise(
    response_ids: torch.Tensor,
    block_size: int,
    mask_token_id: int,
    generator: torch.Generator | None = None,
    lengths: torch.Tensor | None = None,
) -> tuple[torch.LongTensor, torch.Tensor, torch.BoolTensor]:
    """Mask a padded response block by block: ``(noisy_ids, t_per_token, masked)``.

    One noise level t per block, stratified over each row's own blocks
    (:func:`sample_block_times`); each token of a block is replaced by ``mask_token_id``
    when a uniform draw is <= t. Shapes follow ``response_ids`` ((R,) or (B, R)); R must
    be a multiple of ``block_size``. ``lengths`` (B,) are the rows' own padded lengths
    (:func:`pad_responses`; default R): positions past them are left clean with t = 1.
    Randomness comes from ``generator`` (CPU), row by row, so a seeded generator
    reproduces the noise exactly.
    """
    if response_ids.ndim not in (1, 2):
        raise ValueError(f"response_ids must have shape (R,) or (B, R), got {tuple(response_ids.shape)}")
    squeeze = response_ids.ndim == 1
    ids = response_ids.unsqueeze(0) if squeeze else response_ids
    batch, length = ids.shape
    if block_size < 1 or length % block_size:
        raise ValueError(f"response length {length} is not a multiple of block_size {block_size}; use pad_response()")
    if length == 0:
        raise ValueError("empty response")
    lengths = _check_lengths(lengths, batch, length)
    if bool((lengths % block_size).any()):
        raise ValueError(f"lengths {lengths.tolist()} are not multiples of block_size {block_size}")
    t = torch.ones((batch, length))
    masked = torch.zeros((batch, length), dtype=torch.bool)
    for b in range(batch):
        own = int(lengths[b])
        t_block = sample_block_times(1, own // block_size, generator=generator)[0]
        t[b, :own] = t_block.repeat_interleave(block_size)
        masked[b, :own] = torch.rand(own, generator=generator) <= t[b, :own]
    masked = masked.to(ids.device)
    t = t.to(ids.device)
    noisy = torch.where(masked, torch.full_like(ids, int(mask_token_id)), ids)
    if squeeze:
        return noisy[0], t[0], masked[0]
    return noisy, t, masked


def _check_logits(logits: torch.Tensor, targets: torch.Tensor) -> None:
    if logits.ndim != 3:
        raise ValueError(f"logits must have shape (B, L, V), got {tuple(logits.shape)}")
    if targets.shape != logits.shape[:2]:
        raise ValueError(f"targets shape {tuple(targets.shape)} does not match logits {tuple(logits.shape[:2])}")


def _macro_average(per_token: torch.Tensor, supervised: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Sum over each row's supervised positions inside its own length / that length, averaged over rows."""
    batch, length = per_token.shape
    lengths = _check_lengths(lengths, batch, length)
    supervised = supervised & _within(lengths, length, per_token.device)
    per_token = torch.where(supervised, per_token, torch.zeros_like(per_token))
    return (per_token.sum(dim=1) / lengths.to(per_token.device, per_token.dtype)).mean()


def masked_diffusion_loss(
    logits: torch.Tensor, targets: torch.Tensor, masked: torch.Tensor, t_per_token: torch.Tensor,
    lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-entropy on masked positions weighted by 1/t, no logit shift, normalised per sample (module doc).

    ``logits`` (B, R, V) at the noisy positions, ``targets`` (B, R) the clean response,
    ``masked`` (B, R) bool, ``t_per_token`` (B, R) in (0, 1], ``lengths`` (B,) each row's
    own padded length (default R). Computed in float32.
    """
    _check_logits(logits, targets)
    if masked.shape != targets.shape or t_per_token.shape != targets.shape:
        raise ValueError("masked and t_per_token must have the same shape as targets")
    masked = masked.bool()
    ce = F.cross_entropy(logits.float().transpose(1, 2), targets.long(), reduction="none")
    weight = 1.0 / t_per_token.float().clamp_min(T_FLOOR)
    return _macro_average(ce * weight, masked, lengths)


def certainty_loss(logits: torch.Tensor, targets: torch.Tensor, masked: torch.Tensor,
                   lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy of the prediction at masked positions the model already gets right, macro-averaged.

    Certainty forcing (as in dParallel): pushing already-correct predictions towards
    confidence lets the confidence-threshold sampler commit them in parallel, while
    wrong predictions are left to the cross-entropy. 0 (with a graph) when none is right.
    """
    _check_logits(logits, targets)
    if masked.shape != targets.shape:
        raise ValueError("masked must have the same shape as targets")
    log_p = F.log_softmax(logits.float(), dim=-1)
    entropy = -(log_p.exp() * log_p).sum(-1)
    right = masked.bool() & (logits.detach().argmax(-1) == targets)
    return _macro_average(entropy, right, lengths)


def ar_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Shifted cross-entropy (B=1 training): logits at i predict targets at i+1; ``-100`` is ignored.

    Averaged over the supervised tokens of the whole batch (token-level mean). Returns 0
    (with a graph) when nothing is supervised.
    """
    _check_logits(logits, targets)
    shifted_logits = logits[:, :-1].float()
    shifted_targets = targets[:, 1:].long()
    supervised = shifted_targets != IGNORE_INDEX
    if not bool(supervised.any()):
        return shifted_logits.sum() * 0.0
    return F.cross_entropy(shifted_logits.transpose(1, 2), shifted_targets, ignore_index=IGNORE_INDEX, reduction="sum") / supervised.sum()


def jsd_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    masked: torch.Tensor,
    beta: float = 0.5,
    temperature: float = 1.0,
    lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """Generalised Jensen-Shannon divergence on the student's masked positions, normalised per sample.

    With mixture ``M = beta * P_teacher + (1 - beta) * P_student`` the per-token loss is
    ``beta * KL(P_teacher || M) + (1 - beta) * KL(P_student || M)`` (beta=0.5: the usual
    JSD), summed over each row's masked positions and divided by its own padded length
    (``lengths``, default R), then averaged over rows, as the reference's block JSD loss.
    No 1/t weight. The teacher is detached. Multiplied by temperature**2 (1 by default).
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(
            f"student logits {tuple(student_logits.shape)} and teacher logits {tuple(teacher_logits.shape)} differ;"
            " teacher and student must share the tokenizer"
        )
    if student_logits.ndim != 3 or masked.shape != student_logits.shape[:2]:
        raise ValueError("logits must be (B, R, V) and masked (B, R)")
    s_log = F.log_softmax(student_logits.float() / temperature, dim=-1)
    t_log = F.log_softmax(teacher_logits.detach().float() / temperature, dim=-1)
    if beta == 0.0 or beta == 1.0:
        per_token = torch.zeros(s_log.shape[:2], device=s_log.device)
    else:
        log_beta = torch.log(torch.tensor(beta, device=s_log.device))
        log_one_minus = torch.log(torch.tensor(1.0 - beta, device=s_log.device))
        mix_log = torch.logsumexp(torch.stack([t_log + log_beta, s_log + log_one_minus]), dim=0)
        kl_t = (t_log.exp() * (t_log - mix_log)).sum(-1)
        kl_s = (s_log.exp() * (s_log - mix_log)).sum(-1)
        per_token = beta * kl_t + (1.0 - beta) * kl_s
    return _macro_average(per_token, masked.bool(), lengths) * temperature**2
