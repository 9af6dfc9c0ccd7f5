"""Held-out scoring of the ladder's rows (docs/RESULTS.md): three tasks at a row's block size, decode speed.

Every row decodes the same held-out synthetic samples with the fast engine (greedy,
confidence threshold 0.9) at the row's block size and scores:

- planning: average L2 of the 1, 2, 3, 4 s waypoints (``evaluation.planning.l2_metrics``
  ``l2_avg``); an answer that does not parse gets the driving agent's flagged
  constant-velocity fallback (``heldout.fallback_plan``), and the parse rate is shown;
- understanding: exact-match accuracy (``evaluation.qa.exact_match``);
- perception: COCO mAP (IoU .50:.95) of the image boxes with pycocotools
  (``evaluation.detection.coco_map``) against the nearest ``max_boxes`` visible boxes;
- speed: decode tokens/s and tokens per forward from the engine's own statistics.

The per-sample scorer of the paper table is :mod:`wamdiff2_ros.evaluation.heldout`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from wamdiff2_ros.agent import parse_task_answer
from wamdiff2_ros.data.tokenized import DataConfig, TokenizedDataset, prompt_of, trajectory_of
from wamdiff2_ros.decoding import generate
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.evaluation.detection import ImageBox, coco_map
from wamdiff2_ros.evaluation.heldout import fallback_plan
from wamdiff2_ros.evaluation.planning import l2_metrics
from wamdiff2_ros.evaluation.qa import exact_match
from wamdiff2_ros.evaluation.run_records import update_json_store
from wamdiff2_ros.model.loader import load_model


def heldout_rows(vla: Any, heldout: str | Path, cache_dir: str | Path, *, seed: int = 2,
                 max_boxes: int = 2) -> list[dict[str, Any]]:
    """Tokenised held-out samples (all three tasks), cached like the training set."""
    data = DataConfig(logs_dir=str(heldout), max_boxes=max_boxes, understanding_per_scene=1, seed=seed)
    return TokenizedDataset.build(data, vla, cache_dir, progress=False).rows


def pick(rows: Sequence[dict[str, Any]], limit: int) -> dict[str, list[dict[str, Any]]]:
    """Up to ``limit`` samples per task, spread evenly over the held-out split (deterministic)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task in ("planning", "understanding", "perception"):
        these = [r for r in rows if r["task"] == task]
        if limit and len(these) > limit:
            idx = np.linspace(0, len(these) - 1, limit).round().astype(int)
            these = [these[i] for i in idx]
        out[task] = these
    return out


def evaluate_model(vla: Any, samples: dict[str, list[dict[str, Any]]], block_size: int, *,
                   max_new_tokens: int = 192, threshold: float = 0.9, progress: bool = True) -> dict[str, Any]:
    """Decode every sample at ``block_size`` and score the three tasks."""

    config = DecodeConfig(block_size=block_size, confidence_threshold=threshold, max_new_tokens=max_new_tokens,
                          engine="fast", device="cpu", dtype="float32")
    generated = forwards = 0
    decode_ms = 0.0
    per_task = {task: [0, 0, 0.0] for task in samples}  # generated tokens, forwards, decode ms
    l2, l2_parsed, parsed, correct = [], [], 0, []
    gt_boxes, det_boxes, examples = [], [], {}
    total = sum(len(v) for v in samples.values())
    bar = tqdm(total=total, desc=f"eval B={block_size}", unit="sample", disable=not progress)
    for task, rows in samples.items():
        for row in rows:
            result = generate(vla, prompt_of(row), config)
            text = result.texts[0]
            stats = result.stats
            generated += stats.generated_tokens
            forwards += stats.forwards
            decode_ms += stats.decode_ms
            for i, value in enumerate((stats.generated_tokens, stats.forwards, stats.decode_ms)):
                per_task[task][i] += value
            examples.setdefault(task, {"answer": row["answer"], "prediction": text})
            value, error = parse_task_answer(task, text, finished=bool(result.finished[0]))
            ok = error is None
            if task == "planning":
                pred = np.asarray(value.waypoints) if ok else fallback_plan(row)
                err = l2_metrics(pred, trajectory_of(row))["l2_avg"]
                l2.append(err)
                if ok:
                    parsed += 1
                    l2_parsed.append(err)
            elif task == "understanding":
                correct.append(exact_match(value if ok else "", row["answer"]))
            else:
                for label, *bbox in json.loads(row["meta"]).get("boxes", []):
                    gt_boxes.append(ImageBox(row["id"], label, tuple(float(v) for v in bbox)))
                if ok:
                    score = float(result.confidences[0])
                    for box in value:
                        if box.bbox is not None and box.bbox[0] <= box.bbox[2] and box.bbox[1] <= box.bbox[3]:
                            det_boxes.append(ImageBox(row["id"], box.label, box.bbox, score))
            bar.update(1)
    bar.close()
    n_plan = len(samples.get("planning", []))
    return {
        "block_size": block_size,
        "planning_l2": float(np.mean(l2)) if l2 else float("nan"),
        "planning_l2_parsed_only": float(np.mean(l2_parsed)) if l2_parsed else float("nan"),
        "planning_parse_rate": parsed / n_plan if n_plan else float("nan"),
        "qa_accuracy": float(np.mean(correct)) if correct else float("nan"),
        "detection_map": coco_map(gt_boxes, det_boxes)["map"] if gt_boxes else float("nan"),
        "detection_map_50": coco_map(gt_boxes, det_boxes)["map_50"] if gt_boxes else float("nan"),
        "decode_tokens_per_second": generated / (decode_ms / 1000.0) if decode_ms else float("nan"),
        "tokens_per_forward": generated / forwards if forwards else float("nan"),
        "generated_tokens": generated,
        "speed_per_task": {task: {"tokens_per_second": g / (ms / 1000.0) if ms else float("nan"),
                                  "tokens_per_forward": g / f if f else float("nan")}
                           for task, (g, f, ms) in per_task.items()},
        "samples": {k: len(v) for k, v in samples.items()},
        "examples": examples,
        # per sample, in ``samples``' order: paired comparisons (bench sweep) need them
        "per_sample": {"planning_l2": [float(v) for v in l2], "qa_correct": [float(v) for v in correct]},
    }


def constant_velocity_l2(samples: dict[str, list[dict[str, Any]]]) -> float:
    """Planning L2 of the constant-velocity fallback alone (a model-free reference)."""
    errors = [l2_metrics(fallback_plan(r), trajectory_of(r))["l2_avg"]
              for r in samples.get("planning", [])]
    return float(np.mean(errors)) if errors else float("nan")


def speed_comparison(checkpoints: dict[str, tuple[str, int]], samples: list[dict[str, Any]], *, repeats: int = 2,
                     max_new_tokens: int = 128) -> dict[str, dict[str, float]]:
    """Decode tokens/s of several checkpoints on the same planning prompts, interleaved (noisy machines)."""
    models = {name: (load_model(path), block) for name, (path, block) in checkpoints.items()}
    totals = {name: [0, 0.0, 0] for name in models}
    for _ in range(repeats):
        for row in samples:
            for name, (vla, block) in models.items():
                config = DecodeConfig(block_size=block, max_new_tokens=max_new_tokens, engine="fast")
                stats = generate(vla, prompt_of(row), config).stats
                totals[name][0] += stats.generated_tokens
                totals[name][1] += stats.decode_ms
                totals[name][2] += stats.forwards
    return {name: {"decode_tokens_per_second": g / (ms / 1000.0), "tokens_per_forward": g / f}
            for name, (g, ms, f) in totals.items()}


def update_store(store: Path, update: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Read-modify-write ``results.json`` under an exclusive lock (indented JSON)."""
    return update_json_store(store, update, lambda results: json.dumps(results, indent=2) + "\n")
