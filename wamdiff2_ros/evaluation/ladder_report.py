"""docs/RESULTS.md and the shipped model cards, from the scores stores and the records alone (no model, no runs/).

The page is ``docs/templates/results.md`` filled with the paper table (the test and validation
splits of ``docs/results_paper.json``, rows in ``docs/runs/paper.yaml``), then the earlier
ladder: the tables of ``docs/results.json``
(the held-out table, the interleaved speed tables, the issue's targets, the every-sample
final comparison), the closed-loop section (``docs/closed_loop/closed_loop.json``), the
training table (the runs' records, ``docs/runs/``) and the plots under ``docs/images``.
Which ladder rows, runs and plots: ``docs/runs/index.yaml``; the shipped cards are the paper
rows under ``shipped:`` in ``docs/runs/paper.yaml`` (:mod:`~wamdiff2_ros.evaluation.paper_card`)
plus any ladder card of the index. Scoring: :mod:`~wamdiff2_ros.evaluation.paper_table` and
:mod:`~wamdiff2_ros.evaluation.ladder_eval`. Rebuild the page and the cards, byte for byte
what the stores and the records give::

    python -m wamdiff2_ros.evaluation.ladder_report          # --out DIR writes DIR/docs/..., DIR/checkpoints/...
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wamdiff2_ros.evaluation import ladder_cards, paper_card, paper_table
from wamdiff2_ros.evaluation.closed_loop import report as closed_loop_report
from wamdiff2_ros.evaluation.ladder_index import INDEX, LadderIndex, load_index
from wamdiff2_ros.evaluation.loss_curves import plot_ladder, pyplot
from wamdiff2_ros.evaluation.markdown_template import fill, read_template
from wamdiff2_ros.evaluation.run_records import ARCHIVE, LOG_FILE, read_json, read_log, run_file

REPO = ARCHIVE.parents[1]
CHECKPOINTS = REPO / "checkpoints"  # the shipped folders (their generation_config names their world rules)
PAPER_STORE = REPO / "docs" / "results_paper.json"
PAPER_SPLITS = ("test", "val")  # the headline split first, then the one every choice was made on
REPLICATION_SPLIT = "rep"  # the shipped pair on a split nothing was chosen on (docs/runs/paper.yaml, replication)
FINAL = "_final"  # rows scored again on every held-out sample, timed together: the targets' footing


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(results: dict[str, dict[str, Any]], index: LadderIndex | None = None) -> str:
    """The held-out table: one line per row of the index that ``results`` scored."""
    index = index or load_index()
    lines = [
        "| model | B | planning L2 avg 1-4 s (m) | plans parsed | QA accuracy | detection mAP (COCO) |"
        " decode tokens/s | tokens / forward |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in index.rows:
        r = results.get(row.key)
        if r is None:
            continue
        lines.append(
            f"| {row.label} | {row.block_size} | {_fmt(r['planning_l2'])} | {_fmt(r['planning_parse_rate'], 2)} |"
            f" {_fmt(r['qa_accuracy'], 2)} | {_fmt(r['detection_map'])} | {_fmt(r['decode_tokens_per_second'], 1)} |"
            f" {_fmt(r['tokens_per_forward'], 2)} |"
        )
    return "\n".join(lines)


def scores_by_row(results: dict[str, Any]) -> dict[str, Any]:
    """The store's rows, the every-sample scores in place of the ladder table's where both exist (the cards')."""
    return {**results, **(results.get(FINAL) or {}).get("rows", {})}


def plot_results(results: dict[str, dict[str, Any]], images: Path, index: LadderIndex | None = None) -> list[Path]:
    """tokens/s and L2 per row (bar charts) under ``images``."""
    index = index or load_index()
    rows = [r for r in index.rows if r.key in results and r.key not in index.results_plot_skip]
    if not rows:
        return []
    plt = pyplot()
    names = [r.key for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].bar(names, [results[r.key]["decode_tokens_per_second"] for r in rows], color="tab:blue")
    axes[0].set_ylabel("decode tokens/s (CPU, fast engine)")
    axes[1].bar(names, [results[r.key]["planning_l2"] for r in rows], color="tab:orange")
    axes[1].set_ylabel("planning L2 avg 1-4 s (m)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30, labelsize=7)
    fig.tight_layout()
    images.mkdir(parents=True, exist_ok=True)
    path = images / index.results_plot
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def plot_training(runs: Path, images: Path, archive: Path | None = None, index: LadderIndex | None = None) -> list[Path]:
    """The loss plots of the index (the tiny ladder, the small teacher's, v2 ... in sequence or side by side)."""
    index = index or load_index()
    out = []
    for plot in index.plots:
        logs = {n: read_log(path) if (path := run_file(runs, n, LOG_FILE, archive)) else []
                for n in index.expand(plot.runs)}
        if any(logs.values()):
            out.append(plot_ladder(logs, images / plot.file, title=plot.title, overlay=plot.overlay, key=plot.key))
    return out


def _stage_table(runs: Path, index: LadderIndex, archive: Path | None = None) -> str:
    lines = ["| run | stage | B | steps | wall time (min) | final loss |", "|---|---|---|---|---|---|"]
    for name in index.expand(index.stage_table):
        s = read_json(runs, name, "train_summary.json", archive)
        if not s:
            continue
        lines.append(f"| {name} | {s.get('stage', '-')} | {s.get('block_size', '-')} | {s.get('steps', '-')} |"
                     f" {s.get('wall_time_s', float('nan')) / 60:.1f} | {s.get('final_loss', float('nan')):.4f} |")
    return "\n".join(lines)


def threads_text(count: str) -> str:
    return f"{count} thread{'s' * (count != '1')}"


def _speed_tables(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Interleaved speed tables by torch thread count (an older results.json's ``_speed`` is the 1-thread table)."""
    tables = dict(results.get("_speed_threads") or {})
    if not tables and results.get("_speed"):
        tables["1"] = results["_speed"]
    return tables


def _targets(results: dict[str, Any], index: LadderIndex | None = None) -> list[str]:
    """The issue's two targets for each B=32 row, judged only where the numbers can carry them."""
    index = index or load_index()
    base_key = next((key for key in index.baselines if key in results), None)
    if base_key is None:
        return []
    ar = results[base_key]
    base_speed = index.speed_labels[base_key]
    shipped = " (now shipped as the generalist stage 0 starts from)" if any(c.row == base_key for c in index.cards) else ""
    out = [f"Baseline: {index.row(base_key).label}{shipped}.", ""]
    for key in index.targets:
        r = results.get(key)
        if r is None:
            continue
        label = index.row(key).label
        if not r["planning_parse_rate"] or not ar["planning_parse_rate"]:
            l2_text = (f"L2 target not judged: plans parsed {r['planning_parse_rate']:.2f} (B=32) vs"
                       f" {ar['planning_parse_rate']:.2f} (AR), so an L2 is mostly the fallback's")
        else:
            ratio = r["planning_l2"] / ar["planning_l2"]
            l2_text = (f"L2 {ratio:.2f}x the AR baseline's (target <= 1.10: {'met' if ratio <= 1.10 else 'not met'};"
                       f" plans parsed {r['planning_parse_rate']:.2f} vs {ar['planning_parse_rate']:.2f})")
        ratios = []
        for threads, table in _speed_tables(results).items():
            if index.speed_labels[key] in table and base_speed in table:
                ratio = (table[index.speed_labels[key]]["decode_tokens_per_second"]
                         / table[base_speed]["decode_tokens_per_second"])
                ratios.append(f"{ratio:.2f}x AR's (interleaved timing, {threads_text(threads)};"
                              f" target >= 3: {'met' if ratio >= 3 else 'not met'})")
        if not ratios:
            ratio = r["decode_tokens_per_second"] / ar["decode_tokens_per_second"]
            ratios.append(f"{ratio:.2f}x AR's (per-row timing; target >= 3: {'met' if ratio >= 3 else 'not met'})")
        out.append(f"- {label}: {l2_text}; decode tokens/s {', '.join(ratios)}.")
    return out


def _speed_lines(tables: dict[str, dict[str, Any]]) -> list[str]:
    """One decode tokens/s column per torch thread count, tokens / forward from the first."""
    if not tables:
        return []
    counts = list(tables)
    lines = ["| model | " + " | ".join(f"decode tokens/s, {threads_text(c)}" for c in counts) + " | tokens / forward |",
             "|---|" + "---|" * (len(counts) + 1)]
    for label in tables[counts[0]]:
        cells = [f"{tables[c][label]['decode_tokens_per_second']:.1f}" if label in tables[c] else "-" for c in counts]
        lines.append(f"| {label} | {' | '.join(cells)} | {tables[counts[0]][label]['tokens_per_forward']:.2f} |")
    return [*lines, ""]


def _speed_sample(final: dict[str, Any]) -> str:
    """How the timed prompts were chosen: spread evenly over the split (since v5) or its first N (before)."""
    if "speed_prompts" not in final:
        return ""
    count = final["speed_prompts"]
    if final.get("speed_sample") == "spread":
        return f" ({count} prompts spread evenly over the split)"
    return f" (the split's first {count} prompts, frames of one scene)"


def _final_section(results: dict[str, Any], index: LadderIndex) -> list[str]:
    """The rows scored on every held-out sample and timed together, with the targets judged on them."""
    final = results.get(FINAL) or {}
    rows, tables = final.get("rows") or {}, final.get("speed_threads") or {}
    if not rows:
        return []
    samples = next(iter(rows.values())).get("samples", {})
    text = ["## Final comparison: every held-out sample", "",
            "The checkpoints still on disk scored again on the whole held-out split ("
            + ", ".join(f"{n} {task}" for task, n in samples.items()) + " samples; the table above uses at most"
            " 50 per task and its planning L2 moves by several percent between subsets), then timed interleaved on"
            f" the same planning prompts{_speed_sample(final)}."
            " The issue's targets are judged on this footing.", "",
            markdown_table(rows, index), "", *_speed_lines(tables)]
    targets = _targets({**rows, "_speed_threads": tables}, index)
    if targets:
        text += ["### Targets of the issue (this table)", "", *targets, ""]
    return text


def _closed_loop_section(folder: Path, title: str = "Closed-loop benchmark") -> list[str]:
    """The closed-loop table of ``folder/closed_loop.json`` (``wamdiff2 eval closed-loop``), when it exists."""
    source = folder / "closed_loop.json"
    if not source.is_file():
        return []
    data = json.loads(source.read_text())
    plots = f"[{folder.name}/report.md]({folder.name}/report.md)"
    return [*closed_loop_report.summary_lines(data, level=2, plots=plots, title=title), ""]


def _replication_section(paper: dict[str, Any] | None, docs: Path) -> list[str]:
    """The shipped pair on the replication split and the closed loop on its unseen routes, when measured."""
    text = []
    if paper and REPLICATION_SPLIT in paper["store"]:
        path = (paper["store"][REPLICATION_SPLIT].get("_split") or {}).get("path", REPLICATION_SPLIT)
        title = f"Replication: the shipped pair on an unseen split (`{path}`)"
        text += [paper_table.markdown(paper["store"], paper["registry"], REPLICATION_SPLIT, title=title,
                                      scored_only=True).rstrip("\n"), ""]
    return text + _closed_loop_section(docs / "closed_loop_rep", "Replication: the closed loop on unseen routes")


def _paper_section(paper: dict[str, Any] | None, images: Path, docs: Path) -> list[str]:
    """The paper table of every split the paper store holds (test first, each with its figure
    ``images/paper_<split>.png`` when drawn: ``evaluation.paper_plot``), or a line saying it is not scored."""
    if not paper:
        return []
    store, registry = paper["store"], paper["registry"]
    text = []
    for split in PAPER_SPLITS:
        if split in store:
            text += [paper_table.markdown(store, registry, split).rstrip("\n"), ""]
            figure = images / f"paper_{split}.png"
            if figure.is_file():
                link = figure.relative_to(docs) if figure.is_relative_to(docs) else figure
                text += [f"![the paper table on the {split} split]({link})", ""]
    if not text:
        text = ["Not scored yet.", ""]
    return text


def render_results(results: dict[str, Any], runs: Path, docs: Path, limit: int, images: Path,
                   archive: Path | None = None, index: LadderIndex | None = None,
                   paper: dict[str, Any] | None = None) -> str:
    """The text of RESULTS.md in folder ``docs`` (its links and closed-loop section are relative to that folder)."""
    index = index or load_index()

    def rel(p: Path) -> Path:
        return p.relative_to(docs) if p.is_relative_to(docs) else p

    speed = []
    if tables := _speed_tables(results):
        speed = ["Decode speed measured again with the models interleaved on the same planning prompts"
                 " (`speed_comparison`, less sensitive to the machine's load than the per-row numbers above),"
                 " with 1 torch thread and with both cores where measured:", "", *_speed_lines(tables)]
    constant_velocity = []
    if "_constant_velocity_l2" in results:
        constant_velocity = [f"Reference without a model: the constant-velocity plan scores L2"
                             f" {results['_constant_velocity_l2']:.3f} m on the same planning samples.", ""]
    targets = []
    if judged := _targets(results, index):
        targets = [f"## Targets of the issue on the table above ({limit} samples per task)", "", *judged, ""]
    figures = []
    for name in (*(plot.file for plot in index.plots), index.results_plot):
        if (images / name).is_file():
            figures += ["", f"![{name}]({rel(images / name)})"]
    return fill(read_template("results.md"), {
        "limit": str(limit), "held_out_table": markdown_table(results, index), "speed": speed,
        "constant_velocity": constant_velocity, "targets": targets, "final": _final_section(results, index),
        "paper": _paper_section(paper, images, docs), "replication": _replication_section(paper, docs),
        "closed_loop": _closed_loop_section(docs / "closed_loop"), "stage_table": _stage_table(runs, index, archive),
        "images": figures,
    })


def write_markdown(results: dict[str, Any], runs: Path, path: Path, limit: int, images: Path,
                   archive: Path | None = None, index: LadderIndex | None = None) -> Path:
    """docs/RESULTS.md: the setup, the per-stage training table, the results table, targets and plots."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_results(results, runs, path.parent, limit, images, archive, index))
    return path


def render_cards(results: dict[str, Any], runs: Path, archive: Path | None = None,
                 index: LadderIndex | None = None, paper: dict[str, Any] | None = None) -> dict[str, str]:
    """``{checkpoint name: README.md text}`` of every ladder card in the index and every shipped paper row."""
    index = index or load_index()
    scores = scores_by_row(results)
    cards = {c.name: ladder_cards.card(c.name, c.run, runs, scores.get(c.row), ladder_cards.description(index, c),
                                       index, archive) for c in index.cards}
    if paper:
        registry = paper["registry"]
        for ship in registry.get("shipped") or []:
            cards[ship["name"]] = paper_card.card(ship["name"], paper_table.row_of(registry, ship["row"]), registry,
                                                  paper["runs"], paper["store"], ship["split"],
                                                  paper.get("checkpoints", CHECKPOINTS) / ship["name"])
    return cards


def load_paper(store: Path, registry: Path, runs: Path) -> dict[str, Any]:
    """What the paper section and the paper cards read: the store, the rows and where the run records are."""
    return {"store": paper_table.read_store(store), "registry": paper_table.load_registry(registry), "runs": runs}


def rebuild(store: Path, out: Path, *, index: LadderIndex, docs: Path, archive: Path, runs: Path | None = None,
            limit: int | None = None, paper: dict[str, Any] | None = None) -> list[Path]:
    """Write ``out/docs/RESULTS.md`` and ``out/checkpoints/<name>/README.md`` from the store and the records.

    ``docs``: the repository's docs folder (images, closed-loop results); records are read from ``runs``
    first when given, else from ``archive`` alone.
    """
    results = json.loads(store.read_text())
    runs = runs or archive
    page = out / "docs" / "RESULTS.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_results(results, runs, docs, index.limit if limit is None else limit, docs / "images",
                                   archive, index, paper))
    written = [page]
    for name, text in render_cards(results, runs, archive, index, paper).items():
        path = out / "checkpoints" / name / "README.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.ladder_report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=str(REPO / "docs" / "results.json"), help="the scores")
    parser.add_argument("--index", default=str(INDEX), help="the run registry")
    parser.add_argument("--archive", default=str(ARCHIVE), help="the runs' records")
    parser.add_argument("--runs", default=None, help="read records from this runs folder first (default: the archive only)")
    parser.add_argument("--limit", type=int, default=None, help="samples per task of the held-out table (default: the index's)")
    parser.add_argument("--out", default=str(REPO), help="write DIR/docs/RESULTS.md and DIR/checkpoints/<card>/README.md")
    parser.add_argument("--paper-store", default=str(PAPER_STORE), help="the paper table's per-sample records")
    parser.add_argument("--paper-registry", default=str(REPO / paper_table.REGISTRY), help="the paper table's rows")
    parser.add_argument("--paper-runs", default=None,
                        help="read the paper runs' records from this folder first (default: their archive only)")
    args = parser.parse_args(argv)
    paper_runs = Path(args.paper_runs) if args.paper_runs else REPO / paper_card.ARCHIVE
    paper = load_paper(Path(args.paper_store), Path(args.paper_registry), paper_runs)
    written = rebuild(Path(args.store), Path(args.out), index=load_index(args.index), docs=REPO / "docs",
                      archive=Path(args.archive), runs=Path(args.runs) if args.runs else None, limit=args.limit,
                      paper=paper)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
