"""The machine a benchmark ran on, as one line for its table and JSON."""

from __future__ import annotations

import os
import platform

import torch


def device_description(device: str = "cpu") -> str:
    """The GPU's name, or ``"<cpu> CPU, N threads (M cores)"`` with torch's current thread count."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads ({os.cpu_count()} cores)"
