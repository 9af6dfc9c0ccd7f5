"""Fast block-diffusion engine: static KV cache, in-place denoise steps, optional FlashInfer and CUDA graphs.

Same decoding rule as ``reference.py`` (and tested to give the same tokens), built for
speed. A request runs in named steps, one per stage of the paper's decoding
(:meth:`FastEngine._decode` is the block loop):

1. ``_prefill``: the prompt, block-causally, into the cache (``_prefill_suffix`` for
   rows that continue a shared prefix);
2. per response block k: ``_start_block`` (all masks), ``_denoise`` (denoise steps
   over [KV cache ; block], each committing by confidence threshold, else the most
   confident mask, everything at the step cap: ``selection.commit_step``),
   ``_commit_block`` (keep the block's tokens; a row that committed the end token is
   finished), and stop once every row is finished;
3. the clean forward that writes block k's K/V runs fused into the first denoise step
   of block k+1 (below).

How it is fast:

* the KV cache is preallocated once (``kv_cache.StaticKVCache``) and reused across
  requests; the decoder layers run over the model's own weight tensors
  (``text_stack.TextStack``), prefill and the vision tower included;
* a denoise step writes its block's K/V into the block's slots and attends over
  [valid prefix ; block]; the next step overwrites the same slots, so no copy, no
  crop, no cache growth (a block's slots become valid keys only once it is clean);
* the clean KV-writing forward of block k is **fused** with the first denoise step
  of block k+1: one forward over [block k (clean) ; block k+1 (all masks)] where the
  clean half sees only the prefix and itself and the masked half sees everything.
  The clean half's K/V are exactly what a separate clean forward would write, so the
  tokens are unchanged; ``forwards`` therefore counts denoise steps only (for B=1
  that is one forward per token, like ordinary AR decoding);
* eager SDPA forwards (no CUDA graph; B > 1) run the last layer's queries, attention output and MLP only
  for the block columns still masked (and not for a fused clean block): nothing reads
  the other columns' outputs, so the tokens are unchanged (``prune_committed``);
* ``reuse_committed_kv`` (approximate, off by default): from a block's second step on,
  an eager SDPA step runs only the masked columns and those committed in the step
  before; the other columns keep the keys and values they were last written with
  (``Fresh``). Tokens may differ from the exact decode; the clean forward still
  rewrites the whole block exactly, so the error stays within the block;
* unmask selection is vectorised on the device (``selection.commit_step``). Host
  syncs while decoding: one per denoise step ("is the block complete?", which ends
  the block); with pruning, a second one per step from the block's second step on
  (the indices of the still-masked columns); one per block ("are all rows
  finished?"); and, with a ``trace``, the copy of each step's logits. FlashInfer
  plans each block's page lists on the host;
* attention through torch SDPA (CPU and GPU) or FlashInfer (GPU, planned once per
  block and forward kind); on CUDA one graph per (forward kind, batch bucket, B);
* a frame set's task prompts can share one vision pass and one prefilled prefix
  (:meth:`FastEngine.encode_prefix`), and then decode as rows of one batch that each
  continue from it (:meth:`FastEngine.generate_from_prefix`; layout in ``prefix.py``).
  The prefix only changes what is prefilled, never a decode forward's shape, so the
  same CUDA graphs serve both paths (see ``cuda_graphs.graph_shape``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .attention import FlashInferAttention, FlashInferPlan, SdpaAttention, resolve_backend
from .config import DecodeConfig, DecodeResult
from .cuda_graphs import SLOT_ROUND, BlockGraphs, batch_bucket, graph_shape
from .kv_cache import StaticKVCache
from .outputs import build_result, device_clock
from .prefix import SharedPrefix, SuffixBatch, VisionFeatures, shared_length, suffix_batch
from .prompt import DecodeInputError, PreparedPrompt, prepare_prompt, prompt_block_mask
from .selection import commit_step
from .text_stack import TextStack

__all__ = ["SLOT_ROUND", "FastEngine", "batch_bucket", "decode_mask"]


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


@dataclass
class Mode:
    """How one request runs: attention backend, CUDA graphs, static (graph) shapes, last-layer pruning, reused
    committed keys (``reuse_committed_kv`` where pruning runs)."""

    backend: str
    graphs: bool
    static: bool
    prune: bool
    reuse: bool = False


@dataclass
class PromptState:
    """The prompt region of a batch after prefill: what the decode loop needs to continue."""

    rows: int  # real rows b (the decode batch may add graph-bucket fillers)
    length: int  # L: response block 0 starts at slot L in every row
    valid: torch.Tensor  # (b, L) bool, slots holding real prompt tokens
    ranges: list[tuple[int, int]]  # per row, the slot range of its real prompt tokens (FlashInfer pages)
    response_start: torch.Tensor  # (b,) long text position of the first response token

    @classmethod
    def left_padded(cls, prompt: PreparedPrompt) -> PromptState:
        """A left-padded prompt batch prefilled into slots [0, L): row r's real tokens are [pad_r, L)."""
        length = prompt.length
        return cls(prompt.batch_size, length, prompt.attention_mask,
                   [(pad, length) for pad in prompt.pad_lengths.tolist()], prompt.response_start)


@dataclass
class DecodeState:
    """Device-side state of one batch decode, kept across its blocks.

    Decode rows ``[real_rows, rows)`` are graph-bucket fillers: finished from the
    start, so they never write a token.
    """

    rows: int  # decode rows: b, or its graph bucket
    real_rows: int  # b, the rows the caller asked for
    block_size: int  # B
    prompt_length: int  # L
    key_valid: torch.Tensor  # (rows, cache slots) bool: slots a query may attend (prompt, clean blocks)
    response_start: torch.Tensor  # (rows,) long text position of the first response token
    finished: torch.Tensor  # (rows,) bool: the row has committed the end token
    out_ids: torch.Tensor  # (rows, num_blocks * B) committed tokens (the end token where none was committed)
    out_conf: torch.Tensor  # (rows, num_blocks * B) their confidences
    ranges: list[tuple[int, int]]  # per decode row, its real prompt slots (FlashInfer pages)
    offsets: torch.Tensor  # (B,) arange: a block's columns
    forwards: int = 0  # decode forwards run
    blocks: int = 0  # response blocks committed


@dataclass
class Block:
    """Response block k while it is denoised: its tokens, and its decode forwards' inputs built once.

    ``inputs`` holds one input dict per forward kind: "step" (a denoise step over
    [KV cache ; block]) and, after block 0, "fused" (the previous block's clean
    forward together with this block's first denoise step). The dicts hold ``ids``
    itself, which the steps update in place.
    """

    index: int  # k
    start: int  # first cache slot, L + kB
    positions: torch.Tensor  # (rows, B) long text positions
    ids: torch.Tensor  # (rows, B) long: committed tokens, the mask token where still masked
    conf: torch.Tensor  # (rows, B) float: confidence each committed token had
    masked: torch.Tensor  # (rows, B) bool: still masked (none in finished rows)
    inputs: dict[str, dict[str, torch.Tensor]]
    plans: dict[str, FlashInferPlan]  # FlashInfer only: one plan per forward kind

    @property
    def fused(self) -> bool:
        return "fused" in self.inputs


@dataclass
class Fresh:
    """The block columns a ``reuse_committed_kv`` denoise step runs, and what it writes.

    A column runs while it is masked and once more in the step after its commit (its
    keys and values then see its committed token); from then on the cache keeps
    those keys and values for the rest of the block. ``columns`` (m,): the columns
    fresh in some row; ``keep``: the indices within ``columns`` of the still-masked
    ones (the last layer's queries); ``write`` (rows, m) bool: where each row writes,
    None when every row writes every column.
    """

    columns: torch.Tensor
    keep: torch.Tensor
    write: torch.Tensor | None

    @classmethod
    def of(cls, before: torch.Tensor, masked_columns: torch.Tensor) -> Fresh:
        """From the mask at the previous step's start (rows, B) and the still-masked columns (k,), k <= m."""
        columns = before.any(dim=0).nonzero().squeeze(1)  # a host sync, like ``_masked_columns``
        write = before.index_select(1, columns)
        every = write.shape[0] == 1 or bool(write.all())
        return cls(columns, torch.searchsorted(columns, masked_columns), None if every else write)


class FastEngine:
    """Fast decoder bound to one model; keeps its cache, rope tables and graphs between calls.

    ``static_shapes = True`` runs the CUDA-graph shapes (bucketed rows, full-cache
    masks) eagerly: the CPU twin of graph mode that tests use. ``graph_keys`` records
    every graph key such a run would capture, ``cache_allocations`` counts cache
    reallocations (each drops all graphs).
    """

    name = "fast"

    def __init__(self, vla) -> None:
        self.vla = vla
        self.model = vla.model
        self.stack = TextStack(vla.model)
        self.cache: StaticKVCache | None = None
        self.rope_cos = self.rope_sin = None
        self.graphs = None
        self.plans: dict[tuple, FlashInferPlan] = {}
        self.static_shapes = False
        self.graph_keys: set[tuple] = set()
        self.cache_allocations = 0
        # called before every denoise step (a scheduling point: e.g. an agent's scene lane waits there while a
        # plan decodes in another thread); never changes a token
        self.between_steps: Callable[[], None] | None = None

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

    def _mode(self, config: DecodeConfig, device: torch.device) -> Mode:
        backend, graphs = self.settings(config, device)
        static = graphs or self.static_shapes
        prune = config.prune_committed and backend == "sdpa" and not static and config.block_size > 1
        return Mode(backend, graphs, static, prune, prune and config.reuse_committed_kv)

    def _reserve(self, mode: Mode, batch: int, prompt_length: int, config: DecodeConfig, dtype: torch.dtype,
                 device: torch.device) -> int:
        """Make the cache hold ``batch`` rows and the prompt plus every response block; returns the decode rows.

        Static (graph) shapes round both up to their CUDA-graph buckets
        (``cuda_graphs.graph_shape``); a cache that already fits is kept, so its graphs stay.
        """
        needed = prompt_length + config.num_blocks * config.block_size
        rows = batch_bucket(batch) if mode.static else batch
        slots = graph_shape(batch, needed)[1] if mode.static else needed
        layout = "paged" if mode.backend == "flashinfer" else "dense"
        if self.cache is not None and not self.cache.fits(rows, slots, dtype, device, layout):
            if self.cache.dtype == dtype and self.cache.device == torch.device(device) and self.cache.layout == layout:
                rows_held, slots_held = max(self.cache.rows, rows), max(self.cache.slots, slots)
            else:
                rows_held, slots_held = rows, slots
            self._allocate(rows_held, slots_held, dtype, device, layout)
        elif self.cache is None:
            self._allocate(rows, slots, dtype, device, layout)
        if mode.graphs and self.graphs is None:
            self.graphs = BlockGraphs()
        return rows

    def _allocate(self, rows: int, slots: int, dtype: torch.dtype, device: torch.device, layout: str) -> None:
        self.cache = None  # free the old one first
        self.graphs, self.plans = None, {}
        s = self.stack
        self.cache = StaticKVCache(s.num_layers, rows, slots, s.kv_heads, s.head_dim, dtype, device, layout)
        self.rope_cos, self.rope_sin = s.text_rope_table(slots, dtype, device)
        self.cache_allocations += 1

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        param = next(self.model.parameters())
        return param.device, param.dtype

    @staticmethod
    def _label(mode: Mode, config: DecodeConfig) -> str:
        return (f"fast/{mode.backend}" + ("+cudagraph" if mode.graphs else "")
                + ("" if config.prune_committed else "+full")
                + ("+reuse" if mode.reuse else ""))

    # -- forwards ---------------------------------------------------------------------
    def _encode_images(self, prompt: PreparedPrompt, dtype: torch.dtype) -> VisionFeatures:
        """The vision tower over every image of ``prompt`` (merged tokens and deepstack features)."""
        features = self.model.model.get_image_features(prompt.pixel_values, prompt.image_grid_thw, return_dict=True)
        device = prompt.input_ids.device
        embeds = torch.cat(features.pooler_output, dim=0).to(device, dtype)
        deepstack = [torch.cat(feature, dim=0).to(device, dtype) for feature in features.deepstack_features]
        return VisionFeatures(embeds, deepstack)

    def _image_token_id(self) -> int | None:
        return getattr(self.model.config, "image_token_id", None)

    def _prefill_forward(self, cache: StaticKVCache, ids: torch.Tensor, position_ids: torch.Tensor,
                         mask: torch.Tensor, slots: torch.Tensor, kv_len: int,
                         visual: tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]] | None = None) -> None:
        """Prompt forward over ``ids`` (b, n) at cache ``slots``; ``mask`` (b, n, kv_len) over slots [0, kv_len).

        ``visual`` = (placeholder mask (b, n), features (v, D), deepstack [(v, D)]) puts the
        vision tokens (in row-major placeholder order) in place of the image placeholders.
        """
        stack = self.stack
        hidden = stack.embed_tokens(ids)
        visual_mask = deepstack = None
        if visual is not None:
            visual_mask, embeds, deepstack = visual
            if int(visual_mask.sum()) != embeds.shape[0]:
                raise DecodeInputError(f"the prompt has {int(visual_mask.sum())} image tokens but the images give "
                                       f"{embeds.shape[0]} vision tokens")
            hidden[visual_mask] = embeds.to(hidden.dtype)
        cos, sin = stack.rope(hidden, position_ids)
        attend = SdpaAttention(cache, slots, mask[:, None], kv_len, stack.scale)
        stack.layers_forward(hidden, cos, sin, attend, visual_mask, deepstack)

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, mask: torch.Tensor,
                 block: int, plan: FlashInferPlan | None = None, columns: torch.Tensor | None = None,
                 keep: torch.Tensor | None = None, write: torch.Tensor | None = None) -> torch.Tensor:
        """Decode forward over ``ids`` (rows, n); returns the last ``block`` positions' logits.

        ``columns`` (eager SDPA only): the block columns whose logits are wanted (the
        still-masked ones); the last layer then runs its queries for those alone, and
        the other columns' logits come back as NaN. ``keep``: where those columns sit
        among the n (default: the last ``block`` positions are the block); ``write``:
        SDPA's per-row write mask (``reuse_committed_kv``, ``Fresh``).
        """
        stack = self.stack
        hidden = stack.embed_tokens(ids)
        cos, sin = self.rope_cos[positions], self.rope_sin[positions]
        if plan is None:
            kv_len = mask.shape[-1]
            attend = SdpaAttention(self.cache, slots, mask, None if kv_len == self.cache.slots else kv_len, stack.scale,
                                   write=write)
        else:
            attend = FlashInferAttention(plan, slots)
        if columns is None:
            hidden = stack.layers_forward(hidden, cos, sin, attend)
            return stack.logits(hidden[:, -block:])
        keep = columns + (ids.shape[1] - block) if keep is None else keep
        hidden = stack.layers_forward(hidden, cos, sin, attend, keep=keep)
        kept = stack.logits(hidden)
        logits = kept.new_full((kept.shape[0], block, kept.shape[2]), float("nan"))
        return logits.index_copy_(1, columns, kept)

    def _plan(self, kind: str, rows: int, ranges: list[tuple[int, int]], length: int, start: int, block: int,
              graphs: bool) -> FlashInferPlan:
        key = (kind, rows, block)
        plan = self.plans.get(key)
        if plan is None:
            plan = FlashInferPlan(self.cache, self.stack.heads, self.stack.scale, use_cuda_graph=graphs,
                                  requests_per_row=2 if kind == "fused" else 1)
            self.plans[key] = plan
        ends = [start, start + block] if kind == "fused" else [start + block]
        plan.plan(ranges, length, ends, block)
        return plan

    # -- prefill ----------------------------------------------------------------------
    def _prefill(self, prompt: PreparedPrompt, block: int, dtype: torch.dtype,
                 vision: VisionFeatures | None = None) -> PromptState:
        """Prefill a whole left-padded prompt batch block-causally into the engine's cache.

        ``vision``: the images' features if already encoded (else the vision tower runs here).
        """
        visual = None
        if prompt.has_images:
            vision = vision if vision is not None else self._encode_images(prompt, dtype)
            visual = (prompt.input_ids == self._image_token_id(), vision.embeds, vision.deepstack)
        length = prompt.length
        mask = prompt_block_mask(prompt.attention_mask, block)
        slots = torch.arange(length, device=prompt.input_ids.device)
        self._prefill_forward(self.cache, prompt.input_ids, prompt.position_ids, mask, slots, length, visual)
        return PromptState.left_padded(prompt)

    def _prefill_suffix(self, prefix: SharedPrefix, batch: SuffixBatch) -> PromptState:
        """Copy the prefix K/V into every row, then prefill the rows' own suffixes (``prefix.py`` layout)."""
        s, b, length = prefix.length, len(batch.lengths), batch.prompt_length
        if prefix.cache is not None:
            self.cache.load_prefix(prefix.cache, b, s)
        visual = None
        if prefix.vision is not None:
            visual_mask = (batch.input_ids == prefix.image_token_id) & batch.real
            counts = visual_mask.sum(dim=1).tolist()
            if any(prefix.visual_in_prefix + c != prefix.vision.tokens for c in counts):
                raise DecodeInputError("a prompt's image tokens do not match the frame set's vision tokens")
            embeds, deepstack = prefix.vision.rows(prefix.visual_in_prefix, prefix.vision.tokens)
            if b > 1:  # row-major order of the placeholders: each row's suffix takes the same features
                embeds = embeds.repeat(b, 1)
                deepstack = [d.repeat(b, 1) for d in deepstack]
            visual = (visual_mask, embeds, deepstack)
        self._prefill_forward(self.cache, batch.input_ids, batch.position_ids, batch.mask,
                              torch.arange(s, length, device=self.cache.device), length, visual)
        return PromptState(b, length, batch.prompt_valid, [(0, n) for n in batch.lengths], batch.response_start)

    def _fill_prefix(self, prefix: SharedPrefix, dtype: torch.dtype, device: torch.device) -> None:
        """Prefill the shared prefix on its own into its own cache (before a batch continues from it)."""
        s, block, first = prefix.length, prefix.block_size, prefix.prompts[0]
        if s == 0 or prefix.cache is not None:
            return
        stack = self.stack
        cache = StaticKVCache(stack.num_layers, 1, s, stack.kv_heads, stack.head_dim, dtype, device, "dense")
        prefix_ids = first.input_ids[:, :s]
        mask = prompt_block_mask(torch.ones((1, s), dtype=torch.bool, device=device), block)
        visual = None
        if prefix.vision is not None and prefix.visual_in_prefix:
            embeds, deepstack = prefix.vision.rows(0, prefix.visual_in_prefix)
            visual = (prefix_ids == prefix.image_token_id, embeds, deepstack)
        self._prefill_forward(cache, prefix_ids, first.position_ids[:, :, :s], mask,
                              torch.arange(s, device=device), s, visual)
        prefix.cache = cache

    def _capture_prefix(self, prefix: SharedPrefix, dtype: torch.dtype, device: torch.device) -> None:
        """Keep slots [0, S) of the engine cache's first row (a whole prompt just prefilled) as the prefix."""
        stack = self.stack
        cache = StaticKVCache(stack.num_layers, 1, prefix.length, stack.kv_heads, stack.head_dim, dtype, device,
                              "dense")
        cache.load_prefix(self.cache, 1, prefix.length)
        prefix.cache = cache

    # -- requests ---------------------------------------------------------------------
    @torch.inference_mode()
    def generate(self, inputs: dict[str, torch.Tensor], config: DecodeConfig, trace: list | None = None) -> DecodeResult:
        """Decode a left-padded prompt batch from scratch (vision pass and full prefill)."""
        device, dtype = self._device_dtype()
        mode = self._mode(config, device)
        t0 = device_clock(device)
        prompt = prepare_prompt(self.vla, inputs, device)
        rows = self._reserve(mode, prompt.batch_size, prompt.length, config, dtype, device)
        state = self._prefill(prompt, config.block_size, dtype)
        return self._decode_timed(state, rows, config, mode, trace, self._label(mode, config), prompt.real_tokens, t0)

    @torch.inference_mode()
    def encode_prefix(self, inputs: Sequence[dict[str, torch.Tensor]], config: DecodeConfig,
                      prefill: bool = False) -> SharedPrefix:
        """Encode a frame set once: one vision pass, and the shared length of its task prompts.

        ``inputs``: one unpadded single prompt per task (``model.inputs.build_frame_inputs``),
        all with the same images. The shared length is the prompts' longest common
        token prefix rounded down to a multiple of ``config.block_size`` (``prefix.shared_length``).
        The prefix K/V are filled by the first :meth:`generate_from_prefix` (from that
        call's own prefill when it decodes one prompt, so nothing is computed twice), or
        here when ``prefill`` is True.
        """
        device, dtype = self._device_dtype()
        t0 = device_clock(device)
        if not inputs:
            raise DecodeInputError("encode_prefix needs at least one prompt")
        prompts = [prepare_prompt(self.vla, one, device) for one in inputs]
        for index, p in enumerate(prompts):
            if p.batch_size != 1 or p.real_tokens != p.length:
                raise DecodeInputError(f"prompt {index}: encode_prefix takes single unpadded prompts (batch 1), "
                                       f"got batch {p.batch_size} with {p.length - p.real_tokens} pad tokens")
        _check_same_images(prompts)
        block = config.block_size
        ids = [p.input_ids[0].tolist() for p in prompts]
        s = shared_length(ids, block)
        first = prompts[0]
        vision = self._encode_images(first, dtype) if first.has_images else None
        image_id = self._image_token_id()
        visual_in_prefix = sum(1 for t in ids[0][:s] if t == image_id)
        prefix = SharedPrefix(block, s, prompts, None, vision, visual_in_prefix, image_id)
        if prefill:
            self._fill_prefix(prefix, dtype, device)
        prefix.prefill_ms = (device_clock(device) - t0) * 1e3
        return prefix

    @torch.inference_mode()
    def generate_from_prefix(self, prefix: SharedPrefix, rows: Sequence[int] | None, config: DecodeConfig,
                             trace: list | None = None) -> DecodeResult:
        """Decode prompts ``rows`` of ``prefix`` (None = all) as rows of one batch, each continuing from the prefix.

        Gives the same tokens as :meth:`generate` on each prompt alone. ``stats.prefill_ms``
        is this call's prefill: the rows' suffixes, or, on the first call of a frame set
        with one row, that row's whole prompt (whose first S slots then become the prefix).
        """
        if config.block_size != prefix.block_size:
            raise DecodeInputError(f"the prefix was prefilled for block_size={prefix.block_size}, "
                                   f"not {config.block_size}: block-causal chunks differ")
        indices = list(range(len(prefix.prompts))) if rows is None else list(rows)
        if not indices or any(not 0 <= i < len(prefix.prompts) for i in indices):
            raise DecodeInputError(f"rows {indices} must name some of the prefix's {len(prefix.prompts)} prompts")
        device, dtype = self._device_dtype()
        if prefix.cache is not None and (prefix.cache.device != torch.device(device) or prefix.cache.dtype != dtype):
            raise DecodeInputError(f"the prefix lives on {prefix.cache.device} in {prefix.cache.dtype}; "
                                   f"the model on {device} in {dtype}")
        mode = self._mode(config, device)
        label = self._label(mode, config) + "+prefix"
        t0 = device_clock(device)
        if prefix.cache is None and prefix.length > 0 and len(indices) == 1:
            # first use, one prompt: prefill it whole (vision features reused), keep its first S slots
            prompt = prefix.prompts[indices[0]]
            decode_rows = self._reserve(mode, 1, prompt.length, config, dtype, device)
            state = self._prefill(prompt, config.block_size, dtype, prefix.vision)
            self._capture_prefix(prefix, dtype, device)
            return self._decode_timed(state, decode_rows, config, mode, trace, label, prompt.real_tokens, t0)
        self._fill_prefix(prefix, dtype, device)
        batch = suffix_batch([prefix.prompts[i] for i in indices], prefix.length, config.block_size,
                             _pad_id(self.vla))
        decode_rows = self._reserve(mode, len(indices), batch.prompt_length, config, dtype, device)
        state = self._prefill_suffix(prefix, batch)
        return self._decode_timed(state, decode_rows, config, mode, trace, label, sum(batch.lengths), t0)

    def _decode_timed(self, prompt: PromptState, rows: int, config: DecodeConfig, mode: Mode, trace: list | None,
                      label: str, prompt_tokens: int, t0: float) -> DecodeResult:
        """Decode after a prefill that began at ``t0`` and assemble the result with its statistics."""
        device = self.cache.device
        t1 = device_clock(device)
        committed, committed_conf, forwards = self._decode(prompt, rows, config, mode, trace)
        t2 = device_clock(device)
        return build_result(self.vla, committed, committed_conf, config, label, prompt_tokens, forwards,
                            t1 - t0, t2 - t1)

    # -- decoding ---------------------------------------------------------------------
    def _decode(self, prompt: PromptState, rows: int, config: DecodeConfig, mode: Mode,
                trace: list | None) -> tuple[list[list[int]], list[list[float]], int]:
        """Block-diffusion decode after the prefill; returns per-row committed tokens, confidences, forwards.

        ``rows`` may exceed ``prompt.rows`` (graph-bucket fillers); ``trace`` receives each
        step's block logits of the real rows.
        """
        state = self._start_decode(prompt, rows, config)
        clean = None  # the block committed last: its clean K/V are written by the next block's first step
        for k in range(config.num_blocks):
            block = self._start_block(state, k, clean, mode)
            self._denoise(state, block, config, mode, trace)
            self._commit_block(state, block)
            if bool(state.finished.all()):  # host sync, once per block: every row has committed its end token
                break
            clean = block
        n = state.blocks * state.block_size
        committed = state.out_ids[:state.real_rows, :n].tolist()
        committed_conf = state.out_conf[:state.real_rows, :n].tolist()
        return committed, committed_conf, state.forwards

    def _start_decode(self, prompt: PromptState, rows: int, config: DecodeConfig) -> DecodeState:
        """Decode state of ``rows`` rows; rows beyond the prompt's are fillers, finished from the start."""
        device = self.cache.device
        b, length, width = prompt.rows, prompt.length, config.num_blocks * config.block_size
        key_valid = torch.zeros(rows, self.cache.slots, dtype=torch.bool, device=device)
        key_valid[:b, :length] = prompt.valid
        key_valid[b:, :length] = True
        response_start = torch.zeros(rows, dtype=torch.long, device=device)
        response_start[:b] = prompt.response_start
        finished = torch.zeros(rows, dtype=torch.bool, device=device)
        finished[b:] = True
        out_ids = torch.full((rows, width), self.vla.end_token_id, dtype=torch.long, device=device)
        out_conf = torch.zeros(rows, width, dtype=torch.float32, device=device)
        ranges = list(prompt.ranges) + [(0, length)] * (rows - b)
        offsets = torch.arange(config.block_size, device=device)
        return DecodeState(rows, b, config.block_size, length, key_valid, response_start, finished, out_ids, out_conf, ranges, offsets)

    def _start_block(self, state: DecodeState, k: int, clean: Block | None, mode: Mode) -> Block:
        """Block k fully masked (finished rows: nothing to denoise), with the inputs of its forwards.

        ``clean``: block k-1, committed. Its slots become valid keys now, and block k's
        first denoise step is the fused forward over [block k-1 ; block k] that writes
        block k-1's clean K/V. The masks and FlashInfer plans are built here, once per block.
        """
        device, rows, size = self.cache.device, state.rows, state.block_size
        start = state.prompt_length + k * size
        positions = state.response_start[:, None] + k * size + state.offsets
        ids = torch.full((rows, size), self.vla.mask_token_id, dtype=torch.long, device=device)
        conf = torch.zeros(rows, size, dtype=torch.float32, device=device)
        masked = (~state.finished)[:, None].expand(rows, size).clone()
        if clean is not None:
            state.key_valid[:, start - size:start] = True  # the previous block is clean from now on
        kv_len = self.cache.slots if mode.static else start + size
        plans = {}
        if mode.backend == "flashinfer":
            plans["step"] = self._plan("step", rows, state.ranges, state.prompt_length, start, size, mode.graphs)
            if clean is not None:
                plans["fused"] = self._plan("fused", rows, state.ranges, state.prompt_length, start, size,
                                            mode.graphs)
        inputs = {"step": {"ids": ids, "positions": positions,
                           "slots": torch.arange(start, start + size, device=device),
                           "mask": decode_mask(state.key_valid, start, size, False, kv_len)}}
        if clean is not None:
            inputs["fused"] = {"ids": torch.cat([clean.ids, ids], dim=1),
                               "positions": torch.cat([clean.positions, positions], dim=1),
                               "slots": torch.arange(start - size, start + size, device=device),
                               "mask": decode_mask(state.key_valid, start, size, True, kv_len)}
        return Block(k, start, positions, ids, conf, masked, inputs, plans)

    def _denoise(self, state: DecodeState, block: Block, config: DecodeConfig, mode: Mode,
                 trace: list | None) -> None:
        """Denoise steps until no mask is left; each commits by threshold, else the most confident mask.

        At the step cap every mask left is committed. The first step of a block after
        block 0 is the fused forward (the previous block's clean forward rides along).
        """
        cap, threshold, mask_id = config.step_cap, float(config.confidence_threshold), self.vla.mask_token_id
        end_id = self.vla.end_token_id if config.end_in_order else None
        reuse = mode.reuse
        before = None  # reuse: the columns masked when the previous step began (rows, B)
        for step in range(1, cap + 1):
            if self.between_steps is not None:
                self.between_steps()
            kind = "fused" if block.fused and step == 1 else "step"
            columns = fresh = None
            if mode.prune:  # the last layer runs only the still-masked columns
                columns = state.offsets if step == 1 else self._masked_columns(block)
                if reuse and step > 1:  # ... and the other layers only those and the ones committed last step
                    fresh = Fresh.of(before, columns)
            if reuse:
                before = block.masked.clone()
            logits = self._step_forward(kind, block, state, mode, columns, fresh)
            state.forwards += 1
            if trace is not None:
                trace.append(logits[:state.real_rows].float().cpu())
            commit_step(logits, block.ids, block.conf, block.masked, threshold, step == cap, mask_id, end_id)
            if not bool(block.masked.any()):  # host sync, once per step: is the block complete?
                break

    @staticmethod
    def _masked_columns(block: Block) -> torch.Tensor:
        """Block columns still masked in some row (a host sync: ``nonzero`` sizes its output on the host)."""
        return block.masked.any(dim=0).nonzero().squeeze(1)

    def _step_forward(self, kind: str, block: Block, state: DecodeState, mode: Mode,
                      columns: torch.Tensor | None, fresh: Fresh | None = None) -> torch.Tensor:
        """One decode forward of ``kind``: a replay of its CUDA graph (captured on first use), or eager.

        In graph mode the logits are the graph's static output: read them before the next replay.
        ``fresh`` (eager, ``reuse_committed_kv``): run only these block columns (``Fresh``).
        """
        size = state.block_size
        forward = functools.partial(self._forward, block=size, plan=block.plans.get(kind), columns=columns)
        key = (kind, state.rows, size, mode.backend)  # the graph key: batch bucket and B, never the prompt length
        if mode.static:
            self.graph_keys.add(key)
        if mode.graphs:
            return self.graphs.run(key, forward, block.inputs[kind])
        inputs = block.inputs[kind]
        if fresh is None:
            return forward(**inputs)
        # reuse_committed_kv: run only the fresh columns; every query still attends the whole block, the other
        # columns' keys and values staying in their slots; a row writes only the columns fresh for it
        cols = fresh.columns
        return forward(ids=inputs["ids"].index_select(1, cols), positions=inputs["positions"].index_select(1, cols),
                       slots=inputs["slots"].index_select(0, cols), mask=inputs["mask"].index_select(2, cols),
                       keep=fresh.keep, write=fresh.write)

    def _commit_block(self, state: DecodeState, block: Block) -> None:
        """Keep block k's tokens in the rows still running; a row that committed the end token is finished."""
        size = state.block_size
        cols = slice(block.index * size, (block.index + 1) * size)
        writable = (~state.finished)[:, None]
        state.out_ids[:, cols] = torch.where(writable, block.ids, state.out_ids[:, cols])
        state.out_conf[:, cols] = torch.where(writable, block.conf, state.out_conf[:, cols])
        state.finished |= (block.ids == self.vla.end_token_id).any(dim=1)
        state.blocks = block.index + 1


def _pad_id(vla) -> int:
    pad = getattr(vla, "pad_token_id", None)
    return int(pad) if pad is not None else int(vla.end_token_id)


def _check_same_images(prompts: list[PreparedPrompt]) -> None:
    """All prompts of a frame set carry the same images (or none): one vision pass serves them all."""
    first = prompts[0]
    for index, p in enumerate(prompts[1:], start=1):
        if p.has_images != first.has_images:
            raise DecodeInputError(f"prompt {index} {'has' if p.has_images else 'has no'} images, prompt 0 does not agree")
        if not p.has_images:
            continue
        same_grid = torch.equal(p.image_grid_thw, first.image_grid_thw)
        same_pixels = p.pixel_values is first.pixel_values or (
            p.pixel_values.shape == first.pixel_values.shape and torch.equal(p.pixel_values, first.pixel_values))
        if not (same_grid and same_pixels):
            raise DecodeInputError(f"prompt {index} has other images than prompt 0; a shared prefix needs one frame set")
