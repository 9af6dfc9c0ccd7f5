"""Decoding settings and results: DecodeConfig, DecodeStats, DecodeResult.

Pure Python (no torch import) so that ROS parameter validation and the CLI can build
and check a configuration without loading the model stack. Field names of
:class:`DecodeStats` match ``msg/DecodeStats.msg``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ENGINES = ("reference", "fast")
ATTENTION_BACKENDS = ("auto", "sdpa", "flashinfer")
DTYPES = ("float32", "bfloat16", "float16")


class DecodeConfigError(ValueError):
    """A DecodeConfig field has a value the decoders cannot use."""


@dataclass
class DecodeConfig:
    """How to decode one request.

    ``block_size`` B: tokens per block (B=1 is greedy autoregressive decoding).
    ``confidence_threshold``: a masked position is committed when its softmax
    confidence reaches this value (if none does, the single most confident one is).
    ``max_steps_per_block``: step cap; at the cap all leftover masks are filled with
    their argmax (None = B). ``max_new_tokens``: response budget (whole blocks are
    decoded, tokens beyond the budget are dropped). ``engine``: "reference" (readable,
    transformers' forward and cache) or "fast" (static KV cache engine).
    ``attention_backend``: fast engine only: "sdpa", "flashinfer" (GPU) or "auto"
    (FlashInfer when on CUDA and installed, else SDPA). ``cuda_graphs``: fast engine
    only: True, False or "auto" (on when the device is CUDA). ``prune_committed``:
    fast engine, eager forwards (no CUDA graph), B > 1: the last decoder layer runs
    its queries only for the block positions still masked (keys and values for all),
    which gives the same tokens; False runs every position (for comparison).
    ``end_in_order``: a position whose prediction is the end token is committed only
    once every earlier position of its block is committed (or is in the same step), so
    a short answer is not cut by an end token committed early (False: the paper's rule,
    any position by confidence alone).
    ``reuse_committed_kv`` (approximate; fast engine, eager SDPA, B > 1, where
    ``prune_committed`` applies): a committed block position runs once more, in the
    step after its commit, and from then on its keys and values are reused for the
    rest of the block instead of recomputed every step, so a denoise step runs only
    the masked positions and the ones committed last step (the delayed caching of
    dKV-Cache, Ma et al. 2025). The tokens may differ from the exact decode; a
    block's clean forward still rewrites all of its keys and values exactly.
    """

    block_size: int = 32
    confidence_threshold: float = 0.9
    max_steps_per_block: int | None = None
    max_new_tokens: int = 128
    engine: str = "fast"
    attention_backend: str = "auto"
    cuda_graphs: bool | str = "auto"
    prune_committed: bool = True
    end_in_order: bool = False
    reuse_committed_kv: bool = False
    dtype: str = "float32"
    device: str = "cpu"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`DecodeConfigError` naming the first bad field."""

        def bad(name: str, why: str) -> DecodeConfigError:
            return DecodeConfigError(f"DecodeConfig.{name}={getattr(self, name)!r}: {why}")

        if not isinstance(self.block_size, int) or isinstance(self.block_size, bool) or self.block_size < 1:
            raise bad("block_size", "must be an integer >= 1")
        if not isinstance(self.confidence_threshold, (int, float)) or not 0.0 <= float(self.confidence_threshold) <= 1.0:
            raise bad("confidence_threshold", "must be a number in [0, 1]")
        if self.max_steps_per_block is not None and (
            not isinstance(self.max_steps_per_block, int) or self.max_steps_per_block < 1
        ):
            raise bad("max_steps_per_block", "must be None or an integer >= 1")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise bad("max_new_tokens", "must be an integer >= 1")
        if self.engine not in ENGINES:
            raise bad("engine", f"must be one of {ENGINES}")
        if self.attention_backend not in ATTENTION_BACKENDS:
            raise bad("attention_backend", f"must be one of {ATTENTION_BACKENDS}")
        if self.cuda_graphs not in (True, False, "auto"):
            raise bad("cuda_graphs", 'must be true, false or "auto"')
        if not isinstance(self.prune_committed, bool):
            raise bad("prune_committed", "must be true or false")
        if not isinstance(self.end_in_order, bool):
            raise bad("end_in_order", "must be true or false")
        if not isinstance(self.reuse_committed_kv, bool):
            raise bad("reuse_committed_kv", "must be true or false")
        if self.reuse_committed_kv and self.engine != "fast":
            raise bad("reuse_committed_kv", 'is an approximation of the fast engine; the reference engine decodes '
                      'exactly (engine="fast")')
        if self.dtype not in DTYPES:
            raise bad("dtype", f"must be one of {DTYPES}")
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise bad("device", 'must be "cpu", "cuda" or "cuda:N"')

    @property
    def step_cap(self) -> int:
        """Denoise steps allowed per block (``max_steps_per_block`` or B)."""
        return self.block_size if self.max_steps_per_block is None else self.max_steps_per_block

    @property
    def num_blocks(self) -> int:
        """Blocks needed to cover ``max_new_tokens``."""
        return -(-self.max_new_tokens // self.block_size)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DecodeConfig:
        """Build from a mapping (YAML / ROS parameters); unknown keys are refused."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise DecodeConfigError(f"unknown DecodeConfig keys {unknown}; known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DecodeStats:
    """Statistics of one decode (all rows of a batch together).

    ``forwards`` counts decoder forwards after the prefill: denoise steps plus
    clean KV-writing forwards that are not fused into a denoise step.
    ``generated_tokens`` counts kept response tokens of all rows, including each
    finished row's end token. ``decode_tokens_per_second`` = generated_tokens /
    decode time.
    """

    engine: str
    block_size: int
    prompt_tokens: int
    generated_tokens: int
    forwards: int
    tokens_per_forward: float
    prefill_ms: float
    decode_ms: float
    decode_tokens_per_second: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DecodeResult:
    """Decoded answers per batch row.

    ``tokens``: response ids up to and excluding the end token; ``texts``: the same,
    detokenized (empty strings when the model has no tokenizer); ``confidences``:
    mean softmax confidence of the row's kept committed tokens; ``finished``:
    whether the end token was produced within ``max_new_tokens``;
    ``token_confidences``: per row, the confidence each token of ``tokens`` was
    committed with (same length as ``tokens``).
    """

    tokens: list[list[int]]
    texts: list[str]
    confidences: list[float]
    finished: list[bool]
    stats: DecodeStats
    extra: dict[str, Any] = field(default_factory=dict)
    token_confidences: list[list[float]] = field(default_factory=list)
