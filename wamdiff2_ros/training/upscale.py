"""Depth up-scaling: a deeper model that starts as exactly the function of a trained one.

The Stage III teacher must be a larger model than the student, trained further, with the same
paradigm, block size and tokenizer. Trained from scratch on this CPU a larger preset stays far
behind the student (``mid`` after 1,100 AR steps: validation L2 5.10 m, QA 0.17, against the tiny
AR's 2.40 m, 0.47), so the teacher is grown from a trained tiny model instead, as depth up-scaling
grows large language models: every decoder layer ``i`` of the source becomes layers ``2i`` (a copy)
and ``2i + 1`` (a copy whose residual branches, ``o_proj`` and ``down_proj``, are zero), so the new
layer adds nothing until training moves it. The vision tower, the embeddings and the norms are
copied; Qwen3-VL's deepstack features, added after the first decoder layers, land after the same
source layers because the copies follow them. ``tiny-deep`` is the preset this gives from ``tiny``::

    python -m wamdiff2_ros.training.upscale runs/paper/tiny-b32 runs/paper/deep-b32-init
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from wamdiff2_ros.model.loader import WamDiff2, load_model

#: the residual branches of a decoder layer: zero in the inserted copy, so the copy starts as the identity
RESIDUAL_OUTPUTS = ("self_attn.o_proj.", "mlp.down_proj.")
_LAYER = re.compile(r"^(?P<head>.*\.language_model\.layers\.)(?P<index>\d+)\.(?P<rest>.+)$")


def upscaled_state(state: dict[str, torch.Tensor], factor: int = 2) -> dict[str, torch.Tensor]:
    """The weights of the ``factor``-times deeper model: layer ``i`` -> ``factor*i`` and its zero-branch copies."""
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    out: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        match = _LAYER.match(name)
        if match is None:
            out[name] = tensor.clone()
            continue
        index, rest = int(match["index"]), match["rest"]
        for k in range(factor):
            copy = tensor.clone()
            if k and rest.startswith(RESIDUAL_OUTPUTS):
                copy.zero_()
            out[f"{match['head']}{factor * index + k}.{rest}"] = copy
    return out


def depth_upscale(vla: WamDiff2, factor: int = 2) -> WamDiff2:
    """A new :class:`WamDiff2` ``factor`` times deeper than ``vla``, computing the same function."""
    from transformers import Qwen3VLForConditionalGeneration

    config = vla.model.config.__class__.from_dict(vla.model.config.to_dict())
    config.text_config.num_hidden_layers = vla.model.config.text_config.num_hidden_layers * factor
    if getattr(config.text_config, "layer_types", None):
        config.text_config.layer_types = list(config.text_config.layer_types) * factor
    model = Qwen3VLForConditionalGeneration(config).to(dtype=vla.dtype, device=vla.device)
    missing, unexpected = model.load_state_dict(upscaled_state(vla.model.state_dict(), factor), strict=False)
    missing = [m for m in missing if not m.endswith("lm_head.weight")]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"depth up-scaling left weights unmatched: missing {missing[:4]}, unexpected {unexpected[:4]}")
    if config.text_config.tie_word_embeddings:
        model.tie_weights()
    return WamDiff2(model.eval(), vla.tokenizer, vla.processor, vla.block_size, vla.mask_token_id, vla.end_token_id,
                    vla.pad_token_id, None, vla.prompt_format)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wamdiff2_ros.training.upscale", description=__doc__.splitlines()[0])
    parser.add_argument("source", help="checkpoint directory of the trained model")
    parser.add_argument("output", help="where the deeper model is saved")
    parser.add_argument("--factor", type=int, default=2, help="layers per source layer")
    args = parser.parse_args(argv)
    try:
        vla = load_model(args.source)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    deep = depth_upscale(vla, args.factor)
    deep.save(Path(args.output))
    layers = deep.model.config.text_config.num_hidden_layers
    print(f"{args.output}: {layers} decoder layers, {deep.num_parameters() / 1e6:.2f} M parameters "
          f"(from {vla.num_parameters() / 1e6:.2f} M)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
