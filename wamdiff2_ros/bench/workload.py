"""What the decode benchmarks run on: a checkpoint or a random preset, and prompts (generic or driving tasks)."""

from __future__ import annotations

import os

import numpy as np
import torch

from wamdiff2_ros.data.samples import QUESTIONS
from wamdiff2_ros.data.world import World
from wamdiff2_ros.model import prompts
from wamdiff2_ros.model.inputs import build_inputs
from wamdiff2_ros.model.loader import WamDiff2, init_model, load_model
from wamdiff2_ros.model.presets import PRESETS

DEFAULT_QUESTIONS = (
    "Front camera: <image> The navigation command is: go straight. Predict the next 8 waypoints.",
    "Front camera: <image> Describe the traffic lights and the vehicles ahead.",
    "Front camera: <image> The navigation command is: turn left. The current velocity is (4.66,-0.09).",
    "Front camera: <image> List the 2D boxes of cars and pedestrians.",
)


def load_bench_model(spec: str, device: str, dtype_name: str) -> tuple[WamDiff2, str]:
    """(vla, description) for a checkpoint directory or a preset name."""
    dtype = getattr(torch, dtype_name)
    if os.path.isdir(spec):
        return load_model(spec, device=device, dtype=dtype), f"checkpoint {spec}"
    if spec not in PRESETS:
        raise SystemExit(f"--model {spec!r} is neither a directory nor a preset ({', '.join(PRESETS)})")
    return init_model(spec, seed=0, device=device, dtype=dtype), f"preset {spec} (random init, no checkpoint)"


def driving_questions(samples: int, seed: int = 0) -> list[tuple[str, list]]:
    """(question, [front image]) pairs of the model's three tasks on synthetic-world frames, in rotation."""
    world = World(seed)
    out = []
    for i in range(samples):
        world.step(1.5)
        ego = world.ego_state()
        image = world.render(["CAM_F0"], (512, 256))["CAM_F0"]
        kind = i % 3
        if kind == 0:
            question = prompts.planning_question(world.route_command(), (ego.vx, ego.vy), (ego.ax, ego.ay))
        elif kind == 1:
            question = prompts.perception_question()
        else:
            # a question the checkpoints were trained on (an untrained wording is answered with the end token alone)
            question = prompts.understanding_question(QUESTIONS["lead_presence"])
        out.append((question, [image]))
    return out


def make_prompts(vla: WamDiff2, samples: int, batch: int, image: bool, kind: str = "generic") -> list[dict]:
    """``samples`` prompts grouped into left-padded batches of ``batch``."""
    rng = np.random.default_rng(0)
    singles = []
    if kind == "driving":
        for question, images in driving_questions(samples):
            singles.append(build_inputs(vla, question, images))
    for i in range(samples if kind != "driving" else 0):
        question = DEFAULT_QUESTIONS[i % len(DEFAULT_QUESTIONS)]
        images = None
        if image and vla.processor is not None:
            images = [(rng.random((64, 112, 3)) * 255).astype(np.uint8)]
        else:
            question = question.replace("<image> ", "")
        singles.append(build_inputs(vla, question, images))
    batches = []
    for start in range(0, samples, batch):
        group = singles[start:start + batch]
        width = max(g["input_ids"].shape[1] for g in group)
        ids = torch.full((len(group), width), vla.pad_token_id, dtype=torch.long, device=vla.device)
        mask = torch.zeros((len(group), width), dtype=torch.long, device=vla.device)
        for row, g in enumerate(group):
            n = g["input_ids"].shape[1]
            ids[row, width - n:] = g["input_ids"][0]
            mask[row, width - n:] = 1
        out = {"input_ids": ids, "attention_mask": mask}
        if "pixel_values" in group[0]:
            out["pixel_values"] = torch.cat([g["pixel_values"] for g in group])
            out["image_grid_thw"] = torch.cat([g["image_grid_thw"] for g in group])
        batches.append(out)
    return batches
