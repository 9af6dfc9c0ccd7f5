"""Evaluation reports: a Markdown page with metric tables and matplotlib plots.

Plots: BEV trajectories (prediction vs ground truth, with agent boxes) for sample
scenes, L2 against the horizon in both conventions, and decode tokens/s against block
size. One summary per block size fills the comparison table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.geometry import boxes_corners, to_frame
from wamdiff2_ros.evaluation.planning import HORIZONS_S
from wamdiff2_ros.evaluation.scene import SceneGroundTruth, call_map
from wamdiff2_ros.geometry import ego_corners

TABLE_COLUMNS = (
    ("l2_avg", "L2 avg (at t) [m]"),
    ("l2_upto_avg", "L2 avg (up to t) [m]"),
    ("l2_4s", "L2 @4s [m]"),
    ("collision_rate", "collision rate"),
    ("nc", "NC"),
    ("ttc", "TTC"),
    ("comfort", "C"),
    ("ep", "EP*"),
    ("dac", "DAC"),
    ("ddc", "DDC"),
    ("pdms", "PDMS*"),
    ("pdms_without_map_terms", "PDMS w/o map terms*"),
    ("fallback_rate", "fallback rate"),
    ("decode_tokens_per_second", "decode tok/s"),
    ("tokens_per_forward", "tok/forward"),
)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def format_cell(value: Any) -> str:
    """A table cell: 3 decimals for floats, '–' for missing or NaN."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def plot_bev(path: Path, prediction: np.ndarray, scene: SceneGroundTruth, title: str = "") -> Path:
    """Bird's-eye view of one scene: ego box, agents now, ground-truth and predicted waypoints."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 5.2))
    # BEV convention: x forward is up, y left is left
    def draw(corners: np.ndarray, **kw: Any) -> None:
        closed = np.vstack([corners, corners[:1]])
        ax.plot(-closed[:, 1], closed[:, 0], **kw)

    gt = np.vstack([np.zeros((1, 3)), scene.trajectory])
    pred = np.vstack([np.zeros((1, 2)), np.asarray(prediction)[:, :2]])
    span = max(10.0, float(np.abs(np.vstack([gt[:, :2], pred])).max()) + 5.0)
    if scene.map is not None:  # drivable area, shaded
        xs = np.linspace(-8, span, 90)
        ys = np.linspace(-span / 2, span / 2, 90)
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        points = np.stack([gx, gy], axis=-1)
        if scene.ego_pose_global is not None:
            points = to_frame(points, scene.ego_pose_global)
        drivable = call_map(scene.map.is_drivable, points[..., 0], points[..., 1], bool)
        ax.imshow(drivable, origin="lower", extent=(span / 2, -span / 2, -8, span), cmap="Greys", alpha=0.15,
                  aspect="auto", vmin=0, vmax=1.5)  # fmt: skip
    draw(ego_corners(np.zeros(3)), color="black", lw=1.5)
    agents = scene.agents
    if agents.num_agents:
        for a in np.flatnonzero(agents.valid[0]):
            draw(boxes_corners(agents.boxes[0, a]), color="tab:gray", lw=1)
            future = agents.boxes[:, a][agents.valid[:, a]]
            ax.plot(-future[:, 1], future[:, 0], color="tab:gray", lw=0.6, ls=":")
    ax.plot(-gt[:, 1], gt[:, 0], "o-", color="tab:green", lw=4, ms=6, alpha=0.6, label="ground truth")
    ax.plot(-pred[:, 1], pred[:, 0], "o-", color="tab:red", ms=3, label="prediction")
    ax.set_xlim(-span / 2, span / 2)
    ax.set_ylim(-8, span)
    ax.set_aspect("equal")
    ax.set_xlabel("−y (left ← → right) [m]")
    ax.set_ylabel("x forward [m]")
    ax.set_title(title or scene.token, fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_l2_horizon(path: Path, summaries: Mapping[str, Mapping[str, Any]]) -> Path:
    """L2 at t (solid) and up to t (dashed) against the horizon, one colour per run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, summary in summaries.items():
        at = [summary.get(f"l2_at_{t}s", np.nan) for t in HORIZONS_S]
        upto = [summary.get(f"l2_upto_{t}s", np.nan) for t in HORIZONS_S]
        line = ax.plot(HORIZONS_S, at, "o-", label=f"{name}: at t (UniAD)")[0]
        ax.plot(HORIZONS_S, upto, "s--", color=line.get_color(), label=f"{name}: up to t (ST-P3)")
    ax.set_xlabel("horizon t [s]")
    ax.set_ylabel("L2 [m]")
    ax.set_xticks(HORIZONS_S)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tokens_per_second(path: Path, block_sizes: Sequence[int], tokens_per_s: Sequence[float]) -> Path:
    """Decode tokens/s against block size (log2 x axis)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(block_sizes, tokens_per_s, "o-")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(block_sizes))
    ax.set_xticklabels([str(b) for b in block_sizes])
    ax.set_xlabel("block size B (1 = autoregressive)")
    ax.set_ylabel("decode tokens/s")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(
    out_dir: str | Path,
    runs: Mapping[str, Mapping[str, Any]],
    *,
    samples: Sequence[tuple[str, np.ndarray, SceneGroundTruth]] = (),
    title: str = "Open-loop evaluation",
    notes: Sequence[str] = (),
    command: str = "",
) -> Path:
    """Write ``report.md`` and its plots into ``out_dir``; ``runs`` maps a run name (e.g. ``B=8``) to its summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    if command:
        lines += ["Produced by:", "", "```", command, "```", ""]
    first = next(iter(runs.values()), {})
    lines.append(
        f"Scenes scored: {first.get('scenes_scored', 0)}"
        + (f", scenes with a map: {first['scenes_with_map']}" if first.get("scenes_with_map") else "")
        + "."
    )
    lines += ["", "## Metrics per run", ""]
    columns = [(k, label) for k, label in TABLE_COLUMNS if any(k in s for s in runs.values())]
    lines.append("| run | " + " | ".join(label for _, label in columns) + " |")
    lines.append("|---|" + "---|" * len(columns))
    for name, summary in runs.items():
        lines.append(f"| {name} | " + " | ".join(format_cell(summary.get(k)) for k, _ in columns) + " |")
    lines += [
        "",
        "L2 *at t* is the error of the waypoint at t (UniAD convention); *up to t* averages all",
        "waypoints up to t (ST-P3 convention). NC, TTC, C (comfort), EP, DAC, DDC follow NAVSIM v1's",
        "PDM scorer on the resampled plan without LQR tracking. *EP is measured along the logged human",
        "trajectory, not PDM-Closed's; PDMS = NC·DAC·(5·EP + 5·TTC + 2·C)/12 only over scenes with a map;",
        "'PDMS w/o map terms' drops DAC and cannot judge lateral collisions at fault.",
        "",
    ]
    l2_plot = plot_l2_horizon(out / "l2_horizon.png", runs)
    lines += ["## L2 against horizon", "", f"![L2 against horizon]({l2_plot.name})", ""]
    speed = [(s.get("block_size"), s.get("decode_tokens_per_second")) for s in runs.values()]
    speed = [(int(b), float(v)) for b, v in speed if b is not None and v is not None and not math.isnan(float(v))]
    if len(speed) >= 2:
        speed.sort()
        plot = plot_tokens_per_second(out / "tokens_per_second.png", [b for b, _ in speed], [v for _, v in speed])
        lines += ["## Decode speed", "", f"![tokens per second]({plot.name})", ""]
    if samples:
        lines += ["## Sample scenes (bird's-eye view)", ""]
        for i, (name, prediction, scene) in enumerate(samples):
            plot = plot_bev(out / f"bev_{i:02d}.png", prediction, scene, f"{name} {scene.token[:16]}")
            lines.append(f"![{scene.token}]({plot.name})")
        lines.append("")
    counts = first.get("comfort_violation_counts")
    if counts:
        lines += ["## Comfort violations (scenes)", ""] + [f"- {k}: {v}" for k, v in sorted(counts.items())] + [""]
    problems = [p for s in runs.values() for p in s.get("problems", [])]
    fallbacks = [f"{name}: {s['fallback_rate']:.0%} of plans are the flagged constant-velocity fallback "
                 "(the model's answer did not parse); their metrics score the fallback, not the model"
                 for name, s in runs.items() if s.get("fallback_rate")]  # fmt: skip
    notes = [*notes, *fallbacks]
    if problems or notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in [*notes, *problems]] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
