"""Small statistics shared by the reports: the paired bootstrap interval of a per-sample difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def paired_bootstrap(
    diff: Sequence[float], n: int = 10000, seed: int = 0, reference: Sequence[float] | None = None
) -> dict[str, Any]:
    """Mean of a paired per-sample difference and its 95% percentile bootstrap interval.

    With ``reference`` (the same samples' values of the baseline) the relative difference
    ``mean(diff) / mean(reference)`` in % gets an interval from the same resamples.
    """
    d = np.asarray(diff, dtype=np.float64)
    out: dict[str, Any] = {"n": int(d.size), "mean": None, "low": None, "high": None}
    if d.size == 0:
        return out
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(n, d.size))
    means = d[idx].mean(axis=1)
    out.update(mean=float(d.mean()), low=float(np.percentile(means, 2.5)), high=float(np.percentile(means, 97.5)))
    if reference is not None:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.shape != d.shape:
            raise ValueError(f"reference has {ref.size} values, diff {d.size}")
        rel = 100.0 * means / ref[idx].mean(axis=1)
        out.update(
            relative_pct=float(100.0 * d.mean() / ref.mean()),
            relative_low=float(np.percentile(rel, 2.5)),
            relative_high=float(np.percentile(rel, 97.5)),
        )
    return out
