"""Fixtures for the decoding tests: a random tiny Qwen3-VL model and prompts."""

from __future__ import annotations

import pytest
import torch

from wamdiff2_ros.decoding.testing import tiny_vla, toy_inputs


@pytest.fixture(scope="session")
def vla():
    torch.set_num_threads(1)
    return tiny_vla(seed=0)


@pytest.fixture(scope="session")
def make_inputs():
    return toy_inputs
