"""Each detection's score from its own tokens: mean commit confidence of the tokens that spell the box.

A perception answer is ``box; box; ...`` (model.codecs). The answer's tokens are
mapped to character spans of the decoded text (incremental detokenisation); a box's
score is the mean confidence of the tokens overlapping its item. When the items and
the parsed boxes cannot be matched one to one, None is returned and the caller uses
the task's confidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ITEM = re.compile(r"[^;\n]+")


def token_char_ends(tokenizer, token_ids: Sequence[int]) -> list[int]:
    """End offset in the decoded text of each token (monotonic)."""
    ends, last = [], 0
    for k in range(len(token_ids)):
        last = max(last, len(tokenizer.decode(list(token_ids[: k + 1]), skip_special_tokens=True)))
        ends.append(last)
    return ends


def box_scores(tokenizer, token_ids: Sequence[int], confidences: Sequence[float], text: str,
               n_boxes: int) -> list[float] | None:
    """Per-box mean confidence of the tokens of each ``;``-separated item of ``text``, or None."""
    if tokenizer is None or n_boxes == 0 or len(token_ids) != len(confidences) or not token_ids:
        return None
    items = [(m.start() + len(m.group()) - len(m.group().lstrip()), m.end() - len(m.group()) + len(m.group().rstrip()))
             for m in ITEM.finditer(text) if m.group().strip()]
    if len(items) != n_boxes:
        return None
    ends = token_char_ends(tokenizer, token_ids)
    starts = [0, *ends[:-1]]
    scores = []
    for lo, hi in items:
        picked = [c for s, e, c in zip(starts, ends, confidences, strict=True) if s < hi and e > lo]
        if not picked:
            return None
        scores.append(float(sum(picked) / len(picked)))
    return scores
