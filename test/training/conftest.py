"""Fixtures of the training tests: a tiny synthetic dataset, tokenised once per session."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory):
    """One synthetic log of 14 frames at 64x32 pixels: 3 scenes (planning, perception, one QA each)."""
    from wamdiff2_ros.data.synth import synthesize

    root = tmp_path_factory.mktemp("synth")
    synthesize(root, num_logs=1, num_frames=14, seed=3, size=(64, 32), progress=False)
    return root


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def make_config(synth_root, cache_dir):
    """A small-step TrainConfig of a stage, writing under the given directory."""
    from wamdiff2_ros.training.config import load_config

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


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def random_models(synth_root, tmp_path_factory):
    """A random tiny model saved at B=1 and B=4, and one held-out sample per task from the synthetic log."""
    from wamdiff2_ros.evaluation.ladder import heldout_rows, pick
    from wamdiff2_ros.model.loader import init_model

    root = tmp_path_factory.mktemp("sweep")
    vla = init_model("tiny", seed=0)
    vla.with_block_size(1).save(root / "ar")
    vla.with_block_size(4).save(root / "b4")
    samples = pick(heldout_rows(vla, synth_root, root / "cache"), 1)
    return root, vla, samples
