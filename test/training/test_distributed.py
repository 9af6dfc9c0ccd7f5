"""DistributedDataParallel: two gloo processes on localhost keep identical parameters and split the data."""

from __future__ import annotations

import dataclasses
import socket

import torch
import torch.multiprocessing as mp

from wamdiff2_ros.training.dataset import ShardedBatches
from wamdiff2_ros.training.testing import ddp_worker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_ranks_stay_identical(tmp_path, make_config):
    cfg = make_config(tmp_path / "ddp", stage="adapt", block_size=4, steps=3, batch_size=1, grad_accum=2)
    config = dataclasses.asdict(cfg)
    mp.spawn(ddp_worker, args=(2, _free_port(), config, str(tmp_path)), nprocs=2, join=True)
    rank0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    rank1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    changed = False
    from wamdiff2_ros.model.loader import init_model

    fresh = init_model("tiny", seed=cfg.seed, block_size=4).model.state_dict()
    for name, a in rank0["params"].items():
        assert torch.equal(a, rank1["params"][name]), f"{name} differs across ranks"
        changed |= not torch.equal(a, fresh[name])
    assert changed, "training did not change the parameters"
    # the logged loss is the mean over ranks, so both ranks log the same numbers
    assert [r["loss"] for r in rank0["history"]] == [r["loss"] for r in rank1["history"]]
    assert (tmp_path / "ddp" / "model.safetensors").is_file()


def test_shards_are_disjoint_and_resumable():
    a = ShardedBatches(20, 3, rank=0, world_size=2, seed=5)
    b = ShardedBatches(20, 3, rank=1, world_size=2, seed=5)
    first_a, first_b = a.next_batch(), b.next_batch()
    assert not set(first_a) & set(first_b)
    position = a.position
    expected = [a.next_batch() for _ in range(5)]  # crosses an epoch boundary (3 batches per epoch)
    again = ShardedBatches(20, 3, rank=0, world_size=2, seed=5, position=position)
    assert [again.next_batch() for _ in range(5)] == expected
