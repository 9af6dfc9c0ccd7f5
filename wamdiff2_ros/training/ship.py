"""Copy trained models into ``checkpoints/`` (model, tokenizer, processor files only) with their model cards.

``python -m wamdiff2_ros.training.ship --runs runs`` copies the shipped runs of
``docs/runs/index.yaml`` (``RUNS/tiny-ar-long`` to ``checkpoints/wamdiff2-tiny-ar``, the
B=32 student to ``checkpoints/wamdiff2-tiny-b32``) and writes each a README.md card
(:mod:`wamdiff2_ros.evaluation.ladder_cards`: the stages that made it, its held-out
scores). ``--ar``/``--student`` (and their ``--*-key`` rows) ship other runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from wamdiff2_ros.evaluation import ladder_cards
from wamdiff2_ros.evaluation.ladder_index import INDEX, load_index
from wamdiff2_ros.evaluation.ladder_report import scores_by_row
from wamdiff2_ros.evaluation.run_records import read_json
from wamdiff2_ros.training.config import load_config

MODEL_FILES = (
    "config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
    "chat_template.jinja", "preprocessor_config.json", "video_preprocessor_config.json",
)
# The index's cards that --ar / --student (with --ar-key / --student-key) replace the run (row) of. The ladder ships
# only the generalist now; the AR baseline and the student are paper rows (training.ship_paper).
AR_CARD, STUDENT_CARD = "wamdiff2-tiny-generalist", "wamdiff2-tiny-b32"


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
    """The exact training command of a run trained by this code: its config file plus the overrides it was started with.

    (The shipped ladder's cards compare against the defaults its runs were trained under, from the index.)
    """
    base_file = ladder_cards.CONFIG_DIR / config
    base = dataclasses.asdict(load_config(base_file)) if base_file.is_file() else None
    return ladder_cards.train_command(sub, config, read_json(runs, run, "train_config.json"), base)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs")
    parser.add_argument("--results", default="docs/results.json",
                        help="the scores store of evaluation.ladder_eval (cards show the every-sample scores when present)")
    parser.add_argument("--index", default=str(INDEX), help="the run registry: which runs are shipped, their lineage")
    parser.add_argument("--student", default=None, help="run folder of the shipped B=32 student (default: the index's)")
    parser.add_argument("--student-key", default=None, help="its row key in results.json (default: the index's)")
    parser.add_argument("--ar", default=None, help="run folder of the shipped AR generalist (default: the index's)")
    parser.add_argument("--ar-key", default=None, help="its row key in results.json (default: the index's)")
    parser.add_argument("--note", default=None, help="extra sentence for both cards (default: the index's note)")
    parser.add_argument("--out", default="checkpoints")
    args = parser.parse_args(argv)
    runs, out = Path(args.runs), Path(args.out)
    index = load_index(args.index)
    results = json.loads(Path(args.results).read_text()) if args.results and Path(args.results).is_file() else {}
    results = scores_by_row(results)  # every-sample scores first
    chosen = {AR_CARD: (args.ar, args.ar_key), STUDENT_CARD: (args.student, args.student_key)}
    for entry in index.cards:
        run, key = chosen.get(entry.name, (None, None))
        run, key = run or entry.run, key or entry.row
        dst = copy_model(runs / run, out / entry.name)
        description = ladder_cards.description(index, entry, run, args.note)
        (dst / "README.md").write_text(ladder_cards.card(entry.name, run, runs, results.get(key), description, index))
        size = sum(p.stat().st_size for p in dst.iterdir()) / 1e6
        print(f"{dst}: {size:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
