"""The diffusion VLA: Qwen3-VL backbone, tokenizer, codecs, block-causal masks, losses.

Re-exports are lazy (module ``__getattr__``), so importing this package, or
``wamdiff2_ros.model.codecs``, never imports torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # loader
    "WamDiff2": "loader",
    "load_model": "loader",
    "init_model": "loader",
    "ModelLoadError": "loader",
    # presets
    "PRESETS": "presets",
    "get_preset": "presets",
    # inputs / cameras
    "build_inputs": "inputs",
    "encode_response": "inputs",
    "NAVSIM_CAMERAS": "cameras",
    "select_camera_images": "cameras",
    # masks
    "prefill_block_mask": "masks",
    "inference_block_mask": "masks",
    "training_block_mask": "masks",
    "decode_step_mask": "masks",
    "to_additive_4d": "masks",
    "training_position_ids": "masks",
    "continue_position_ids": "masks",
    # losses
    "add_block_noise": "losses",
    "masked_diffusion_loss": "losses",
    "ar_loss": "losses",
    "jsd_loss": "losses",
    "pad_response": "losses",
    # forwards
    "diffusion_forward": "forward",
    "ar_forward": "forward",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
