"""Training batches: where a stage's tokenised samples are cached, DDP sharding with a resumable position, collate.

The samples themselves (and their cache) are :mod:`wamdiff2_ros.data.tokenized`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.data.tokenized import prompt_of
from wamdiff2_ros.training.config import TrainConfig


def cache_dir_for(cfg: TrainConfig) -> Path:
    """Where a stage's tokenised samples are cached: ``data.cache_dir``, else ``<output_dir>/../cache``."""
    return Path(cfg.data.cache_dir) if cfg.data.cache_dir else Path(cfg.output_dir).parent / "cache"


@dataclass
class DataPosition:
    """Where the sampler is: ``epoch`` and ``batch`` (index of the next batch in that epoch)."""

    epoch: int = 0
    batch: int = 0


class ShardedBatches:
    """Deterministic shuffled batches, each rank taking its own shard (DistributedSampler-like), resumable.

    Every epoch is a permutation seeded by ``seed + epoch``; rank r takes positions
    r, r + world, ... (truncated so all ranks see the same number of batches).
    """

    def __init__(self, size: int, batch_size: int, *, rank: int = 0, world_size: int = 1, seed: int = 0,
                 position: DataPosition | None = None):
        if size < world_size * batch_size:
            raise ValueError(f"{size} samples are fewer than world_size*batch_size = {world_size * batch_size}")
        self.size, self.batch_size, self.rank, self.world_size, self.seed = size, batch_size, rank, world_size, seed
        self.position = position or DataPosition()

    @property
    def batches_per_epoch(self) -> int:
        return (self.size // self.world_size) // self.batch_size

    def _epoch_indices(self, epoch: int) -> list[int]:
        g = torch.Generator().manual_seed(self.seed + epoch)
        perm = torch.randperm(self.size, generator=g).tolist()
        shard = perm[self.rank :: self.world_size][: self.size // self.world_size]
        return shard

    def next_batch(self) -> list[int]:
        if self.position.batch >= self.batches_per_epoch:
            self.position = DataPosition(self.position.epoch + 1, 0)
        shard = self._epoch_indices(self.position.epoch)
        start = self.position.batch * self.batch_size
        self.position = DataPosition(self.position.epoch, self.position.batch + 1)
        return shard[start : start + self.batch_size]

    def __iter__(self) -> Iterator[list[int]]:
        while True:
            yield self.next_batch()


def collate(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, torch.Tensor]], list[torch.Tensor]]:
    """``(prompts, responses)`` of a batch, as the model's training forwards take them."""
    return [prompt_of(r) for r in rows], [r["response_ids"] for r in rows]
