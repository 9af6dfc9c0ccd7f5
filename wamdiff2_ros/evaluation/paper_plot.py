"""The paper table as a figure: per row, planning L2, parse rate and decode speed; L2 per horizon of the comparison.

Drawn from the paper table's store alone (:mod:`wamdiff2_ros.evaluation.paper_table`)::

    python -m wamdiff2_ros.evaluation.paper_plot --split test --out docs/images/paper_test.png
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.loss_curves import pyplot
from wamdiff2_ros.evaluation.paper_table import (
    REGISTRY,
    _baselines_of,
    _records,
    aggregate,
    load_registry,
    matched,
    read_store,
    student_and_baseline,
)
from wamdiff2_ros.evaluation.planning import HORIZONS_S


def plot(results: dict[str, Any], registry: dict[str, Any], split_name: str, out: Path) -> Path | None:
    """Write the figure of split ``split_name`` to ``out``; None when the split has no scored row."""
    split = results.get(split_name) or {}
    rows = [(row, aggregate(recs, _baselines_of(results, split, row["key"]))) for row in registry["rows"]
            if (recs := _records(split, row["key"])) is not None]
    if not rows:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(19, 0.45 * len(rows) + 2.2), gridspec_kw={"width_ratios": [3, 2, 2, 3]})
    labels = [row["key"] for row, _ in rows]
    ys = list(range(len(rows)))[::-1]
    baselines = {r["baseline"] for r in registry["rows"] if r.get("baseline")}
    colors = ["tab:red" if row.get("student") else "tab:gray" if row.get("ablation") else
              "tab:blue" if row.get("baseline_for") or row["key"] in baselines else "tab:green" for row, _ in rows]
    l2 = [agg["planning"]["l2"] or 0.0 for _, agg in rows]
    parsed = [agg["planning"]["l2_parsed_only"] for _, agg in rows]
    axes[0].barh(ys, l2, color=colors)
    axes[0].scatter([p if p is not None else float("nan") for p in parsed], ys, color="black", zorder=3, s=14,
                    label="parsed plans only")
    fallback = rows[0][1]["planning"].get("fallback_only_l2")
    if fallback is not None:
        axes[0].axvline(fallback, color="black", ls=":", lw=1, label="constant-velocity fallback")
    axes[0].set(yticks=ys, yticklabels=labels, xlabel="planning L2, avg 1-4 s (m): every sample, fallback in")
    axes[0].legend(fontsize=7, loc="lower right")
    axes[1].barh(ys, [agg["planning"]["parse_rate"] or 0.0 for _, agg in rows], color=colors)
    axes[1].set(yticks=ys, yticklabels=[], xlabel="plans parsed", xlim=(0, 1))
    axes[2].barh(ys, [agg["speed"]["planning"]["tokens_per_second"] or 0.0 for _, agg in rows], color=colors)
    axes[2].set(yticks=ys, yticklabels=[], xlabel="planning decode tokens/s (1 CPU thread)")
    student, base = student_and_baseline(registry)
    ax = axes[3]
    base_recs = _records(split, base["key"]) if base else None
    student_recs = _records(split, student["key"]) if student else None
    if base_recs is not None and student_recs is not None and (m := matched(student_recs, base_recs))["n"]:
        ids = set(m["ids"])
        for recs, name, color in ((student_recs, student["key"], "tab:red"), (base_recs, base["key"], "tab:blue")):
            per = np.asarray([r["l2_h_pred"] for r in recs if r["task"] == "planning" and r["id"] in ids])
            ax.plot(HORIZONS_S, per.mean(axis=0), marker="o", color=color, label=name)
        ax.set(xlabel="horizon (s)", ylabel="L2 (m)", title=f"matched subset (both plans parse), n={m['n']}")
        ax.legend(fontsize=8)
    else:
        ax.set_axis_off()
    fig.suptitle(f"The paper's recipe on the {split_name} split (red: shipped student, blue: AR baselines,"
                 " green: stages, gray: ablations)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.evaluation.paper_plot",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="docs/results_paper.json")
    parser.add_argument("--registry", default=str(REGISTRY))
    parser.add_argument("--split", default="test")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    path = plot(read_store(Path(args.store)), load_registry(args.registry), args.split, Path(args.out))
    print(path if path else f"nothing scored on {args.split}")
    return 0 if path else 1


if __name__ == "__main__":
    raise SystemExit(main())
