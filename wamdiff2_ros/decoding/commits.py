"""Commit order of block-diffusion decoding: which token each denoise step committed, and how sure it was.

``ReferenceDecoder.generate(..., commits=[])`` records one :class:`Commit` per committed
token. :func:`summarize` turns them into the numbers that explain decode speed (steps
per block, the share of tokens committed above the threshold in parallel) and
:func:`format_steps` prints the steps of one row as text, e.g. ``3:'.'@0.96`` (response
position 3 got ``.`` with confidence 0.96). ``wamdiff2 bench trace`` runs both on a
held-out sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Commit:
    """One committed token: batch row, block index, denoise step (1-based), response position, token, confidence."""

    row: int
    block: int
    step: int
    position: int
    token: int
    confidence: float
    sure: bool  # confidence >= threshold (committed in parallel); False: the single best, or filled at the step cap


def summarize(commits: Sequence[Commit], row: int = 0) -> dict[str, Any]:
    """Steps per block, tokens per step and the share of sure commits for one row."""
    mine = [c for c in commits if c.row == row]
    steps = {(c.block, c.step) for c in mine}
    per_block: dict[int, int] = {}
    for block, step in steps:
        per_block[block] = max(per_block.get(block, 0), step)
    unsure = [c.confidence for c in mine if not c.sure]
    return {
        "tokens": len(mine),
        "steps": len(steps),
        "tokens_per_step": len(mine) / len(steps) if steps else 0.0,
        "steps_per_block": [per_block[k] for k in sorted(per_block)],
        "sure_share": sum(c.sure for c in mine) / len(mine) if mine else 0.0,
        "mean_confidence_unsure": sum(unsure) / len(unsure) if unsure else float("nan"),
    }


def format_steps(commits: Sequence[Commit], decode_token: Callable[[int], str], row: int = 0) -> str:
    """One line per denoise step: ``block k step s: pos:'tok'@conf ...`` (unsure commits marked with ``?``)."""
    lines, current, parts = [], None, []
    for c in (c for c in commits if c.row == row):
        key = (c.block, c.step)
        if key != current:
            if parts:
                lines.append(f"block {current[0]} step {current[1]:>2}: " + " ".join(parts))
            current, parts = key, []
        parts.append(f"{c.position}:{decode_token(c.token)!r}@{c.confidence:.2f}{'' if c.sure else '?'}")
    if parts:
        lines.append(f"block {current[0]} step {current[1]:>2}: " + " ".join(parts))
    return "\n".join(lines)
