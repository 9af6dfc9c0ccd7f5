"""Model presets: Qwen3-VL architecture sizes for tiny CPU runs, a teacher, and the 2B shape.

Every preset is a plain :class:`transformers.Qwen3VLConfig` (``model_type: qwen3_vl``), so
checkpoints written from it load with transformers alone. ``tiny`` trains on a laptop CPU
in minutes; ``mid`` (about 2.7x tiny's parameters, half of small's) is the Stage III teacher of the paper
path, big enough to beat tiny yet cheap enough to train long on a CPU; ``small`` is a
few-times-larger model; ``2b-shape`` copies the dimensions of Qwen3-VL-2B-Instruct (for
GPU throughput benchmarks; never saved in the repo). All share the BPE tokenizer, so any
of them can teach any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Image sizes are multiples of patch_size * spatial_merge_size; the budget is in pixels per image.
NAVSIM_FRONT_ASPECT = 1920 / 1080


@dataclass(frozen=True)
class Preset:
    """Dimensions of one preset (text decoder, vision tower, image budget)."""

    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vision_depth: int
    vision_hidden_size: int
    vision_heads: int
    vision_intermediate_size: int
    patch_size: int
    deepstack_visual_indexes: tuple[int, ...]
    num_position_embeddings: int
    max_pixels: int  # default resolution budget per image (pixels)
    min_pixels: int
    vocab_size: int | None = None  # None: the tokenizer's size (rounded up to a multiple of 64)
    tie_word_embeddings: bool = True
    rope_theta: float = 5_000_000.0
    max_position_embeddings: int = 32768
    uses_bpe_tokenizer: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mrope_section(self) -> list[int]:
        """Split of the head's rotary frequencies over (t, h, w), scaled from Qwen's [24, 20, 20] of 64."""
        half = self.head_dim // 2
        h = w = (half * 20) // 64
        return [half - h - w, h, w]


PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        name="tiny",
        hidden_size=192,
        num_hidden_layers=4,
        num_attention_heads=3,
        num_key_value_heads=1,
        head_dim=64,
        intermediate_size=512,
        vision_depth=2,
        vision_hidden_size=64,
        vision_heads=2,
        vision_intermediate_size=128,
        patch_size=8,
        deepstack_visual_indexes=(0,),
        num_position_embeddings=256,
        max_pixels=128 * 64,
        min_pixels=32 * 32,
    ),
    # tiny twice as deep (8 decoder layers, the same widths and vision tower): the Stage III teacher, grown from a
    # trained tiny model by depth up-scaling (training/upscale.py), since a wider preset trained from scratch here
    # stays behind the student at any budget a session allows
    "tiny-deep": Preset(
        name="tiny-deep",
        hidden_size=192,
        num_hidden_layers=8,
        num_attention_heads=3,
        num_key_value_heads=1,
        head_dim=64,
        intermediate_size=512,
        vision_depth=2,
        vision_hidden_size=64,
        vision_heads=2,
        vision_intermediate_size=128,
        patch_size=8,
        deepstack_visual_indexes=(0,),
        num_position_embeddings=256,
        max_pixels=128 * 64,
        min_pixels=32 * 32,
    ),
    "mid": Preset(
        name="mid",
        hidden_size=256,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        intermediate_size=768,
        vision_depth=3,
        vision_hidden_size=96,
        vision_heads=2,
        vision_intermediate_size=192,
        patch_size=8,
        deepstack_visual_indexes=(1,),
        num_position_embeddings=256,
        max_pixels=128 * 64,
        min_pixels=32 * 32,
    ),
    "small": Preset(
        name="small",
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=6,
        num_key_value_heads=2,
        head_dim=64,
        intermediate_size=1024,
        vision_depth=4,
        vision_hidden_size=128,
        vision_heads=4,
        vision_intermediate_size=256,
        patch_size=8,
        deepstack_visual_indexes=(1, 2),
        num_position_embeddings=256,
        max_pixels=128 * 64,
        min_pixels=32 * 32,
    ),
    # Qwen3-VL-2B-Instruct's published dimensions.
    "2b-shape": Preset(
        name="2b-shape",
        hidden_size=2048,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        intermediate_size=6144,
        vision_depth=24,
        vision_hidden_size=1024,
        vision_heads=16,
        vision_intermediate_size=4096,
        patch_size=16,
        deepstack_visual_indexes=(5, 11, 17),
        num_position_embeddings=2304,
        max_pixels=640 * 360,
        min_pixels=64 * 64,
        vocab_size=151936,
        max_position_embeddings=262144,
    ),
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a clear error lists the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model preset {name!r}; choose one of {', '.join(PRESETS)}") from None


def build_config(
    preset: str | Preset,
    *,
    vocab_size: int,
    special_token_ids: dict[str, int],
    block_size: int = 1,
    mask_token_id: int,
    end_token_id: int,
    pad_token_id: int,
    pad_vocab_to: int = 64,
):
    """A :class:`transformers.Qwen3VLConfig` for ``preset`` with our extra fields recorded.

    ``special_token_ids`` maps ``image``, ``video``, ``vision_start``, ``vision_end`` to the
    tokenizer's ids. ``block_size``, ``mask_token_id`` and ``end_token_id`` are stored as
    extra top-level config attributes (plain transformers ignores them). The embedding
    size is the vocabulary rounded up to a multiple of ``pad_vocab_to``.
    """
    from transformers import Qwen3VLConfig

    p = get_preset(preset) if isinstance(preset, str) else preset
    if p.vocab_size is not None:
        vocab_size = max(vocab_size, p.vocab_size)
    vocab_size = -(-vocab_size // pad_vocab_to) * pad_vocab_to
    text_config = {
        "vocab_size": vocab_size,
        "hidden_size": p.hidden_size,
        "intermediate_size": p.intermediate_size,
        "num_hidden_layers": p.num_hidden_layers,
        "num_attention_heads": p.num_attention_heads,
        "num_key_value_heads": p.num_key_value_heads,
        "head_dim": p.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": p.max_position_embeddings,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": p.rope_theta,
            "mrope_section": p.mrope_section,
            "mrope_interleaved": True,
        },
        "tie_word_embeddings": p.tie_word_embeddings,
        "pad_token_id": pad_token_id,
    }
    vision_config = {
        "depth": p.vision_depth,
        "hidden_size": p.vision_hidden_size,
        "hidden_act": "gelu_pytorch_tanh",
        "intermediate_size": p.vision_intermediate_size,
        "num_heads": p.vision_heads,
        "in_channels": 3,
        "patch_size": p.patch_size,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": p.hidden_size,
        "num_position_embeddings": p.num_position_embeddings,
        "deepstack_visual_indexes": list(p.deepstack_visual_indexes),
    }
    config = Qwen3VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=special_token_ids["image"],
        video_token_id=special_token_ids["video"],
        vision_start_token_id=special_token_ids["vision_start"],
        vision_end_token_id=special_token_ids["vision_end"],
        tie_word_embeddings=p.tie_word_embeddings,
    )
    config.block_size = int(block_size)
    config.mask_token_id = int(mask_token_id)
    config.end_token_id = int(end_token_id)
    config.eos_token_id = int(end_token_id)
    config.pad_token_id = int(pad_token_id)
    config.wamdiff2_preset = p.name
    return config
