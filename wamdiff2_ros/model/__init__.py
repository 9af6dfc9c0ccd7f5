"""The diffusion VLA: Qwen3-VL backbone, tokenizer, codecs, block-causal masks, losses.

Re-exports are lazy (module ``__getattr__``), so importing this package, or
``wamdiff2_ros.model.codecs``, never imports torch or transformers.
"""

from __future__ import annotations

from wamdiff2_ros._lazy import lazy_exports

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

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
