"""Ship a row of the paper table (``docs/runs/paper.yaml``) into ``checkpoints/`` with a model card.

The card (:mod:`wamdiff2_ros.evaluation.paper_card`) lists the row's exact lineage with its
compute, the teacher's own lineage where the row was distilled, the recipe commands, and the
row's scores on a split from the paper table's store. The lineage's run records
(``train_config.json``, ``train_summary.json``, a thinned loss log) are archived into
``docs/runs/paper/<run>/`` so the card, the compute column and the equal-compute budget
outlive ``runs/``. A row that names its own ``threshold`` ships it as the checkpoint's decode
default (``generation_config.json``, read by drive_node and the closed-loop benchmark)::

    python -m wamdiff2_ros.training.ship_paper --row mid-b32 --name wamdiff2-mid-b32 --split val
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from wamdiff2_ros.evaluation import paper_card
from wamdiff2_ros.evaluation.paper_table import end_in_order_tasks, load_registry, read_store, reuse_kv_tasks, row_of
from wamdiff2_ros.evaluation.run_records import archive_runs
from wamdiff2_ros.model.checkpoints import write_own_threshold
from wamdiff2_ros.training.ship import copy_model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", required=True, help="row key in the registry")
    parser.add_argument("--name", required=True, help="checkpoint folder name under --out")
    parser.add_argument("--runs", default="runs/paper")
    parser.add_argument("--registry", default="docs/runs/paper.yaml")
    parser.add_argument("--store", default="docs/results_paper.json")
    parser.add_argument("--split", default="val", help="whose scores the card shows")
    parser.add_argument("--out", default="checkpoints")
    args = parser.parse_args(argv)
    registry = load_registry(args.registry)
    try:
        row = row_of(registry, args.row)
    except KeyError:
        print(f"error: no row {args.row!r} in {args.registry}", file=sys.stderr)
        return 2
    runs = Path(args.runs)
    store = read_store(Path(args.store)) if Path(args.store).is_file() else {}
    archive_runs(runs, [*row["lineage"], *(row.get("teacher_lineage") or [])], paper_card.ARCHIVE)
    dst = copy_model(runs / row["run"], Path(args.out) / args.name)
    if row.get("threshold") is not None:  # the row's decode threshold becomes the checkpoint's own default
        write_own_threshold(dst, float(row["threshold"]), row.get("task_thresholds"), end_in_order_tasks(row),
                            reuse_kv_tasks(row))
    (dst / "README.md").write_text(paper_card.card(args.name, row, registry, runs, store, args.split, dst))
    print(f"{dst}: {sum(p.stat().st_size for p in dst.iterdir()) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
