"""Preallocated static KV cache for the fast engine (one K and one V tensor per layer).

Slots are addressed by index: the prompt occupies slots ``[0, L)`` (left padded),
response block k occupies ``[L + kB, L + (k+1)B)``. Writes go through
``index_copy_`` with a device index tensor, so a write never needs the host and can
be recorded in a CUDA graph. Denoise steps write their block's slots and the next
step (or the clean forward) simply overwrites them: the "length" of the cache is
whatever the attention mask lets a query see, never a field that is advanced.

Two layouts: ``"dense"`` (rows, kv_heads, slots, head_dim) for SDPA, and ``"paged"``
(rows * slots, 1, kv_heads, head_dim), FlashInfer's NHD paged layout with one slot
per page, so a row's valid keys are a contiguous page range that skips its padding.
Both layouts also hand out a dense (rows, kv_heads, n, head_dim) view for SDPA.

A cache with more rows or slots than a request needs serves it (the request uses the
first rows and slots), so alternating batch sizes never reallocate it (and never drop
the CUDA graphs that read it by address).
"""

from __future__ import annotations

import torch

LAYOUTS = ("dense", "paged")


class StaticKVCache:
    def __init__(self, num_layers: int, rows: int, slots: int, kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device, layout: str = "dense") -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"StaticKVCache layout {layout!r} not in {LAYOUTS}")
        self.rows, self.slots, self.kv_heads, self.head_dim = rows, slots, kv_heads, head_dim
        self.layout, self.dtype, self.device = layout, dtype, torch.device(device)
        shape = (rows, kv_heads, slots, head_dim) if layout == "dense" else (rows * slots, 1, kv_heads, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]

    def fits(self, rows: int, slots: int, dtype: torch.dtype, device: torch.device, layout: str) -> bool:
        return (self.rows >= rows and self.slots >= slots and self.dtype == dtype
                and self.device == torch.device(device) and self.layout == layout)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)

    def _rows_view(self, tensor: torch.Tensor) -> torch.Tensor:
        """(rows, slots, kv_heads, head_dim) view of a paged tensor."""
        return tensor.view(self.rows, self.slots, self.kv_heads, self.head_dim)

    def write(self, layer: int, key: torch.Tensor, value: torch.Tensor, slots: torch.Tensor) -> None:
        """Write (r, kv_heads, n, head_dim) keys/values of rows [0, r) into ``slots`` (n,)."""
        r = key.shape[0]
        if self.layout == "dense":
            self.k[layer][:r].index_copy_(2, slots, key)
            self.v[layer][:r].index_copy_(2, slots, value)
        else:
            self._rows_view(self.k[layer])[:r].index_copy_(1, slots, key.transpose(1, 2))
            self._rows_view(self.v[layer])[:r].index_copy_(1, slots, value.transpose(1, 2))

    def load_prefix(self, source: StaticKVCache, rows: int, length: int) -> None:
        """Copy slots ``[0, length)`` of ``source``'s first row into rows ``[0, rows)`` (a shared prompt prefix)."""
        for layer in range(len(self.k)):
            target_k, target_v = self.dense(layer, rows, length)
            source_k, source_v = source.dense(layer, 1, length)
            target_k.copy_(source_k)
            target_v.copy_(source_v)

    def dense(self, layer: int, rows: int, length: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows, kv_heads, length, head_dim) views of slots [0, length) (None = all slots)."""
        length = self.slots if length is None else length
        if self.layout == "dense":
            return self.k[layer][:rows, :, :length], self.v[layer][:rows, :, :length]
        k = self._rows_view(self.k[layer])[:rows, :length].transpose(1, 2)
        v = self._rows_view(self.v[layer])[:rows, :length].transpose(1, 2)
        return k, v
