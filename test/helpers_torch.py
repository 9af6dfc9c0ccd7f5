"""Torch fixtures shared by the test folders that import them (a conftest or a test module): one thread per test."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """One torch CPU thread for the test, the previous count after it (autouse where imported)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
