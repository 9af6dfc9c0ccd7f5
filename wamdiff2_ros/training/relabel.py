"""Sequence-level distillation targets: the teacher's greedy answers to the training prompts.

A block-diffusion student commits a block's tokens in parallel, so it is fast only
where its per-token distributions are sharp. Ground-truth trajectories carry the
data's noise (many digit strings fit one scene); the teacher's greedy answer is one
deterministic string per prompt. Training the student on those strings (sequence-level
knowledge distillation, the standard recipe for parallel decoders) removes that
multimodality: the student learns the teacher's mode, not the data's spread.

``wamdiff2 train relabel --teacher DIR --config FILE --out TARGETS.json`` decodes
every training sample of the chosen tasks with the teacher and writes
``{"teacher", "tasks", "answers": {"task/id": text}, "kept", "rejected", ...}``;
a stage config then points ``data.targets`` at that file. Answers that do not parse
(or hit the token cap) are rejected and the sample keeps its ground truth.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wamdiff2_ros.data.tokenized import TokenizedDataset, prompt_of, trajectory_of
from wamdiff2_ros.decoding import generate
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.evaluation.heldout import ego_velocity_of
from wamdiff2_ros.evaluation.planning import l2_metrics
from wamdiff2_ros.model import codecs
from wamdiff2_ros.model.checkpoints import own_plan_style
from wamdiff2_ros.model.inputs import encode_response
from wamdiff2_ros.model.loader import ModelLoadError, load_model
from wamdiff2_ros.training.config import TrainConfigError, load_config
from wamdiff2_ros.training.dataset import cache_dir_for

TARGETS_VERSION = 1


def target_key(row: dict[str, Any]) -> str:
    """``task/id``: sample ids repeat across tasks (one scene gives a planning and a QA sample)."""
    return f"{row['task']}/{row['id']}"


def teacher_answers(teacher: Any, rows: Sequence[dict[str, Any]], tasks: Sequence[str], *, block_size: int = 1,
                    max_new_tokens: int = 192, progress: bool = True) -> dict[str, Any]:
    """Greedy teacher answers for the ``tasks`` rows; only parsed, finished answers are kept."""
    from tqdm import tqdm

    config = DecodeConfig(block_size=block_size, max_new_tokens=max_new_tokens, engine="fast",
                          device="cpu", dtype=str(next(teacher.model.parameters()).dtype).removeprefix("torch."))
    chosen = [r for r in rows if r["task"] in tasks]
    style = own_plan_style(getattr(teacher, "path", None))
    answers: dict[str, str] = {}
    rejected: dict[str, str] = {}
    l2: list[float] = []
    for row in tqdm(chosen, desc="teacher answers", unit="sample", disable=not progress):
        result = generate(teacher, prompt_of(row), config)
        text = result.texts[0]
        value = codecs.parse_answer(row["task"], text)
        if isinstance(value, codecs.ParseError) or not result.finished[0]:
            rejected[target_key(row)] = str(value) if isinstance(value, codecs.ParseError) else "hit max_new_tokens"
            continue
        answers[target_key(row)] = text
        if row["task"] == "planning":
            plan = codecs.plan_waypoints(value, style, ego_velocity_of(row))
            l2.append(l2_metrics(plan, trajectory_of(row))["l2_avg"])
    return {
        "version": TARGETS_VERSION,
        "tasks": list(tasks),
        "answers": answers,
        "kept": len(answers),
        "rejected": len(rejected),
        "rejected_reasons": dict(list(rejected.items())[:20]),
        "teacher_l2_vs_truth": float(np.mean(l2)) if l2 else None,
    }


def load_targets(path: str | Path) -> dict[str, str]:
    """The ``answers`` map of a targets file, validated (clear errors, never a partial read)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"data.targets {path} does not exist (write it with `wamdiff2 train relabel`)")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"data.targets {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != TARGETS_VERSION:
        raise ValueError(f"data.targets {path}: not a version-{TARGETS_VERSION} targets file")
    answers = data.get("answers")
    if not isinstance(answers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in answers.items()):
        raise ValueError(f"data.targets {path}: 'answers' must map 'task/id' to answer text")
    return answers


def apply_targets(rows: list[dict[str, Any]], answers: dict[str, str], vla: Any) -> int:
    """Replace the answer (and ``response_ids``) of every row named in ``answers``; returns how many."""
    replaced = 0
    for row in rows:
        text = answers.get(target_key(row))
        if text is None:
            continue
        row["answer"] = text
        row["response_ids"] = encode_response(vla, text)[0]
        replaced += 1
    return replaced


def relabel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--teacher", required=True, help="teacher checkpoint dir (e.g. checkpoints/wamdiff2-tiny-ar)")
    parser.add_argument("--config", required=True, help="the student's stage YAML (its data section is used)")
    parser.add_argument("--out", required=True, help="targets JSON to write")
    parser.add_argument("--tasks", default="planning", help="comma-separated tasks to relabel (default: planning)")
    parser.add_argument("--block-size", type=int, default=1, help="teacher decode block size (1: AR)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides (data.logs_dir=...)")


def relabel(args: argparse.Namespace) -> int:
    """Write the teacher's answers to the training prompts (sequence-level distillation targets)."""
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    try:
        cfg = load_config(args.config, list(args.overrides))
        if not tasks or any(t not in cfg.data.tasks for t in tasks):
            raise TrainConfigError(f"--tasks {args.tasks!r} must be a non-empty subset of {cfg.data.tasks}")
        teacher = load_model(args.teacher, block_size=args.block_size)
    except (TrainConfigError, ModelLoadError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, args.threads))
    cfg.data.targets = ""  # the teacher answers the original prompts
    dataset = TokenizedDataset.build(cfg.data, teacher, cache_dir_for(cfg), progress=True)
    start = time.perf_counter()
    result = teacher_answers(teacher, dataset.rows, tasks, block_size=args.block_size)
    result.update(teacher=str(args.teacher), teacher_block_size=args.block_size, logs_dir=cfg.data.logs_dir,
                  wall_s=round(time.perf_counter() - start, 1))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    l2 = result["teacher_l2_vs_truth"]
    print(f"kept {result['kept']}, rejected {result['rejected']} (ground truth kept for those)"
          + (f", teacher planning L2 vs truth {l2:.3f} m" if l2 is not None else "") + f" -> {out}")
    return 0
