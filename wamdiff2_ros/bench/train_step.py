"""`wamdiff2 bench train-step`: wall time of one training step (forward + backward + AdamW) per preset and objective.

``wamdiff2 bench train-step --preset tiny --batch 8 --steps 5 --json OUT.json``
builds a realistic batch (one NAVSIM-sized front image per prompt, a planning question,
an 8-waypoint answer), then times the AR step (B=1) and masked-diffusion steps for the
given block sizes side by side. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from wamdiff2_ros.model.forward import ar_forward, diffusion_forward
from wamdiff2_ros.model.inputs import build_inputs
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.model.losses import add_block_noise, ar_loss, masked_diffusion_loss, pad_response
from wamdiff2_ros.model.testing import toy_image

QUESTION = (
    "You are an autonomous driving agent. <image> Driving command: turn left. Velocity: {v:.2f} m/s. "
    "Acceleration: {a:.2f} m/s^2. Plan the trajectory for the next 4 seconds with 8 waypoints (x, y)."
)


def _answer(rng: np.random.Generator) -> str:
    speed, x, y, points = rng.uniform(2, 12), 0.0, 0.0, []
    for _ in range(8):
        x += speed * 0.5
        y += rng.uniform(-0.3, 0.3)
        points.append(f"{x:.2f},{y:.2f}")
    return ",".join(points)


def _train_step(vla, opt, samples: list, block: int, responses: torch.Tensor, gen: torch.Generator) -> float:
    """One optimiser step: AR (B=1) or masked diffusion with block size ``block``."""
    if block == 1:
        logits, targets = ar_forward(vla, samples, [s["response_ids"][0] for s in samples])
        loss = ar_loss(logits, targets)
    else:
        noisy, t, masked = add_block_noise(responses, block, vla.mask_token_id, generator=gen)
        logits = diffusion_forward(vla, samples, responses, noisy, block_size=block)
        loss = masked_diffusion_loss(logits, responses, masked, t)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def run(preset: str, batch: int, steps: int, block_sizes: list[int], threads: int, seed: int = 0) -> dict:
    """Median and minimum step time of the AR step and of a diffusion step per block size, on one fixed batch."""
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    vla = init_model(preset, seed=seed)
    samples = []
    t0 = time.perf_counter()
    for i in range(batch):
        inputs = build_inputs(vla, QUESTION.format(v=rng.uniform(0, 15), a=rng.uniform(-2, 2)),
                              [toy_image(1080, 1920, seed=i)], answer=_answer(rng))
        samples.append(inputs)
    prep_s = (time.perf_counter() - t0) / batch
    prompt_tokens = [int(s["input_ids"].shape[1]) for s in samples]
    image_tokens = [int((s["input_ids"] == vla.image_token_id).sum()) for s in samples]
    response_tokens = [int(s["response_ids"].shape[1]) for s in samples]
    vla.model.train()
    opt = torch.optim.AdamW(vla.model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for block in [1, *block_sizes]:
        responses = pad_response([s["response_ids"][0] for s in samples], block, vla.end_token_id)

        _train_step(vla, opt, samples, block, responses, gen)  # warm-up
        times = []
        for _ in tqdm(range(steps), desc=f"{preset} B={block}", leave=False):
            start = time.perf_counter()
            _train_step(vla, opt, samples, block, responses, gen)
            times.append(time.perf_counter() - start)
        rows.append({
            "objective": "ar" if block == 1 else "diffusion",
            "block_size": block,
            "sequence_tokens": max(prompt_tokens) + (1 if block == 1 else 2) * int(responses.shape[1]),
            "step_s_median": statistics.median(times),
            "step_s_min": min(times),
        })
    return {
        "preset": preset,
        "parameters": vla.num_parameters(),
        "batch": batch,
        "threads": threads,
        "steps": steps,
        "prompt_tokens_mean": statistics.mean(prompt_tokens),
        "image_tokens": image_tokens[0],
        "response_tokens_mean": statistics.mean(response_tokens),
        "preprocess_s_per_sample": prep_s,
        "rows": rows,
        "torch": torch.__version__,
    }


def train_step_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--block-sizes", default="4,16", help="comma-separated diffusion block sizes")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the results here")


def train_step(args: argparse.Namespace) -> int:
    blocks = [int(b) for b in args.block_sizes.split(",") if b.strip()]
    result = run(args.preset, args.batch, args.steps, blocks, args.threads)
    print(f"preset {result['preset']} ({result['parameters']:,} parameters), batch {result['batch']}, "
          f"{result['threads']} thread(s); prompt {result['prompt_tokens_mean']:.0f} tokens "
          f"({result['image_tokens']} image), answer {result['response_tokens_mean']:.0f} tokens")
    print(f"{'objective':<10} {'B':>3} {'seq':>5} {'median s':>9} {'min s':>7} {'vs AR':>6}")
    base = result["rows"][0]["step_s_median"]
    for row in result["rows"]:
        print(f"{row['objective']:<10} {row['block_size']:>3} {row['sequence_tokens']:>5} "
              f"{row['step_s_median']:>9.3f} {row['step_s_min']:>7.3f} {row['step_s_median'] / base:>6.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0

