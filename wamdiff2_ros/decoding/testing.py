"""Random tiny Qwen3-VL models and prompts for decoder tests and the CPU benchmark.

``tiny_vla`` uses the model room's ``init_model("tiny")`` when asked to
(``use_model_room=True``); otherwise it builds a small random
``Qwen3VLForConditionalGeneration`` with a vision tower (deepstack included) and
wraps it with the attributes the decoders read: ``model``, ``tokenizer`` (None),
``block_size``, ``mask_token_id``, ``end_token_id``,
``pad_token_id``: the loader's own :class:`~wamdiff2_ros.model.loader.WamDiff2` container.
``frame_prompts`` builds the single prompts of one frame set (shared images and
opening, per-task suffixes) for the shared-prefix tests.
"""

from __future__ import annotations

from typing import Any

import torch

from wamdiff2_ros.model.loader import WamDiff2, init_model

TINY_VOCAB = 256
IMAGE_TOKEN_ID, VIDEO_TOKEN_ID, VISION_START_ID, VISION_END_ID = 250, 251, 248, 249
MASK_TOKEN_ID, END_TOKEN_ID, PAD_TOKEN_ID = 252, 253, 254
PATCH = 4  # vision patch size of the tiny preset
TEMPORAL_PATCH = 2


def tiny_config(hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2, vocab: int = TINY_VOCAB):
    from transformers import Qwen3VLConfig

    head_dim = 16
    text = {
        "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "pad_token_id": PAD_TOKEN_ID,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2],
                            "mrope_interleaved": True},
    }
    vision = {
        "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": PATCH,
        "spatial_merge_size": 2, "temporal_patch_size": TEMPORAL_PATCH, "out_hidden_size": hidden,
        "num_position_embeddings": 64, "deepstack_visual_indexes": [0, 1],
    }
    config = Qwen3VLConfig(
        text_config=text, vision_config=vision, image_token_id=IMAGE_TOKEN_ID, video_token_id=VIDEO_TOKEN_ID,
        vision_start_token_id=VISION_START_ID, vision_end_token_id=VISION_END_ID, tie_word_embeddings=False,
    )
    # random init with std 0.02 makes every position predict the same token; a wider
    # init gives varied tokens and confidences spread over (0, 1)
    config.initializer_range = config.text_config.initializer_range = 0.3
    config._attn_implementation = "sdpa"
    return config


def tiny_vla(seed: int = 0, use_model_room: bool = False, **shape) -> Any:
    """A random-weight tiny model (fp32, CPU, eval mode)."""
    if use_model_room:
        return init_model("tiny", seed=seed)
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(tiny_config(**shape)).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(3.0)
    return WamDiff2(model=model, tokenizer=None, processor=None, block_size=32, mask_token_id=MASK_TOKEN_ID,
                    end_token_id=END_TOKEN_ID, pad_token_id=PAD_TOKEN_ID, path="tiny (random init, in memory)")


def toy_inputs(lengths: list[int], seed: int = 0, image: bool = False, vocab: int = 200) -> dict[str, torch.Tensor]:
    """Left-padded random prompts of the given real lengths (optionally one 8x8-patch image per row)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    image_tokens = 4  # (1, 4, 4) patch grid merged 2x2
    for n in lengths:
        ids = torch.randint(0, vocab, (n,), generator=g).tolist()
        if image:
            ids = ids[:1] + [VISION_START_ID] + [IMAGE_TOKEN_ID] * image_tokens + [VISION_END_ID] + ids[1:]
        rows.append(ids)
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), PAD_TOKEN_ID, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        input_ids[i, width - len(r):] = torch.tensor(r)
        attention_mask[i, width - len(r):] = 1
    out = {"input_ids": input_ids, "attention_mask": attention_mask}
    if image:
        patch_dim = 3 * TEMPORAL_PATCH * PATCH * PATCH
        out["pixel_values"] = torch.randn(16 * len(rows), patch_dim, generator=g)
        out["image_grid_thw"] = torch.tensor([[1, 4, 4]] * len(rows))
    return out


FRAME_GRIDS = ([1, 4, 4], [1, 4, 8], [1, 8, 4])  # 4, 8 and 8 vision tokens


def frame_prompts(common: int, suffixes: list[int], cameras: int = 1, seed: int = 0) -> list[dict]:
    """Single prompts of one frame set: ``common`` shared tokens (images included), then each row's own suffix.

    The images sit after the first token, so a short shared length cuts through them.
    """
    g = torch.Generator().manual_seed(seed)
    grids = torch.tensor(FRAME_GRIDS[:cameras])
    opening = [int(torch.randint(0, 200, (1,), generator=g))]
    for grid in grids.tolist():
        opening += [VISION_START_ID] + [IMAGE_TOKEN_ID] * (grid[1] * grid[2] // 4) + [VISION_END_ID]
    if len(opening) > common:
        raise ValueError(f"common={common} is shorter than the image tokens ({len(opening)})")
    opening += torch.randint(0, 200, (common - len(opening),), generator=g).tolist()
    patches = int(grids.prod(-1).sum())
    pixels = torch.randn(patches, 3 * TEMPORAL_PATCH * PATCH * PATCH, generator=g)
    prompts = []
    for row, n in enumerate(suffixes):
        own = torch.randint(0, 200, (n,), generator=g).tolist()
        own[0] = 200 + row  # rows differ at their first own token, so the common prefix is exactly `common`
        ids = torch.tensor([opening + own])
        prompts.append({"input_ids": ids, "attention_mask": torch.ones_like(ids),
                        "pixel_values": pixels, "image_grid_thw": grids})
    return prompts
