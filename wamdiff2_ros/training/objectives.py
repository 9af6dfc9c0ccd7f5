"""Training objectives of the stages: AR cross-entropy, block masked diffusion, and block/model distillation.

Every objective takes a :class:`~wamdiff2_ros.model.loader.WamDiff2` (its ``model`` may
be wrapped in DistributedDataParallel), a batch of cached prompts and responses, and
returns a scalar loss plus float metrics for the log.

- ``ar`` (stage 0, B=1): autoregressive training in the form the decoders read it. The
  engines decode B=1 as one ``[MASK]`` slot per step whose own logits give the token
  (no logit shift, like every other block size), so stage 0 trains exactly that:
  ``[prefix | clean | all-mask]`` at B=1, cross-entropy at every response slot
  (the t=1 case of the diffusion loss). Each slot sees the prompt, the clean tokens
  before it and itself, i.e. next-token prediction. The shifted causal-LM loss of a
  transformers checkpoint (``model.forward.ar_forward``) would not match these decoders.
- ``diffusion`` (stage I): each response is padded with the end token to its own
  whole blocks; one noise level t per block (stratified over the sample's blocks);
  masked positions get cross-entropy weighted by 1/t, no logit shift, normalised per
  sample (:func:`~wamdiff2_ros.model.losses.masked_diffusion_loss`).
- ``distill`` (stages II and III): the student's noisy states are built at the
  student's block size; the teacher (smaller block size in stage II, larger model in
  stage III) reads the same noisy tokens with its own block size, and the student
  matches it with the JSD on the masked positions (``jsd_weight``), plus
  ``diffusion_weight`` times the 1/t-weighted cross-entropy (the reference: JSD only).
  On-policy steps (see :mod:`wamdiff2_ros.training.rollout`) pass the student's own
  decoded answers as ``responses``, so the noisy states are the student's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from wamdiff2_ros.model.forward import diffusion_forward
from wamdiff2_ros.model.losses import (
    add_block_noise,
    certainty_loss,
    jsd_loss,
    masked_diffusion_loss,
    pad_response,
    pad_responses,
)

Batch = tuple[Sequence[dict[str, torch.Tensor]], Sequence[torch.Tensor]]


def ar_objective(vla: Any, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
    """Stage 0: next-token cross-entropy at every response slot (B=1, every slot masked, no shift)."""
    prompts, responses = batch
    clean = pad_response(list(responses), 1, vla.end_token_id)
    noisy = torch.full_like(clean, int(vla.mask_token_id))
    logits = diffusion_forward(vla, list(prompts), clean, noisy, block_size=1)
    targets = clean.to(logits.device)
    ce = F.cross_entropy(logits.float().transpose(1, 2), targets, reduction="none")
    real = torch.zeros_like(targets, dtype=torch.bool)
    for b, r in enumerate(responses):  # batch padding (end tokens after the end) is not trained at B=1
        real[b, : r.shape[0]] = True
    loss = (ce * real).sum() / real.sum()
    with torch.no_grad():
        acc = float(((logits.argmax(-1) == targets) & real).sum() / real.sum())
    return loss, {"ce": float(loss.detach()), "token_acc": acc}


def noisy_responses(vla: Any, responses: Sequence[torch.Tensor], block_size: int, generator: torch.Generator | None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(clean, noisy, t, masked, lengths)``: each response padded with the end token to its own whole blocks, then noised per block."""
    clean, lengths = pad_responses(list(responses), block_size, vla.end_token_id)
    noisy, t, masked = add_block_noise(clean, block_size, vla.mask_token_id, generator=generator, lengths=lengths)
    return clean, noisy, t, masked, lengths


def diffusion_objective(vla: Any, batch: Batch, block_size: int, generator: torch.Generator | None = None,
                        certainty_weight: float = 0.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Stage I: masked-diffusion loss at ``block_size`` (one t per block, 1/t weighting, no shift, per-sample padding).

    ``certainty_weight`` > 0 adds the entropy of the already-correct masked predictions
    (certainty forcing, :func:`~wamdiff2_ros.model.losses.certainty_loss`).
    """
    prompts, responses = batch
    clean, noisy, t, masked, lengths = noisy_responses(vla, responses, block_size, generator)
    logits = diffusion_forward(vla, list(prompts), clean, noisy, block_size=block_size)
    targets = clean.to(logits.device)
    masked, t = masked.to(logits.device), t.to(logits.device)
    diffusion = masked_diffusion_loss(logits, targets, masked, t, lengths)
    metrics: dict[str, float] = {"diffusion": float(diffusion.detach())}
    loss = diffusion
    if certainty_weight > 0:
        certainty = certainty_loss(logits, targets, masked, lengths)
        loss = diffusion + certainty_weight * certainty
        metrics["certainty"] = float(certainty.detach())
    with torch.no_grad():
        hit = (logits.argmax(-1) == targets) & masked
        metrics["masked_acc"] = float(hit.sum() / masked.sum().clamp_min(1))
    return loss, metrics


def distill_objective(
    student: Any,
    teacher: Any,
    batch: Batch,
    block_size: int,
    teacher_block_size: int,
    *,
    generator: torch.Generator | None = None,
    jsd_weight: float = 1.0,
    diffusion_weight: float = 0.0,
    beta: float = 0.5,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Stages II/III: ``jsd_weight`` * JSD(teacher || student) on the student's masked positions + ``diffusion_weight`` * CE.

    Both terms are normalised per sample by the sample's own padded length. The
    defaults are the reference's (JSD only, ``kd_ratio: 1.0``).
    """
    prompts, responses = batch
    if block_size % teacher_block_size:
        raise ValueError(f"teacher block size {teacher_block_size} must divide the student's {block_size}")
    clean, noisy, t, masked, lengths = noisy_responses(student, responses, block_size, generator)
    logits = diffusion_forward(student, list(prompts), clean, noisy, block_size=block_size)
    with torch.no_grad():
        teacher_logits = diffusion_forward(teacher, list(prompts), clean, noisy, block_size=teacher_block_size)
    teacher_logits = teacher_logits.to(device=logits.device)
    masked, t, targets = masked.to(logits.device), t.to(logits.device), clean.to(logits.device)
    if teacher_logits.shape[-1] != logits.shape[-1]:
        raise ValueError(
            f"teacher vocabulary ({teacher_logits.shape[-1]}) differs from the student's ({logits.shape[-1]});"
            " teacher and student must share the tokenizer"
        )
    jsd = jsd_loss(logits, teacher_logits, masked, beta=beta, lengths=lengths)
    diff = masked_diffusion_loss(logits, targets, masked, t, lengths)
    loss = jsd_weight * jsd + diffusion_weight * diff
    with torch.no_grad():
        acc = float(((logits.argmax(-1) == targets) & masked).sum() / masked.sum().clamp_min(1))
        teacher_acc = float(((teacher_logits.argmax(-1) == targets) & masked).sum() / masked.sum().clamp_min(1))
    return loss, {"jsd": float(jsd.detach()), "diffusion": float(diff.detach()), "masked_acc": acc,
                  "teacher_masked_acc": teacher_acc}
