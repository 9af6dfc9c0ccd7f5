"""Driving-understanding metrics: normalised exact match, token F1, and LingoQA / DriveBench loaders with a judge.

Normalisation is SQuAD's: lower case, punctuation and the articles a/an/the removed,
whitespace collapsed. A *judge* is any callable ``judge(question, references,
prediction) -> float`` in [0, 1] (or bool); the default judges are exact match and
thresholded token F1, and a user can plug in an LLM judge or LingoQA's Lingo-Judge.

Formats read (files the user supplies; nothing is downloaded):

* **LingoQA**: rows with ``question_id``, ``segment_id``, ``question`` and ``answer``
  (one row per reference answer, or ``answers`` as a list), in CSV, JSON (a list) or
  JSON Lines; Parquet when pandas with a Parquet engine is installed. Predictions are
  LingoQA's submission CSV: ``question_id``, ``segment_id``, ``answer``.
* **DriveBench**: a JSON list (or JSON Lines) of ``{scene_token, frame_token,
  question, answer, question_type | category, image_path, ...}``; a ``pred``/
  ``prediction`` field, when present, is the model's answer. Multiple-choice answers
  (``A``..``D``) are compared by the letter.
"""

from __future__ import annotations

import csv
import json
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Judge = Callable[[str, Sequence[str], str], float]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    text = str(text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, references: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised reference."""
    refs = [references] if isinstance(references, str) else list(references)
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(r) for r in refs))


def token_f1(prediction: str, references: str | Sequence[str]) -> float:
    """Best token-overlap F1 of the normalised prediction against the references."""
    refs = [references] if isinstance(references, str) else list(references)
    pred = normalize_answer(prediction).split()
    best = 0.0
    for ref in refs:
        gold = normalize_answer(ref).split()
        if not pred or not gold:
            best = max(best, float(pred == gold))
            continue
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            precision, recall = common / len(pred), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def exact_match_judge(question: str, references: Sequence[str], prediction: str) -> float:
    return exact_match(prediction, references)


def token_f1_judge(threshold: float = 0.5) -> Judge:
    """A judge calling an answer correct when its token F1 reaches ``threshold``."""

    def judge(question: str, references: Sequence[str], prediction: str) -> float:
        return float(token_f1(prediction, references) >= threshold)

    return judge


_CHOICE = re.compile(r"^\s*\(?([A-Da-d])\)?(?:[.):\s]|$)")


def multiple_choice_letter(text: str) -> str | None:
    """The option letter an answer starts with (``"B. turn left"`` -> ``"B"``), else None."""
    match = _CHOICE.match(str(text))
    return match.group(1).upper() if match else None


@dataclass
class QAItem:
    """One question with its reference answers and, when known, the model's prediction."""

    id: str
    question: str
    references: list[str]
    prediction: str | None = None
    category: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def score_items(items: Iterable[QAItem], judge: Judge | None = None) -> dict[str, Any]:
    """Exact match, token F1 and judge accuracy over items with predictions, overall and per category."""
    judge = judge or exact_match_judge
    rows = []
    for item in items:
        if item.prediction is None:
            continue
        letter = multiple_choice_letter(item.references[0]) if item.references else None
        if letter is not None and len(item.references[0].strip()) <= 3:
            correct = float(multiple_choice_letter(item.prediction) == letter)
            em = f1 = correct
        else:
            em = exact_match(item.prediction, item.references)
            f1 = token_f1(item.prediction, item.references)
            correct = float(judge(item.question, item.references, item.prediction))
        rows.append((item.category, em, f1, correct))

    def summary(selected: list[tuple[str, float, float, float]]) -> dict[str, Any]:
        n = len(selected)
        return {
            "questions": n,
            "exact_match": sum(r[1] for r in selected) / n if n else float("nan"),
            "token_f1": sum(r[2] for r in selected) / n if n else float("nan"),
            "judge_accuracy": sum(r[3] for r in selected) / n if n else float("nan"),
        }

    out = summary(rows)
    categories = sorted({r[0] for r in rows if r[0]})
    if categories:
        out["by_category"] = {c: summary([r for r in rows if r[0] == c]) for c in categories}
    return out


# ------------------------------------------------------------------ loaders


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"QA file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    if suffix == ".parquet":
        try:
            import pandas as pd  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ValueError(f"{path}: reading Parquet needs pandas with pyarrow; convert it to CSV or JSON") from exc
        return pd.read_parquet(path).to_dict("records")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from exc
    if isinstance(data, Mapping):
        data = data.get("data", data.get("questions", [data]))
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise ValueError(f"{path}: expected a list of objects")
    return [dict(r) for r in data]


def _need(row: Mapping[str, Any], key: str, path: Path, index: int) -> Any:
    if key not in row or row[key] is None:
        raise ValueError(f"{path}: row {index} has no {key!r} field (has: {', '.join(map(str, row))})")
    return row[key]


def load_lingoqa(path: str | Path, predictions: str | Path | None = None) -> list[QAItem]:
    """LingoQA questions grouped by ``question_id`` with all reference answers; predictions joined when given."""
    path = Path(path)
    items: dict[str, QAItem] = {}
    for i, row in enumerate(_read_rows(path)):
        qid = str(_need(row, "question_id", path, i))
        answers = row.get("answers", row.get("answer"))
        if answers is None:
            raise ValueError(f"{path}: row {i} has neither 'answer' nor 'answers'")
        answers = [str(a) for a in answers] if isinstance(answers, list | tuple) else [str(answers)]
        item = items.setdefault(
            qid,
            QAItem(qid, str(_need(row, "question", path, i)), [], extra={"segment_id": str(row.get("segment_id", ""))}),
        )
        item.references.extend(answers)
    if predictions is not None:
        ppath = Path(predictions)
        for i, row in enumerate(_read_rows(ppath)):
            qid = str(_need(row, "question_id", ppath, i))
            if qid in items:
                items[qid].prediction = str(_need(row, "answer", ppath, i))
    return list(items.values())


def load_drivebench(path: str | Path) -> list[QAItem]:
    """DriveBench items; ``pred``/``prediction`` becomes the prediction when present."""
    path = Path(path)
    out = []
    for i, row in enumerate(_read_rows(path)):
        answer = _need(row, "answer", path, i)
        frame = str(row.get("frame_token", row.get("scene_token", "")))
        out.append(
            QAItem(
                id=f"{frame}:{i}",
                question=str(_need(row, "question", path, i)),
                references=[str(a) for a in answer] if isinstance(answer, list) else [str(answer)],
                prediction=None if row.get("pred", row.get("prediction")) is None else str(row.get("pred", row.get("prediction"))),
                category=str(row.get("question_type", row.get("category", ""))),
                extra={k: row[k] for k in ("scene_token", "frame_token", "image_path", "tag") if k in row},
            )
        )
    return out
