"""Image + text processor for Qwen3-VL inputs: pixels -> patches, one ``<|image_pad|>`` per vision token.

Behaves like transformers' ``Qwen3VLProcessor`` for images (same keys: ``input_ids``,
``attention_mask``, ``mm_token_type_ids``, ``pixel_values``, ``image_grid_thw``) but does
not need torchvision, which ``Qwen3VLProcessor`` requires for its video processor. The
image processor itself is transformers' Qwen2-VL/Qwen3-VL one (PIL backend), loaded with
``AutoImageProcessor`` from the checkpoint's ``preprocessor_config.json``. Saving writes
the files a full transformers install needs to build a ``Qwen3VLProcessor`` too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

IMAGE_PAD = "<|image_pad|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
VISION_BLOCK = f"{VISION_START}{IMAGE_PAD}{VISION_END}"


def make_image_processor(*, patch_size: int, min_pixels: int, max_pixels: int, merge_size: int = 2):
    """transformers' Qwen-VL image processor (PIL backend) with Qwen3-VL's normalisation."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        patch_size=patch_size,
        merge_size=merge_size,
        temporal_patch_size=2,
        size={"shortest_edge": int(min_pixels), "longest_edge": int(max_pixels)},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def _check_image(index: int, image: Any) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image {index} must be a numpy array (H, W, 3), got {type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"image {index} must have shape (H, W, 3) RGB, got {tuple(image.shape)}")
    if image.shape[0] < 2 or image.shape[1] < 2:
        raise ValueError(f"image {index} is too small: {tuple(image.shape)}")
    if image.dtype != np.uint8:
        if not np.issubdtype(image.dtype, np.floating):
            raise ValueError(f"image {index} must be uint8 (0..255) or float (0..1), got {image.dtype}")
        image = (np.clip(image, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return image


class ImageTextProcessor:
    """Turns chat text with ``<|image_pad|>`` placeholders and RGB images into model inputs."""

    def __init__(self, image_processor, tokenizer) -> None:
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        self.image_token = IMAGE_PAD
        self.image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        if self.image_token_id is None or self.image_token_id == tokenizer.unk_token_id:
            raise ValueError(f"the tokenizer has no {IMAGE_PAD} token; it is not a Qwen-VL tokenizer")

    @property
    def merge_size(self) -> int:
        return int(self.image_processor.merge_size)

    @property
    def patch_size(self) -> int:
        return int(self.image_processor.patch_size)

    @property
    def max_pixels(self) -> int:
        return int(self.image_processor.size["longest_edge"])

    @property
    def min_pixels(self) -> int:
        return int(self.image_processor.size["shortest_edge"])

    @property
    def pixels_per_vision_token(self) -> int:
        """Pixels one merged vision token covers ((patch size x merge size) squared)."""
        return (self.patch_size * self.merge_size) ** 2

    def max_pixels_for_tokens(self, tokens: int) -> int:
        """The per-image resolution budget that yields at most ``tokens`` vision tokens per image."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise ValueError(f"vision tokens per image must be an integer >= 1, got {tokens!r}")
        return tokens * self.pixels_per_vision_token

    def vision_tokens(self, image_grid_thw: torch.Tensor) -> list[int]:
        """Vision tokens (image placeholders) of each image of a ``image_grid_thw`` (n, 3)."""
        return (image_grid_thw.prod(-1) // self.merge_size**2).tolist()

    def images_to_patches(self, images: Sequence[np.ndarray], max_pixels: int | None = None) -> dict[str, torch.Tensor]:
        """``pixel_values`` (patches, C*T*P*P) and ``image_grid_thw`` (n, 3) for RGB images."""
        checked = [_check_image(i, img) for i, img in enumerate(images)]
        budget = self.max_pixels if max_pixels is None else int(max_pixels)
        factor = self.patch_size * self.merge_size
        if budget < factor * factor:
            raise ValueError(f"max_pixels={budget} is below one vision token ({factor}x{factor} pixels)")
        size = {"shortest_edge": min(self.min_pixels, budget), "longest_edge": budget}
        out = self.image_processor(images=checked, size=size, return_tensors="pt")
        return {"pixel_values": out["pixel_values"], "image_grid_thw": out["image_grid_thw"].long()}

    def __call__(
        self,
        text: str | Sequence[str],
        images: Sequence[np.ndarray] | None = None,
        *,
        max_pixels: int | None = None,
        return_tensors: str = "pt",
        vision: dict[str, torch.Tensor] | None = None,
        **_: Any,
    ) -> dict[str, torch.Tensor]:
        """Expand each ``<|image_pad|>`` to its vision tokens and tokenize (a batch of one or more texts).

        ``vision``: the :meth:`images_to_patches` output of ``images``, computed once and
        reused for several texts about the same images (``images`` is then not resized again).
        """
        if return_tensors != "pt":
            raise ValueError("only return_tensors='pt' is supported")
        texts = [text] if isinstance(text, str) else list(text)
        images = list(images or [])
        n_images = len(images) if vision is None else int(vision["image_grid_thw"].shape[0])
        if vision is not None and images and len(images) != n_images:
            raise ValueError(f"{len(images)} images were given with patches of {n_images} images")
        n_placeholders = sum(t.count(IMAGE_PAD) for t in texts)
        if n_placeholders != n_images:
            raise ValueError(f"the text has {n_placeholders} {IMAGE_PAD} placeholders but {n_images} images were given")
        result: dict[str, torch.Tensor] = {}
        counts: list[int] = []
        if n_images:
            if vision is None:
                vision = self.images_to_patches(images, max_pixels)
            result.update({"pixel_values": vision["pixel_values"], "image_grid_thw": vision["image_grid_thw"]})
            counts = self.vision_tokens(vision["image_grid_thw"])
        expanded, k = [], 0
        for t in texts:
            parts = t.split(IMAGE_PAD)
            pieces = [parts[0]]
            for part in parts[1:]:
                pieces.append(IMAGE_PAD * counts[k] + part)
                k += 1
            expanded.append("".join(pieces))
        enc = self.tokenizer(expanded, add_special_tokens=False, padding=True, return_tensors="pt")
        input_ids = enc["input_ids"]
        result["input_ids"] = input_ids
        result["attention_mask"] = enc["attention_mask"]
        result["mm_token_type_ids"] = (input_ids == self.image_token_id).long()
        return result

    def save_pretrained(self, directory: str | Path) -> None:
        """Write ``preprocessor_config.json`` plus the video config a full ``Qwen3VLProcessor`` expects."""
        directory = Path(directory)
        self.image_processor.save_pretrained(directory)
        config_path = directory / "preprocessor_config.json"
        config = json.loads(config_path.read_text())
        config["processor_class"] = "Qwen3VLProcessor"
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        video = {
            "video_processor_type": "Qwen3VLVideoProcessor",
            "processor_class": "Qwen3VLProcessor",
            "patch_size": self.patch_size,
            "merge_size": self.merge_size,
            "temporal_patch_size": 2,
            "size": {"shortest_edge": self.min_pixels, "longest_edge": self.max_pixels * 4},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            "do_sample_frames": True,
            "fps": 2,
        }
        (directory / "video_preprocessor_config.json").write_text(json.dumps(video, indent=2, sort_keys=True) + "\n")


def load_processor(directory: str | Path, tokenizer) -> ImageTextProcessor | None:
    """The checkpoint's image processor wrapped with its tokenizer; None when it has no image config."""
    from transformers import AutoImageProcessor

    directory = Path(directory)
    if not (directory / "preprocessor_config.json").is_file():
        return None
    image_processor = AutoImageProcessor.from_pretrained(str(directory), local_files_only=True, backend="pil")
    return ImageTextProcessor(image_processor, tokenizer)
