"""Fixtures of the benchmark tests: a tiny synthetic log and a random tiny model saved at B=1 and B=4."""

from __future__ import annotations

import pytest
import torch

from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.evaluation.ladder import heldout_rows, pick
from wamdiff2_ros.model.loader import init_model


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory):
    """One synthetic log of 14 frames at 64x32 pixels: 3 scenes (planning, perception, one QA each)."""
    root = tmp_path_factory.mktemp("synth")
    synthesize(root, num_logs=1, num_frames=14, seed=3, size=(64, 32), progress=False)
    return root


@pytest.fixture(scope="session")
def random_models(synth_root, tmp_path_factory):
    """A random tiny model saved at B=1 and B=4, and one held-out sample per task from the synthetic log."""
    root = tmp_path_factory.mktemp("sweep")
    vla = init_model("tiny", seed=0)
    vla.with_block_size(1).save(root / "ar")
    vla.with_block_size(4).save(root / "b4")
    samples = pick(heldout_rows(vla, synth_root, root / "cache"), 1)
    return root, vla, samples
