"""NAVSIM-format data: safe log reader, synthetic driving world, multi-task samples.

Light on import: names below load their module on first use (no cv2, torch or rclpy
at import time). See ``README.md`` in this folder for the on-disk layout.
"""

from __future__ import annotations

from wamdiff2_ros._lazy import lazy_exports

_EXPORTS = {
    "safe_load_pickle": "pickle_safe",
    "UnsafePickleError": "pickle_safe",
    "NavsimLogs": "navsim",
    "Scene": "navsim",
    "Frame": "navsim",
    "LogFormatError": "navsim",
    "load_log": "navsim",
    "CAMERA_NAMES": "navsim",
    "World": "world",
    "WorldConfig": "world",
    "RoadMap": "world",
    "synthesize": "synth",
    "Sample": "samples",
    "planning_sample": "samples",
    "perception_sample": "samples",
    "understanding_samples": "samples",
    "to_conversation": "samples",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
