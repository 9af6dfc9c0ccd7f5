"""AR and block-diffusion decoders: a readable reference and a fast static-cache engine.

The driving agent built on them (prompt -> decode -> parse -> fallback) is
``wamdiff2_ros.agent``.

Public API (imported lazily, so ``import wamdiff2_ros.decoding`` stays light)::

    from wamdiff2_ros.decoding import DecodeConfig, DecodeResult, DecodeStats, generate
    from wamdiff2_ros.decoding import encode_prefix, generate_from_prefix  # one frame set, several tasks
"""

from __future__ import annotations

from wamdiff2_ros._lazy import lazy_exports

_EXPORTS = {
    "DecodeConfig": "config", "DecodeStats": "config", "DecodeResult": "config", "DecodeConfigError": "config",
    "generate": "api", "DecodeInputError": "prompt", "encode_prefix": "api", "generate_from_prefix": "api",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
