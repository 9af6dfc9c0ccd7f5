"""Loss curves of training runs (matplotlib, Agg backend): one stage, or a whole ladder side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib  # imported on call: training and the report import this module without plotting

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _smooth(values: Sequence[float], window: int) -> list[float]:
    out, acc = [], []
    for v in values:
        acc.append(v)
        if len(acc) > window:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def plot_loss(history: Sequence[Mapping[str, float]], path: str | Path, title: str = "") -> Path:
    """Loss against step (raw and smoothed) for one run."""
    plt = pyplot()
    path = Path(path)
    steps = [r["step"] for r in history]
    loss = [r["loss"] for r in history]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, loss, alpha=0.3, label="loss")
    ax.plot(steps, _smooth(loss, max(1, len(loss) // 30)), label="smoothed")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_ladder(runs: Mapping[str, Sequence[Mapping[str, float]]], path: str | Path, title: str = "",
                overlay: bool = False, key: str = "loss") -> Path:
    """Smoothed ``key`` of several stages, one after the other on a shared step axis (``overlay``: side by side)."""
    plt = pyplot()
    path = Path(path)
    fig, ax = plt.subplots(figsize=(9, 4))
    offset = 0.0
    for name, history in runs.items():
        history = [r for r in history if key in r]
        if not history:
            continue
        steps = [offset + r["step"] for r in history]
        loss = _smooth([r[key] for r in history], max(1, len(history) // 30))
        ax.plot(steps, loss, label=name)
        offset = 0.0 if overlay else steps[-1]
    ax.set_xlabel("step" if overlay else "step (stages in sequence)")
    ax.set_ylabel(f"{key} (smoothed)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
