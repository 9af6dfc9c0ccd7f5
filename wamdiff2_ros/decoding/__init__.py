"""AR and block-diffusion decoders: a readable reference and a fast static-cache engine.

Public API (imported lazily, so ``import wamdiff2_ros.decoding`` stays light)::

    from wamdiff2_ros.decoding import DecodeConfig, DecodeResult, DecodeStats, generate
    from wamdiff2_ros.decoding import encode_prefix, generate_from_prefix  # one frame set, several tasks
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "DecodeConfig": "config", "DecodeStats": "config", "DecodeResult": "config", "DecodeConfigError": "config",
    "generate": "api", "DecodeInputError": "prompt", "encode_prefix": "api", "generate_from_prefix": "api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
