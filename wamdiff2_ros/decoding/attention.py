"""Attention backends of the fast engine: torch SDPA (CPU/GPU) and FlashInfer (GPU, optional).

A backend object is built once per forward kind and called per layer with rotated
queries/keys: ``attend(layer, q, k, v) -> (rows, n, heads * head_dim)``. It first
writes k/v into the static cache slots of this forward, then attends.

FlashInfer is imported lazily and only on CUDA; when it is missing (the normal case
on a CPU machine and in CI) :func:`resolve_backend` says why and falls back to SDPA.
Its batch-prefill wrapper over the paged cache (page size 1) is planned once per
block and per forward kind and reused by all of that block's denoise steps.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from .kv_cache import StaticKVCache

FLASHINFER_WORKSPACE_BYTES = 128 * 1024 * 1024


def flashinfer_available() -> tuple[bool, str]:
    """(usable, reason) for the FlashInfer backend on this machine."""
    if not torch.cuda.is_available():
        return False, "FlashInfer needs a CUDA device; none is available"
    try:
        import flashinfer  # noqa: F401
    except ImportError as exc:
        return False, f"flashinfer-python is not installed ({exc})"
    return True, "ok"


def resolve_backend(requested: str, device: torch.device) -> str:
    """Pick "sdpa" or "flashinfer" for ``requested`` ("auto"|"sdpa"|"flashinfer"), warning on fallback."""
    if requested == "sdpa":
        return "sdpa"
    if device.type != "cuda":
        if requested == "flashinfer":
            warnings.warn(f"attention_backend='flashinfer' needs a CUDA device (decoding on {device}); using SDPA",
                          RuntimeWarning, stacklevel=3)
        return "sdpa"
    usable, why = flashinfer_available()
    if usable:
        return "flashinfer"
    if requested == "flashinfer":
        warnings.warn(f"attention_backend='flashinfer' unavailable: {why}; using SDPA", RuntimeWarning, stacklevel=3)
    return "sdpa"


class SdpaAttention:
    """SDPA over the first ``kv_len`` cache slots (None = all, for static CUDA-graph shapes)."""

    def __init__(self, cache: StaticKVCache, slots: torch.Tensor, mask: torch.Tensor, kv_len: int | None,
                 scale: float, write: torch.Tensor | None = None) -> None:
        """``write`` (rows, n) bool: where a row writes its keys and values (None: everywhere)."""
        self.cache, self.slots, self.mask, self.kv_len, self.scale = cache, slots, mask, kv_len, scale
        self.write = write

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 queries: torch.Tensor | None = None) -> torch.Tensor:
        """``queries`` (m,): q holds only these of the forward's n positions (k and v hold all n)."""
        rows, heads, n, head_dim = q.shape
        if self.write is not None:  # keep the cached keys and values where a row does not write
            old_k, old_v = (t.index_select(2, self.slots) for t in self.cache.dense(layer, rows, self.kv_len))
            keep = ~self.write[:, None, :, None]
            k, v = torch.where(keep, old_k, k), torch.where(keep, old_v, v)
        self.cache.write(layer, k, v, self.slots)
        keys, values = self.cache.dense(layer, rows, self.kv_len)
        mask = self.mask if queries is None else self.mask.index_select(2, queries)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=self.scale,
                                             enable_gqa=heads != keys.shape[1])
        return out.transpose(1, 2).reshape(rows, n, heads * head_dim)


def request_pages(prompt_ranges: list[tuple[int, int]], response_from: int, query_ends: list[int],
                  query_block: int, slots: int) -> tuple[list[int], list[int], list[int]]:
    """FlashInfer request layout (qo_indptr, kv_indptr, page indices) over single-slot pages.

    Row ``r`` holds its real prompt tokens in slots ``prompt_ranges[r] = (a, b)`` and its
    response from slot ``response_from``; request ``i`` of the row attends to slots
    ``[a, b)`` and ``[response_from, query_ends[i])``. Left-padded prompts are
    ``(pad, L)`` with ``response_from = L`` (one contiguous range); prompts that continue
    a shared prefix are ``(0, n_r)`` with padding between ``n_r`` and ``L``. Pages of
    row ``r`` are numbered ``r * slots + slot``.
    """
    qo, kv_indptr, indices = [0], [0], []
    for row, (first, stop) in enumerate(prompt_ranges):
        base = row * slots
        for end in query_ends:
            qo.append(qo[-1] + query_block)
            pages = list(range(base + first, base + stop)) + list(range(base + response_from, base + end))
            indices.extend(pages)
            kv_indptr.append(kv_indptr[-1] + len(pages))
    return qo, kv_indptr, indices


class FlashInferPlan:
    """One FlashInfer paged-prefill wrapper for one forward kind (denoise step or fused clean+step).

    Requests: every row contributes ``len(query_ends)`` requests of ``query_block``
    queries each; request ``i`` of row ``b`` attends (bidirectionally) to that row's
    real prompt slots and its response slots up to ``query_ends[i]`` (see
    :func:`request_pages`). Pages are single slots, so pad slots are simply left out
    of the page list and no mask is needed.
    """

    def __init__(self, cache: StaticKVCache, num_qo_heads: int, scale: float, use_cuda_graph: bool = False,
                 requests_per_row: int = 1) -> None:
        import flashinfer

        self.cache, self.num_qo_heads, self.scale = cache, num_qo_heads, scale
        device = cache.device
        self.workspace = torch.empty(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device=device)
        kwargs = {}
        if use_cuda_graph:  # static index buffers, so a captured graph reads the newest plan
            requests = cache.rows * requests_per_row
            kwargs = {
                "use_cuda_graph": True,
                "qo_indptr_buf": torch.zeros(requests + 1, dtype=torch.int32, device=device),
                "paged_kv_indptr_buf": torch.zeros(requests + 1, dtype=torch.int32, device=device),
                "paged_kv_indices_buf": torch.zeros(cache.rows * cache.slots * requests_per_row, dtype=torch.int32,
                                                    device=device),
                "paged_kv_last_page_len_buf": torch.ones(requests, dtype=torch.int32, device=device),
            }
        self.wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(self.workspace, "NHD", **kwargs)

    def plan(self, prompt_ranges: list[tuple[int, int]], response_from: int, query_ends: list[int],
             query_block: int) -> None:
        """Host-side planning (once per block): page lists per request."""
        cache = self.cache
        qo, kv_indptr, indices = request_pages(prompt_ranges, response_from, query_ends, query_block, cache.slots)
        requests = len(qo) - 1
        self.wrapper.plan(
            torch.tensor(qo, dtype=torch.int32, device=cache.device),
            torch.tensor(kv_indptr, dtype=torch.int32, device=cache.device),
            torch.tensor(indices, dtype=torch.int32, device=cache.device),
            torch.ones(requests, dtype=torch.int32, device=cache.device),
            self.num_qo_heads, cache.kv_heads, cache.head_dim, 1,
            causal=False, sm_scale=self.scale, q_data_type=cache.dtype, kv_data_type=cache.dtype,
        )


class FlashInferAttention:
    """Attention through a planned :class:`FlashInferPlan` (the cache must use the paged layout)."""

    def __init__(self, plan: FlashInferPlan, slots: torch.Tensor) -> None:
        self.plan, self.slots = plan, slots

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        rows, heads, n, head_dim = q.shape
        cache = self.plan.cache
        cache.write(layer, k, v, self.slots)
        flat_q = q.transpose(1, 2).reshape(rows * n, heads, head_dim)
        out = self.plan.wrapper.run(flat_q, (cache.k[layer], cache.v[layer]))
        return out.view(rows, n, heads * head_dim)
