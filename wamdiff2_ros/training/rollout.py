"""On-policy states for Stage II/III: the student's own block-decoded answers, as the reference rolls them out.

Every ``rollout_every`` steps the reference's distillation trainer decodes each prompt
of the batch with the student (its block decode: greedy, confidence threshold 0.9, no
sampling), turns the answer into text (special tokens dropped, whitespace stripped),
and rebuilds the batch with that text as the answer. The rebuilt batch goes through
the same collate as the data: the answer (+ end token) is padded to the student's
whole blocks and masked block by block, so the noisy inputs the teacher and the
student read are the student's own partially decoded states. :func:`student_rollout`
does the decode and the rebuild of the answers; the noising stays in the objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from wamdiff2_ros.decoding import DecodeConfig, generate


def unwrap(vla: Any) -> Any:
    """``vla`` with its model taken out of DistributedDataParallel (decoding runs on the bare module)."""
    import dataclasses

    inner = getattr(vla.model, "module", None)
    return vla if inner is None else dataclasses.replace(vla, model=inner)


def answer_ids(vla: Any, tokens: Sequence[int]) -> torch.LongTensor:
    """(R,) response ids of a decoded answer, as the reference rebuilds it: text (special tokens dropped, stripped) + end token."""
    text = vla.tokenizer.decode(list(tokens), skip_special_tokens=True).strip()
    ids = vla.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []
    return torch.tensor(list(ids) + [int(vla.end_token_id)], dtype=torch.long)


def student_rollout(
    vla: Any,
    prompts: Sequence[dict[str, torch.Tensor]],
    block_size: int,
    *,
    confidence_threshold: float = 0.9,
    max_new_tokens: int = 256,
    engine: str = "fast",
) -> list[torch.LongTensor]:
    """The student's answer to each prompt, decoded at ``block_size``, as response ids (answer + end token).

    The model is put in eval mode for the decode (no gradients) and back in its
    previous mode after. Prompts are the cached training prompts (``build_inputs`` keys).
    """
    student = unwrap(vla)
    if student.block_size != block_size:
        student = student.with_block_size(block_size)
    param = next(student.model.parameters())
    device = str(param.device) if param.device.type == "cuda" else "cpu"
    config = DecodeConfig(
        block_size=block_size, confidence_threshold=confidence_threshold, max_new_tokens=max_new_tokens,
        engine=engine, dtype=str(param.dtype).removeprefix("torch."), device=device,
    )
    was_training = student.model.training
    student.model.eval()
    try:
        with torch.no_grad():
            out = []
            for prompt in prompts:
                inputs = {k: v.to(param.device) for k, v in prompt.items()}
                result = generate(student, inputs, config)
                out.append(answer_ids(student, result.tokens[0]))
    finally:
        student.model.train(was_training)
    return out
