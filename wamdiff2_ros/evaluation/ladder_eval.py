"""The ladder's scoring run: held-out scores of the rows' checkpoints into docs/results.json, then docs/RESULTS.md.

``python -m wamdiff2_ros.evaluation.ladder_eval --runs runs --heldout runs/data/synth-heldout``
evaluates the rows (``docs/runs/index.yaml``) whose checkpoints exist and are not scored
yet (:mod:`wamdiff2_ros.evaluation.ladder`; scores kept in ``docs/results.json``, the
runs' records archived in ``docs/runs/``), then draws the plots and (``--out``) writes the
page (:mod:`wamdiff2_ros.evaluation.ladder_report`). ``--final KEY ...`` scores rows on
every held-out sample and ``--final-speed N`` times them interleaved: the footing the
issue's targets are judged on.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.evaluation.ladder import (
    constant_velocity_l2,
    evaluate_model,
    heldout_rows,
    pick,
    speed_comparison,
    update_store,
)
from wamdiff2_ros.evaluation.ladder_index import INDEX, LadderIndex, Row, load_index
from wamdiff2_ros.evaluation.ladder_report import (
    FINAL,
    markdown_table,
    plot_results,
    plot_training,
    threads_text,
    write_markdown,
)
from wamdiff2_ros.evaluation.run_records import archive_runs
from wamdiff2_ros.model.loader import ModelLoadError, load_model


def _on_disk(runs: Path, rows: Sequence[Row], index: LadderIndex) -> dict[str, tuple[str, int]]:
    """``{speed label or key: (checkpoint dir, B)}`` of the rows whose checkpoint is under ``runs``."""
    return {index.speed_labels.get(r.key, r.key): (str(runs / r.checkpoint), r.block_size) for r in rows
            if (runs / r.checkpoint / "config.json").is_file()}


def _load(runs: Path, row: Row) -> Any:
    """The row's model, or None (with a message) when its checkpoint is missing or broken."""
    path = runs / row.checkpoint
    if not (path / "config.json").is_file():
        print(f"skip {row.key}: no checkpoint at {path}")
        return None
    try:
        return load_model(path, block_size=row.block_size)
    except ModelLoadError as exc:
        print(f"skip {row.key}: {exc}", file=sys.stderr)
        return None


def _score(vla: Any, samples: dict[str, list[dict[str, Any]]], row: Row, runs: Path) -> dict[str, Any]:
    start = time.perf_counter()
    result = evaluate_model(vla, samples, row.block_size)
    result.pop("per_sample", None)  # results.json keeps aggregates
    result["eval_wall_s"] = time.perf_counter() - start
    result["checkpoint"] = str(runs / row.checkpoint)
    print(f"{row.key}: L2 {result['planning_l2']:.3f}  parsed {result['planning_parse_rate']:.2f}  "
          f"QA {result['qa_accuracy']:.2f}  mAP {result['detection_map']:.3f}  "
          f"{result['decode_tokens_per_second']:.1f} tok/s  {result['tokens_per_forward']:.2f} tok/fwd")
    return result


def _time(names: dict[str, tuple[str, int]], prompts: list[dict[str, Any]],
          threads: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Interleaved decode speed of ``names`` on ``prompts``, one table per torch thread count."""
    tables = {}
    for count in threads:
        torch.set_num_threads(count)
        tables[str(count)] = speed_comparison(names, prompts)
        print(f"speed, {threads_text(str(count))}: " + ", ".join(
            f"{k} {v['decode_tokens_per_second']:.1f} tok/s" for k, v in tables[str(count)].items()))
    torch.set_num_threads(1)
    return tables


def _final_rows(results: dict[str, Any]) -> dict[str, Any]:
    """The every-sample table's rows (empty when none were scored yet)."""
    return (results.get(FINAL) or {}).get("rows", {})


def _put(results: dict[str, Any], *, final: bool, key: str, value: dict[str, Any]) -> None:
    """Store one row's scores in the ladder table or (``final``) in the every-sample table."""
    table = results.setdefault(FINAL, {}).setdefault("rows", {}) if final else results
    table[key] = value


def _put_speed(results: dict[str, Any], *, tables: dict[str, Any]) -> None:
    """The ladder's interleaved speed tables (replacing the single-thread table of older stores)."""
    results["_speed_threads"] = tables
    results.pop("_speed", None)


def _put_final_speed(results: dict[str, Any], *, tables: dict[str, Any], prompts: int) -> None:
    results.setdefault(FINAL, {}).update(speed_threads=tables, speed_prompts=prompts, speed_sample="spread")


def _score_rows(rows: Sequence[Row], results: dict[str, Any], store: Path, runs: Path,
                samples: Callable[[], dict[str, list[dict[str, Any]]]], *, final: bool, force: bool) -> dict[str, Any]:
    """Score each row not yet in its table (all with ``force``) whose checkpoint loads; returns the new store."""
    for row in rows:
        done = _final_rows(results) if final else results
        if row.key in done and not force:
            continue
        vla = _load(runs, row)
        if vla is None:
            continue
        result = _score(vla, samples(), row, runs)
        results = update_store(store, functools.partial(_put, final=final, key=row.key, value=result))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.ladder_eval",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="folder holding the ladder's output dirs")
    parser.add_argument("--heldout", default="runs/data/synth-heldout", help="held-out synthetic dataset root")
    parser.add_argument("--limit", type=int, default=30, help="samples per task")
    parser.add_argument("--only", nargs="*", default=None, help="row keys to (re)evaluate")
    parser.add_argument("--force", action="store_true", help="re-evaluate rows already in results.json")
    parser.add_argument("--out", default=None, help="write the markdown table here (e.g. docs/RESULTS.md)")
    parser.add_argument("--images", default="docs/images")
    parser.add_argument("--speed", type=int, default=0, help="also time AR vs B=32 interleaved on this many planning prompts, spread evenly")
    parser.add_argument("--speed-threads", default="1", help="comma-separated torch thread counts for --speed")
    parser.add_argument("--final", nargs="*", default=None,
                        help="row keys to score on every held-out sample (the footing the targets are judged on)")
    parser.add_argument("--final-speed", type=int, default=0,
                        help="time the --final table's rows interleaved on this many planning prompts, spread evenly over the split")
    parser.add_argument("--store", default="docs/results.json", help="the scores (kept in the repository)")
    parser.add_argument("--archive", default=None, help="where runs' records are kept (default: docs/runs)")
    parser.add_argument("--index", default=str(INDEX), help="the run registry (rows, runs, plots)")
    args = parser.parse_args(argv)

    index = load_index(args.index)
    unknown = [key for key in args.final or [] if key not in index.row_keys()]
    if unknown:
        print(f"error: --final {unknown[0]}: no such row (one of {', '.join(index.row_keys())})", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    runs = Path(args.runs)
    store = Path(args.store)
    archive = Path(args.archive) if args.archive else None
    copied = archive_runs(runs, index.all_runs, archive)
    if copied:
        print(f"archived the record of {len(copied)} runs: {', '.join(copied)}")
    results = update_store(store, lambda r: None)
    held: list[dict[str, Any]] | None = None

    def heldout() -> list[dict[str, Any]]:
        nonlocal held
        if held is None:
            on_disk = list(_on_disk(runs, index.rows, index).values())
            if not on_disk:
                raise SystemExit(f"error: no checkpoint of the table under {runs}")
            held = heldout_rows(load_model(on_disk[0][0]), args.heldout, runs / "cache")
        return held

    ladder = [row for row in index.rows if args.only is None or row.key in args.only]
    results = _score_rows(ladder, results, store, runs, lambda: pick(heldout(), args.limit), final=False,
                          force=args.force)
    results = _score_rows([index.row(key) for key in args.final or []], results, store, runs,
                          lambda: pick(heldout(), 0), final=True, force=args.force)
    threads = [int(t) for t in args.speed_threads.split(",") if t.strip()]
    if args.speed and "ar" in results:
        timed = [k for k in index.speed_labels if k in results]
        names = _on_disk(runs, [index.row(k) for k in timed], index)
        lost = [k for k in timed if index.speed_labels[k] not in names]
        if lost and not args.force:
            print(f"--speed skipped: no checkpoint for {', '.join(lost)} (--force times the rest alone)")
        else:
            tables = _time(names, pick(heldout(), args.speed)["planning"], threads)
            results = update_store(store, functools.partial(_put_speed, tables=tables))
    if args.final_speed:
        final_keys = [k for k in index.speed_labels if k in _final_rows(results)]
        names = _on_disk(runs, [index.row(k) for k in final_keys], index)
        prompts = pick(heldout(), args.final_speed)["planning"]
        tables = _time(names, prompts, threads)
        results = update_store(store, functools.partial(_put_final_speed, tables=tables, prompts=len(prompts)))
    if "_constant_velocity_l2" not in results and held is not None:
        cv = constant_velocity_l2(pick(held, args.limit))
        results = update_store(store, lambda r: r.__setitem__("_constant_velocity_l2", cv))
    table = {k: v for k, v in results.items() if not k.startswith("_")}
    print(markdown_table(table, index))
    images = Path(args.images)
    plot_results(table, images, index)
    plot_training(runs, images, archive, index)
    if args.out:
        write_markdown(results, runs, Path(args.out), args.limit, images, archive, index)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
