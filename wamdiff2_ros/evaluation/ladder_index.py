"""The ladder's run registry (``docs/runs/index.yaml``): its runs, the results table's rows, plots and model cards.

The file is data; this module reads and checks it. docs/RESULTS.md and the cards
(:mod:`wamdiff2_ros.evaluation.ladder_report`), the scoring run
(:mod:`wamdiff2_ros.evaluation.ladder_eval`), shipping (``training.ship``) and
``tools/reproduce.sh`` all take their run lists from it. For the shell::

    python -m wamdiff2_ros.evaluation.ladder_index --chain tiny   # "run train config after teacher" per line
    python -m wamdiff2_ros.evaluation.ladder_index --final        # the final comparison's row keys
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from wamdiff2_ros.evaluation.run_records import ARCHIVE

INDEX = ARCHIVE / "index.yaml"


@dataclass(frozen=True)
class Row:
    """One line of the table: a checkpoint under RUNS decoded at one block size."""

    key: str
    label: str
    checkpoint: str
    block_size: int


@dataclass(frozen=True)
class RunSpec:
    """How one run was trained: its phase of tools/reproduce.sh, sub-command, config file, start and teacher."""

    name: str
    phase: str
    train: str
    config: str
    after: str = ""
    teacher: str = ""


@dataclass(frozen=True)
class Plot:
    """A loss plot of RESULTS.md: ``key`` of ``runs``, one after the other or (``overlay``) side by side."""

    file: str
    runs: tuple[str, ...]
    title: str
    overlay: bool = False
    key: str = "loss"


@dataclass(frozen=True)
class Card:
    """A shipped model: ``checkpoints/<name>`` is run ``run``; its card shows row ``row``'s scores."""

    name: str
    run: str
    row: str
    description: str


@dataclass(frozen=True)
class LadderIndex:
    """The parsed, checked ``index.yaml``."""

    runs: dict[str, RunSpec]
    rows: tuple[Row, ...]
    speed_labels: dict[str, str]
    targets: tuple[str, ...]
    baselines: tuple[str, ...]
    final: tuple[str, ...]
    limit: int
    stage_table: tuple[str, ...]
    plots: tuple[Plot, ...]
    results_plot: str
    results_plot_skip: tuple[str, ...]
    cards: tuple[Card, ...]
    note: str
    train_defaults: dict[str, Any]

    @property
    def all_runs(self) -> list[str]:
        """Every run, in training order (the records the scoring run archives)."""
        return list(self.runs)

    def row(self, key: str) -> Row:
        return next(row for row in self.rows if row.key == key)

    def row_keys(self) -> list[str]:
        return [row.key for row in self.rows]

    def phase(self, name: str) -> list[str]:
        """The runs of one phase of tools/reproduce.sh, in training order."""
        return [run for run, spec in self.runs.items() if spec.phase == name]

    def expand(self, names: Iterable[str]) -> list[str]:
        """Run names, each phase name replaced by the phase's runs."""
        phases = {spec.phase for spec in self.runs.values()}
        return [run for name in names for run in (self.phase(name) if name in phases else [name])]

    def lineage(self, run: str) -> list[RunSpec]:
        """Every run ``run``'s model went through, in training order; ``[]`` for a run not in the index.

        The ``after`` chain, with the teacher's own lineage (the runs not already in it) before the run it taught.
        """
        spec = self.runs.get(run)
        if spec is None:
            return []
        out = self.lineage(spec.after) if spec.after else []
        if spec.teacher:
            out += [s for s in self.lineage(spec.teacher) if s not in out]
        return [*out, spec]


def _check(path: Path, ok: bool, why: str) -> None:
    if not ok:
        raise ValueError(f"{path}: {why}")


def load_index(path: str | Path = INDEX) -> LadderIndex:
    """Read and check the registry: every key it names is a row, every run named is a run of ``runs``."""
    path = Path(path)
    data = yaml.safe_load(path.read_text()) or {}
    runs = {name: RunSpec(name=name, **spec) for name, spec in (data.get("runs") or {}).items()}
    rows = tuple(Row(r["key"], r["label"], r["run"], int(r["block_size"])) for r in data.get("rows") or [])
    keys = [row.key for row in rows]
    _check(path, len(set(keys)) == len(keys), "a row key appears twice")
    phases = {spec.phase for spec in runs.values()}
    for spec in runs.values():
        for parent in (spec.after, spec.teacher):
            _check(path, not parent or parent in runs, f"run {spec.name}: {parent!r} is not a run")

    def known(names: Iterable[str], what: str) -> tuple[str, ...]:
        names = tuple(names)
        for name in names:
            _check(path, name in keys, f"{what}: {name!r} is not a row key")
        return names

    def runs_of(names: Iterable[str], what: str) -> tuple[str, ...]:
        names = tuple(names)
        for name in names:
            _check(path, name in runs or name in phases, f"{what}: {name!r} is neither a run nor a phase")
        return names

    cards = tuple(Card(**c) for c in data.get("cards") or [])
    for card in cards:
        known([card.row], f"card {card.name}")
        runs_of([card.run], f"card {card.name}")
    index = LadderIndex(
        runs=runs, rows=rows,
        speed_labels={k: str(v) for k, v in (data.get("speed_labels") or {}).items()},
        targets=known(data.get("targets") or [], "targets"),
        baselines=known(data.get("baselines") or [], "baselines"),
        final=known(data.get("final") or [], "final"),
        limit=int(data.get("limit", 30)),
        stage_table=runs_of(data.get("stage_table") or [], "stage_table"),
        plots=tuple(Plot(p["file"], runs_of(p["runs"], p["file"]), p["title"], bool(p.get("overlay", False)),
                         p.get("key", "loss")) for p in data.get("plots") or []),
        results_plot=str((data.get("results_plot") or {}).get("file", "")),
        results_plot_skip=known((data.get("results_plot") or {}).get("skip") or [], "results_plot"),
        cards=cards, note=str(data.get("note") or ""), train_defaults=dict(data.get("train_defaults") or {}),
    )
    known(index.speed_labels, "speed_labels")
    return index


def chain_lines(index: LadderIndex, phase: str) -> list[str]:
    """``run train config after teacher`` ("-" where none) for each run of ``phase``: tools/reproduce.sh's chains."""
    return [" ".join([spec.name, spec.train, spec.config, spec.after or "-", spec.teacher or "-"])
            for spec in (index.runs[run] for run in index.phase(phase))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.ladder_index",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--index", default=str(INDEX))
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--chain", metavar="PHASE", help="the runs of a phase, one per line: run train config after teacher")
    what.add_argument("--final", action="store_true", help="the final comparison's row keys, on one line")
    args = parser.parse_args(argv)
    index = load_index(args.index)
    if args.final:
        print(" ".join(index.final))
        return 0
    lines = chain_lines(index, args.chain)
    if not lines:
        print(f"error: no runs of phase {args.chain!r} in {args.index}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
