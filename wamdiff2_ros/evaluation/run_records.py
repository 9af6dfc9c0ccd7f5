"""The record of finished runs kept in the repository (``docs/runs/``), so results outlive ``runs/``.

``runs/`` (checkpoints, caches, data) is large and not versioned; a fresh checkout
has none of it. What the docs and the model cards are written from is small: each
run's ``train_summary.json``, ``train_config.json`` and loss log (:data:`LOG_FILE`,
written by the training engine), and each sequence-distillation targets file's
header. :func:`archive_runs` copies those into ``docs/runs/<run>/`` (the log thinned
to every ``LOG_STRIDE``-th row) and :func:`run_file` reads a run's file from
``runs/`` when it is there and from the archive otherwise.
"""

from __future__ import annotations

import csv
import fcntl
import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ARCHIVE = Path(__file__).resolve().parents[2] / "docs" / "runs"
LOG_FILE = "train_log.csv"
RUN_FILES = ("train_summary.json", "train_config.json")
LOG_STRIDE = 10
TARGETS_DIR = "targets"


def read_log(path: Path) -> list[dict[str, float]]:
    """The rows of a loss log (``train_log.csv``) as floats; ``[]`` when there is none."""
    if not path.is_file():
        return []
    with path.open() as f:
        return [{k: float(v) for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(f)]


def run_file(runs: Path, name: str, filename: str, archive: Path | None = None) -> Path | None:
    """``runs/<name>/<filename>`` if it exists, else the archived copy, else None."""
    for root in (Path(runs), archive or ARCHIVE):
        path = root / name / filename
        if path.is_file():
            return path
    return None


def read_json(runs: Path, name: str, filename: str, archive: Path | None = None) -> dict:
    """A run's JSON file (see :func:`run_file`); ``{}`` when neither copy exists."""
    path = run_file(runs, name, filename, archive)
    return json.loads(path.read_text()) if path else {}


def _thin_log(src: Path, dst: Path, stride: int) -> None:
    with src.open() as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames or [], list(reader)
    keep = [r for i, r in enumerate(rows) if (i + 1) % stride == 0 or i == len(rows) - 1]
    with dst.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(keep)


def archive_runs(runs: Path, names: Iterable[str], archive: Path | None = None,
                 stride: int = LOG_STRIDE) -> list[str]:
    """Copy the record of every finished run among ``names`` under ``archive``; returns the runs copied."""
    archive = archive or ARCHIVE
    copied = []
    for name in names:
        src = Path(runs) / name
        if not (src / "train_summary.json").is_file():
            continue
        dst = archive / name
        dst.mkdir(parents=True, exist_ok=True)
        for filename in RUN_FILES:
            if (src / filename).is_file():
                shutil.copy2(src / filename, dst / filename)
        if (src / LOG_FILE).is_file():
            _thin_log(src / LOG_FILE, dst / LOG_FILE, stride)
        targets = read_json(runs, name, "train_config.json", archive).get("data", {}).get("targets")
        if targets and Path(targets).is_file():
            archive_targets(Path(targets), archive)
        copied.append(name)
    return copied


def archive_targets(path: Path, archive: Path | None = None) -> Path:
    """Keep a targets file's header (teacher, counts, wall time; not the answers) as ``targets/<stem>.json``."""
    info = json.loads(Path(path).read_text())
    info.pop("answers", None)
    dst = (archive or ARCHIVE) / TARGETS_DIR / f"{Path(path).stem}.json"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(info, indent=1) + "\n")
    return dst


def targets_info(path: str | Path, archive: Path | None = None) -> dict:
    """The header of a targets file: the file itself if present, else its archived header, else ``{}``."""
    path = Path(path)
    for candidate in (path, (archive or ARCHIVE) / TARGETS_DIR / f"{path.stem}.json"):
        if candidate.is_file():
            info = json.loads(candidate.read_text())
            info.pop("answers", None)
            return info
    return {}


def update_json_store(store: Path, update: Callable[[dict[str, Any]], None],
                      dumps: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """Read-modify-write a JSON store under an exclusive lock (parallel scorers share one file).

    ``update`` changes the contents in place; ``dumps`` writes them back as text.
    Returns the new contents.
    """
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        results = json.loads(text) if text.strip() else {}
        update(results)
        f.seek(0)
        f.truncate()
        f.write(dumps(results))
    return results
