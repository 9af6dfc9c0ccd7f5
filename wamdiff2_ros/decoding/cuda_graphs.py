"""CUDA graphs for the fast engine: one captured decode forward per (kind, rows, block size).

A graph is captured the first time a key is needed, after two warm-up runs on a side
stream, and replayed afterwards with its static input buffers refreshed in place.
Graphs read the static KV cache and rope tables by address, so the engine drops
them whenever it reallocates those. Only used on CUDA; on CPU the engine runs the
same forward eagerly (that twin is what CI tests).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import torch


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
