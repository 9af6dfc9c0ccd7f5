"""tiny-deep and mid sit between tiny and small and share their tokenizer, so either can teach the tiny student."""

from __future__ import annotations

import torch

from wamdiff2_ros.model.presets import PRESETS, build_config


def _count(name: str) -> int:
    from transformers import Qwen3VLForConditionalGeneration

    with torch.device("meta"):
        config = build_config(name, vocab_size=960, special_token_ids={"image": 5, "video": 6, "vision_start": 3,
                                                                       "vision_end": 4},
                              mask_token_id=7, end_token_id=2, pad_token_id=0)
        return sum(p.numel() for p in Qwen3VLForConditionalGeneration(config).parameters())


def test_mid_is_between_tiny_and_small():
    assert list(PRESETS)[:4] == ["tiny", "tiny-deep", "mid", "small"]
    tiny, deep, mid, small = _count("tiny"), _count("tiny-deep"), _count("mid"), _count("small")
    assert 1.5 * tiny < deep < mid and 2 * tiny < mid < small / 1.5
    assert {k: getattr(PRESETS["tiny-deep"], k) for k in ("hidden_size", "vision_depth", "patch_size")} == {
        k: getattr(PRESETS["tiny"], k) for k in ("hidden_size", "vision_depth", "patch_size")}  # grown from tiny
    for a, b in (("tiny", "mid"), ("mid", "small")):
        assert PRESETS[a].hidden_size < PRESETS[b].hidden_size
        assert PRESETS[a].num_hidden_layers <= PRESETS[b].num_hidden_layers


def test_mid_and_tiny_share_vocabulary_and_image_grid():
    from wamdiff2_ros.model.loader import init_model

    torch.set_num_threads(1)
    tiny, mid = init_model("tiny", seed=0), init_model("mid", seed=0)
    assert tiny.tokenizer.get_vocab() == mid.tokenizer.get_vocab()
    assert tiny.vocab_size == mid.vocab_size and tiny.mask_token_id == mid.mask_token_id
    assert (tiny.processor.patch_size, tiny.processor.merge_size, tiny.processor.max_pixels) == (
        mid.processor.patch_size, mid.processor.merge_size, mid.processor.max_pixels)
