"""CUDA graphs for the fast engine: one captured decode forward per (kind, rows, block size).

A graph is captured the first time a key is needed, after two warm-up runs on a side
stream, and replayed afterwards with its static input buffers refreshed in place.
Graphs read the static KV cache and rope tables by address, so the engine drops
them whenever it reallocates those. Only used on CUDA; on CPU the engine runs the
same forward eagerly (that twin is what CI tests).

Shapes are bucketed so that a stream of frames reuses the same few graphs: the batch
of a request is rounded up to a power of two (filler rows are finished from the
start), and the cache length to a multiple of :data:`SLOT_ROUND`; the cache only ever
grows (a request smaller than it runs in its first rows and slots). A graph key is
(forward kind, batch bucket, B, backend): the prompt length, the shared-prefix length
and which tasks run never enter it, so frames whose prompts differ do not re-capture.
:func:`graph_shape` is that rule as plain code (tested on the CPU).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import torch

SLOT_ROUND = 256  # graph mode: cache length rounded up so graphs are reused across requests


def batch_bucket(rows: int) -> int:
    """Smallest power of two >= rows (the batch sizes CUDA graphs are captured for)."""
    return 1 << max(rows - 1, 0).bit_length()


def slot_bucket(slots: int) -> int:
    """Cache length for ``slots`` needed slots in graph mode: the next multiple of :data:`SLOT_ROUND`."""
    return -(-slots // SLOT_ROUND) * SLOT_ROUND


def graph_shape(rows: int, slots: int, held: tuple[int, int] | None = None) -> tuple[int, int]:
    """(cache rows, cache slots) for a request of ``rows`` rows needing ``slots`` slots in graph mode.

    ``held`` is the (rows, slots) of the cache already allocated: when the request
    fits, it is kept (no reallocation, so no graph re-capture); otherwise the new
    cache covers both the old one and the request.
    """
    want = (batch_bucket(rows), slot_bucket(slots))
    if held is None:
        return want
    return max(held[0], want[0]), max(held[1], want[1])


class BlockGraphs:
    def __init__(self) -> None:
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[Hashable, tuple[torch.cuda.CUDAGraph, dict[str, torch.Tensor], torch.Tensor]] = {}

    def __len__(self) -> int:
        return len(self.graphs)

    def run(self, key: Hashable, forward: Callable[..., torch.Tensor], inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Replay the graph of ``key`` on ``inputs`` (capturing it first if needed).

        The returned tensor is the graph's static output: read it before the next replay.
        """
        entry = self.graphs.get(key)
        if entry is None:
            static = {name: tensor.clone() for name, tensor in inputs.items()}
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    forward(**static)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                output = forward(**static)
            entry = (graph, static, output)
            self.graphs[key] = entry
        graph, static, output = entry
        for name, tensor in inputs.items():
            static[name].copy_(tensor, non_blocking=True)
        graph.replay()
        return output
