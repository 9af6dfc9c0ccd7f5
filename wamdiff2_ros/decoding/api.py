"""``generate``: the one decoding entry point (ROS nodes, evaluation and training call this)."""

from __future__ import annotations

import weakref

import torch

from .config import DecodeConfig, DecodeResult

_FAST_ENGINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fast_engine(vla):
    """The cached :class:`FastEngine` of ``vla`` (its static cache and graphs live across calls)."""
    from .fast import FastEngine

    engine = _FAST_ENGINES.get(vla.model)
    if engine is None or engine.vla is not vla:
        engine = FastEngine(vla)
        _FAST_ENGINES[vla.model] = engine
    return engine


def generate(vla, inputs: dict[str, torch.Tensor], config: DecodeConfig | None = None) -> DecodeResult:
    """Decode ``inputs`` (from ``model.inputs.build_inputs``; batch > 1 is left padded) with ``config``.

    The model must already be on ``config.device`` in ``config.dtype``; a mismatch is
    an error, not a silent copy of the weights.
    """
    config = config or DecodeConfig()
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
    if config.engine == "reference":
        from .reference import ReferenceDecoder

        return ReferenceDecoder(vla).generate(inputs, config)
    return fast_engine(vla).generate(inputs, config)
