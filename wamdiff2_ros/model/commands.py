"""``wamdiff2 model init`` and ``wamdiff2 model info``: write a preset checkpoint, describe a checkpoint."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.model.loader import ModelLoadError, init_model, load_model, read_config_dict
from wamdiff2_ros.model.presets import PRESETS

_DTYPES = ("float32", "bfloat16", "float16")


def init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", required=True, choices=sorted(PRESETS), help="model size")
    parser.add_argument("--out", required=True, help="output directory (created; must be empty if it exists)")
    parser.add_argument("--seed", type=int, default=0, help="random-initialisation seed (default 0)")
    parser.add_argument("--block-size", type=int, default=1, help="block size recorded in the config (1 = AR)")
    parser.add_argument(
        "--dtype", choices=_DTYPES, default=None, help="weight dtype (default float32; bfloat16 for 2b-shape)"
    )
    parser.add_argument("--force", action="store_true", help="write into a non-empty directory")


def init(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"wamdiff2 model init: {out} exists and is not a directory", file=sys.stderr)
        return 2
    if out.is_dir() and any(out.iterdir()) and not args.force:
        print(f"wamdiff2 model init: {out} is not empty (use --force to write anyway)", file=sys.stderr)
        return 2
    if args.block_size < 1:
        print(f"wamdiff2 model init: --block-size must be >= 1, got {args.block_size}", file=sys.stderr)
        return 2
    dtype_name = args.dtype or ("bfloat16" if args.preset == "2b-shape" else "float32")
    dtype = getattr(torch, dtype_name)
    print(f"initialising preset {args.preset} (seed {args.seed}, {dtype_name}) ...", file=sys.stderr)
    vla = init_model(args.preset, seed=args.seed, dtype=dtype, block_size=args.block_size)
    vla.save(out)
    vla.path = str(out)
    print(json.dumps(describe(vla), sort_keys=True))
    return 0


def describe(vla) -> dict[str, Any]:
    """The facts ``model info`` prints about a loaded model."""
    cfg = vla.model.config
    return {
        "path": vla.path,
        "model_type": cfg.model_type,
        "parameters": vla.num_parameters(),
        "block_size": vla.block_size,
        "mask_token_id": vla.mask_token_id,
        "end_token_id": vla.end_token_id,
        "pad_token_id": vla.pad_token_id,
        "vocab_size": int(cfg.text_config.vocab_size),
        "tokenizer_size": len(vla.tokenizer),
        "hidden_size": int(cfg.text_config.hidden_size),
        "num_hidden_layers": int(cfg.text_config.num_hidden_layers),
        "vision_depth": int(cfg.vision_config.depth),
        "patch_size": int(cfg.vision_config.patch_size),
        "dtype": str(vla.dtype).removeprefix("torch."),
        "preset": getattr(cfg, "wamdiff2_preset", None),
    }


def info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", help="a local checkpoint directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def info(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    try:
        source_type = read_config_dict(directory)["model_type"]
        vla = load_model(directory)
    except ModelLoadError as exc:
        print(f"wamdiff2 model info: {exc}", file=sys.stderr)
        return 2
    facts = describe(vla)
    facts["model_type"] = source_type
    if args.json:
        print(json.dumps(facts, sort_keys=True))
    else:
        width = max(len(k) for k in facts)
        for key, value in facts.items():
            print(f"{key:<{width}}  {value}")
    return 0
