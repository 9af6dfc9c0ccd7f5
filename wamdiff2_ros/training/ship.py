"""Copy trained models into ``checkpoints/`` (model, tokenizer, processor files only) with a model card.

``python -m wamdiff2_ros.training.ship --runs runs --results docs/results.json`` copies
``RUNS/tiny-ar`` to ``checkpoints/wamdiff2-tiny-ar`` and the chosen B=32 student to
``checkpoints/wamdiff2-tiny-b32``; each gets a README.md card with the stages that made
it (command, config, data seed, wall time) and its held-out scores.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wamdiff2_ros.training.archive import read_json, targets_info

MODEL_FILES = (
    "config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
    "chat_template.jinja", "preprocessor_config.json", "video_preprocessor_config.json",
)

# Stages (run folder, CLI sub-command, config file) behind each shipped model, in training order.
LINEAGE: dict[str, list[tuple[str, str, str]]] = {
    "tiny-ar": [("tiny-ar", "ar", "ar.yaml")],
    "tiny-b32-final": [
        ("tiny-ar", "ar", "ar.yaml"), ("tiny-b4", "adapt", "adapt_b4.yaml"), ("tiny-b8", "adapt", "adapt_b8.yaml"),
        ("tiny-b16", "adapt", "adapt_b16.yaml"), ("tiny-b32", "adapt", "adapt_b32.yaml"),
        ("tiny-b32-distill", "distill-block", "distill_block.yaml"),
        ("small-ar", "ar", "small_ar.yaml"), ("small-b4", "adapt", "small_adapt_b4.yaml"),
        ("small-b8", "adapt", "small_adapt_b8.yaml"), ("small-b16", "adapt", "small_adapt_b16.yaml"),
        ("small-b32", "adapt", "small_adapt_b32.yaml"),
        ("tiny-b32-final", "distill-model", "distill_model.yaml"),
    ],
}
# Continued runs (same configs with `init=` the shipped model and more steps; commands in the cards).
LINEAGE["tiny-ar-long"] = [("tiny-ar", "ar", "ar.yaml"), ("tiny-ar-long", "ar", "ar.yaml")]
LINEAGE["tiny-b32-long"] = LINEAGE["tiny-b32-final"] + [("tiny-b32-long", "adapt", "adapt_b32.yaml")]
LINEAGE["tiny-b32-distill"] = LINEAGE["tiny-b32-final"][:6]
LINEAGE["tiny-b32"] = LINEAGE["tiny-b32-final"][:5]
# v2: stage I again, from the continued AR, with a long B=32 stage; stage II forked from its step-1000 model.
LINEAGE["v2-b32"] = LINEAGE["tiny-ar-long"] + [
    ("v2-b4", "adapt", "adapt_b4.yaml"), ("v2-b8", "adapt", "adapt_b8.yaml"), ("v2-b16", "adapt", "adapt_b16.yaml"),
    ("v2-b32", "adapt", "adapt_b32.yaml"),
]
LINEAGE["v2-b32-distill"] = LINEAGE["v2-b32"] + [("v2-b32-distill", "distill-block", "distill_block.yaml")]
# v3: the v2 B=32 model trained on the AR teacher's answers (`wamdiff2 train relabel`), without and with
# certainty forcing.
LINEAGE["v3-b32-kd"] = LINEAGE["v2-b32"] + [("v3-b32-kd", "adapt", "adapt_b32.yaml")]
LINEAGE["v3-b32-kd-cf"] = LINEAGE["v2-b32"] + [("v3-b32-kd-cf", "adapt", "adapt_b32.yaml")]
LINEAGE["v3-b32-kd-cf2"] = LINEAGE["v3-b32-kd-cf"] + [("v3-b32-kd-cf2", "adapt", "adapt_b32.yaml")]
LINEAGE["v3-b32-kd-cf2-w1"] = LINEAGE["v3-b32-kd-cf"] + [("v3-b32-kd-cf2-w1", "adapt", "adapt_b32.yaml")]
# v4: the shipped v3 student, certainty 1.0, on the teacher's answers for the training scenes / twice as many scenes.
LINEAGE["v4-b32-w1"] = LINEAGE["v3-b32-kd-cf2"] + [("v4-b32-w1", "adapt", "adapt_b32.yaml")]
LINEAGE["v4-b32-x2-w1"] = LINEAGE["v3-b32-kd-cf2"] + [("v4-b32-x2-w1", "adapt", "adapt_b32.yaml")]
# v5: v4 (training scenes, certainty 1.0) continued on twice the scenes at certainty 2.0.
LINEAGE["v5-b32-x2-w2"] = LINEAGE["v4-b32-w1"] + [("v5-b32-x2-w2", "adapt", "adapt_b32.yaml")]


def copy_model(src: Path, dst: Path) -> Path:
    """Copy the model files of a run folder (not its resumable checkpoint) into ``dst``."""
    if not (src / "model.safetensors").is_file():
        raise FileNotFoundError(f"{src} holds no finished model (model.safetensors)")
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for name in MODEL_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    return dst


def command(runs: Path, run: str, sub: str, config: str) -> str:
    """The exact training command of a run: its config file plus the ``key=value`` overrides it was started with."""
    import dataclasses

    from wamdiff2_ros.training.config import load_config

    text = f"wamdiff2 train {sub} --config config/train/{config}"
    ran = read_json(runs, run, "train_config.json")
    base_file = Path(__file__).resolve().parents[2] / "config" / "train" / config
    if not ran or not base_file.is_file():
        return text
    base = dataclasses.asdict(load_config(base_file))
    skip = {"progress", "save_every", "num_threads"}
    extra = [f"{k}={v}" for k, v in ran.items() if k not in skip and k != "data" and base.get(k) != v]
    extra += [f"data.{k}={v}" for k, v in ran.get("data", {}).items() if base["data"].get(k) != v]
    return " ".join([text, *extra])


def relabel_row(runs: Path, run: str, config: str) -> str | None:
    """The card's table row of the ``wamdiff2 train relabel`` step whose targets ``run`` trained on, if any."""
    targets = read_json(runs, run, "train_config.json").get("data", {}).get("targets")
    if not targets:
        return None
    path = Path(targets)
    info = targets_info(path)
    cmd = (f"wamdiff2 train relabel --teacher {info.get('teacher', '?')} --config config/train/{config}"
           f" --out {targets} --tasks {','.join(info.get('tasks', ['planning']))}")
    kept = f"{info.get('kept', '?')} answers kept, {info.get('rejected', '?')} rejected"
    return f"| {path.stem} | `{cmd}` | {kept} | {float(info.get('wall_s', float('nan'))):.0f} | - |"


STAGE_NAMES = {"ar": "stage 0 AR", "adapt": "stage I adaptation", "distill-block": "stage II block distillation",
               "distill-model": "stage III model distillation"}


def lineage_text(run: str) -> str:
    """``tiny-ar (stage 0 AR) -> tiny-b4 (stage I adaptation) -> ...`` for a run of :data:`LINEAGE`."""
    stages = LINEAGE.get(run)
    if not stages:
        return "lineage not recorded"
    return " -> ".join(f"`{folder}` ({STAGE_NAMES.get(sub, sub)})" for folder, sub, _ in stages)


def card(name: str, run: str, runs: Path, result: dict[str, Any] | None, description: str) -> str:
    """The README.md of a shipped model."""
    lines = [f"# {name}", "", description, ""]
    lines += ["## How it was trained", "",
              "Synthetic NAVSIM-format data: `synthesize(root, num_logs=24, num_frames=60, seed=1, size=(256, 128))`"
              " (training split), multi-task samples (planning, perception with the 2 nearest visible boxes, one"
              " understanding question per scene; sample seed 1). The whole ladder: `tools/reproduce.sh`.", "",
              "| stage | command | steps | wall time (s) | final loss |", "|---|---|---|---|---|"]
    total = 0.0
    for folder, sub, config in LINEAGE.get(run, []):
        s = read_json(runs, folder, "train_summary.json")
        wall = float(s.get("wall_time_s", float("nan")))
        total += wall if wall == wall else 0.0
        relabel = relabel_row(runs, folder, config)
        if relabel and relabel not in lines:  # once per targets file
            lines.append(relabel)
        lines.append(f"| {folder} | `{command(runs, folder, sub, config)}` | {s.get('steps', '-')} |"
                     f" {wall:.0f} | {float(s.get('final_loss', float('nan'))):.4f} |")
    lines += ["", f"Total training wall time: {total / 60:.1f} min on a shared 2-core CPU (one thread per run).", ""]
    if result:
        lines += ["## Held-out scores", "",
                  "Held-out synthetic split (`seed=2`, 4 logs x 40 frames), fast engine, greedy, confidence"
                  f" threshold 0.9, decoded at B={result['block_size']}; {result['samples']} samples per task.", "",
                  f"- planning L2, average of 1-4 s: **{result['planning_l2']:.3f} m** (answers that do not parse"
                  f" use the constant-velocity fallback; parse rate {result['planning_parse_rate']:.2f})",
                  f"- understanding QA exact-match accuracy: {result['qa_accuracy']:.2f}",
                  f"- perception COCO mAP (image boxes, pycocotools): {result['detection_map']:.3f}",
                  f"- decode: {result['decode_tokens_per_second']:.1f} tokens/s, "
                  f"{result['tokens_per_forward']:.2f} tokens per forward (CPU, busy shared machine)", ""]
    lines += ["## Use", "", "```python", "from wamdiff2_ros.model.loader import load_model",
              f"vla = load_model('checkpoints/{name}')", "```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs")
    parser.add_argument("--results", default="docs/results.json",
                        help="the scores store of training.results (cards show the every-sample scores when present)")
    parser.add_argument("--student", default="tiny-b32-final", help="run folder of the shipped B=32 student")
    parser.add_argument("--student-key", default="b32_iii", help="its row key in results.json")
    parser.add_argument("--ar", default="tiny-ar", help="run folder of the shipped AR baseline")
    parser.add_argument("--ar-key", default="ar", help="its row key in results.json")
    parser.add_argument("--note", default="", help="extra sentence for both cards (e.g. how a run was continued)")
    parser.add_argument("--out", default="checkpoints")
    args = parser.parse_args(argv)
    runs, out = Path(args.runs), Path(args.out)
    results = json.loads(Path(args.results).read_text()) if args.results and Path(args.results).is_file() else {}
    results = {**results, **(results.get("_final") or {}).get("rows", {})}  # every-sample scores first
    shipped = [
        ("wamdiff2-tiny-ar", args.ar, args.ar_key,
         f"The autoregressive baseline (B=1, stage 0) of the `tiny` preset, from run `{args.ar}`: a"
         " Qwen3-VL-architecture model trained here from scratch on synthetic driving data (it stands in for the"
         " pretrained Qwen3-VL)." + (f" {args.note}" if args.note else "")),
        ("wamdiff2-tiny-b32", args.student, args.student_key,
         f"The block-diffusion student (B=32) of the `tiny` preset, from run `{args.student}`: "
         + lineage_text(args.student) + "." + (f" {args.note}" if args.note else "")),
    ]
    for name, run, key, description in shipped:
        dst = copy_model(runs / run, out / name)
        (dst / "README.md").write_text(card(name, run, runs, results.get(key), description))
        size = sum(p.stat().st_size for p in dst.iterdir()) / 1e6
        print(f"{dst}: {size:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
