"""Fixtures of the benchmark tests: one torch thread per test.

The synthetic log and the random models (``synth_root``, ``random_models``) are
test/conftest.py's, shared with the training tests.
"""

from __future__ import annotations

from helpers_torch import one_thread as _one_thread  # noqa: F401 - autouse: one torch thread per test


