"""Tokenised multi-task samples of NAVSIM-format logs: what training, relabelling and held-out scoring read.

Samples come from :mod:`wamdiff2_ros.data.samples` (planning, perception and
understanding conversations of each scene). Each is run once through the model's
processor (question in the model's prompt format, images -> patches, prompt -> ids,
Qwen3-VL mRoPE positions, answer -> ids + ``<|im_end|>``, unpadded: the objectives pad
each answer to its own whole blocks) and the tensors are cached with ``torch.save`` (read back with
``weights_only=True``), so training steps never touch the processor or the jpgs.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from wamdiff2_ros.data.navsim import NavsimLogs, read_rgb
from wamdiff2_ros.data.samples import perception_sample, planning_sample, understanding_samples, visible_boxes
from wamdiff2_ros.model import codecs
from wamdiff2_ros.model.inputs import build_inputs

CACHE_VERSION = 1
PROMPT_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids", "position_ids", "pixel_values", "image_grid_thw")


@dataclass
class DataConfig:
    """Where samples come from and how they are cut into multi-task conversations."""

    logs_dir: str = ""  # navsim_logs/<split> (or a dataset root holding navsim_logs/ and sensor_blobs/)
    sensor_blobs_dir: str = ""  # empty: <root>/sensor_blobs
    cache_dir: str = ""  # pre-tokenised samples (empty: <output_dir>/../cache)
    tasks: list[str] = field(default_factory=lambda: ["planning", "perception", "understanding"])
    cameras: list[str] = field(default_factory=lambda: ["CAM_F0"])
    max_scenes: int = 0  # 0: all
    frame_interval: int = 1
    max_boxes: int = 2  # perception answers keep the nearest boxes (shorter responses)
    understanding_per_scene: int = 2
    max_pixels: int = 0  # 0: the preset's budget
    seed: int = 0
    targets: str = ""  # sequence-level distillation: a `wamdiff2 train relabel` JSON replacing these answers
    # planning samples that start from a standstill (ego stopped, the plan moves off) are ~3 % of a synthetic
    # split; repeat each this many times in total (1: as they come). Not part of the tokenised cache.
    oversample_starts: int = 1
    # planning samples whose plan turns (the 4 s waypoint TURN_M or more to one side) are ~1/3 of a synthetic split;
    # repeat each this many times in total (1: as they come). Not part of the tokenised cache.
    oversample_turns: int = 1
    # planning answers as plain or fixed-width numbers (codecs.PLAN_STYLES); part of the tokenised cache's key
    plan_style: str = "plain"
    # "": every sample sees all of `cameras`; "random": each scene's samples see a random non-empty subset of them
    # (1 to all, in NAVSIM order, deterministic from seed), so a model answers for any cameras a vehicle has;
    # "keep_first": the first of `cameras` (the front camera) always, with a random subset of the others (0 to all)
    camera_subsets: str = ""
    # the fraction of planning samples (deterministic from seed) whose prompt reports the acceleration as (0, 0),
    # the plan unchanged (``samples.planning_sample``'s cruise_telemetry): in the logs the autopilot's own braking
    # and turning show in the telemetry before the plan, so a model can copy it instead of reading the scene; in
    # closed loop a model that has not braked yet reports none. 0: off; part of the tokenised cache's key
    cruise_telemetry: float = 0.0


CAMERA_SUBSETS = ("", "random", "keep_first")


def scene_cameras(cameras: Sequence[str], mode: str, rng: random.Random) -> tuple[str, ...]:
    """The cameras one scene's samples see: all of ``cameras``, (``"random"``) a random non-empty subset, or
    (``"keep_first"``) the first camera and a random subset of the rest; either way 1 to all cameras, uniformly."""
    if mode not in CAMERA_SUBSETS:
        raise ValueError(f"data.camera_subsets must be one of {CAMERA_SUBSETS}, got {mode!r}")
    if mode == "" or len(cameras) == 1:
        return tuple(cameras)
    if mode == "keep_first":
        chosen = {cameras[0], *rng.sample(list(cameras[1:]), rng.randint(0, len(cameras) - 1))}
    else:
        chosen = set(rng.sample(list(cameras), rng.randint(1, len(cameras))))
    return tuple(c for c in cameras if c in chosen)



def resolve_dirs(data: DataConfig) -> tuple[Path, Path | None]:
    """``(logs_dir, sensor_blobs_dir)``; a dataset root (holding ``navsim_logs/``) is accepted as logs_dir."""
    logs = Path(data.logs_dir).expanduser()
    if not logs.exists():
        raise FileNotFoundError(f"data.logs_dir {logs} does not exist (write synthetic data with `wamdiff2 synth`)")
    blobs = Path(data.sensor_blobs_dir).expanduser() if data.sensor_blobs_dir else None
    if (logs / "navsim_logs").is_dir():
        if blobs is None and (logs / "sensor_blobs").is_dir():
            blobs = logs / "sensor_blobs"
        logs = logs / "navsim_logs"
    elif blobs is None:
        for parent in logs.parents[:3]:
            if (parent / "sensor_blobs").is_dir():
                blobs = parent / "sensor_blobs"
                break
    return logs, blobs


def build_samples(data: DataConfig) -> list[Any]:
    """Multi-task :class:`wamdiff2_ros.data.samples.Sample` list of every scene (deterministic from data.seed)."""
    logs_dir, blobs = resolve_dirs(data)
    logs = NavsimLogs(logs_dir, blobs, frame_interval=data.frame_interval, max_scenes=data.max_scenes or None)
    if len(logs) == 0:
        raise ValueError(f"no scenes in {logs_dir} (logs need >= 12 frames with a route)")
    rng = random.Random(data.seed)
    camera_rng = random.Random(f"cameras-{data.seed}")  # its own stream: the QA choice stays as without subsets
    cruise_rng = random.Random(f"cruise-{data.seed}")  # (likewise)
    samples: list[Any] = []
    maps: dict[str, Any] = {}
    for scene in logs:
        cameras = scene_cameras(data.cameras, data.camera_subsets, camera_rng)
        if "planning" in data.tasks:
            cruise = data.cruise_telemetry > 0 and cruise_rng.random() < data.cruise_telemetry
            samples.append(planning_sample(scene, cameras, plan_style=data.plan_style, cruise_telemetry=cruise))
        if "perception" in data.tasks and scene.current_frame.annotations is not None:
            sample = perception_sample(scene, cameras)
            boxes = visible_boxes(scene.current_frame, cameras)[: data.max_boxes]
            sample.answer = codecs.encode_perception(boxes)
            sample.meta["boxes"] = [[b.label, *b.bbox] for b in boxes if b.bbox is not None]
            samples.append(sample)
        if "understanding" in data.tasks:
            log = scene.metadata.log_name
            if log not in maps:
                maps[log] = logs.map_for(scene)
            qa = understanding_samples(scene, maps[log], cameras)
            rng.shuffle(qa)
            samples += qa[: data.understanding_per_scene]
    return samples


def _cache_key(data: DataConfig, vla: Any) -> str:
    processor = vla.processor
    payload = {
        "v": CACHE_VERSION,
        "data": {k: getattr(data, k) for k in ("logs_dir", "sensor_blobs_dir", "tasks", "cameras", "max_scenes",
                                                "frame_interval", "max_boxes", "understanding_per_scene",
                                                "max_pixels", "seed")},
        "logs_dir": str(Path(data.logs_dir).expanduser().resolve()),
        "vocab": len(vla.tokenizer),
        "image": None if processor is None else [processor.patch_size, processor.merge_size, processor.max_pixels],
    }
    if data.plan_style != "plain":  # (plain keeps the keys of every cache written before the option)
        payload["plan_style"] = data.plan_style
    if data.camera_subsets:  # (likewise)
        payload["camera_subsets"] = data.camera_subsets
    if data.cruise_telemetry:  # (likewise)
        payload["cruise_telemetry"] = data.cruise_telemetry
    prompt_format = getattr(vla, "prompt_format", "wamdiff2_ros")
    if prompt_format != "wamdiff2_ros":  # the questions are tokenised in the model's format (build_inputs)
        payload["prompt_format"] = prompt_format
    return hashlib.blake2b(json.dumps(payload, sort_keys=True).encode(), digest_size=8).hexdigest()


def tokenize_sample(vla: Any, sample: Any, max_pixels: int | None = None) -> dict[str, Any]:
    """One sample as cached tensors: the prompt (build_inputs keys, on CPU) and ``response_ids`` (R,)."""
    images = [read_rgb(Path(p)) for p in sample.images]
    inputs = build_inputs(vla, sample.question, images, answer=sample.answer, max_pixels=max_pixels)
    row: dict[str, Any] = {k: inputs[k].detach().cpu() for k in PROMPT_KEYS if k in inputs}
    row["response_ids"] = inputs["response_ids"][0].cpu()
    row["task"] = sample.task
    row["id"] = sample.sample_id
    row["answer"] = sample.answer
    row["question"] = sample.question
    meta = {k: v for k, v in sample.meta.items() if k in ("trajectory", "boxes", "question_type", "answer_set")}
    row["meta"] = json.dumps(meta)
    return row


class TokenizedDataset:
    """Pre-tokenised samples (a list of dicts of CPU tensors) with a per-task index."""

    def __init__(self, rows: list[dict[str, Any]]):
        if not rows:
            raise ValueError("the dataset is empty")
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.rows[i]

    def tasks(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r["task"]] = counts.get(r["task"], 0) + 1
        return counts

    @classmethod
    def build(cls, data: DataConfig, vla: Any, cache_dir: str | Path | None = None, progress: bool = True,
              build: bool = True) -> TokenizedDataset:
        """Load the cache for (data, tokenizer, image settings) or build and write it."""
        path = None
        if cache_dir:
            path = Path(cache_dir) / f"samples-{_cache_key(data, vla)}.pt"
            if path.is_file():
                return cls(oversample(torch.load(path, weights_only=True), data))
            if not build:
                raise FileNotFoundError(f"no tokenised cache {path}")
        samples = build_samples(data)
        max_pixels = data.max_pixels or None
        iterator: Any = samples
        if progress:
            iterator = tqdm(samples, desc="tokenising", unit="sample")
        rows = [tokenize_sample(vla, s, max_pixels) for s in iterator]
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{random.getrandbits(32)}")
            torch.save(rows, tmp)
            tmp.replace(path)
        return cls(oversample(rows, data))


#: a plan "starts from a standstill" when its first waypoint (0.5 s) is within STILL_M of the ego and its
#: last (4 s) at least MOVES_M away
STILL_M, MOVES_M = 0.3, 3.0


def starts_from_standstill(row: dict[str, Any]) -> bool:
    """True for a planning row whose ground truth starts from a stop and moves off (e.g. on green)."""
    if row.get("task") != "planning":
        return False
    xy = trajectory_of(row)
    return bool(np.hypot(*xy[0]) < STILL_M and np.hypot(*xy[-1]) >= MOVES_M)


def oversample_starts(rows: list[dict[str, Any]], factor: int) -> list[dict[str, Any]]:
    """``rows`` with every start-from-standstill planning row repeated ``factor`` times in total (after the rest)."""
    if factor < 1:
        raise ValueError(f"data.oversample_starts must be >= 1, got {factor}")
    if factor == 1:
        return rows
    starts = [r for r in rows if starts_from_standstill(r)]
    return rows + starts * (factor - 1)


#: a plan "turns" when its last waypoint (4 s) lies at least TURN_M to one side of the ego's heading line
TURN_M = 1.5


def turns(row: dict[str, Any]) -> bool:
    """True for a planning row whose ground truth turns (or changes lane) within its 4 s."""
    if row.get("task") != "planning":
        return False
    return bool(abs(trajectory_of(row)[-1, 1]) >= TURN_M)


def oversample_turns(rows: list[dict[str, Any]], factor: int) -> list[dict[str, Any]]:
    """``rows`` with every turning planning row repeated ``factor`` times in total (after the rest)."""
    if factor < 1:
        raise ValueError(f"data.oversample_turns must be >= 1, got {factor}")
    if factor == 1:
        return rows
    return rows + [r for r in rows if turns(r)] * (factor - 1)


def oversample(rows: list[dict[str, Any]], data: DataConfig) -> list[dict[str, Any]]:
    """Both oversamplings of ``data`` (starts, then turns, each counted on the rows as they come)."""
    extra_turns = oversample_turns(rows, data.oversample_turns)[len(rows):]
    return oversample_starts(rows, data.oversample_starts) + extra_turns


def prompt_of(row: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The prompt tensors of a cached row (what ``build_inputs`` returns, without the answer)."""
    return {k: row[k] for k in PROMPT_KEYS if k in row}


def trajectory_of(row: dict[str, Any]) -> Any:
    """(8, 2) float64 ground-truth waypoints (x, y) of a cached planning row."""
    return np.asarray(json.loads(row["meta"])["trajectory"], dtype=np.float64)[:, :2]
