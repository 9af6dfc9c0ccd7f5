"""``generate``: the one decoding entry point (ROS nodes, evaluation and training call this).

``encode_prefix`` + ``generate_from_prefix``: several task prompts about one frame set
share one vision pass and one prefilled prefix, then decode as rows of one batch.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import torch

from .config import DecodeConfig, DecodeResult
from .fast import FastEngine
from .prefix import SharedPrefix
from .reference import ReferenceDecoder

_FAST_ENGINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fast_engine(vla):
    """The cached :class:`FastEngine` of ``vla`` (its static cache and graphs live across calls)."""
    engine = _FAST_ENGINES.get(vla.model)
    if engine is None or engine.vla is not vla:
        engine = FastEngine(vla)
        _FAST_ENGINES[vla.model] = engine
    return engine


def check_model(vla, config: DecodeConfig) -> None:
    """Refuse a model that is not on ``config.device`` in ``config.dtype`` or lacks the special tokens."""
    config.validate()
    param = next(vla.model.parameters())
    device = torch.device(config.device)
    if param.device.type != device.type or (device.index is not None and param.device.index != device.index):
        raise ValueError(f"DecodeConfig.device={config.device!r} but the model is on {param.device}; "
                         "move it first (vla.model.to(device))")
    if str(param.dtype).removeprefix("torch.") != config.dtype:
        raise ValueError(f"DecodeConfig.dtype={config.dtype!r} but the model weights are {param.dtype}; "
                         "convert it first (vla.model.to(dtype))")
    if getattr(vla, "mask_token_id", None) is None or getattr(vla, "end_token_id", None) is None:
        raise ValueError("the model has no mask_token_id / end_token_id; load it with model.loader.load_model")


def generate(vla, inputs: dict[str, torch.Tensor], config: DecodeConfig | None = None) -> DecodeResult:
    """Decode ``inputs`` (from ``model.inputs.build_inputs``; batch > 1 is left padded) with ``config``.

    The model must already be on ``config.device`` in ``config.dtype``; a mismatch is
    an error, not a silent copy of the weights.
    """
    config = config or DecodeConfig()
    check_model(vla, config)
    if config.engine == "reference":
        return ReferenceDecoder(vla).generate(inputs, config)
    return fast_engine(vla).generate(inputs, config)


def encode_prefix(vla, inputs: Sequence[dict[str, torch.Tensor]], config: DecodeConfig,
                  prefill: bool = False) -> SharedPrefix:
    """One vision pass and one prefill of the prefix shared by a frame set's task prompts (fast engine).

    ``inputs``: one single prompt per task about the same images
    (``model.inputs.build_frame_inputs``). Decode any of them with :func:`generate_from_prefix`;
    the prefix K/V are computed by the first decode, or here with ``prefill=True``.
    """
    check_model(vla, config)
    if config.engine != "fast":
        raise ValueError(f"a shared prefix needs the fast engine (DecodeConfig.engine={config.engine!r})")
    return fast_engine(vla).encode_prefix(inputs, config, prefill)


def generate_from_prefix(vla, prefix: SharedPrefix, rows: Sequence[int] | None = None,
                         config: DecodeConfig | None = None) -> DecodeResult:
    """Decode prompts ``rows`` (None = all) of ``prefix`` as rows of one batch; same tokens as decoding each alone."""
    config = config or DecodeConfig(block_size=prefix.block_size)
    check_model(vla, config)
    if config.engine != "fast":
        raise ValueError(f"a shared prefix needs the fast engine (DecodeConfig.engine={config.engine!r})")
    return fast_engine(vla).generate_from_prefix(prefix, rows, config)
