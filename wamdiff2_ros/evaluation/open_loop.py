"""Open-loop evaluation: run the model on every scene of NAVSIM-format logs and score its plans.

For each block size the same checkpoint is decoded with the driving agent (prompt ->
block-diffusion decode -> strict parse -> flagged constant-velocity fallback), plans
are scored against the logs (in parallel processes), perception answers are scored
with the BEV centre-distance mAP when requested, and decode speed is recorded.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.agent import DrivingAgent, EgoMotion
from wamdiff2_ros.data.samples import understanding_samples, visible_boxes
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.evaluation.detection import BevBox, ImageBox, bev_center_distance_map, coco_map
from wamdiff2_ros.evaluation.groundtruth import COMMANDS, scene_ground_truth
from wamdiff2_ros.evaluation.qa import QAItem, score_items
from wamdiff2_ros.evaluation.scene import SceneGroundTruth
from wamdiff2_ros.evaluation.scoring import aggregate, score_scenes
from wamdiff2_ros.model.codecs import ParseError, parse_understanding


@dataclass
class RunResult:
    """One block size's predictions, per-scene scores and summary."""

    block_size: int
    predictions: dict[str, np.ndarray] = field(default_factory=dict)
    valid: dict[str, bool] = field(default_factory=dict)
    per_scene: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def ego_inputs(scene: Any) -> tuple[Any, str]:
    """The agent's ego status and driving command from a scene's current frame."""
    status = scene.current_frame.ego_status
    vel = np.asarray(status.ego_velocity, dtype=np.float64).reshape(-1)[:2]
    acc = np.asarray(status.ego_acceleration, dtype=np.float64).reshape(-1)[:2]
    command = np.asarray(status.driving_command).reshape(-1)
    name = COMMANDS[int(np.argmax(command))] if command.size == 4 and command.any() else "unknown"
    return EgoMotion(velocity=(float(vel[0]), float(vel[1])), acceleration=(float(acc[0]), float(acc[1]))), name


def run_open_loop(
    vla: Any,
    logs: Any,
    block_sizes: Sequence[int],
    *,
    engine: str = "fast",
    confidence_threshold: float = 0.9,
    max_new_tokens: int = 128,
    cameras: Sequence[str] = ("CAM_F0",),
    tasks: Sequence[str] = ("planning",),
    limit: int | None = None,
    processes: int | None = None,
    device: str = "cpu",
    progress: bool = True,
) -> tuple[list[RunResult], dict[str, SceneGroundTruth]]:
    """Decode and score every scene (up to ``limit``) once per block size."""
    from tqdm import tqdm

    tokens = logs.scene_tokens()[: limit if limit else None]
    scenes: dict[str, Any] = {}
    truth: dict[str, SceneGroundTruth] = {}
    maps: dict[str, Any] = {}
    for token in tokens:
        scene = logs[token]
        if scene.current_frame.annotations is None:
            continue  # test split: nothing to score against
        log = scene.metadata.log_name
        if log not in maps:
            maps[log] = logs.map_for(scene) if hasattr(logs, "map_for") else None
        scenes[token] = scene
        truth[token] = scene_ground_truth(scene, maps[log], logs.num_future_frames)
    if not truth:
        raise ValueError("no scene with annotations to evaluate (a test split?)")

    runs = []
    for block_size in block_sizes:
        config = DecodeConfig(
            block_size=int(block_size),
            confidence_threshold=confidence_threshold,
            max_new_tokens=max_new_tokens,
            engine=engine,
            device=device,
        )
        agent = DrivingAgent(vla, config, cameras=cameras, tasks=tasks)
        run = RunResult(int(block_size))
        generated = decode_ms = forwards = 0.0
        gt_boxes: list[BevBox] = []
        det_boxes: list[BevBox] = []
        gt_image_boxes: list[ImageBox] = []
        det_image_boxes: list[ImageBox] = []
        qa_items: list = []
        for token, scene in tqdm(scenes.items(), desc=f"decoding B={block_size}", unit="scene", disable=not progress):
            ego, command = ego_inputs(scene)
            output = agent.step(scene.load_images(cameras), ego, command)
            run.predictions[token] = np.asarray(output.trajectory, dtype=np.float64)
            run.valid[token] = bool(output.valid)
            for task in output.tasks.values():
                generated += task.stats.generated_tokens
                decode_ms += task.stats.decode_ms
                forwards += task.stats.forwards
            if "perception" in tasks:
                anns = scene.current_frame.annotations
                gt_boxes += [BevBox(token, n, float(b[0]), float(b[1])) for b, n in zip(anns.boxes, anns.names, strict=False)]
                score = output.tasks["perception"].confidence or 1.0
                det_boxes += [BevBox(token, d.label, d.x, d.y, score) for d in output.detections]
                gt_image_boxes += _visible_image_boxes(scene, token, cameras)
                det_image_boxes += [ImageBox(f"{token}/{d.camera}", d.label, tuple(d.bbox), score)
                                    for d in output.detections if d.bbox is not None and d.camera]
            if "understanding" in tasks:
                qa_items += _answer_questions(vla, config, scene, maps[scene.metadata.log_name], cameras)
        pairs = [(run.predictions[t], truth[t]) for t in scenes]
        run.per_scene = score_scenes(pairs, processes=processes, progress=progress)
        for result in run.per_scene:
            result["valid"] = run.valid[result["token"]]
        run.summary = aggregate(run.per_scene)
        run.summary.update(
            block_size=int(block_size),
            engine=engine,
            fallback_rate=float(np.mean([not v for v in run.valid.values()])),
            generated_tokens=int(generated),
            decode_tokens_per_second=float(generated / (decode_ms / 1000.0)) if decode_ms > 0 else float("nan"),
            tokens_per_forward=float(generated / forwards) if forwards else float("nan"),
            scenes_total=len(scenes),
            scenes_missing=len(scenes) - run.summary["scenes_scored"],
        )
        if "perception" in tasks:
            run.summary["bev_center_distance_map"] = bev_center_distance_map(gt_boxes, det_boxes)["map"]
            image_map = coco_map(gt_image_boxes, det_image_boxes)
            run.summary["detection_map_coco"] = image_map["map"]
            run.summary["detection_map_50_coco"] = image_map["map_50"]
        if "understanding" in tasks:
            qa = score_items(qa_items)
            run.summary["qa_exact_match"] = qa["exact_match"]
            run.summary["qa_token_f1"] = qa["token_f1"]
            run.summary["qa_questions"] = qa["questions"]
            run.summary["qa_by_type"] = {k: v["exact_match"] for k, v in qa.get("by_category", {}).items()}
        runs.append(run)
    return runs, truth


def _visible_image_boxes(scene: Any, token: str, cameras: Sequence[str]) -> list[ImageBox]:
    """Ground-truth image boxes (0-1000 scale, as the perception answers use) of the visible agents."""
    return [ImageBox(f"{token}/{b.camera}", b.label, tuple(b.bbox)) for b in visible_boxes(scene.current_frame, cameras)
            if b.bbox is not None and b.camera]


def _answer_questions(vla: Any, config: Any, scene: Any, road_map: Any, cameras: Sequence[str]) -> list:
    """The synthetic understanding questions of one scene, answered by the model (QA items for scoring)."""
    # in the function: they import torch, and evaluation.commands (bag eval, closed loop) imports this module
    from wamdiff2_ros.decoding import generate
    from wamdiff2_ros.model.inputs import build_inputs

    images = scene.load_images(cameras)
    items = []
    for sample in understanding_samples(scene, road_map, cameras):
        inputs = build_inputs(vla, sample.question, [images[c] for c in cameras])
        text = generate(vla, inputs, config).texts[0]
        parsed = parse_understanding(text)
        prediction = "" if isinstance(parsed, ParseError) else parsed
        items.append(QAItem(sample.sample_id, sample.question, [sample.answer], prediction,
                            sample.meta.get("question_type", "")))
    return items


def write_submission(path: str | Path, predictions: dict[str, np.ndarray]) -> Path:
    """NAVSIM-style submission pickle: ``{token: (8, 3) float32 poses x, y, heading}``.

    NAVSIM's own ``create_submission_pickle`` wraps each array in its ``Trajectory``
    dataclass; these plain arrays are what goes into ``Trajectory(poses=...)``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump({t: np.asarray(p, dtype=np.float32)[:, :3] for t, p in predictions.items()}, f)
    return path
