"""`wamdiff2 bench trace`: the commit order of one held-out answer, step by step.

Decodes one held-out sample with the reference decoder and prints which tokens every
denoise step committed and with what confidence (``?`` marks a commit below the
threshold: the single most confident position, or a fill at the step cap), next to the
true answer, plus steps per block and the share of tokens committed in parallel. This
is how to see *why* a student is slow (few sure tokens per step) or wrong (structure
committed in parallel at the wrong positions).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from wamdiff2_ros.data.tokenized import prompt_of
from wamdiff2_ros.decoding.commits import format_steps, summarize
from wamdiff2_ros.decoding.config import DecodeConfig, DecodeConfigError
from wamdiff2_ros.decoding.reference import ReferenceDecoder
from wamdiff2_ros.evaluation.ladder import heldout_rows
from wamdiff2_ros.model.loader import ModelLoadError, load_model

TASKS = ("planning", "perception", "understanding")


def trace_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="checkpoint directory")
    parser.add_argument("--heldout", default="runs/data/synth-heldout", help="held-out NAVSIM-format dataset root")
    parser.add_argument("--cache", default="runs/cache", help="where tokenised held-out samples are cached")
    parser.add_argument("--task", choices=TASKS, default="planning")
    parser.add_argument("--index", type=int, default=0, help="which sample of the task (default: 0)")
    parser.add_argument("--block-size", type=int, default=0, help="decode block size (0: the checkpoint's)")
    parser.add_argument("--threshold", type=float, default=0.9, help="confidence threshold (default: 0.9)")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--json", default=None, help="optional: write the commits and the summary here")


def trace(args: argparse.Namespace) -> int:
    if not Path(args.heldout).is_dir():
        print(f"wamdiff2 bench trace: --heldout {args.heldout} is not a directory", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    try:
        vla = load_model(args.model, block_size=args.block_size or None)
        config = DecodeConfig(block_size=vla.block_size, confidence_threshold=args.threshold,
                              max_new_tokens=args.max_new_tokens, engine="reference")
        config.validate()
    except (ModelLoadError, DecodeConfigError, ValueError) as exc:
        print(f"wamdiff2 bench trace: {exc}", file=sys.stderr)
        return 2
    rows = [r for r in heldout_rows(vla, args.heldout, args.cache) if r["task"] == args.task]
    if not 0 <= args.index < len(rows):
        print(f"wamdiff2 bench trace: --index {args.index} out of range (0..{len(rows) - 1} {args.task} samples)",
              file=sys.stderr)
        return 2
    row = rows[args.index]
    commits: list = []
    result = ReferenceDecoder(vla).generate(prompt_of(row), config, commits=commits)
    summary = summarize(commits)
    print(f"question: ...{row['question'][-100:]}")
    print(f"truth:      {row['answer']}")
    print(f"prediction: {result.texts[0]}")
    print(format_steps(commits, lambda t: vla.tokenizer.decode([t])))
    print(f"B={config.block_size}, threshold {args.threshold}: {summary['tokens']} tokens in {summary['steps']} steps "
          f"({summary['tokens_per_step']:.2f} per step), steps per block {summary['steps_per_block']}, "
          f"{summary['sure_share']:.0%} committed above the threshold, "
          f"mean confidence of the others {summary['mean_confidence_unsure']:.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"model": args.model, "task": args.task, "index": args.index,
                                               "truth": row["answer"], "prediction": result.texts[0],
                                               "summary": summary, "commits": [asdict(c) for c in commits]},
                                              indent=1) + "\n")
    return 0
