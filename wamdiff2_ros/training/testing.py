"""Helpers for the training tests: a DDP worker for ``torch.multiprocessing.spawn`` (gloo on localhost)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.training.config import load_config
from wamdiff2_ros.training.engine import train


def ddp_worker(rank: int, world_size: int, port: int, config: dict[str, Any], out_dir: str) -> None:
    """Train one rank of ``config`` and write its final parameters to ``out_dir/rank{rank}.pt``."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    cfg = load_config(None, None, **config)
    result = train(cfg)
    params = {k: v.detach().clone() for k, v in result.vla.model.state_dict().items()}
    torch.save({"params": params, "history": result.history}, Path(out_dir) / f"rank{rank}.pt")
