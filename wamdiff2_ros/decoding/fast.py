"""Fast block-diffusion engine: static KV cache, in-place denoise steps, optional FlashInfer and CUDA graphs.

Same decoding rule as ``reference.py`` (and tested to give the same tokens), built for
speed:

* the KV cache is preallocated once (``kv_cache.StaticKVCache``) and reused across
  requests; the decoder layers run over the model's own weight tensors
  (``text_stack.TextStack``), prefill and the vision tower included;
* a denoise step writes its block's K/V into the block's slots and attends over
  [valid prefix ; block]; the next step overwrites the same slots, so no copy, no
  crop, no cache growth;
* the clean KV-writing forward of block k is **fused** with the first denoise step
  of block k+1: one forward over [block k (clean) ; block k+1 (all masks)] where the
  clean half sees only the prefix and itself and the masked half sees everything.
  The clean half's K/V are exactly what a separate clean forward would write, so the
  tokens are unchanged; ``forwards`` therefore counts denoise steps only (for B=1
  that is one forward per token, like ordinary AR decoding);
* eager SDPA forwards (no CUDA graph; B > 1) run the last layer's queries, attention output and MLP only
  for the block columns still masked (and not for a fused clean block): nothing reads
  the other columns' outputs, so the tokens are unchanged (``prune_committed``);
* unmask selection is vectorised on the device (``selection.commit_step``); the only
  host syncs are one boolean per step ("is the block complete?", which ends the
  block) and one per block ("are all rows finished?");
* attention through torch SDPA (CPU and GPU) or FlashInfer (GPU, planned once per
  block and forward kind); on CUDA one graph per (forward kind, batch bucket, B).
"""

from __future__ import annotations

import functools
import warnings

import torch

from .attention import FlashInferAttention, FlashInferPlan, SdpaAttention, resolve_backend
from .config import DecodeConfig, DecodeResult
from .kv_cache import StaticKVCache
from .outputs import build_result, device_clock
from .prompt import PreparedPrompt, prepare_prompt, prompt_block_mask
from .selection import commit_step
from .text_stack import TextStack

SLOT_ROUND = 256  # graph mode: cache length rounded up so graphs are reused across requests


def batch_bucket(rows: int) -> int:
    """Smallest power of two >= rows (the batch sizes CUDA graphs are captured for)."""
    return 1 << max(rows - 1, 0).bit_length()


def decode_mask(key_valid: torch.Tensor, start: int, block: int, fused: bool, kv_len: int) -> torch.Tensor:
    """(rows, 1, n, kv_len) bool mask of a decode forward whose masked block sits at ``[start, start+block)``.

    Masked-block queries see every valid cached slot and the whole block; in a fused
    forward the preceding clean block's queries (first ``block`` rows) see only the
    valid slots, which by then include the clean block itself.
    """
    rows = key_valid.shape[0]
    slots = torch.arange(kv_len, device=key_valid.device)
    valid = key_valid[:, :kv_len]
    masked_rows = (valid | ((slots >= start) & (slots < start + block)))[:, None, None, :]
    masked_rows = masked_rows.expand(rows, 1, block, kv_len)
    if not fused:
        return masked_rows
    return torch.cat([valid[:, None, None, :].expand(rows, 1, block, kv_len), masked_rows], dim=2)


class FastEngine:
    """Fast decoder bound to one model; keeps its cache, rope tables and graphs between calls."""

    name = "fast"

    def __init__(self, vla) -> None:
        self.vla = vla
        self.model = vla.model
        self.stack = TextStack(vla.model)
        self.cache: StaticKVCache | None = None
        self.rope_cos = self.rope_sin = None
        self.graphs = None
        self.plans: dict[tuple, FlashInferPlan] = {}

    # -- settings and buffers -------------------------------------------------------
    @staticmethod
    def settings(config: DecodeConfig, device: torch.device) -> tuple[str, bool]:
        backend = resolve_backend(config.attention_backend, device)
        graphs = config.cuda_graphs
        if graphs == "auto":
            graphs = device.type == "cuda"
        elif graphs and device.type != "cuda":
            warnings.warn(f"cuda_graphs=True needs a CUDA device (decoding on {device}); running eagerly",
                          RuntimeWarning, stacklevel=3)
            graphs = False
        return backend, bool(graphs)

    def _ensure_cache(self, rows: int, slots: int, dtype: torch.dtype, device: torch.device, layout: str) -> None:
        if self.cache is not None and self.cache.fits(rows, slots, dtype, device, layout):
            return
        self.cache = None  # free the old one first
        self.graphs, self.plans = None, {}
        s = self.stack
        self.cache = StaticKVCache(s.num_layers, rows, slots, s.kv_heads, s.head_dim, dtype, device, layout)
        self.rope_cos, self.rope_sin = s.text_rope_table(slots, dtype, device)

    # -- forwards ---------------------------------------------------------------------
    def _prefill(self, prompt: PreparedPrompt, block: int) -> None:
        stack = self.stack
        hidden = stack.embed_tokens(prompt.input_ids)
        visual_mask = deepstack = None
        if prompt.has_images:
            base = self.model.model
            features = base.get_image_features(prompt.pixel_values, prompt.image_grid_thw, return_dict=True)
            image_embeds = torch.cat(features.pooler_output, dim=0).to(hidden.device, hidden.dtype)
            image_mask, _ = base.get_placeholder_mask(prompt.input_ids, inputs_embeds=hidden, image_features=image_embeds)
            hidden = hidden.masked_scatter(image_mask, image_embeds)
            visual_mask = image_mask[..., 0]
            deepstack = [torch.cat(feature, dim=0) for feature in features.deepstack_features]
        cos, sin = stack.rope(hidden, prompt.position_ids)
        length = prompt.length
        mask = prompt_block_mask(prompt.attention_mask, block)[:, None]
        slots = torch.arange(length, device=hidden.device)
        attend = SdpaAttention(self.cache, slots, mask, length, stack.scale)
        stack.layers_forward(hidden, cos, sin, attend, visual_mask, deepstack)

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor,
                 block: int, plan: FlashInferPlan | None = None, columns: torch.Tensor | None = None) -> torch.Tensor:
        """Decode forward over ``ids`` (rows, n); returns the last ``block`` positions' logits.

        ``columns`` (eager SDPA only): the block columns whose logits are wanted (the
        still-masked ones); the last layer then runs its queries for those alone, and
        the other columns' logits come back as NaN.
        """
        stack = self.stack
        hidden = stack.embed_tokens(ids)
        cos, sin = self.rope_cos[positions], self.rope_sin[positions]
        if plan is None:
            kv_len = mask.shape[-1]
            attend = SdpaAttention(self.cache, slots, mask, None if kv_len == self.cache.slots else kv_len, stack.scale)
        else:
            attend = FlashInferAttention(plan, slots)
        if columns is None:
            hidden = stack.layers_forward(hidden, cos, sin, attend)
            return stack.logits(hidden[:, -block:])
        keep = columns + (ids.shape[1] - block)
        hidden = stack.layers_forward(hidden, cos, sin, attend, keep=keep)
        kept = stack.logits(hidden)
        logits = kept.new_full((kept.shape[0], block, kept.shape[2]), float("nan"))
        return logits.index_copy_(1, columns, kept)

    def _plan(self, kind: str, rows: int, pads: list[int], start: int, block: int, graphs: bool) -> FlashInferPlan:
        key = (kind, rows, block)
        plan = self.plans.get(key)
        if plan is None:
            plan = FlashInferPlan(self.cache, self.stack.heads, self.stack.scale, use_cuda_graph=graphs,
                                  requests_per_row=2 if kind == "fused" else 1)
            self.plans[key] = plan
        ends = [start, start + block] if kind == "fused" else [start + block]
        plan.plan(pads, ends, block)
        return plan

    # -- decoding ---------------------------------------------------------------------
    @torch.inference_mode()
    def generate(self, inputs: dict[str, torch.Tensor], config: DecodeConfig, trace: list | None = None) -> DecodeResult:
        vla = self.vla
        device = next(self.model.parameters()).device
        dtype = next(self.model.parameters()).dtype
        backend, use_graphs = self.settings(config, device)
        prune = config.prune_committed and backend == "sdpa" and not use_graphs and config.block_size > 1
        block, threshold, cap = config.block_size, float(config.confidence_threshold), config.step_cap
        t0 = device_clock(device)
        prompt = prepare_prompt(vla, inputs, device)
        b, length, n_blocks = prompt.batch_size, prompt.length, config.num_blocks
        needed = length + n_blocks * block
        rows = batch_bucket(b) if use_graphs else b
        slots = -(-needed // SLOT_ROUND) * SLOT_ROUND if use_graphs else needed
        self._ensure_cache(rows, slots, dtype, device, "paged" if backend == "flashinfer" else "dense")
        if use_graphs and self.graphs is None:
            from .cuda_graphs import BlockGraphs

            self.graphs = BlockGraphs()
        self._prefill(prompt, block)
        t1 = device_clock(device)

        # device-side state (rows beyond b are graph-bucket fillers, finished from the start)
        cache_slots = self.cache.slots
        key_valid = torch.zeros(rows, cache_slots, dtype=torch.bool, device=device)
        key_valid[:b, :length] = prompt.attention_mask
        key_valid[b:, :length] = True
        response_start = torch.zeros(rows, dtype=torch.long, device=device)
        response_start[:b] = prompt.response_start
        finished = torch.zeros(rows, dtype=torch.bool, device=device)
        finished[b:] = True
        out_ids = torch.full((rows, n_blocks * block), vla.end_token_id, dtype=torch.long, device=device)
        out_conf = torch.zeros(rows, n_blocks * block, dtype=torch.float32, device=device)
        pads = prompt.pad_lengths.tolist() + [0] * (rows - b)
        offsets = torch.arange(block, device=device)
        forwards, blocks_done = 0, 0
        prev_ids = prev_positions = None
        for k in range(n_blocks):
            start = length + k * block
            positions = response_start[:, None] + k * block + offsets
            ids = torch.full((rows, block), vla.mask_token_id, dtype=torch.long, device=device)
            conf = torch.zeros(rows, block, dtype=torch.float32, device=device)
            masked = (~finished)[:, None].expand(rows, block).clone()
            fused = prev_ids is not None
            if fused:
                key_valid[:, start - block:start] = True  # the previous block is clean from now on
            kv_len = cache_slots if use_graphs else start + block
            plans = {}
            if backend == "flashinfer":  # plan once per block and forward kind
                plans["step"] = self._plan("step", rows, pads, start, block, use_graphs)
                if fused:
                    plans["fused"] = self._plan("fused", rows, pads, start, block, use_graphs)
            step_mask = decode_mask(key_valid, start, block, False, kv_len)
            step_slots = torch.arange(start, start + block, device=device)
            for step in range(1, cap + 1):
                kind = "fused" if fused and step == 1 else "step"
                if kind == "fused":
                    step_ids = torch.cat([prev_ids, ids], dim=1)
                    step_positions = torch.cat([prev_positions, positions], dim=1)
                    inputs_now = {"ids": step_ids, "positions": step_positions,
                                  "slots": torch.arange(start - block, start + block, device=device),
                                  "mask": decode_mask(key_valid, start, block, True, kv_len)}
                else:
                    inputs_now = {"ids": ids, "positions": positions, "slots": step_slots, "mask": step_mask}
                columns = None
                if prune:  # eager: the last layer only for still-masked columns (one host sync)
                    columns = offsets if step == 1 else masked.any(dim=0).nonzero().squeeze(1)
                forward = functools.partial(self._forward, block=block, plan=plans.get(kind), columns=columns)
                if use_graphs:
                    logits = self.graphs.run((kind, rows, block, backend), forward, inputs_now)
                else:
                    logits = forward(**inputs_now)
                forwards += 1
                if trace is not None:
                    trace.append(logits[:b].float().cpu())
                commit_step(logits, ids, conf, masked, threshold, step == cap, vla.mask_token_id)
                if not bool(masked.any()):  # the one host sync of a step: is the block complete?
                    break
            writable = (~finished)[:, None]
            out_ids[:, k * block:(k + 1) * block] = torch.where(writable, ids, out_ids[:, k * block:(k + 1) * block])
            out_conf[:, k * block:(k + 1) * block] = torch.where(writable, conf, out_conf[:, k * block:(k + 1) * block])
            finished |= (ids == vla.end_token_id).any(dim=1)
            blocks_done = k + 1
            if bool(finished.all()):  # end-of-block check
                break
            prev_ids, prev_positions = ids, positions
        t2 = device_clock(device)
        committed = out_ids[:b, :blocks_done * block].tolist()
        committed_conf = out_conf[:b, :blocks_done * block].tolist()
        engine = f"fast/{backend}" + ("+cudagraph" if use_graphs else "") + ("" if config.prune_committed else "+full")
        return build_result(vla, committed, committed_conf, config, engine, prompt.real_tokens, forwards, t1 - t0, t2 - t1)
