"""matplotlib for the benchmarks' PNGs, headless (Agg backend)."""

from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib  # imported on call: only a run with --plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
