"""The machine a benchmark ran on, as one line for its table and JSON."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch


def device_description(device: str = "cpu") -> str:
    """The GPU's name, or ``"<cpu> CPU, N threads (M cores)"`` with torch's current thread count."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"{cpu_model()} CPU, {torch.get_num_threads()} threads ({os.cpu_count()} cores)"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``) and architecture, e.g. ``"AMD EPYC (x86_64)"``."""
    arch = platform.machine() or platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return f"{line.split(':', 1)[1].strip()} ({arch})"
    except OSError:
        pass
    return arch
