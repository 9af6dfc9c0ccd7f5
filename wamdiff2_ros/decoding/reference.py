"""Reference decoder: block diffusion (and AR for B=1) over transformers' forward and cache.

Written to be read next to the paper, not to be fast:

1. Prefill the prompt with the block-causal mask (chunks of B from position 0) into a
   transformers ``DynamicCache``. One forward with that mask computes exactly what
   prefilling chunk by chunk would: chunk k only sees chunks <= k.
2. For each block of B response slots: start fully masked. Each denoise step runs
   one forward over [cache ; block] and then crops the cache back, so denoise steps
   never write the cache. Every masked position whose softmax confidence is
   >= ``confidence_threshold`` is committed; if none is, the single most confident
   one is (the mask token itself is never predicted; with ``end_in_order`` an end token
   waits until every earlier position of the block is committed). At the step cap
   (``max_steps_per_block``, default B) every leftover mask is filled with its argmax.
3. One clean forward over the finished block writes its KV (skipped after the last
   block, when nothing would read it).
4. A row stops when it commits the end token; tokens after it in the same block are
   discarded; a finished row stays finished (its later blocks are not denoised).

``forwards`` counts denoise steps plus clean forwards (the prefill is timed apart).
Greedy everywhere, so the output is deterministic. With B=1 this is greedy AR
decoding of a masked-token model: each token is predicted at a [MASK] slot.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from .commits import Commit
from .config import DecodeConfig, DecodeResult
from .outputs import build_result, device_clock
from .prompt import prepare_prompt, prompt_block_mask, to_model_mask
from .selection import predict


def select_to_commit(confidence: list[float], masked: list[bool], threshold: float, fill_all: bool,
                     ends: list[bool] | None = None) -> list[int]:
    """Positions to commit in one row of a block (plain Python, the readable rule).

    ``ends`` (``DecodeConfig.end_in_order``): where the prediction is the end token. Such a
    position is committed only if no earlier position stays masked after this step.
    """
    candidates = [i for i, m in enumerate(masked) if m]
    if not candidates or fill_all:
        return candidates
    sure = [i for i in candidates if confidence[i] >= threshold]
    if ends is not None:
        first_left = min((i for i in candidates if i not in sure), default=len(masked))
        sure = [i for i in sure if not ends[i] or i < first_left]
        candidates = [i for i in candidates if not ends[i] or i == candidates[0]]
    if sure:
        return sure
    best = candidates[0]
    for i in candidates[1:]:
        if confidence[i] > confidence[best]:  # first index wins ties, like torch.argmax
            best = i
    return [best]


class ReferenceDecoder:
    """Readable block-diffusion decoder; ``trace`` (a list) receives each step's block logits."""

    name = "reference"

    def __init__(self, vla) -> None:
        self.vla = vla
        self.model = vla.model

    def _forward(self, ids, allowed, positions, cache, dtype, **extra) -> torch.Tensor:
        mask = to_model_mask(allowed, self.model.config._attn_implementation, dtype)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True, **extra)
        return out.logits

    @torch.inference_mode()
    def generate(self, inputs: dict[str, torch.Tensor], config: DecodeConfig, trace: list | None = None,
                 commits: list | None = None) -> DecodeResult:
        """Decode; ``trace`` receives each step's block logits, ``commits`` one :class:`Commit` per committed token."""
        vla, model = self.vla, self.model
        device = next(model.parameters()).device
        dtype = next(model.parameters()).dtype
        block, threshold, cap = config.block_size, float(config.confidence_threshold), config.step_cap
        t0 = device_clock(device)
        prompt = prepare_prompt(vla, inputs, device)
        b, length = prompt.batch_size, prompt.length

        # 1. block-causal prefill
        cache = DynamicCache(config=model.config.get_text_config())
        extra = {}
        if prompt.has_images:
            extra = {"pixel_values": prompt.pixel_values, "image_grid_thw": prompt.image_grid_thw,
                     "mm_token_type_ids": prompt.mm_token_type_ids}
        allowed = prompt_block_mask(prompt.attention_mask, block)[:, None]
        self._forward(prompt.input_ids, allowed, prompt.position_ids, cache, dtype, logits_to_keep=1, **extra)
        t1 = device_clock(device)

        key_valid = prompt.attention_mask.clone()  # (b, cached slots): which cached slots may be attended
        committed: list[list[int]] = [[] for _ in range(b)]
        committed_conf: list[list[float]] = [[] for _ in range(b)]
        finished = [False] * b
        forwards = 0
        for k in range(config.num_blocks):
            past = length + k * block
            offsets = torch.arange(block, device=device) + k * block
            positions = (prompt.response_start[:, None] + offsets[None]).expand(3, -1, -1)
            # the block attends to every valid cached slot and to all of itself
            allowed = torch.cat([key_valid, torch.ones(b, block, dtype=torch.bool, device=device)], dim=1)
            allowed = allowed[:, None, None, :].expand(b, 1, block, past + block)

            ids = [[vla.mask_token_id] * block for _ in range(b)]
            conf = [[0.0] * block for _ in range(b)]
            masked = [[not finished[r]] * block for r in range(b)]
            for step in range(1, cap + 1):
                if not any(any(m) for m in masked):
                    break
                logits = self._forward(torch.tensor(ids, device=device), allowed, positions, cache, dtype)
                cache.crop(-block)  # drop the step's keys: denoise steps never write the cache
                forwards += 1
                if trace is not None:
                    trace.append(logits.float().cpu())
                step_conf, step_pred = predict(logits, vla.mask_token_id)  # softmax max, never the mask token
                step_conf, step_pred = step_conf.tolist(), step_pred.tolist()
                for r in range(b):
                    ends = [t == vla.end_token_id for t in step_pred[r]] if config.end_in_order else None
                    for i in select_to_commit(step_conf[r], masked[r], threshold, fill_all=step == cap, ends=ends):
                        ids[r][i], conf[r][i], masked[r][i] = step_pred[r][i], step_conf[r][i], False
                        if commits is not None:
                            commits.append(Commit(r, k, step, k * block + i, step_pred[r][i], step_conf[r][i],
                                                  step_conf[r][i] >= threshold))

            for r in range(b):
                if finished[r]:
                    continue
                committed[r].extend(ids[r])
                committed_conf[r].extend(conf[r])
                if vla.end_token_id in ids[r]:
                    finished[r] = True
            if all(finished) or k == config.num_blocks - 1:
                break
            # 3. clean forward over the final block writes its KV
            self._forward(torch.tensor(ids, device=device), allowed, positions, cache, dtype, logits_to_keep=1)
            forwards += 1
            key_valid = torch.cat([key_valid, torch.ones(b, block, dtype=torch.bool, device=device)], dim=1)
        t2 = device_clock(device)
        return build_result(vla, committed, committed_conf, config, self.name, prompt.real_tokens, forwards, t1 - t0, t2 - t1)
