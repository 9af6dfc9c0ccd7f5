"""The paper's results table (issue 18) from per-sample records: aggregates, matched comparison, targets, markdown.

Rows are data (``docs/runs/paper.yaml``): each names a run under ``runs/paper``, the block
size it is decoded at and its lineage (every run its training went through, whose compute
is summed). ``score`` decodes each row's checkpoint on a split with
:mod:`wamdiff2_ros.evaluation.heldout` and stores the per-sample records (with the runs'
compute and the train split's trivial baselines) in a JSON store, writing after each row.
Everything else is a pure function of that store, so ``report`` rebuilds the markdown
without a model or data, byte-identical for the same store::

    python -m wamdiff2_ros.evaluation.paper_table score --runs runs/paper --split runs/data/synth-val \\
        --name val --store docs/results_paper.json
    python -m wamdiff2_ros.evaluation.paper_table score --runs runs/paper --split runs/data/synth-test \\
        --name test --final --store docs/results_paper.json      # once, at the end
    python -m wamdiff2_ros.evaluation.paper_table report --store docs/results_paper.json \\
        --split-name test --out docs/RESULTS_paper.md

The test split is scored only with ``--final`` and only once per row (``--rescore`` overrides).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.agent import TASKS
from wamdiff2_ros.data.samples import ANSWER_SETS
from wamdiff2_ros.evaluation import qa_breakdown
from wamdiff2_ros.evaluation.baselines import PRIOR_RADIUS_M, majority_answers, prior_box
from wamdiff2_ros.evaluation.compute import run_compute
from wamdiff2_ros.evaluation.detection import BEV_THRESHOLDS_M, BevBox, ImageBox, bev_center_distance_map, coco_map
from wamdiff2_ros.evaluation.planning import HORIZONS_S, l2_metrics
from wamdiff2_ros.evaluation.run_records import update_json_store
from wamdiff2_ros.evaluation.stats import paired_bootstrap
from wamdiff2_ros.model.cameras import validate_cameras
from wamdiff2_ros.model.checkpoints import is_threshold
from wamdiff2_ros.model.codecs import BACKWARDS_TOLERANCE_M, plan_goes_backwards

REGISTRY = Path("docs/runs/paper.yaml")
FINAL_SPLIT = "test"
TARGET_L2_RATIO = 1.05
TARGET_PARSE_MARGIN = 0.02
TARGET_PLANNING_SPEEDUP = 3.0
TARGET_MIXED_SPEEDUP = 2.0


# --------------------------------------------------------------------------- registry and compute


def load_registry(path: str | Path = REGISTRY) -> dict[str, Any]:
    """The rows file: ``{"prior": {...}, "rows": [{key, label, run, block_size, lineage, ...}]}`` (checked)."""
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    rows = data.get("rows") or []
    keys = set()
    for i, row in enumerate(rows):
        for field in ("key", "label", "run", "block_size", "lineage"):
            if field not in row:
                raise ValueError(f"{path}: row {i} has no {field!r}")
        if row["key"] in keys:
            raise ValueError(f"{path}: row key {row['key']!r} appears twice")
        named = {"": row.get("threshold")} | {t: v for t, v in (row.get("task_thresholds") or {}).items()}
        for task, threshold in named.items():
            if threshold is not None and (not is_threshold(threshold) or (task and task not in TASKS)):
                raise ValueError(f"{path}: row {row['key']!r} has threshold {threshold!r}"
                                 + (f" for task {task!r}" if task else "") + " (a number in [0, 1] for a task)")
        for option in TASK_OPTIONS:
            named = row.get(option, False)
            if not (isinstance(named, bool) or (isinstance(named, list) and all(t in TASKS for t in named))):
                raise ValueError(f"{path}: row {row['key']!r} has {option} {named!r} (true, false or a list of tasks)")
        keys.add(row["key"])
    shipped = data.get("shipped") or []
    for i, ship in enumerate(shipped):
        missing = [f for f in ("row", "name", "split") if f not in ship]
        if missing or ship["row"] not in keys:
            raise ValueError(f"{path}: shipped entry {i} " + (f"has no {missing}" if missing else f"names no row ({ship['row']!r})"))
    return {"prior": data.get("prior") or {}, "rows": rows, "shipped": shipped}


def row_of(registry: dict[str, Any], key: str) -> dict[str, Any]:
    """The registry's row ``key`` (KeyError when there is none)."""
    for row in registry["rows"]:
        if row["key"] == key:
            return row
    raise KeyError(f"no row {key!r} in the paper registry")


def registry_runs(registry: dict[str, Any]) -> list[str]:
    """Every run named by a row's lineage or teacher lineage, in first-seen order."""
    names: dict[str, None] = {}
    for row in registry["rows"]:
        for name in [*row["lineage"], *(row.get("teacher_lineage") or []), row["run"]]:
            names.setdefault(name, None)
    return list(names)


def _compute_entry(run_dir: Path) -> dict[str, Any] | None:
    try:
        c = run_compute(run_dir)
    except (FileNotFoundError, KeyError, ValueError):
        return None
    return {"steps": c.steps, "samples": c.samples, "core_min": round(c.core_s / 60.0, 2)}


def collect_compute(registry: dict[str, Any], runs: str | Path) -> dict[str, Any]:
    """``{"runs": {name: {steps, samples, core_min} or None}, "prior": {...}}`` read from the run folders."""
    runs = Path(runs)
    prior = registry.get("prior") or {}
    records = {str(p): _compute_entry(Path(p)) for p in prior.get("records") or []}
    return {
        "runs": {name: _compute_entry(runs / name) for name in registry_runs(registry)},
        "prior": {"before": prior.get("before"), "label": prior.get("label", ""), "records": records},
    }


def lineage_compute(names: Sequence[str], computes: dict[str, Any]) -> dict[str, Any]:
    """Sum of the runs' compute; ``missing`` lists runs without a record (then the sum is a lower bound)."""
    total = {"steps": 0, "samples": 0, "core_min": 0.0}
    missing = []
    for name in names:
        entry = computes.get(name)
        if entry is None:
            missing.append(name)
            continue
        for k in total:
            total[k] += entry[k]
    total["core_min"] = round(total["core_min"], 2)
    return {**total, "missing": missing}


# --------------------------------------------------------------------------- statistics


def _plan_l2(record: dict[str, Any], key: str = "l2_h") -> float:
    return float(np.mean(record[key]))


def _fallback_l2(record: dict[str, Any]) -> float:
    """L2 (avg 1-4 s) of the record's constant-velocity fallback."""
    return l2_metrics(np.asarray(record["fallback"]), np.asarray(record["gt"]))["l2_avg"]


def matched(records_a: Sequence[dict[str, Any]], records_b: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Planning L2 (avg 1-4 s) of both models on the samples where BOTH plans parsed (same ids, a's order), and
    the ratio of their means (a over b; None without samples)."""
    b_by_id = {r["id"]: r for r in records_b if r["task"] == "planning"}
    ids, l2_a, l2_b = [], [], []
    for a in records_a:
        b = b_by_id.get(a["id"])
        if a["task"] != "planning" or b is None or not (a["parsed"] and b["parsed"]):
            continue
        ids.append(a["id"])
        l2_a.append(_plan_l2(a, "l2_h_pred"))
        l2_b.append(_plan_l2(b, "l2_h_pred"))
    return {
        "n": len(ids),
        "ids": ids,
        "l2_a": l2_a,
        "l2_b": l2_b,
        "mean_a": float(np.mean(l2_a)) if ids else None,
        "mean_b": float(np.mean(l2_b)) if ids else None,
        "ratio": float(np.mean(l2_a) / np.mean(l2_b)) if ids and np.mean(l2_b) else None,
    }


def compare(
    records_ar: Sequence[dict[str, Any]], records_student: Sequence[dict[str, Any]], *, n: int = 10000, seed: int = 0
) -> dict[str, Any]:
    """Matched subset and the paired bootstrap of AR minus student L2 (positive: the student is better)."""
    m = matched(records_ar, records_student)
    diff = np.asarray(m["l2_a"]) - np.asarray(m["l2_b"])
    boot = paired_bootstrap(diff, n=n, seed=seed, reference=m["l2_a"] if m["n"] else None)
    return {"n": m["n"], "mean_ar": m["mean_a"], "mean_student": m["mean_b"], "diff": boot}


def versus_constant_velocity(records: Sequence[dict[str, Any]], *, n: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Paired bootstrap of constant-velocity minus model L2 on every planning sample (the model's L2 with its
    fallback in, as the agent drives it; positive: the model is better than driving on at the current speed)."""
    plan = [r for r in records if r["task"] == "planning"]
    model = [_plan_l2(r) for r in plan]
    cv = [_fallback_l2(r) for r in plan]
    return paired_bootstrap(np.asarray(cv) - np.asarray(model), n=n, seed=seed, reference=cv if plan else None)


# --------------------------------------------------------------------------- trivial baselines


def split_baselines(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The trivial baselines computed from the scored split itself (when the train split's are not stored)."""
    answers: dict[str, Counter] = {}
    boxes: list[dict[str, Any]] = []
    for r in records:
        if r["task"] == "understanding":
            answers.setdefault(r.get("question_type", ""), Counter())[r["answer"]] += 1
        elif r["task"] == "perception":
            boxes += r["gt_boxes"]
    return {
        "source": "the scored split itself",
        "qa_answers": {k: dict(v) for k, v in answers.items()},
        "prior_box": prior_box(boxes),
    }


# --------------------------------------------------------------------------- aggregation


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _speed(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    generated = sum(r["generated_tokens"] for r in records)
    forwards = sum(r["forwards"] for r in records)
    ms = sum(r["decode_ms"] for r in records)
    return {
        "tokens_per_second": generated / (ms / 1000.0) if ms > 0 else None,
        "tokens_per_forward": generated / forwards if forwards else None,
    }


def _valid_bbox(bbox: Sequence[float] | None) -> bool:
    return bbox is not None and len(bbox) == 4 and bbox[0] <= bbox[2] and bbox[1] <= bbox[3]


def _bev_per_threshold(result: dict[str, Any]) -> dict[str, float]:
    per_class = result["per_class"]
    return {
        f"{t:g}": float(np.mean([c[f"ap_{t:g}m"] for c in per_class.values()])) if per_class else 0.0
        for t in BEV_THRESHOLDS_M
    }


def _perception(records: Sequence[dict[str, Any]], prior: dict[str, Any] | None) -> dict[str, Any]:
    gt_img, gt_bev, det_img, det_bev, prior_img, prior_bev = [], [], [], [], [], []
    for r in records:
        for b in r["gt_boxes"]:
            if _valid_bbox(b.get("bbox")):
                gt_img.append(ImageBox(r["id"], b["label"], tuple(b["bbox"])))
            gt_bev.append(BevBox(r["id"], b["label"], *b["center"]))
        for b in r["pred_boxes"]:
            if _valid_bbox(b.get("bbox")):
                det_img.append(ImageBox(r["id"], b["label"], tuple(b["bbox"]), b["score"]))
            det_bev.append(BevBox(r["id"], b["label"], *b["center"], b["score"]))
        if prior is not None:
            if _valid_bbox(prior.get("bbox")):
                prior_img.append(ImageBox(r["id"], prior["label"], tuple(prior["bbox"]), 1.0))
            prior_bev.append(BevBox(r["id"], prior["label"], *prior["center"], 1.0))
    model_img, model_bev = coco_map(gt_img, det_img), bev_center_distance_map(gt_bev, det_bev)
    base_img, base_bev = coco_map(gt_img, prior_img), bev_center_distance_map(gt_bev, prior_bev)
    return {
        "n": len(records),
        "gt_boxes": len(gt_bev),
        "parse_rate": _mean([float(r["parsed"]) for r in records]),
        "map_50": model_img["map_50"],
        "map": model_img["map"],
        "bev_map": model_bev["map"],
        "bev_ap": _bev_per_threshold(model_bev),
        "prior_map_50": base_img["map_50"],
        "prior_bev_map": base_bev["map"],
        "prior_bev_ap": _bev_per_threshold(base_bev),
    }


def majority_hits(qa: Sequence[dict[str, Any]], base: dict[str, Any], own: dict[str, Any]) -> list[float]:
    """Per QA record, 1.0 where the majority answer of its question type (``base``'s, else ``own``'s) is right."""
    majority = majority_answers(base["qa_answers"])
    own_majority = majority_answers(own["qa_answers"])
    hits = []
    for r in qa:
        qtype = r.get("question_type", "")
        guess = majority.get(qtype, own_majority.get(qtype, ""))
        hits.append(float(guess.strip().lower() == r["answer"].strip().lower()))
    return hits


def aggregate(records: Sequence[dict[str, Any]], baselines: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every number of a row from its records; ``baselines`` (train split's) default to the scored split's."""
    own = split_baselines(records)
    base = baselines or own
    plan = [r for r in records if r["task"] == "planning"]
    qa = [r for r in records if r["task"] == "understanding"]
    perc = [r for r in records if r["task"] == "perception"]
    parsed = [r for r in plan if r["parsed"]]
    fallback_l2 = [_fallback_l2(r) for r in plan]
    majority_correct = majority_hits(qa, base, own)
    out = {
        "samples": dict(sorted(Counter(r["task"] for r in records).items())),
        "baseline_source": base["source"],
        "planning": {
            "n": len(plan),
            "parse_rate": len(parsed) / len(plan) if plan else None,
            "l2": _mean([_plan_l2(r) for r in plan]),
            "l2_h": [_mean([r["l2_h"][i] for r in plan]) for i in range(len(HORIZONS_S))] if plan else None,
            "l2_parsed_only": _mean([_plan_l2(r, "l2_h_pred") for r in parsed]),
            "backwards": sum(plan_goes_backwards(r["pred"]) for r in parsed),
            "fallback_only_l2": _mean(fallback_l2),
        },
        "understanding": {
            "n": len(qa),
            "accuracy": _mean([float(r["correct"]) for r in qa]),
            "parse_rate": _mean([float(r["parsed"]) for r in qa]),
            "majority_accuracy": _mean(majority_correct),
            "valid_rate": _mean([float(qa_breakdown.answer_valid(r)) for r in qa
                                 if r.get("question_type") in ANSWER_SETS]),
        },
        "perception": _perception(perc, base.get("prior_box")) if perc else {"n": 0},
        "speed": {
            task: _speed([r for r in records if r["task"] == task])
            for task in ("planning", "perception", "understanding")
        },
    }
    return out


# --------------------------------------------------------------------------- markdown


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def _count(value: int) -> str:
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.1f}k" if value >= 1e3 else str(value)


def refused_plans(records: Sequence[dict[str, Any]] | None, limit: int = 3) -> list[tuple[str, str]]:
    """(text, reason) of the first ``limit`` planning answers that did not parse (records that keep their text)."""
    out = []
    for r in records or []:
        if r["task"] == "planning" and not r["parsed"] and r.get("text") is not None:
            out.append((r["text"].replace("`", "'"), r.get("error", "")))
            if len(out) == limit:
                break
    return out


def _compute_text(names: Sequence[str], computes: dict[str, Any]) -> str:
    c = lineage_compute(names, computes)
    if len(c["missing"]) == len(names):
        return f"no record ({', '.join(c['missing'])})"
    text = f"{c['steps']} steps, {_count(c['samples'])} samples, {c['core_min']:.0f} core-min"
    if c["missing"]:
        text += f" + no record of {', '.join(c['missing'])}"
    return text


def _compute_cell(row: dict[str, Any], computes: dict[str, Any]) -> str:
    return _compute_text(row["lineage"], computes)


def _row_by_flag(registry: dict[str, Any], flag: str) -> dict[str, Any] | None:
    for row in registry["rows"]:
        if flag == "student" and row.get("student") or flag in (row.get("baseline_for") or []):
            return row
    return None


def baseline_row(registry: dict[str, Any], row: dict[str, Any] | None, flag: str = "matched") -> dict[str, Any] | None:
    """The AR baseline ``row`` is compared with: its own ``baseline`` key (a lineage with its own equal-compute AR),
    else the registry's row flagged ``flag`` (``matched`` for the column, ``targets`` for the targets)."""
    if row is not None and row.get("baseline"):
        return row_of(registry, row["baseline"])
    return _row_by_flag(registry, flag)


def student_and_baseline(registry: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The row judged against the targets and the AR baseline it is judged against."""
    student = _row_by_flag(registry, "student")
    return student, baseline_row(registry, student, "targets")


def _records(split: dict[str, Any], key: str | None) -> list[dict[str, Any]] | None:
    entry = split.get(key) if key else None
    return entry["records"] if entry and entry.get("records") is not None else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _mark(ok: bool | None) -> str:
    return "not evaluated" if ok is None else "met" if ok else "NOT met"


def targets(
    split: dict[str, Any],
    registry: dict[str, Any],
    aggregates: dict[str, dict[str, Any]],
    comparison: dict[str, Any] | None,
    baselines: dict[str, Any] | None = None,
    bootstrap: int = 10000,
) -> list[tuple[str, bool | None, str]]:
    """``(target, met or None when a row is missing, the numbers)`` of the student against the baseline."""
    student_row, base_row = student_and_baseline(registry)
    a = aggregates.get(base_row["key"]) if base_row else None
    s = aggregates.get(student_row["key"]) if student_row else None
    out: list[tuple[str, bool | None, str]] = []
    if comparison and comparison["n"] and comparison["mean_ar"]:
        ratio = comparison["mean_student"] / comparison["mean_ar"]
        d = comparison["diff"]
        out.append(
            (
                f"matched-subset L2 <= {TARGET_L2_RATIO:g}x AR",
                ratio <= TARGET_L2_RATIO,
                f"{comparison['mean_student']:.3f} vs {comparison['mean_ar']:.3f} m ({ratio:.3f}x, n={comparison['n']},"
                f" AR - student {d['mean']:+.3f} m, 95% CI [{d['low']:+.3f}, {d['high']:+.3f}])",
            )
        )
    else:
        out.append(
            (
                f"matched-subset L2 <= {TARGET_L2_RATIO:g}x AR",
                None,
                "no matched samples" if comparison else "a row is not scored",
            )
        )
    if a is None or s is None:
        for name in (
            f"parse rate >= AR - {TARGET_PARSE_MARGIN:g}",
            "QA above the majority answer",
            "perception above the prior box",
            f"planning tokens/s >= {TARGET_PLANNING_SPEEDUP:g}x AR",
            f"mixed three-task tokens/s >= {TARGET_MIXED_SPEEDUP:g}x AR",
        ):
            out.append((name, None, "a row is not scored"))
        return out
    pa, ps = a["planning"]["parse_rate"], s["planning"]["parse_rate"]
    out.append(
        (
            f"parse rate >= AR - {TARGET_PARSE_MARGIN:g}",
            None if pa is None or ps is None else ps >= pa - TARGET_PARSE_MARGIN - 1e-12,
            f"{_num(ps)} vs AR {_num(pa)}",
        )
    )
    acc, maj = s["understanding"]["accuracy"], s["understanding"]["majority_accuracy"]
    interval = ""
    records = _records(split, student_row["key"]) or []
    qa = [r for r in records if r["task"] == "understanding"]
    if qa:
        own = split_baselines(records)
        hits = majority_hits(qa, baselines or own, own)
        d = paired_bootstrap([float(r["correct"]) - h for r, h in zip(qa, hits, strict=True)], n=bootstrap)
        interval = f"; paired difference {d['mean']:+.3f}, 95% CI [{d['low']:+.3f}, {d['high']:+.3f}], n={d['n']}"
    out.append(
        ("QA above the majority answer", None if acc is None else acc > maj,
         f"{_num(acc)} vs majority {_num(maj)}{interval}")
    )
    p = s["perception"]
    if p.get("n"):
        ok = p["map_50"] > p["prior_map_50"] and p["bev_map"] > p["prior_bev_map"]
        out.append(
            (
                "perception above the prior box",
                ok,
                f"image mAP@0.5 {p['map_50']:.3f} vs prior {p['prior_map_50']:.3f}; BEV centre-distance mAP"
                f" {p['bev_map']:.3f} vs prior {p['prior_bev_map']:.3f}",
            )
        )
    else:
        out.append(("perception above the prior box", None, "no perception samples"))
    speed = _ratio(s["speed"]["planning"]["tokens_per_second"], a["speed"]["planning"]["tokens_per_second"])
    out.append(
        (
            f"planning tokens/s >= {TARGET_PLANNING_SPEEDUP:g}x AR",
            None if speed is None else speed >= TARGET_PLANNING_SPEEDUP,
            f"{_num(s['speed']['planning']['tokens_per_second'], 1)} vs AR "
            f"{_num(a['speed']['planning']['tokens_per_second'], 1)} tokens/s ({_num(speed, 2)}x; the rows timed in"
            " separate runs)",
        )
    )
    ma = (split.get(base_row["key"]) or {}).get("mixed") or {}
    ms = (split.get(student_row["key"]) or {}).get("mixed") or {}
    mixed = _ratio(ms.get("tokens_per_second"), ma.get("tokens_per_second"))
    out.append(
        (
            f"mixed three-task tokens/s >= {TARGET_MIXED_SPEEDUP:g}x AR",
            None if mixed is None else mixed >= TARGET_MIXED_SPEEDUP,
            f"{_num(ms.get('tokens_per_second'), 1)} vs AR {_num(ma.get('tokens_per_second'), 1)} tokens/s"
            f" ({_num(mixed, 2)}x, {ms.get('scenes', 0)} scenes; the rows timed in separate runs)",
        )
    )
    entry = split.get(PAIRED_KEY) or {}
    for threads in sorted({r.get("threads", 1) for r in entry.get("runs", [])}):
        out += paired_speed_targets(entry, student_row["key"], base_row["key"], threads)
    return out


PAIRED_KEY = "_paired_speed"  # a split's result of `wamdiff2 bench paired-speed --store` (bench.paired_speed)


def paired_speed_targets(entry: dict[str, Any] | None, student: str, baseline: str,
                         threads: int = 1) -> list[tuple[str, bool | None, str]]:
    """The speed targets on the interleaved timing of the two rows: met when the interval's lower end reaches them.

    Nothing when the split holds no such timing of these two rows (``--row`` names them) at ``threads``.
    """
    if not entry:
        return []
    names = {row: name for name, row in (entry.get("rows") or {}).items()}
    run = next((r for r in entry.get("runs", []) if r.get("threads") == threads), None)
    if run is None or student not in names or names.get(baseline) != entry.get("baseline"):
        return []
    out = []
    unit = f"{threads} thread{'s' if threads > 1 else ''}"
    for workload, target in (("planning", TARGET_PLANNING_SPEEDUP), ("mixed", TARGET_MIXED_SPEEDUP)):
        w = run["models"][names[student]]["workloads"][workload]
        base = run["models"][names[baseline]]["workloads"][workload]
        v = w["vs_baseline"]
        what = "planning" if workload == "planning" else "mixed three-task"
        out.append((
            f"{what} tokens/s >= {target:g}x AR, timed interleaved, {unit} (the 95% interval's lower end)",
            v["low"] >= target,
            f"{w['tokens_per_second']:.1f} vs AR {base['tokens_per_second']:.1f} tokens/s ({v['ratio']:.2f}x, 95% CI"
            f" [{v['low']:.2f}, {v['high']:.2f}]; {entry['scenes']} scenes x {entry['repeats']} repeats, {unit},"
            f" {run['machine'].split(' CPU')[0]}, {entry['date']})",
        ))
    return out


def compute_parity(registry: dict[str, Any], computes: dict[str, Any]) -> tuple[str, bool | None, str]:
    """The footing of the comparison: the AR baseline's lineage has at least the student's samples and core-min."""
    name = "AR baseline's compute >= the student's whole lineage (samples and core-min)"
    student_row, base_row = student_and_baseline(registry)
    if not base_row or not student_row:
        return name, None, "no baseline or student row"
    a, s = lineage_compute(base_row["lineage"], computes), lineage_compute(student_row["lineage"], computes)
    if a["missing"] or s["missing"]:
        return name, None, f"no record of {', '.join(a['missing'] + s['missing'])}"
    ok = a["samples"] >= s["samples"] and a["core_min"] >= s["core_min"]
    return name, ok, (f"AR {_count(a['samples'])} samples, {a['core_min']:.0f} core-min vs student"
                      f" {_count(s['samples'])} samples, {s['core_min']:.0f} core-min")


def _baselines_of(results: dict[str, Any], split: dict[str, Any], key: str | None = None) -> dict[str, Any] | None:
    """The trivial baselines a row is scored against: its own (``train_baselines``, a row scored with another train
    split than the store's) else the split's, else the store's."""
    own = (split.get(key) or {}).get("train_baselines") if key else None
    return own or split.get("_train_baselines") or results.get("_train_baselines")


def row_split(split: dict[str, Any], key: str | None) -> dict[str, Any]:
    """The split a row was scored on: its own ``split`` (a row on another data path than the split name's, e.g. a
    lineage whose world rules differ) else the split name's ``_split``."""
    own = (split.get(key) or {}).get("split") if key else None
    return own or split.get("_split") or {}


def same_data(split: dict[str, Any], a: str | None, b: str | None) -> bool:
    """Whether rows ``a`` and ``b`` were scored on the same data path (only then are their samples paired)."""
    return row_split(split, a).get("path") == row_split(split, b).get("path")


def markdown(
    results: dict[str, Any], registry: dict[str, Any], split_name: str = FINAL_SPLIT, *, bootstrap: int = 10000,
    title: str | None = None, scored_only: bool = False,
) -> str:
    """The RESULTS.md section of split ``split_name``: main table, paired comparison, targets (deterministic).

    ``title``: the heading (default: the paper's recipe on that split); ``scored_only``: leave out the rows the
    split has no records of (a replication split scores the shipped pair alone).
    """
    split = results.get(split_name) or {}
    if scored_only:
        registry = {**registry, "rows": [r for r in registry["rows"] if _records(split, r["key"]) is not None]}
    computes = (results.get("_compute") or {}).get("runs") or {}
    baselines = _baselines_of(results, split)
    aggregates = {
        row["key"]: aggregate(recs, _baselines_of(results, split, row["key"]))
        for row in registry["rows"]
        if (recs := _records(split, row["key"])) is not None
    }
    base_row = _row_by_flag(registry, "matched")
    own_baselines = sorted({row["baseline"] for row in registry["rows"] if row.get("baseline")})
    info = split.get("_split") or {}
    heading = title or f"The paper's recipe on the {split_name} split"
    lines = [f"## {heading}", ""]
    samples = f"up to {info['limit']} samples per task" if info.get("limit") else "every sample"
    lines.append(
        f"Split `{info.get('path', '?')}` (sample seed {info.get('seed', '?')}), {samples}; fast engine,"
        f" greedy, confidence threshold {_num(info.get('threshold'), 2)}"
        + "".join(f" (`{r['key']}`: {r['threshold']:g}"
                  + "".join(f", {t} {v:g}" for t, v in (r.get("task_thresholds") or {}).items())
                  + (f"; end tokens in order for {', '.join(end_in_order_tasks(r))}" if end_in_order_tasks(r) else "")
                  + (f"; reused committed keys for {', '.join(reuse_kv_tasks(r))}" if reuse_kv_tasks(r) else "")
                  + ")"
                  for r in registry["rows"] if r.get("threshold") is not None)
        + f", at most {info.get('max_new_tokens', '?')} new tokens."
        " Planning L2 is the average of the 1, 2, 3, 4 s waypoint errors (m): `all` on every sample, a plan that does"
        " not parse replaced by the constant-velocity fallback the driving agent would drive; `matched` on the samples"
        + (f" where both this row's and the `{base_row['key']}` row's plans parse (this row / that row, n)" if base_row
           else " where both this row's and its AR baseline's plans parse (this row / that row, n)")
        + (f"; rows of a lineage with its own equal-compute AR baseline ({', '.join(f'`{k}`' for k in own_baselines)})"
           " are matched against that one" if own_baselines else "")
        + ". Compute: the row's whole lineage (steps x batch = samples; CPU core-minutes)."
    )
    lines.append("")
    header = (
        "| model | B | training compute | L2 all | L2 matched vs AR-equal | L2 @1s / 2s / 3s / 4s | plans parsed (going backwards) |"
        " QA acc. (majority; answers valid) | image mAP@0.5 (prior) | BEV AP 0.5/1/2/4 m (prior mAP) | tokens/s plan / perc / QA |"
        " tokens/fwd plan / perc / QA | mixed tokens/s (tokens/fwd) |"
    )
    lines += [header, "|" + "---|" * 13]
    for row in registry["rows"]:
        key = row["key"]
        label = row["label"]
        compute = _compute_cell(row, computes)
        agg = aggregates.get(key)
        if agg is None:
            trained = computes.get(row["run"]) is not None
            status = "not scored" if trained else "not trained"
            lines.append(f"| {label} | {row['block_size']} | {compute if trained else '–'} | {status} |" + " – |" * 9)
            continue
        p, u, d, s = agg["planning"], agg["understanding"], agg["perception"], agg["speed"]
        own_base = baseline_row(registry, row)
        base_records = _records(split, own_base["key"]) if own_base else None
        if base_records is not None and key != own_base["key"] and key not in own_baselines:
            if same_data(split, key, own_base["key"]):
                m = matched(_records(split, key), base_records)
                matched_cell = f"{_num(m['mean_a'])} / {_num(m['mean_b'])} (n={m['n']})"
            else:
                matched_cell = "– (baseline on other data)"
        else:
            matched_cell = "–"
        horizons = " / ".join(_num(v, 2) for v in p["l2_h"]) if p["l2_h"] else "–"
        if d.get("n"):
            img = f"{_num(d['map_50'])} ({_num(d['prior_map_50'])})"
            bev = (
                " / ".join(_num(d["bev_ap"][f"{t:g}"], 2) for t in BEV_THRESHOLDS_M) + f" ({_num(d['prior_bev_map'])})"
            )
        else:
            img = bev = "–"
        tps = " / ".join(_num(s[t]["tokens_per_second"], 1) for t in ("planning", "perception", "understanding"))
        tpf = " / ".join(_num(s[t]["tokens_per_forward"], 2) for t in ("planning", "perception", "understanding"))
        mixed = (split.get(key) or {}).get("mixed") or {}
        mixed_cell = (
            f"{_num(mixed.get('tokens_per_second'), 1)} ({_num(mixed.get('tokens_per_forward'), 2)})" if mixed else "–"
        )
        lines.append(
            f"| {label} | {row['block_size']} | {compute} | {_num(p['l2'])} | {matched_cell} | {horizons} |"
            f" {_num(p['parse_rate'], 2)} ({p.get('backwards', 0)}) | {_num(u['accuracy'], 2)} ({_num(u['majority_accuracy'], 2)}; {_num(u.get('valid_rate'), 2)}) | {img} |"
            f" {bev} | {tps} | {tpf} | {mixed_cell} |"
        )
    lines.append("")
    lines += _notes(results, registry, split, aggregates, baselines)
    student_row, base_row = student_and_baseline(registry)
    base_records = _records(split, base_row["key"]) if base_row else None
    student_records = _records(split, student_row["key"]) if student_row else None
    comparison = None
    both_scored = base_records is not None and student_records is not None
    paired = both_scored and same_data(split, student_row["key"], base_row["key"])
    if paired:
        comparison = compare(base_records, student_records, n=bootstrap)
    lines += ["### Student vs the equal-compute AR baseline", ""]
    if comparison and comparison["n"]:
        d = comparison["diff"]
        better = "better" if d["mean"] > 0 else "worse"
        lines.append(
            f"On the {comparison['n']} {split_name} samples where both `{base_row['key']}` and `{student_row['key']}`"
            f" plans parse, the student's average L2 is {comparison['mean_student']:.3f} m against the AR baseline's"
            f" {comparison['mean_ar']:.3f} m: the paired per-sample difference (AR minus student) is"
            f" {d['mean']:+.3f} m, 95% bootstrap interval [{d['low']:+.3f}, {d['high']:+.3f}] ({bootstrap} resamples),"
            f" i.e. the student is {abs(d['relative_pct']):.1f}% {better} than AR"
            f" (interval {d['relative_low']:+.1f}% to {d['relative_high']:+.1f}% of AR's mean; the paper: 5.8% better"
            " over 12,146 paired samples)."
        )
    else:
        lines.append(
            "Not available: "
            + (
                "no sample where both plans parse."
                if comparison
                else "the student and its AR baseline were scored on different data."
                if both_scored
                else "the student or the AR baseline is not scored on this split."
            )
        )
    if both_scored:
        lines += ["", "Against constant velocity (the fallback: drive on at the current speed and heading), on every"
                  " planning sample, the model's L2 with its fallback in (paired, constant velocity minus the model;"
                  f" positive: the model is better; {bootstrap} resamples):", ""]
        for row, records in ((base_row, base_records), (student_row, student_records)):
            v = versus_constant_velocity(records, n=bootstrap)
            if v["mean"] is not None:
                lines.append(f"- `{row['key']}`: {v['mean']:+.3f} m [{v['low']:+.3f}, {v['high']:+.3f}]"
                             f" ({v['relative_pct']:+.1f}% of constant velocity's L2, n={v['n']})")
    refused = refused_plans(student_records)
    if refused:
        lines += ["", f"Plans of `{student_row['key']}` that did not parse (the first {len(refused)} in split order;"
                  " the agent drives the constant-velocity fallback instead):", ""]
        lines += [f"- `{text}`: {error}" for text, error in refused]
    lines += ["", "### Targets (shipped student vs the equal-compute AR baseline)", ""]
    judged = targets(split, registry, aggregates, comparison,
                     _baselines_of(results, split, student_row["key"] if student_row else None), bootstrap)
    for name, ok, numbers in [compute_parity(registry, computes), *judged]:
        lines.append(f"- {name}: **{_mark(ok)}** ({numbers})")
    lines.append("")
    if paired:
        train = _baselines_of(results, split, student_row["key"]) or split_baselines(student_records)
        lines += qa_breakdown.markdown((student_row["key"], student_records), (base_row["key"], base_records),
                                       train["qa_answers"])
    return "\n".join(lines)


def _notes(
    results: dict[str, Any],
    registry: dict[str, Any],
    split: dict[str, Any],
    aggregates: dict[str, dict[str, Any]],
    baselines: dict[str, Any] | None,
) -> list[str]:
    computes = (results.get("_compute") or {}).get("runs") or {}
    prior = (results.get("_compute") or {}).get("prior") or {}
    out = []
    if prior.get("records"):
        total = lineage_compute(list(prior["records"]), prior["records"])
        out.append(
            f"- Prior training, shared by every row whose lineage starts at `{prior.get('before')}` and in no row's"
            f" compute: {prior.get('label', '')}: {total['steps']} steps, {_count(total['samples'])} samples,"
            f" {total['core_min']:.0f} core-min."
        )
    runs_noted = set()  # rows of the same run (one decoded at its own threshold) share the note
    for row in registry["rows"]:
        if row.get("teacher_lineage") and row["run"] not in runs_noted:
            runs_noted.add(row["run"])
            out.append(
                f"- `{row['key']}` also used its distillation teacher, whose own training"
                f" ({' -> '.join(row['teacher_lineage'])}): {_compute_text(row['teacher_lineage'], computes)};"
                " not in the row's compute."
            )
    others: dict[str, list[str]] = {}
    for row in registry["rows"]:
        own = (split.get(row["key"]) or {}).get("split")
        if own:
            others.setdefault(str(own.get("path")), []).append(row["key"])
    for path, keys in others.items():
        own_base = (split.get(keys[0]) or {}).get("train_baselines") or {}
        out.append(
            f"- Scored on `{path}` instead ({', '.join(f'`{k}`' for k in keys)}): the same worlds (seeds) rendered"
            " under that lineage's own world rules (its `synth_config.json`); such a row is matched only against"
            f" rows on the same data, and its trivial baselines come from {own_base.get('source', 'that data')}."
        )
    source = baselines["source"] if baselines else "the scored split itself (no train-split baselines stored)"
    out.append(
        f"- Trivial baselines from {source}: QA majority = the most common answer per question type;"
        " the prior box = the most common label at its most common BEV position"
        f" (the centre with most of them within {PRIOR_RADIUS_M:g} m; their mean centre and mean image box),"
        " predicted once per sample"
        + (
            f": {baselines['prior_box']['label']} at ({baselines['prior_box']['center'][0]:.1f},"
            f" {baselines['prior_box']['center'][1]:.1f}) m"
            if baselines and baselines.get("prior_box")
            else ""
        )
        + "."
    )
    out.append(
        f"- Going backwards: parsed plans whose forward coordinate drops by more than {BACKWARDS_TOLERANCE_M:g} m between"
        " consecutive waypoints (no ground-truth plan does: the ego never reverses). They parse, so they count as"
        " the model's answer in every L2 column; most are a digit lost where a number grows one (`1.10` for `11.10`)."
    )
    out.append(
        "- Answers valid: the share of QA answers that are one of their question type's answers at all"
        " (`data.samples.ANSWER_SETS`, compared as exact match compares); the rest are garbled or cut (`reo`, `nd`)."
    )
    any_agg = next(iter(aggregates.values()), None)
    if any_agg is not None and any_agg["planning"]["fallback_only_l2"] is not None:
        out.append(
            f"- The constant-velocity fallback alone scores L2 {any_agg['planning']['fallback_only_l2']:.3f} m"
            " on these planning samples."
        )
    out.append(
        "- Decode tokens/s are the engine's own timers (prefill excluded) on a CPU shared with other jobs;"
        " each row was timed in its own run, so ratios carry that noise. Mixed: planning, perception and"
        " understanding of the same scenes decoded one after another."
    )
    out.append("")
    return out


# --------------------------------------------------------------------------- store and CLI


def update_store(store: Path, update: Any) -> dict[str, Any]:
    """Read-modify-write the JSON store under an exclusive lock; returns the new contents."""
    return update_json_store(store, update, dumps)


def dumps(results: dict[str, Any]) -> str:
    """The store's text: indented JSON with each per-sample record on one line (compact, diffable)."""
    records: list[str] = []

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: [swap_record(r) for r in v] if k == "records" and isinstance(v, list) else swap(v)
                for k, v in value.items()
            }
        return value

    def swap_record(record: Any) -> str:
        records.append(json.dumps(record, sort_keys=True, separators=(",", ":")))
        return f"\x00record{len(records) - 1}\x00"

    text = json.dumps(swap(results), indent=1, sort_keys=True)
    marker = re.compile(r'"\\u0000record(\d+)\\u0000"')
    if len(marker.findall(text)) != len(records):  # a value that looks like a marker: plain indented JSON
        return json.dumps(results, indent=1, sort_keys=True) + "\n"
    return marker.sub(lambda m: records[int(m.group(1))], text) + "\n"


def read_store(store: Path) -> dict[str, Any]:
    return json.loads(store.read_text()) if store.is_file() and store.read_text().strip() else {}


def _score_command(args: argparse.Namespace) -> int:
    registry = load_registry(args.registry)
    by_key = {row["key"]: row for row in registry["rows"]}
    unknown = [k for k in args.rows or [] if k not in by_key]
    if unknown:
        print(f"error: --rows {unknown[0]}: no such row (one of {', '.join(by_key)})", file=sys.stderr)
        return 2
    rows = [by_key[k] for k in args.rows] if args.rows else registry["rows"]
    store = Path(args.store)
    existing = read_store(store).get(args.name) or {}
    if args.name == FINAL_SPLIT:
        if not args.final:
            print(
                f"error: the {FINAL_SPLIT} split is scored once, at the end: pass --final to score it", file=sys.stderr
            )
            return 2
        done = [row["key"] for row in rows if row["key"] in existing and not args.rescore]
        if done:
            print(
                f"error: the store already has {FINAL_SPLIT} results for {', '.join(done)}; the {FINAL_SPLIT}"
                " split is scored once (--rescore overrides)",
                file=sys.stderr,
            )
            return 2
    # in the function: scoring alone needs torch; the table and the store readers (training.ship_paper) do not
    import torch

    from wamdiff2_ros.evaluation import heldout
    from wamdiff2_ros.model.loader import ModelLoadError, load_model

    torch.set_num_threads(args.threads)
    runs = Path(args.runs)
    computes = collect_compute(registry, runs)

    def keep_known(results: dict[str, Any]) -> None:  # a run no longer on disk (another session) keeps its record
        old = (results.get("_compute") or {}).get("runs") or {}
        computes["runs"] = {n: c if c is not None else old.get(n) for n, c in computes["runs"].items()}
        results["_compute"] = computes

    update_store(store, keep_known)
    split_info = {
        "path": str(args.split),
        "seed": args.seed,
        "limit": args.limit,
        "threshold": args.threshold,
        "max_new_tokens": args.max_new_tokens,
        "mixed_scenes": args.mixed_scenes,
    }
    train = Path(args.train) if args.train else Path(args.split).parent / "synth-train"
    stored = read_store(store).get("_train_baselines")
    own_baselines = None  # this train split's, kept with each row when the store's come from another
    if train.is_dir() and stored is None:
        baselines = heldout.train_baselines(train, seed=args.train_seed)
        update_store(store, lambda r: r.__setitem__("_train_baselines", baselines))
    elif train.is_dir() and stored.get("source") != f"train split ({train})":
        own_baselines = heldout.train_baselines(train, seed=args.train_seed)
    elif not train.is_dir():
        print(f"no train split at {train}: the trivial baselines come from the scored split", file=sys.stderr)
    cache = Path(args.cache) if args.cache else runs / "cache"
    cameras = validate_cameras(args.cameras)
    if cameras != ("CAM_F0",):
        split_info["cameras"] = list(cameras)
    for row in rows:
        key = row["key"]
        if key in existing and not args.rescore and existing[key].get("limit") == args.limit:
            print(f"{key}: already scored on {args.name} (--rescore to redo)")
            continue
        path = runs / row["run"]
        if not (path / "config.json").is_file():
            print(f"{key}: not trained (no checkpoint at {path})")
            continue
        try:
            vla = load_model(path, block_size=int(row["block_size"]))
        except ModelLoadError as exc:
            print(f"{key}: skipped, {exc}", file=sys.stderr)
            continue
        every = heldout.split_rows(vla, args.split, cache, seed=args.seed, cameras=cameras)
        chosen = heldout.select(every, args.limit)
        threshold = float(row.get("threshold", args.threshold))  # a row may name its own (a shipped decode default)
        if row.get("task_thresholds"):  # ... and single tasks' own
            threshold = {t: float(row["task_thresholds"].get(t, threshold)) for t in TASKS}
        scored = heldout.score(
            vla,
            chosen,
            int(row["block_size"]),
            threshold=threshold,
            max_new_tokens=args.max_new_tokens,
            progress=not args.quiet,
            end_in_order=end_in_order_tasks(row),
            reuse_kv=reuse_kv_tasks(row),
        )
        entry = {"run": row["run"], "checkpoint": str(path), "limit": args.limit, **scored}  # scored names its threshold
        if args.mixed_scenes:
            entry["mixed"] = heldout.time_mixed(
                vla,
                every,
                int(row["block_size"]),
                args.mixed_scenes,
                threshold=threshold,
                max_new_tokens=args.max_new_tokens,
                end_in_order=end_in_order_tasks(row),
                reuse_kv=reuse_kv_tasks(row),
            )
        if own_baselines is not None:
            entry["train_baselines"] = own_baselines
        entry["aggregate"] = aggregate(entry["records"], own_baselines or read_store(store).get("_train_baselines"))

        def put(results: dict[str, Any], key: str = key, entry: dict[str, Any] = entry) -> None:
            split = results.setdefault(args.name, {})
            named = split.get("_split")
            if named is not None and named.get("path") != split_info["path"]:  # the name holds other data: the row
                entry["split"] = split_info  # keeps its own, and the name's rows keep theirs
            else:
                split["_split"] = split_info
            split[key] = entry

        update_store(store, put)
        p = entry["aggregate"]["planning"]
        print(
            f"{key}: L2 {_num(p['l2'])} (parsed {_num(p['parse_rate'], 2)}), QA "
            f"{_num(entry['aggregate']['understanding']['accuracy'], 2)}, "
            f"{_num(entry['aggregate']['speed']['planning']['tokens_per_second'], 1)} planning tokens/s"
        )
    return 0


TASK_OPTIONS = ("end_in_order", "reuse_kv")  # a row's per-task decode options: true (every task) or a list of tasks


def row_tasks(row: dict[str, Any], option: str) -> tuple[str, ...]:
    """The tasks a row decodes with ``option`` (one of ``TASK_OPTIONS``): true (all) or a list of tasks."""
    named = row.get(option, False)
    return tuple(TASKS) if named is True else tuple(named or ())


def end_in_order_tasks(row: dict[str, Any]) -> tuple[str, ...]:
    """The tasks a row decodes with ``DecodeConfig.end_in_order``."""
    return row_tasks(row, "end_in_order")


def reuse_kv_tasks(row: dict[str, Any]) -> tuple[str, ...]:
    """The tasks a row decodes with ``DecodeConfig.reuse_committed_kv`` (``reuse_kv``)."""
    return row_tasks(row, "reuse_kv")


def _report_command(args: argparse.Namespace) -> int:
    store = Path(args.store)
    if not store.is_file():
        print(f"error: no store at {store}", file=sys.stderr)
        return 2
    text = markdown(read_store(store), load_registry(args.registry), args.split_name, bootstrap=args.bootstrap)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m wamdiff2_ros.evaluation.paper_table", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="decode the rows' checkpoints on a split and store per-sample records")
    score.add_argument("--runs", default="runs/paper", help="folder holding the rows' run folders")
    score.add_argument("--split", required=True, help="the split's dataset root (e.g. runs/data/synth-val)")
    score.add_argument("--name", required=True, help="the split's name in the store (val, test)")
    score.add_argument("--limit", type=int, default=0, help="samples per task, spread evenly (0: all)")
    score.add_argument("--rows", nargs="*", default=None, help="row keys to score (default: every row)")
    score.add_argument("--store", default="docs/results_paper.json")
    score.add_argument("--registry", default=str(REGISTRY))
    score.add_argument("--final", action="store_true", help=f"required to score the {FINAL_SPLIT} split")
    score.add_argument("--rescore", action="store_true", help="score rows the store already has for this split")
    score.add_argument("--seed", type=int, default=2, help="sample seed of the split (which QA question per scene)")
    score.add_argument(
        "--train", default=None, help="train split for the trivial baselines (default: SPLIT/../synth-train)"
    )
    score.add_argument("--train-seed", type=int, default=1, help="the training set's sample seed")
    score.add_argument("--cache", default=None, help="tokenised-sample cache (default: RUNS/cache)")
    score.add_argument("--threshold", type=float, default=0.9)
    score.add_argument("--max-new-tokens", type=int, default=192)
    score.add_argument("--mixed-scenes", type=int, default=8, help="scenes of the mixed three-task timing (0: skip)")
    score.add_argument("--threads", type=int, default=1, help="torch threads")
    score.add_argument("--cameras", default="CAM_F0",
                       help="cameras every sample sees: comma list or 'all' (the split must have rendered them)")
    score.add_argument("--quiet", action="store_true", help="no progress bar")
    report = sub.add_parser("report", help="the markdown table from the store (no model needed)")
    report.add_argument("--store", default="docs/results_paper.json")
    report.add_argument("--registry", default=str(REGISTRY))
    report.add_argument("--split-name", default=FINAL_SPLIT)
    report.add_argument("--bootstrap", type=int, default=10000, help="bootstrap resamples")
    report.add_argument("--out", default=None, help="write here (default: print)")
    args = parser.parse_args(argv)
    return _score_command(args) if args.command == "score" else _report_command(args)


if __name__ == "__main__":
    raise SystemExit(main())
