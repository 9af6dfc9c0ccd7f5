"""Diagnostic (no rule, no choice): how a model's plan follows the prompt's acceleration rather than the scene, at
1 s (what the closed loop's speed control reads) and at 4 s. Usage: telemetry_probe.py SPLIT MODEL [MODEL ...]"""

import sys

import numpy as np

from wamdiff2_ros.agent import EgoMotion
from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.data.tokenized import DataConfig, resolve_dirs
from wamdiff2_ros.evaluation.closed_loop.policies import ModelPolicy
from wamdiff2_ros.model import prompts

ACCELERATIONS = {"real": None, "zero": (0.0, 0.0), "brake(-3)": (-3.0, 0.0)}  # None: the logged one
HORIZONS = {"4s": -1, "1s": 1}  # waypoint index (2 Hz)


def moving_scenes(split: str, every: int = 7, limit: int = 40) -> list[tuple]:
    """(velocity, acceleration, command, front image, ground-truth future) of every ``every``-th scene moving > 2 m/s."""
    logs = NavsimLogs(*resolve_dirs(DataConfig(logs_dir=split)), frame_interval=1)
    rows = []
    for i in range(0, len(logs), every):
        scene = logs[i]
        ego = scene.current_frame.ego_status
        v = tuple(float(x) for x in ego.ego_velocity)
        if v[0] < 2.0:
            continue
        rows.append((v, tuple(float(x) for x in ego.ego_acceleration), prompts.command_from_one_hot(ego.driving_command),
                     scene.load_images(("CAM_F0",)), scene.future_trajectory(prompts.NUM_WAYPOINTS)))
        if len(rows) >= limit:
            break
    return rows


def main(split: str, models: list[str]) -> None:
    rows = moving_scenes(split)
    print(f"{len(rows)} moving scenes from {split}")
    gt = np.stack([row[4][:, 0] for row in rows])
    cv = np.stack([row[0][0] * 0.5 * np.arange(1, prompts.NUM_WAYPOINTS + 1) for row in rows])
    a_x = [row[1][0] for row in rows]
    for model in models:
        policy = ModelPolicy(model)
        x = {key: np.stack([np.asarray(policy.agent.step(images, EgoMotion(v, acc or a), cmd).trajectory)[:, 0]
                            for v, a, cmd, images, _ in rows])
             for key, acc in ACCELERATIONS.items()}
        for name, k in HORIZONS.items():
            means = " ".join(f"{key} {x[key][:, k].mean():.2f}" for key in ACCELERATIONS)
            err = " ".join(f"{key} {np.abs(v[:, k] - gt[:, k]).mean():.2f}"
                           for key, v in (("real", x["real"]), ("zero", x["zero"]), ("cv", cv)))
            corr = f" | corr(real-zero, a_x) {np.corrcoef(x['real'][:, k] - x['zero'][:, k], a_x)[0, 1]:.2f}"
            print(f"{model} x@{name} mean {means} gt {gt[:, k].mean():.2f} cv {cv[:, k].mean():.2f} | |x-gt| {err}"
                  + (corr if name == "4s" else ""))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
