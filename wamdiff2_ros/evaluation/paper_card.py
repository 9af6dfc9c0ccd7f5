"""The model card of a shipped paper-table row (``docs/runs/paper.yaml``): lineage with compute, recipe, scores.

The card lists the row's exact lineage (run, stage, config, steps, samples, CPU core-minutes,
final loss, the run it started from), the teacher's own lineage where the row was distilled,
the recipe commands, and the row's scores on a split from the paper table's store
(:mod:`wamdiff2_ros.evaluation.paper_table`). Records are read from ``runs/`` first, then
from their archive ``docs/runs/paper/``. Shipping the row is ``training.ship_paper``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wamdiff2_ros.evaluation.paper_table import end_in_order_tasks, reuse_kv_tasks, row_split
from wamdiff2_ros.evaluation.run_records import read_json

ARCHIVE = Path("docs/runs/paper")
STAGES = {"ar": "stage 0 (AR)", "adapt": "stage I (block adaptation)",
          "distill-block": "stage II (on-policy block distillation)",
          "distill-model": "stage III (model distillation)"}


#: later lineages of tools/paper_recipe.sh, trained in their own runs folder under the first lineage's names and
#: shown in the table with a prefix: the converged start (runs/paper2, conv-*) and the converged start with
#: fixed-width plans (runs/paper3, fix-*), with 1-decimal fixed-width plans (runs/paper4, fix1-*), and that with
#: every camera (runs/paper5, cam8-*), and that on data of the world rules of shipping rule v5 (runs/paper6, world-*)
LINEAGE_PREFIXES = {"paper2": "conv", "paper3": "fix", "paper4": "fix1", "paper5": "cam8", "paper6": "world"}


def config_of(run: str) -> tuple[str, str]:
    """``(train subcommand, config file under config/train/paper)`` of a run of tools/paper_recipe.sh."""
    for prefix in LINEAGE_PREFIXES.values():  # a later lineage: the same configs
        if run.startswith(f"{prefix}-"):
            base = run.removeprefix(f"{prefix}-")
            return config_of(base if base.startswith("deep-") else f"tiny-{base}")
    prefix, _, rest = run.partition("-")
    fixed = {"tiny-ar": ("ar", "ar.yaml"), "tiny-ar-equal": ("ar", "ar.yaml"), "mid-ar": ("ar", "mid_ar.yaml"),
             "tiny-ar-restyled": ("ar", "ar.yaml"), "tiny-ar-parity": ("ar", "ar.yaml"),
             "deep-b32": ("adapt", "deep_adapt_b32.yaml"),
             "tiny-b32-s2": ("distill-block", "distill_block.yaml"),
             "tiny-b32-s3": ("distill-model", "distill_model.yaml"),
             "tiny-b32-s2-offpolicy": ("distill-block", "distill_block_offpolicy.yaml"),
             "tiny-b32-s2-t32": ("distill-block", "distill_block.yaml"),
             "ablation-kd-cf": ("adapt", "ablation_kd_cf.yaml")}
    if run in fixed:
        return fixed[run]
    if rest.startswith("b") and rest[1:].isdigit():
        return "adapt", ("mid_" if prefix == "mid" else "") + f"adapt_{rest}.yaml"
    raise ValueError(f"{run}: not a run of tools/paper_recipe.sh")


def run_name(path: str) -> str:
    """The table's name of a run folder: a later lineage is trained in its own folder under the first lineage's
    names (its tiny-ar is tiny-ar-equal, copied; in runs/paper2 its tiny-<x> and deep-<x> are conv-<x>,
    conv-deep-<x>; in runs/paper3 fix-<x>, fix-deep-<x>)."""
    name = Path(path).name
    prefix = LINEAGE_PREFIXES.get(Path(path).parent.name)
    if prefix is None or not name:
        return name
    return "tiny-ar-equal" if name == "tiny-ar" else f"{prefix}-{name.removeprefix('tiny-')}"


def lineage_rows(runs: Path, lineage: Sequence[str],
                 inits: dict[str, str] | None = None) -> tuple[list[str], dict[str, float]]:
    """Markdown table rows of a lineage and its totals (steps, samples, core-minutes).

    ``inits``: the init to show for a run (a checkpoint renamed since it was trained from).
    """
    rows, totals = [], {"steps": 0.0, "samples": 0.0, "core_min": 0.0}
    for run in lineage:
        summary = read_json(runs, run, "train_summary.json", ARCHIVE)
        config = read_json(runs, run, "train_config.json", ARCHIVE)
        sub, cfg = config_of(run)
        steps = int(summary.get("steps_done", summary.get("steps", 0)) or 0)
        world = int(summary.get("world_size", 1) or 1)
        samples = steps * int(config.get("batch_size", 0) or 0) * int(config.get("grad_accum", 1) or 1) * world
        core_min = float(summary.get("wall_time_s", 0.0) or 0.0) * world * int(config.get("num_threads") or 1) / 60
        loss = summary.get("final_loss")
        init = (inits or {}).get(run) or run_name(str(config.get("init") or "-"))
        teacher = run_name(str(config.get("teacher") or ""))
        rows.append(f"| `{run}` | {STAGES.get(sub, sub)} | `config/train/paper/{cfg}` | {init}"
                    f"{f' (teacher {teacher})' if teacher else ''} | {steps} | {samples} | {core_min:.1f} | "
                    f"{'-' if loss is None else f'{float(loss):.4f}'} |")
        totals["steps"] += steps
        totals["samples"] += samples
        totals["core_min"] += core_min
    return rows, totals


PLAN_STYLE_TEXT = {"fixed": "zero-padded, two decimals: `05.16,-00.01,...`",
                   "fixed1": "zero-padded, one decimal: `05.2,-00.3,...`",
                   "cv1": "zero-padded, one decimal, minus the constant-velocity plan of the prompt's velocity: "
                          "`-00.2,00.0,...`; generation_config.json `plan_style` tells readers to add it back"}


def plan_style(runs: Path, lineage: Sequence[str]) -> str:
    """The plan text style (``data.plan_style``) of the lineage's last run; ``plain`` when none is recorded."""
    config = read_json(runs, lineage[-1], "train_config.json", ARCHIVE) if lineage else {}
    return str((config.get("data") or {}).get("plan_style") or "plain")


def cameras_text(runs: Path, lineage: Sequence[str]) -> str:
    """The cameras the lineage's last run trained on (``data.cameras``, ``data.camera_subsets``)."""
    data = (read_json(runs, lineage[-1], "train_config.json", ARCHIVE) if lineage else {}).get("data") or {}
    cameras = list(data.get("cameras") or ["CAM_F0"])
    if cameras == ["CAM_F0"]:
        return "front camera"
    subsets = data.get("camera_subsets")
    how = (" (each sample the front camera and a random subset of the others, `data.camera_subsets=keep_first`)"
           if subsets == "keep_first" else f" (`data.camera_subsets={subsets}`)" if subsets else "")
    return f"{len(cameras)} cameras {', '.join(cameras)}{how}"


def world_rules_text(checkpoint: Path) -> str:
    """The world rules of the checkpoint's training data (``generation_config.json`` ``world_rules``)."""
    from wamdiff2_ros.data.world.rules import WORLD_RULES_KEY, checked_world_rules, checkpoint_world_rules

    rules = checkpoint_world_rules(checkpoint)
    values = ", ".join(f"{k} {v:g}" for k, v in sorted(rules.items()))
    if rules == checked_world_rules({}):
        return f"the world's default rules ({values})"
    return (f"world rules {values} (`generation_config.json` `{WORLD_RULES_KEY}`; the closed loop and sim_node run"
            " the model under them)")


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{float(value):.{digits}f}"


def threshold_text(threshold: Any) -> str:
    """``0.3``, or ``planning 0.3, perception 0.3, understanding 0.9`` for per-task thresholds."""
    if isinstance(threshold, dict):
        return ", ".join(f"{task} {value:g}" for task, value in threshold.items())
    return f"{threshold:g}" if isinstance(threshold, (int, float)) else str(threshold)


def scores_lines(entry: dict[str, Any] | None, split: str, split_info: dict[str, Any]) -> list[str]:
    """The card's scores section from a paper-table store entry (its ``aggregate``)."""
    if not entry or "aggregate" not in entry:
        return [f"Not scored on the {split} split yet.", ""]
    agg = entry["aggregate"]
    plan, qa, perc, speed = agg["planning"], agg["understanding"], agg.get("perception", {}), agg["speed"]
    horizons = ", ".join(_fmt(v, 2) for v in plan.get("l2_h") or [])
    bev = perc.get("bev_ap") or {}
    lines = [f"The {split} split ({split_info.get('path', '?')}, {agg['samples']} samples per task), fast engine, greedy,"
             f" confidence threshold {threshold_text(entry.get('threshold', split_info.get('threshold', 0.9)))},"
             " decoded at"
             f" B={entry.get('block_size', '?')}"
             " (`python -m wamdiff2_ros.evaluation.paper_table score`):", "",
             f"- planning L2, average of 1-4 s: **{_fmt(plan['l2'])} m** on every sample (answers that do not parse"
             f" drive the constant-velocity fallback; parse rate {_fmt(plan['parse_rate'], 2)}); at 1/2/3/4 s:"
             f" {horizons}; on the parsed plans alone {_fmt(plan.get('l2_parsed_only'))}",
             f"- understanding exact-match accuracy {_fmt(qa['accuracy'], 2)} (majority answer"
             f" {_fmt(qa.get('majority_accuracy'), 2)})"]
    if perc.get("n"):
        lines.append(f"- perception image mAP@0.5 {_fmt(perc.get('map_50'))}, BEV centre-distance mAP"
                     f" {_fmt(perc.get('bev_map'))} ({', '.join(f'{k} m: {_fmt(v)}' for k, v in bev.items())}); the"
                     f" prior box scores {_fmt(perc.get('prior_bev_map'))}")
    lines += [f"- planning decode {_fmt(speed['planning'].get('tokens_per_second'), 1)} tokens/s,"
              f" {_fmt(speed['planning'].get('tokens_per_forward'), 2)} tokens per forward (CPU, one thread,"
              " shared machine)", ""]
    return lines


def card(name: str, row: dict[str, Any], registry: dict[str, Any], runs: Path, store: dict[str, Any],
         split: str, checkpoint: Path | None = None) -> str:
    """The README.md of a shipped paper-table row; ``checkpoint``: its shipped folder (whose generation_config
    names the world rules of its data; default the run's own folder)."""
    header = ("| run | stage | config | init | steps | samples | core-min | final loss |",
              "|---|---|---|---|---|---|---|---|")
    prior = registry.get("prior") or {}
    inits = {prior["before"]: prior["init_now"]} if prior.get("before") and prior.get("init_now") else None
    rows, totals = lineage_rows(runs, row["lineage"], inits)
    lines = [f"# {name}", "", f"{row['label']} (paper-table row `{row['key']}`, run `{row['run']}`), decoded at"
             f" B={row['block_size']}. Trained here on the CPU, on synthetic NAVSIM-format data, by the paper's"
             " recipe in miniature (`tools/paper_recipe.sh`; rows and lineages in `docs/runs/paper.yaml`).", ""]
    if prior and row["lineage"] and row["lineage"][0] == prior.get("before"):
        lines += [f"Stage 0 starts from {prior.get('label', 'the shipped AR')} (its own training is in"
                  f" {', '.join(f'`{r}`' for r in prior.get('records') or [])}, not counted below).", ""]
    lines += ["## Lineage", "", *header, *rows, "",
              f"Total: {int(totals['steps'])} steps, {int(totals['samples'])} samples,"
              f" {totals['core_min']:.1f} CPU core-minutes.", ""]
    if row.get("teacher_lineage"):
        trows, ttotals = lineage_rows(runs, row["teacher_lineage"])
        lines += ["The distillation teacher's own training (not in the total above):", "", *header, *trows, "",
                  f"Teacher total: {ttotals['core_min']:.1f} CPU core-minutes.", ""]
    style = plan_style(runs, row["lineage"])
    written = f"; plans written `data.plan_style={style}` ({PLAN_STYLE_TEXT.get(style, style)})" if style != "plain" else ""
    lines += ["Data: `tools/paper_recipe.sh data` (train split `synthesize(num_logs=24, num_frames=60, seed=1,"
              " size=(256, 128))`; validation seed 2, test seed 4, disjoint worlds); samples: planning, perception"
              f" (2 nearest visible boxes), one understanding question per scene, {cameras_text(runs, row['lineage'])}"
              f"{written}; {world_rules_text(checkpoint or runs / row['run'])}.", ""]
    if any(entry.get("row") == row["key"] for entry in registry.get("shipped") or []):
        lines += ["Chosen by the shipping rule in `docs/runs/paper.yaml` (the comments above `shipped:` give the rule,"
                  " the validation data it was judged on and the outcome).", ""]
    if row.get("threshold") is not None:
        same = [r["key"] for r in registry["rows"] if r["run"] == row["run"] and r.get("threshold") is None]
        tasks = row.get("task_thresholds") or {}
        own = ("; " + ", ".join(f"{task} {value:g}" for task, value in tasks.items())
               + " (`task_confidence_thresholds`)") if tasks else ""
        ends = end_in_order_tasks(row)
        own += f"; end tokens in order for {', '.join(ends)} (`end_in_order_tasks`)" if ends else ""
        reused = reuse_kv_tasks(row)
        own += (f"; reused committed keys and values for {', '.join(reused)} (`reuse_kv_tasks`, approximate)"
                if reused else "")
        lines += [f"Decoding default: confidence threshold {row['threshold']:g}{own}, written into"
                  " `generation_config.json` (`confidence_threshold`, used by drive_node and `wamdiff2 eval closed-loop`"
                  " unless they are given one), chosen on validation data by the decode threshold rules in"
                  " `docs/runs/paper.yaml`"
                  + (f"; the paper table's row of the same weights at the table's threshold is `{same[0]}`" if same
                     else "") + ".", ""]
    lines += ["## Scores", ""]
    split_block = store.get(split) or {}
    lines += scores_lines(split_block.get(row["key"]), split, row_split(split_block, row["key"]))
    lines += ["## Use", "", "```python", "from wamdiff2_ros.model.loader import load_model",
              f"vla = load_model('checkpoints/{name}')", "```", ""]
    return "\n".join(lines)
