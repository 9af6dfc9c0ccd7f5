"""QA by question type: where a model beats, ties or falls below the majority answer, and its invalid answers.

The paper table gives one QA accuracy per row; this splits it per question type (``data.samples.QUESTIONS``) for the
shipped student and its AR baseline on the same samples, beside the majority answer of each type (the train split's)
and the share of answers that are one of the type's answers at all. It also lists the student's most common invalid
answers, so a reader sees whether they are garbles of parallel decoding or ordinary wrong answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from wamdiff2_ros.data.samples import ANSWER_SETS
from wamdiff2_ros.evaluation.baselines import majority_answers
from wamdiff2_ros.evaluation.qa import exact_match

__all__ = ["answer_valid", "by_question_type", "invalid_answers", "markdown"]


def _qa(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["task"] == "understanding" and r.get("question_type") in ANSWER_SETS]


def answer_valid(record: dict[str, Any]) -> bool:
    """Whether a QA record's prediction is one of its question type's answers (compared as exact match compares)."""
    return bool(exact_match(record["prediction"], ANSWER_SETS[record["question_type"]]))


def by_question_type(records: Sequence[dict[str, Any]], qa_answers: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Per question type: n, accuracy, valid rate, and the majority answer (of ``qa_answers``) and its accuracy."""
    majority = majority_answers(qa_answers)
    out: dict[str, Any] = {}
    for qtype in ANSWER_SETS:
        rows = [r for r in _qa(records) if r["question_type"] == qtype]
        if not rows:
            continue
        guess = majority.get(qtype)
        out[qtype] = {
            "n": len(rows),
            "accuracy": sum(float(r["correct"]) for r in rows) / len(rows),
            "valid_rate": sum(answer_valid(r) for r in rows) / len(rows),
            "majority_answer": guess,
            "majority_accuracy": (
                None if guess is None else sum(exact_match(guess, r["answer"]) for r in rows) / len(rows)
            ),
            "gives_majority": (
                None if guess is None else sum(exact_match(r["prediction"], guess) for r in rows) / len(rows)
            ),
        }
    return out


def invalid_answers(records: Sequence[dict[str, Any]], limit: int = 5) -> list[tuple[str, str, int]]:
    """The ``limit`` most common answers that are none of their question type's answers: (type, answer, count)."""
    counts = Counter((r["question_type"], r["prediction"]) for r in _qa(records) if not answer_valid(r))
    return [(qtype, answer, n) for (qtype, answer), n in counts.most_common(limit)]


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown(student: tuple[str, Sequence[dict[str, Any]]], baseline: tuple[str, Sequence[dict[str, Any]]],
             qa_answers: dict[str, dict[str, int]], heading: str = "QA by question type") -> list[str]:
    """The breakdown table of ``student`` and ``baseline`` (each ``(row key, records)``), as markdown lines."""
    (s_key, s_records), (b_key, b_records) = student, baseline
    ours, theirs = by_question_type(s_records, qa_answers), by_question_type(b_records, qa_answers)
    lines = [
        f"### {heading}", "",
        f"Accuracy (answers valid; share that is the majority answer) of `{s_key}` and `{b_key}` on the same samples,"
        " per question type, beside the majority answer of the train split. Small n per type: read the"
        " differences as indications, not findings.", "",
        f"| question type | n | majority answer | majority acc. | `{b_key}` | `{s_key}` |",
        "|---|---|---|---|---|---|",
    ]
    for qtype, mine in ours.items():
        other = theirs.get(qtype)
        cell_b = "–" if other is None else (
            f"{_pct(other['accuracy'])} ({_pct(other['valid_rate'])}; {_pct(other['gives_majority'])})"
        )
        lines.append(
            f"| {qtype} | {mine['n']} | {mine['majority_answer'] or '–'} | {_pct(mine['majority_accuracy'])} |"
            f" {cell_b} | {_pct(mine['accuracy'])} ({_pct(mine['valid_rate'])}; {_pct(mine['gives_majority'])}) |"
        )
    invalid = invalid_answers(s_records)
    if invalid:
        lines += ["", f"The most common invalid answers of `{s_key}`: "
                  + "; ".join(f"`{answer}` ({qtype}, {n}x)" for qtype, answer, n in invalid) + "."]
    return lines + [""]
