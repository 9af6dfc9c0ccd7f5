"""The model cards of the shipped ladder checkpoints (``checkpoints/<name>/README.md``), from records alone.

A card lists the stages that made the model (from ``docs/runs/index.yaml``: each run's
sub-command and config file; from the run's record: the exact overrides it was started
with, steps, wall time, final loss; the ``wamdiff2 train relabel`` step whose targets it
trained on) and its held-out scores (``docs/results.json``). The prose is
``docs/templates/model_card.md`` and ``model_card_scores.md``. Shipping the models
(copying the weights) is ``training.ship``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from wamdiff2_ros.evaluation.ladder_index import Card, LadderIndex
from wamdiff2_ros.evaluation.markdown_template import fill, read_template
from wamdiff2_ros.evaluation.run_records import ARCHIVE, read_json, targets_info

CONFIG_DIR = ARCHIVE.parents[1] / "config" / "train"
SKIPPED = {"progress", "save_every", "num_threads"}  # settings that do not change what a run learns
STAGE_NAMES = {"ar": "stage 0 AR", "adapt": "stage I adaptation", "distill-block": "stage II block distillation",
               "distill-model": "stage III model distillation"}


def train_command(sub: str, config: str, ran: Mapping[str, Any], base: Mapping[str, Any] | None) -> str:
    """``wamdiff2 train SUB --config FILE`` plus every ``key=value`` of ``ran`` (the run's config) that ``base`` lacks.

    ``base`` is the config the file gives (defaults plus the file); without it or ``ran`` the bare command.
    """
    text = f"wamdiff2 train {sub} --config config/train/{config}"
    if not ran or base is None:
        return text
    extra = [f"{k}={v}" for k, v in ran.items() if k not in SKIPPED and k != "data" and base.get(k) != v]
    extra += [f"data.{k}={v}" for k, v in ran.get("data", {}).items() if base["data"].get(k) != v]
    return " ".join([text, *extra])


def base_config(path: Path, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` with a config file's values over them (its ``data`` mapping over ``defaults["data"]``)."""
    given = yaml.safe_load(path.read_text()) or {}
    base = {**defaults, **{k: v for k, v in given.items() if k != "data"}}
    base["data"] = {**(defaults.get("data") or {}), **(given.get("data") or {})}
    return base


def stage_command(runs: Path, run: str, sub: str, config: str, defaults: Mapping[str, Any],
                  archive: Path | None = None) -> str:
    """The exact training command of a run: its config file plus the overrides it was started with."""
    path = CONFIG_DIR / config
    base = base_config(path, defaults) if path.is_file() else None
    return train_command(sub, config, read_json(runs, run, "train_config.json", archive), base)


def relabel_row(runs: Path, run: str, config: str, archive: Path | None = None) -> str | None:
    """The card's table row of the ``wamdiff2 train relabel`` step whose targets ``run`` trained on, if any."""
    targets = read_json(runs, run, "train_config.json", archive).get("data", {}).get("targets")
    if not targets:
        return None
    path = Path(targets)
    info = targets_info(path, archive)
    cmd = (f"wamdiff2 train relabel --teacher {info.get('teacher', '?')} --config config/train/{config}"
           f" --out {targets} --tasks {','.join(info.get('tasks', ['planning']))}")
    kept = f"{info.get('kept', '?')} answers kept, {info.get('rejected', '?')} rejected"
    return f"| {path.stem} | `{cmd}` | {kept} | {float(info.get('wall_s', float('nan'))):.0f} | - |"


def lineage_text(index: LadderIndex, run: str) -> str:
    """``tiny-ar (stage 0 AR) -> tiny-b4 (stage I adaptation) -> ...`` for a run of the index."""
    stages = index.lineage(run)
    if not stages:
        return "lineage not recorded"
    return " -> ".join(f"`{s.name}` ({STAGE_NAMES.get(s.train, s.train)})" for s in stages)


def _scores(result: Mapping[str, Any]) -> list[str]:
    return fill(read_template("model_card_scores.md"), {
        "block_size": str(result["block_size"]), "samples": str(result["samples"]),
        "planning_l2": f"{result['planning_l2']:.3f}", "parse_rate": f"{result['planning_parse_rate']:.2f}",
        "qa_accuracy": f"{result['qa_accuracy']:.2f}", "detection_map": f"{result['detection_map']:.3f}",
        "tokens_per_second": f"{result['decode_tokens_per_second']:.1f}",
        "tokens_per_forward": f"{result['tokens_per_forward']:.2f}",
    }).split("\n")


def card(name: str, run: str, runs: Path, result: Mapping[str, Any] | None, description: str, index: LadderIndex,
         archive: Path | None = None) -> str:
    """The README.md of a shipped model: ``run``'s lineage in ``index``, its records, ``result``'s scores."""
    rows: list[str] = []
    total = 0.0
    for spec in index.lineage(run):
        s = read_json(runs, spec.name, "train_summary.json", archive)
        wall = float(s.get("wall_time_s", float("nan")))
        total += wall if wall == wall else 0.0
        relabel = relabel_row(runs, spec.name, spec.config, archive)
        if relabel and relabel not in rows:  # once per targets file
            rows.append(relabel)
        command = stage_command(runs, spec.name, spec.train, spec.config, index.train_defaults, archive)
        rows.append(f"| {spec.name} | `{command}` | {s.get('steps', '-')} |"
                    f" {wall:.0f} | {float(s.get('final_loss', float('nan'))):.4f} |")
    return fill(read_template("model_card.md"), {
        "name": name, "description": description, "stages": rows, "total_min": f"{total / 60:.1f}",
        "scores": _scores(result) if result else [],
    })


def description(index: LadderIndex, entry: Card, run: str | None = None, note: str | None = None) -> str:
    """A card's description from the index (``run`` and ``note`` in place of the index's, when given)."""
    run = run or entry.run
    note = index.note if note is None else note
    text = fill(entry.description, {"run": run, "lineage": lineage_text(index, run)})
    return text + (f" {note}" if note else "")

