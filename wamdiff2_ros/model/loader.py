"""One loader for the diffusion VLA: our checkpoints, Qwen3-VL checkpoints and WAM-Diff2 checkpoints.

Every kind becomes a :class:`WamDiff2`: transformers' ``Qwen3VLForConditionalGeneration``
(vision tower included), its tokenizer, an image processor, and the diffusion settings
(``block_size``, ``mask_token_id``, ``end_token_id``). Directories are local only
(``local_files_only=True``); nothing is fetched from a hub.

- ``model_type: qwen3_vl`` (a Qwen3-VL download or a checkpoint written here): a missing
  ``<|mask|>`` token is added to the tokenizer and the embeddings are resized if needed.
- ``model_type: wam_diff2`` (the reference release): same weight layout as Qwen3-VL; the
  config is rewritten to a Qwen3-VL config, the mask token id comes from the config
  (default 151671).

``block_size``, ``mask_token_id`` and ``end_token_id`` are recorded as extra fields of the
saved ``config.json``; plain transformers ignores them. So is ``prompt_format``, the
question wording and image layout the checkpoint was trained on
(:data:`wamdiff2_ros.model.prompts.PROMPT_FORMATS`): a checkpoint without the field
keeps this package's original format (``wamdiff2_ros``), except a ``wam_diff2``
checkpoint, which gets the reference's training format (``reference``).
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from wamdiff2_ros.model.presets import build_config, get_preset
from wamdiff2_ros.model.processor import ImageTextProcessor, load_processor, make_image_processor
from wamdiff2_ros.model.prompts import PROMPT_FORMATS, check_prompt_format, default_prompt_format
from wamdiff2_ros.model.tokenizer import (
    ENDOFTEXT,
    IM_END,
    IMAGE_PAD,
    MASK,
    VIDEO_PAD,
    VISION_END,
    VISION_START,
    wrap_tokenizer,
)

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerBase, Qwen3VLForConditionalGeneration

WAM_DIFF2_MASK_TOKEN_ID = 151671
SUPPORTED_MODEL_TYPES = ("qwen3_vl", "wam_diff2")


class ModelLoadError(ValueError):
    """A model directory is missing, incomplete or of an unsupported kind."""


@dataclass
class WamDiff2:
    """The diffusion VLA: a transformers Qwen3-VL model plus tokenizer, processor and block settings."""

    model: Qwen3VLForConditionalGeneration
    tokenizer: PreTrainedTokenizerBase
    processor: ImageTextProcessor | None
    block_size: int
    mask_token_id: int
    end_token_id: int
    pad_token_id: int
    path: str | None = None
    prompt_format: str = PROMPT_FORMATS[0]

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def config(self):
        return self.model.config

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.text_config.vocab_size)

    @property
    def image_token_id(self) -> int:
        return int(self.model.config.image_token_id)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def with_block_size(self, block_size: int) -> WamDiff2:
        """The same model and tokenizer with another block size (no copy of the weights)."""
        _check_block_size(block_size)
        return WamDiff2(
            self.model, self.tokenizer, self.processor, int(block_size), self.mask_token_id,
            self.end_token_id, self.pad_token_id, self.path, self.prompt_format,
        )

    def record_settings(self) -> None:
        """Write block_size / mask / end / pad token ids into the model config."""
        cfg = self.model.config
        cfg.block_size = int(self.block_size)
        cfg.mask_token_id = int(self.mask_token_id)
        cfg.end_token_id = int(self.end_token_id)
        cfg.eos_token_id = int(self.end_token_id)
        cfg.pad_token_id = int(self.pad_token_id)
        cfg.prompt_format = check_prompt_format(self.prompt_format)

    def save(self, directory: str | os.PathLike) -> Path:
        """``save_pretrained`` of model (safetensors), tokenizer and processor into ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.record_settings()
        self.model.save_pretrained(str(out), safe_serialization=True)
        self.tokenizer.save_pretrained(str(out))
        if self.processor is not None:
            self.processor.save_pretrained(out)
        return out


def _check_block_size(block_size: Any) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return block_size


def read_config_dict(directory: Path) -> dict[str, Any]:
    """The raw ``config.json`` of a checkpoint directory, with a clear error when absent or broken."""
    if not directory.exists():
        raise ModelLoadError(f"model directory does not exist: {directory}")
    if not directory.is_dir():
        raise ModelLoadError(f"model path is not a directory: {directory} (only local directories are supported)")
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ModelLoadError(f"{directory} has no config.json; it is not a transformers checkpoint")
    try:
        data = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"cannot read {config_path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelLoadError(f"{config_path} does not hold a JSON object")
    model_type = data.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelLoadError(
            f"{config_path}: model_type {model_type!r} is not supported (expected one of {', '.join(SUPPORTED_MODEL_TYPES)})"
        )
    return data


def qwen3vl_config_from_dict(data: dict[str, Any]):
    """A ``Qwen3VLConfig`` from a qwen3_vl or wam_diff2 config dict (sub-config types rewritten)."""
    from transformers import Qwen3VLConfig

    data = copy.deepcopy(data)
    data["model_type"] = "qwen3_vl"
    for key, sub_type in (("text_config", "qwen3_vl_text"), ("vision_config", "qwen3_vl_vision")):
        sub = data.get(key)
        if isinstance(sub, dict):
            sub["model_type"] = sub_type
    if isinstance(data.get("text_config"), dict):
        text = data["text_config"]
        # Older configs (and the reference's) spell RoPE as rope_theta + rope_scaling.
        if "rope_parameters" not in text and ("rope_theta" in text or "rope_scaling" in text):
            params = dict(text.pop("rope_scaling", None) or {})
            params.setdefault("rope_type", params.pop("type", "default"))
            params["rope_theta"] = text.pop("rope_theta", 5_000_000.0)
            text["rope_parameters"] = params
    data.pop("architectures", None)
    try:
        return Qwen3VLConfig(**{k: v for k, v in data.items() if k != "model_type"})
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"invalid Qwen3-VL config: {exc}") from exc


def _token_id(tokenizer, token: str) -> int | None:
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or (tokenizer.unk_token_id is not None and token_id == tokenizer.unk_token_id):
        return None
    return int(token_id)


def ensure_mask_token(model, tokenizer, config_data: dict[str, Any]) -> int:
    """The mask token id: from the config, else the tokenizer's ``<|mask|>``, else a newly added one."""
    recorded = config_data.get("mask_token_id")
    if recorded is not None:
        mask_id = int(recorded)
    elif config_data.get("model_type") == "wam_diff2":
        mask_id = WAM_DIFF2_MASK_TOKEN_ID
    else:
        mask_id = _token_id(tokenizer, MASK)
        if mask_id is None:
            tokenizer.add_tokens([MASK], special_tokens=True)
            mask_id = _token_id(tokenizer, MASK)
            if mask_id is None:  # pragma: no cover - tokenizers always add
                raise ModelLoadError(f"could not add {MASK} to the tokenizer")
    vocab = model.get_input_embeddings().weight.shape[0]
    if mask_id >= vocab:
        model.resize_token_embeddings(mask_id + 1, pad_to_multiple_of=64, mean_resizing=False)
    return mask_id


def load_model(
    path: str | os.PathLike,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    block_size: int | None = None,
    attn_implementation: str = "sdpa",
) -> WamDiff2:
    """Load a local checkpoint directory (ours, ``qwen3_vl`` or ``wam_diff2``) as a :class:`WamDiff2` in eval mode."""
    from transformers import AutoTokenizer, Qwen3VLForConditionalGeneration

    directory = Path(path).expanduser()
    data = read_config_dict(directory)
    if block_size is not None:
        _check_block_size(block_size)
    config = qwen3vl_config_from_dict(data)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load the tokenizer from {directory}: {exc}") from exc
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    if data.get("model_type") == "wam_diff2":  # transformers warns that the config type differs; it is expected
        hf_logging.set_verbosity_error()
    try:
        model = Qwen3VLForConditionalGeneration.from_pretrained(
            str(directory), config=config, dtype=dtype, local_files_only=True, attn_implementation=attn_implementation
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"cannot load the weights from {directory}: {exc}") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
    mask_id = ensure_mask_token(model, tokenizer, data)
    end_id = data.get("end_token_id")
    end_id = int(end_id) if end_id is not None else _token_id(tokenizer, IM_END)
    if end_id is None:
        raise ModelLoadError(f"the tokenizer in {directory} has no {IM_END} token and the config names no end_token_id")
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = _token_id(tokenizer, ENDOFTEXT)
    if pad_id is None:
        pad_id = end_id
    try:
        prompt_format = check_prompt_format(data.get("prompt_format", default_prompt_format(data.get("model_type"))))
    except ValueError as exc:
        raise ModelLoadError(f"{directory / 'config.json'}: {exc}") from None
    try:
        processor = load_processor(directory, tokenizer)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load the image processor from {directory}: {exc}") from exc
    vla = WamDiff2(
        model=model.to(device).eval(),
        tokenizer=tokenizer,
        processor=processor,
        block_size=int(block_size if block_size is not None else data.get("block_size") or 1),
        mask_token_id=int(mask_id),
        end_token_id=int(end_id),
        pad_token_id=int(pad_id),
        path=str(directory),
        prompt_format=prompt_format,
    )
    vla.record_settings()
    return vla


def init_model(
    preset: str,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    block_size: int = 1,
    attn_implementation: str = "sdpa",
) -> WamDiff2:
    """A randomly initialised preset (in memory), with the shipped BPE tokenizer and an image processor.

    ``2b-shape`` holds about 2.1e9 parameters: 8.5 GB in float32, half in bfloat16.
    """
    from transformers import Qwen3VLForConditionalGeneration

    p = get_preset(preset)
    _check_block_size(block_size)
    tokenizer = wrap_tokenizer()
    ids = {
        "image": _token_id(tokenizer, IMAGE_PAD),
        "video": _token_id(tokenizer, VIDEO_PAD),
        "vision_start": _token_id(tokenizer, VISION_START),
        "vision_end": _token_id(tokenizer, VISION_END),
    }
    mask_id, end_id, pad_id = _token_id(tokenizer, MASK), _token_id(tokenizer, IM_END), _token_id(tokenizer, ENDOFTEXT)
    config = build_config(
        p, vocab_size=len(tokenizer), special_token_ids=ids, block_size=block_size,
        mask_token_id=mask_id, end_token_id=end_id, pad_token_id=pad_id,
    )
    config._attn_implementation = attn_implementation
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration._from_config(config, dtype=dtype)
    processor = ImageTextProcessor(
        make_image_processor(patch_size=p.patch_size, min_pixels=p.min_pixels, max_pixels=p.max_pixels), tokenizer
    )
    return WamDiff2(
        model=model.to(device).eval(), tokenizer=tokenizer, processor=processor, block_size=block_size,
        mask_token_id=mask_id, end_token_id=end_id, pad_token_id=pad_id, path=None,
    )
