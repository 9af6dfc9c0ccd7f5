"""``wamdiff2 train {ar,adapt,distill-block,distill-model} --config FILE [key=value ...]`` sub-commands."""

from __future__ import annotations

import argparse
import sys

from wamdiff2_ros.training.config import TrainConfigError, load_config
from wamdiff2_ros.training.engine import train

_STAGE_OF = {"ar": "ar", "adapt": "adapt", "distill_block": "distill_block", "distill_model": "distill_model"}


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="stage YAML file (see config/train/)")
    parser.add_argument("--no-resume", action="store_true", help="start over even if OUTPUT_DIR/checkpoint exists")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="config overrides, e.g. steps=200 lr=3e-4 data.max_scenes=50")


def _run(name: str, args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config, list(args.overrides))
    except TrainConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if cfg.stage != _STAGE_OF[name]:
        print(f"error: {args.config} is a stage {cfg.stage!r} config, not {_STAGE_OF[name]!r}", file=sys.stderr)
        return 2
    try:
        result = train(cfg, resume=not args.no_resume)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{cfg.stage} B={cfg.block_size}: {result.steps} steps, final loss {result.final_loss:.4f}, "
          f"{result.wall_time_s:.0f} s -> {result.output_dir}")
    return 0


def ar(args: argparse.Namespace) -> int:
    """Stage 0: the autoregressive generalist (B=1)."""
    return _run("ar", args)


def adapt(args: argparse.Namespace) -> int:
    """Stage I: one step of progressive block-wise adaptation."""
    return _run("adapt", args)


def distill_block(args: argparse.Namespace) -> int:
    """Stage II: block-wise distillation from a small-block teacher."""
    return _run("distill_block", args)


def distill_model(args: argparse.Namespace) -> int:
    """Stage III: cross-scale distillation from a larger model."""
    return _run("distill_model", args)


ar_arguments = adapt_arguments = distill_block_arguments = distill_model_arguments = _arguments
