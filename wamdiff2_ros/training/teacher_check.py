"""Is a distillation teacher stronger than its student? Masked-token accuracy and NLL on held-out answers.

Stage II (a B/2 teacher) and Stage III (a larger teacher) move the student toward its
teacher, so the teacher must predict the data better than the student on the very
states the student is trained on. :func:`masked_scores` builds those states as the
distillation objective does (each answer padded to the student's whole blocks, one
noise level per block, a fixed seed) and reads every model on the same noisy tokens,
each at its own block size. Per sample it gives the share of masked positions whose
argmax is the data's token and the mean negative log-likelihood there; :func:`compare`
pairs each model with the student (bootstrap 95 % interval of the mean difference).

    python -m wamdiff2_ros.training.teacher_check --student runs/paper8/tiny-b32 \\
        --model t16=runs/s2t/t16:16 --split runs/data/synth-val-l10 --plan-style cv1 --json out.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from wamdiff2_ros.evaluation.stats import paired_bootstrap
from wamdiff2_ros.model.forward import diffusion_forward
from wamdiff2_ros.training.dataset import collate
from wamdiff2_ros.training.objectives import noisy_responses


def masked_scores(models: dict[str, tuple[Any, int]], rows: Sequence[dict[str, Any]], block_size: int, *,
                  seed: int = 1234, batch_size: int = 8, progress: bool = False) -> dict[str, dict[str, list[float]]]:
    """``{name: {"acc": [...], "nll": [...]}}`` per row: every model (``name: (vla, its block size)``) on one noise draw.

    The noisy states are built at ``block_size`` (the student's) with the first model's
    mask and end tokens; every model must share the tokenizer.
    """
    if not models:
        raise ValueError("no models to score")
    reference = next(iter(models.values()))[0]
    for name, (_, own) in models.items():
        if block_size % own:
            raise ValueError(f"{name}: block size {own} must divide the student's {block_size}")
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, dict[str, list[float]]] = {name: {"acc": [], "nll": []} for name in models}
    starts = range(0, len(rows), batch_size)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="teacher check", unit="batch")
    for start in starts:
        prompts, responses = collate(rows[start : start + batch_size])
        clean, noisy, _, masked, _ = noisy_responses(reference, responses, block_size, generator)
        for name, (vla, own) in models.items():
            with torch.no_grad():
                logits = diffusion_forward(vla, list(prompts), clean, noisy, block_size=own).float().cpu()
            nll = F.cross_entropy(logits.transpose(1, 2), clean, reduction="none")
            count = masked.sum(1).double()  # 0 masked positions: 0 / 0 = NaN
            out[name]["acc"] += (((logits.argmax(-1) == clean) & masked).sum(1).double() / count).tolist()
            out[name]["nll"] += ((nll.double() * masked).sum(1) / count).tolist()
    return out


def compare(scores: dict[str, dict[str, list[float]]], student: str, tasks: Sequence[str] | None = None,
            seed: int = 0) -> dict[str, Any]:
    """Per model: mean accuracy and NLL, and (other models) the paired difference to ``student`` with a 95 % interval.

    Samples with no masked position (NaN) are left out of every model alike; ``tasks``
    (one per sample) adds the mean accuracy per task.
    """
    keep = [i for i, a in enumerate(scores[student]["acc"]) if a == a]
    result: dict[str, Any] = {"samples": len(keep), "student": student, "models": {}}
    for name, s in scores.items():
        acc = [s["acc"][i] for i in keep]
        nll = [s["nll"][i] for i in keep]
        row: dict[str, Any] = {"masked_acc": sum(acc) / len(acc), "masked_nll": sum(nll) / len(nll)}
        if tasks is not None:
            row["masked_acc_by_task"] = {
                t: sum(acc[j] for j, i in enumerate(keep) if tasks[i] == t) / n
                for t in sorted(set(tasks)) if (n := sum(1 for i in keep if tasks[i] == t))
            }
        if name != student:
            diff = [s["acc"][i] - scores[student]["acc"][i] for i in keep]
            b = paired_bootstrap(diff, seed=seed)
            row["acc_minus_student"] = {"mean": b["mean"], "ci95": [b["low"], b["high"]]}
        result["models"][name] = row
    return result


def _model_arg(text: str) -> tuple[str, str, int]:
    """``NAME=DIR:B`` -> (name, dir, block size)."""
    name, _, rest = text.partition("=")
    path, _, block = rest.rpartition(":")
    if not name or not path or not block.isdigit():
        raise argparse.ArgumentTypeError(f"--model wants NAME=DIR:BLOCK_SIZE, got {text!r}")
    return name, path, int(block)


def main(argv: Sequence[str] | None = None) -> int:
    from wamdiff2_ros.data.tokenized import DataConfig, TokenizedDataset
    from wamdiff2_ros.model.loader import load_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--student", required=True, help="the student's checkpoint (read at --block-size)")
    ap.add_argument("--model", action="append", type=_model_arg, default=[], help="NAME=DIR:BLOCK_SIZE (repeatable)")
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--split", required=True, help="a dataset root (navsim_logs/, sensor_blobs/)")
    ap.add_argument("--plan-style", default="plain")
    ap.add_argument("--cameras", default="CAM_F0")
    ap.add_argument("--cache", default="", help="tokenised-sample cache folder")
    ap.add_argument("--seed", type=int, default=1234, help="the noise draw")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    student = load_model(args.student, block_size=args.block_size)
    models = {"student": (student, args.block_size)}
    for name, path, block in args.model:
        models[name] = (load_model(path, block_size=block), block)
    data = DataConfig(logs_dir=args.split, cameras=args.cameras.split(","),
                      plan_style=args.plan_style, understanding_per_scene=1, seed=1)
    dataset = TokenizedDataset.build(data, student, args.cache or None, progress=True)
    rows = dataset.rows
    result = compare(masked_scores(models, rows, args.block_size, seed=args.seed, progress=True), "student",
                     tasks=[r["task"] for r in rows])
    result.update(split=args.split, block_size=args.block_size, noise_seed=args.seed,
                  checkpoints={"student": args.student, **{n: p for n, p, _ in args.model}})
    print(f"{result['samples']} samples, noisy states at B={args.block_size}")
    print("| model | masked acc | masked NLL | acc - student [95 %] |\n|---|---|---|---|")
    for name, row in result["models"].items():
        d = row.get("acc_minus_student")
        diff = f"{d['mean']:+.4f} [{d['ci95'][0]:+.4f}, {d['ci95'][1]:+.4f}]" if d else "-"
        print(f"| {name} | {row['masked_acc']:.4f} | {row['masked_nll']:.4f} | {diff} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
