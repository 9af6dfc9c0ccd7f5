"""Trivial baselines of the results table: the majority answer per question type and the prior box.

Computed from the train split's samples (``heldout.train_baselines``) or, when those are not
stored, from the scored split itself (``paper_table.split_baselines``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

PRIOR_RADIUS_M = 2.0  # the prior box's "most common position": most neighbours within this radius


def _most_common(counts: Counter) -> str:
    """The most common key, ties broken by the key's order (deterministic)."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def majority_answers(qa_answers: dict[str, dict[str, int]]) -> dict[str, str]:
    """``{question type: its most common answer}`` of ``{question type: {answer: count}}``."""
    return {qtype: _most_common(Counter(counts)) for qtype, counts in qa_answers.items() if counts}


def prior_box(boxes: Sequence[dict[str, Any]], radius_m: float = PRIOR_RADIUS_M) -> dict[str, Any] | None:
    """The "always predict the most common box" prior of ground-truth boxes (label, bbox, center).

    The most common label; among its boxes, the most common BEV position: the box centre with
    the most same-label centres within ``radius_m`` (ties: the first); the prior is the mean
    centre and the mean image box of those neighbours.
    """
    if not boxes:
        return None
    label = _most_common(Counter(b["label"] for b in boxes))
    these = [b for b in boxes if b["label"] == label]
    x, y = np.asarray([b["center"] for b in these], dtype=np.float64).T
    near = (x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2 <= radius_m**2
    inside = [these[i] for i in np.flatnonzero(near[int(np.argmax(near.sum(axis=1)))])]
    centre = np.mean([b["center"] for b in inside], axis=0)
    bboxes = [b["bbox"] for b in inside if b.get("bbox") is not None]
    bbox = np.mean(bboxes, axis=0).round(1).tolist() if bboxes else None
    return {
        "label": label,
        "center": np.round(centre, 3).tolist(),
        "bbox": bbox,
        "support": len(inside),
        "of": len(boxes),
    }
