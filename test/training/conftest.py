"""Fixtures of the training tests: a tiny synthetic dataset, tokenised once per session.

The synthetic log and the random models (``synth_root``, ``random_models``) are
test/conftest.py's, shared with the benchmark tests.
"""

from __future__ import annotations

import pytest
from helpers_torch import one_thread as _one_thread  # noqa: F401 - autouse: one torch thread per test

from wamdiff2_ros.training.config import load_config


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def make_config(synth_root, cache_dir):
    """A small-step TrainConfig of a stage, writing under the given directory."""
    def make(output_dir, **fields):
        base = dict(
            output_dir=str(output_dir), steps=12, batch_size=3, lr=3e-3, warmup_steps=1, num_threads=1,
            progress=False, seed=0,
            data={"logs_dir": str(synth_root), "cache_dir": str(cache_dir), "max_pixels": 1024,
                  "understanding_per_scene": 1, "max_boxes": 1, "seed": 0},
        )
        data = {**base.pop("data"), **fields.pop("data", {})}
        return load_config(None, None, **{**base, **fields, "data": data})

    return make


