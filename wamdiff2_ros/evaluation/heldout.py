"""Per-sample scoring of one checkpoint on one synthetic split: records that the paper table aggregates.

``split_rows`` tokenises the split's samples of all three tasks (cached like the training
set) and attaches each planning row's exact ego velocity from the logs (the prompt only
carries it rounded). ``score`` decodes every row with the fast engine (greedy, confidence
threshold 0.9) at one block size and returns JSON-able per-sample records:

- every record: ``id``, ``task``, ``parsed`` (strict parse succeeded AND the end token was
  produced), ``generated_tokens``, ``forwards``, ``decode_ms``, ``confidence``;
- planning: ``pred`` (waypoints or null), ``gt``, ``fallback`` (the agent's constant-velocity
  plan), ``l2_h`` (L2 at 1, 2, 3, 4 s of the plan actually driven: the prediction when it
  parsed, else the fallback) and ``l2_h_pred`` (the prediction's, null when it did not parse);
- understanding: ``question_type``, ``prediction``, ``answer``, ``correct``;
- perception: ``pred_boxes`` and ``gt_boxes`` (label, image ``bbox`` on the 0-1000 scale,
  BEV ``center`` x, y in metres; predictions also ``score``).

``time_mixed`` times the three-task workload (planning, perception, understanding of the same
scenes one after another). ``train_baselines`` reads what the trivial baselines need from the
train split. Nothing here imports ROS.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from wamdiff2_ros.agent import EgoMotion, constant_velocity_trajectory, parse_task_answer
from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.data.tokenized import (
    DataConfig,
    TokenizedDataset,
    build_samples,
    prompt_of,
    resolve_dirs,
    trajectory_of,
)
from wamdiff2_ros.decoding import generate
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.evaluation.baselines import prior_box
from wamdiff2_ros.evaluation.planning import HORIZONS_S, l2_metrics
from wamdiff2_ros.evaluation.qa import exact_match
from wamdiff2_ros.model import codecs
from wamdiff2_ros.model.checkpoints import own_plan_style

TASKS = ("planning", "perception", "understanding")
_VELOCITY = re.compile(r"current velocity is: \((-?[\d.]+),(-?[\d.]+)\)")
_SUFFIXES = ("_planning", "_perception")


def scene_of(sample_id: str) -> str:
    """The scene token of a sample id (``<token>_planning``, ``<token>_perception``, ``<token>_qa_<type>``)."""
    for suffix in _SUFFIXES:
        if sample_id.endswith(suffix):
            return sample_id[: -len(suffix)]
    head, sep, _ = sample_id.rpartition("_qa_")
    return head if sep else sample_id


def _data_config(split_dir: str | Path, seed: int, max_boxes: int, understanding_per_scene: int = 1,
                 cameras: Sequence[str] = ("CAM_F0",)) -> Any:
    return DataConfig(
        logs_dir=str(split_dir), max_boxes=max_boxes, understanding_per_scene=understanding_per_scene, seed=seed,
        cameras=list(cameras),
    )


def ego_velocities(split_dir: str | Path) -> dict[str, tuple[float, float]]:
    """``{scene token: ego-frame velocity (vx, vy)}`` of every scene of the split's logs."""
    logs_dir, blobs = resolve_dirs(_data_config(split_dir, 0, 2))
    return {
        scene.token: tuple(float(v) for v in scene.current_frame.ego_status.ego_velocity[:2])
        for scene in NavsimLogs(logs_dir, blobs)
    }


def split_rows(
    vla: Any, split_dir: str | Path, cache_dir: str | Path, seed: int = 2, *, max_boxes: int = 2,
    cameras: Sequence[str] = ("CAM_F0",),
) -> list[dict[str, Any]]:
    """Tokenised samples of all three tasks of ``split_dir`` (the held-out settings, cached by model and data).

    ``cameras``: the images every sample sees (the split must have rendered them). Planning rows get
    ``ego_velocity`` from the logs (what the driving agent's fallback uses).
    """
    data = _data_config(split_dir, seed, max_boxes, cameras=cameras)
    rows = list(TokenizedDataset.build(data, vla, cache_dir, progress=False).rows)
    velocities = ego_velocities(split_dir)
    for row in rows:
        if row["task"] == "planning" and scene_of(row["id"]) in velocities:
            row["ego_velocity"] = list(velocities[scene_of(row["id"])])
    return rows


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """Up to ``n`` of ``items``, spread evenly in their order (deterministic, first and last kept); 0 keeps all."""
    if not n or len(items) <= n:
        return list(items)
    return [items[i] for i in np.unique(np.linspace(0, len(items) - 1, n).round().astype(int))]


def select(rows: Sequence[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` rows per task, spread evenly over the split in its order (deterministic); 0 keeps all."""
    out: list[dict[str, Any]] = []
    for task in TASKS:
        out += spread([r for r in rows if r["task"] == task], limit)
    return out


def ego_velocity_of(row: dict[str, Any]) -> tuple[float, float]:
    """The row's ego velocity: ``ego_velocity`` (from the logs), its meta's, else parsed from the question."""
    if row.get("ego_velocity") is not None:
        vx, vy = row["ego_velocity"]
        return float(vx), float(vy)
    meta = json.loads(row.get("meta") or "{}")
    if meta.get("ego_velocity") is not None:
        vx, vy = meta["ego_velocity"][:2]
        return float(vx), float(vy)
    match = _VELOCITY.search(row.get("question", ""))
    return (float(match.group(1)), float(match.group(2))) if match else (0.0, 0.0)


def fallback_plan(row: dict[str, Any]) -> np.ndarray:
    """(8, 2) constant-velocity waypoints: what the driving agent drives when the answer does not parse."""
    return constant_velocity_trajectory(EgoMotion(velocity=ego_velocity_of(row)))[:, :2]


def l2_horizons(pred: np.ndarray, gt: np.ndarray) -> list[float]:
    """L2 at 1, 2, 3, 4 s (UniAD style, ``evaluation.planning.l2_metrics``)."""
    metrics = l2_metrics(pred, gt)
    return [float(metrics[f"l2_at_{t}s"]) for t in HORIZONS_S]


def _rounded(values: Any, digits: int = 4) -> list[Any]:
    """``values`` as nested lists of floats rounded to ``digits`` decimals (what the store keeps)."""
    return np.round(np.asarray(values, dtype=np.float64), digits).tolist()


def _box(box: Any, score: float | None = None) -> dict[str, Any]:
    out = {
        "label": box.label,
        "bbox": None if box.bbox is None else [float(v) for v in box.bbox],
        "center": [float(box.x), float(box.y)],
    }
    if score is not None:
        out["score"] = score
    return out


def gt_boxes(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Ground-truth boxes of a perception row: its answer (the nearest visible boxes, with centres and image boxes)."""
    value = codecs.parse_answer("perception", row["answer"])
    if isinstance(value, codecs.ParseError):  # the answer is written by the encoder: never expected
        raise ValueError(f"ground-truth answer of {row['id']} does not parse: {value}")
    return [_box(b) for b in value]


def task_config(block_size: int, threshold: float | Mapping[str, float], max_new_tokens: int, task: str = "planning",
                end_in_order: bool | Collection[str] = False, reuse_kv: bool | Collection[str] = False) -> Any:
    """The decode config of ``task``; ``threshold`` may map tasks to their own (tasks not named get 0.9),
    ``end_in_order`` and ``reuse_kv`` (``DecodeConfig.reuse_committed_kv``) may name the tasks they are on for."""
    if isinstance(threshold, Mapping):
        threshold = threshold.get(task, 0.9)
    if not isinstance(end_in_order, bool):
        end_in_order = task in end_in_order
    if not isinstance(reuse_kv, bool):
        reuse_kv = task in reuse_kv
    return DecodeConfig(
        block_size=block_size,
        confidence_threshold=threshold,
        max_new_tokens=max_new_tokens,
        end_in_order=end_in_order,
        reuse_committed_kv=reuse_kv and block_size > 1,
        engine="fast",
        device="cpu",
        dtype="float32",
    )


def score_row(vla: Any, row: dict[str, Any], config: Any, plan_style: str = "plain") -> dict[str, Any]:
    """Decode one row and score it (one record); ``plan_style``: the checkpoint's (``own_plan_style``: a residual
    plan becomes ego-frame waypoints with the row's ego velocity)."""
    result = generate(vla, prompt_of(row), config)
    stats = result.stats
    task = row["task"]
    value, error = parse_task_answer(task, result.texts[0], finished=bool(result.finished[0]))
    parsed = error is None
    confidence = float(result.confidences[0])
    record: dict[str, Any] = {
        "id": row["id"],
        "task": task,
        "parsed": parsed,
        "generated_tokens": int(stats.generated_tokens),
        "forwards": int(stats.forwards),
        "decode_ms": float(stats.decode_ms),
        "confidence": confidence if np.isfinite(confidence) else 0.0,
    }
    if not parsed:  # what the model said and why it was refused: a reviewer reads the failures, not just their rate
        record.update(text=result.texts[0], error=str(error))
    if task == "planning":
        gt = trajectory_of(row)
        fallback = fallback_plan(row)
        pred = codecs.plan_waypoints(value, plan_style, ego_velocity_of(row)) if parsed else None
        record.update(
            pred=None if pred is None else _rounded(pred, 3),
            gt=_rounded(gt, 3),
            fallback=_rounded(fallback, 3),
            l2_h=_rounded(l2_horizons(pred if pred is not None else fallback, gt)),
            l2_h_pred=None if pred is None else _rounded(l2_horizons(pred, gt)),
        )
    elif task == "understanding":

        prediction = value if parsed else ""
        record.update(
            question_type=json.loads(row["meta"]).get("question_type", ""),
            prediction=prediction,
            answer=row["answer"],
            correct=bool(exact_match(prediction, row["answer"])),
        )
    else:
        record.update(
            pred_boxes=[_box(b, record["confidence"]) for b in value] if parsed else [], gt_boxes=gt_boxes(row)
        )
    return record


def score(
    vla: Any,
    rows: Sequence[dict[str, Any]],
    block_size: int,
    *,
    threshold: float | Mapping[str, float] = 0.9,
    max_new_tokens: int = 192,
    progress: bool = True,
    end_in_order: bool | Collection[str] = False,
    reuse_kv: bool | Collection[str] = False,
) -> dict[str, Any]:
    """Decode every row at ``block_size`` (fast engine, greedy) and return the per-sample records.

    ``threshold``: one for every task, or ``{task: threshold}`` (a checkpoint with per-task defaults);
    ``end_in_order``: ``DecodeConfig.end_in_order``, for every task or the tasks named (recorded when on);
    ``reuse_kv``: ``DecodeConfig.reuse_committed_kv`` likewise.
    """

    configs = {task: task_config(block_size, threshold, max_new_tokens, task, end_in_order, reuse_kv)
               for task in TASKS}
    if rows:  # one untimed decode first: engine set-up is not decode speed

        generate(vla, prompt_of(rows[0]), configs[rows[0]["task"]])
    plan_style = own_plan_style(getattr(vla, "path", None))
    records = [
        score_row(vla, row, configs[row["task"]], plan_style)
        for row in tqdm(rows, desc=f"score B={block_size}", unit="sample", disable=not progress)
    ]
    return {
        "block_size": block_size,
        "threshold": dict(threshold) if isinstance(threshold, Mapping) else threshold,
        **({"end_in_order": end_in_order if isinstance(end_in_order, bool) else sorted(end_in_order)}
           if end_in_order else {}),
        **({"reuse_kv": reuse_kv if isinstance(reuse_kv, bool) else sorted(reuse_kv)} if reuse_kv else {}),
        "max_new_tokens": max_new_tokens,
        "samples": dict(Counter(r["task"] for r in records)),
        "records": records,
    }


def _speed(generated: int, forwards: int, decode_ms: float) -> dict[str, Any]:
    return {
        "generated_tokens": generated,
        "forwards": forwards,
        "decode_ms": decode_ms,
        "tokens_per_second": generated / (decode_ms / 1000.0) if decode_ms > 0 else None,
        "tokens_per_forward": generated / forwards if forwards else None,
    }


def scene_tasks(rows: Sequence[dict[str, Any]], n_scenes: int = 0) -> dict[str, dict[str, dict[str, Any]]]:
    """``{scene: {task: row}}`` of the scenes that have all three tasks, up to ``n_scenes`` spread evenly (0: all)."""
    by_scene: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_scene.setdefault(scene_of(row["id"]), {}).setdefault(row["task"], row)
    scenes = spread([s for s, tasks in by_scene.items() if all(t in tasks for t in TASKS)], n_scenes)
    return {s: by_scene[s] for s in scenes}


def time_mixed(
    vla: Any,
    rows: Sequence[dict[str, Any]],
    block_size: int,
    n_scenes: int,
    *,
    threshold: float | Mapping[str, float] = 0.9,
    max_new_tokens: int = 192,
    end_in_order: bool | Collection[str] = False,
    reuse_kv: bool | Collection[str] = False,
) -> dict[str, Any]:
    """Decode tokens/s and tokens per forward of the three-task workload on ``n_scenes`` scenes (spread evenly).

    Each scene's planning, perception and understanding prompts are decoded one after another,
    as a driving node asks them; the totals are over all of them, ``per_task`` splits them.
    """
    by_scene = scene_tasks(rows, n_scenes)
    scenes = list(by_scene)
    configs = {task: task_config(block_size, threshold, max_new_tokens, task, end_in_order, reuse_kv)
               for task in TASKS}
    totals = {task: [0, 0, 0.0] for task in TASKS}
    if scenes:
        generate(vla, prompt_of(by_scene[scenes[0]]["planning"]), configs["planning"])  # untimed warm-up
    for scene in scenes:
        for task in TASKS:
            stats = generate(vla, prompt_of(by_scene[scene][task]), configs[task]).stats
            totals[task][0] += int(stats.generated_tokens)
            totals[task][1] += int(stats.forwards)
            totals[task][2] += float(stats.decode_ms)
    generated, forwards, ms = (sum(t[i] for t in totals.values()) for i in range(3))
    return {
        "block_size": block_size,
        "scenes": len(scenes),
        **_speed(generated, forwards, ms),
        "per_task": {task: _speed(*totals[task]) for task in TASKS},
    }


def train_baselines(
    train_dir: str | Path, *, seed: int = 1, max_boxes: int = 2, understanding_per_scene: int = 1
) -> dict[str, Any]:
    """What the trivial baselines need from the train split's samples (the training set's settings).

    ``qa_answers``: ``{question type: {answer: count}}`` of its understanding samples;
    ``prior_box``: the trivial perception prior of its ground-truth boxes (``baselines.prior_box``).
    """
    samples = build_samples(_data_config(train_dir, seed, max_boxes, understanding_per_scene))
    answers: dict[str, Counter] = {}
    boxes: list[dict[str, Any]] = []
    for sample in samples:
        if sample.task == "understanding":
            answers.setdefault(sample.meta.get("question_type", ""), Counter())[sample.answer] += 1
        elif sample.task == "perception":
            value = codecs.parse_answer("perception", sample.answer)
            if not isinstance(value, codecs.ParseError):
                boxes += [_box(b) for b in value]

    return {
        "source": f"train split ({train_dir})",
        "samples": len(samples),
        "qa_answers": {k: dict(sorted(v.items())) for k, v in sorted(answers.items())},
        "prior_box": prior_box(boxes),
    }
