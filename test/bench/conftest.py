"""Fixtures of the benchmark tests: one torch thread per test.

The synthetic log and the random models (``synth_root``, ``random_models``) are
test/conftest.py's, shared with the training tests.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
