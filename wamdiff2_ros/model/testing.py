"""Test helpers: toy camera images and checkpoint directories of each kind the loader accepts.

``write_qwen3vl_dir`` writes what a Qwen3-VL download looks like (``model_type: qwen3_vl``,
no mask token, no block size); ``write_wam_diff2_dir`` rewrites a checkpoint's config the
way the reference release spells it (``model_type: wam_diff2``, legacy RoPE keys).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from wamdiff2_ros.model.presets import build_config, get_preset
from wamdiff2_ros.model.processor import ImageTextProcessor, make_image_processor
from wamdiff2_ros.model.tokenizer import CHAT_TEMPLATE, ENDOFTEXT, IM_END, MASK, SPECIAL_TOKENS, train_tokenizer


def toy_image(height: int = 90, width: int = 160, seed: int = 0) -> np.ndarray:
    """A deterministic RGB uint8 'camera' image: a gradient road with a bright box."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    img = np.stack([np.broadcast_to(y, (height, width)), np.broadcast_to(x, (height, width)), (y + x) / 2], axis=-1)
    r0, c0 = rng.integers(0, height // 2), rng.integers(0, width // 2)
    img[r0 : r0 + height // 4, c0 : c0 + width // 4] = 250.0
    img += rng.normal(0, 8, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def write_qwen3vl_dir(directory: str | Path, *, preset: str = "tiny", seed: int = 0, exact_vocab: bool = True) -> Path:
    """A randomly initialised Qwen3-VL-style checkpoint whose tokenizer lacks ``<|mask|>``.

    With ``exact_vocab`` the embedding has exactly the tokenizer's size, so adding the mask
    token forces an embedding resize.
    """
    from transformers import PreTrainedTokenizerFast, Qwen3VLForConditionalGeneration

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    specials = tuple(t for t in SPECIAL_TOKENS if t != MASK)
    raw = train_tokenizer(vocab_size=600, seed=seed, num_lines=1500, special_tokens=specials)
    raw_path = out / "raw_tokenizer.json"
    raw.save(str(raw_path))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(raw_path), eos_token=IM_END, pad_token=ENDOFTEXT,
        additional_special_tokens=[t for t in specials if t not in (IM_END, ENDOFTEXT)],
    )
    raw_path.unlink()
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {k: tokenizer.convert_tokens_to_ids(t) for k, t in (
        ("image", "<|image_pad|>"), ("video", "<|video_pad|>"),
        ("vision_start", "<|vision_start|>"), ("vision_end", "<|vision_end|>"),
    )}
    end_id = tokenizer.convert_tokens_to_ids(IM_END)
    config = build_config(
        preset, vocab_size=len(tokenizer), special_token_ids=ids, mask_token_id=0, end_token_id=end_id,
        pad_token_id=tokenizer.pad_token_id, pad_vocab_to=1 if exact_vocab else 64,
    )
    for extra in ("block_size", "mask_token_id", "end_token_id", "wamdiff2_preset"):
        delattr(config, extra)
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    p = get_preset(preset)
    ImageTextProcessor(make_image_processor(patch_size=p.patch_size, min_pixels=p.min_pixels, max_pixels=p.max_pixels),
                       tokenizer).save_pretrained(out)
    return out


def write_wam_diff2_dir(source: str | Path, directory: str | Path, *, mask_token_id: int | None = None) -> Path:
    """Copy a checkpoint and rewrite its config as the reference's ``wam_diff2`` release spells it."""
    import shutil

    src, out = Path(source), Path(directory)
    shutil.copytree(src, out, dirs_exist_ok=True)
    config = json.loads((out / "config.json").read_text())
    config["model_type"] = "wam_diff2"
    config["architectures"] = ["WAMDiff2ForConditionalGeneration"]
    for key in ("block_size", "end_token_id", "wamdiff2_preset", "mask_token_id"):
        config.pop(key, None)
    if mask_token_id is not None:
        config["mask_token_id"] = mask_token_id
    text = config["text_config"]
    text["model_type"] = "wam_diff2_text"
    rope = text.pop("rope_parameters")
    text["rope_theta"] = rope.pop("rope_theta")
    text["rope_scaling"] = rope
    config["vision_config"]["model_type"] = "wam_diff2"
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out
