"""Turn committed block tokens into a DecodeResult: end-token cut, budget, text, stats."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from .config import DecodeConfig, DecodeResult, DecodeStats


def device_clock(device: torch.device) -> float:
    """Wall time in seconds after the device has finished queued work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def cut_row(tokens: Sequence[int], confidences: Sequence[float], end_token_id: int, max_new_tokens: int) -> tuple[list[int], float, bool, int]:
    """Cut one row's committed tokens at the end token and the budget.

    Returns (tokens before the end token, mean confidence of kept tokens including
    the end token, finished, number of kept tokens including the end token).
    """
    kept = list(tokens[:max_new_tokens])
    kept_conf = list(confidences[:max_new_tokens])
    finished = end_token_id in kept
    if finished:
        cut = kept.index(end_token_id)
        kept, kept_conf = kept[:cut], kept_conf[: cut + 1]
    count = len(kept_conf)
    mean = float(sum(kept_conf) / count) if count else 0.0
    return kept, mean, finished, count


def build_result(
    vla,
    committed: list[list[int]],
    committed_conf: list[list[float]],
    config: DecodeConfig,
    engine: str,
    prompt_tokens: int,
    forwards: int,
    prefill_s: float,
    decode_s: float,
) -> DecodeResult:
    """Assemble the public result from per-row committed tokens (in block order).

    ``extra["row_generated"]`` holds each row's kept token count (end token included),
    so a caller that decoded several tasks as rows of one batch can report each alone.
    """
    tokens, confidences, finished, counts = [], [], [], []
    token_conf: list[list[float]] = []
    for row, conf in zip(committed, committed_conf, strict=True):
        kept, mean, done, count = cut_row(row, conf, vla.end_token_id, config.max_new_tokens)
        tokens.append(kept)
        token_conf.append([float(c) for c in conf[: len(kept)]])
        confidences.append(mean)
        finished.append(done)
        counts.append(count)
    generated = sum(counts)
    tokenizer = getattr(vla, "tokenizer", None)
    texts = [tokenizer.decode(t, skip_special_tokens=True) if tokenizer is not None else "" for t in tokens]
    decode_s = max(decode_s, 1e-9)
    stats = DecodeStats(
        engine=engine,
        block_size=config.block_size,
        prompt_tokens=prompt_tokens,
        generated_tokens=generated,
        forwards=forwards,
        tokens_per_forward=generated / forwards if forwards else 0.0,
        prefill_ms=prefill_s * 1e3,
        decode_ms=decode_s * 1e3,
        decode_tokens_per_second=generated / decode_s,
    )
    return DecodeResult(tokens=tokens, texts=texts, confidences=confidences, finished=finished, stats=stats,
                        extra={"row_generated": counts}, token_confidences=token_conf)


def row_stats(result: DecodeResult, row: int, prompt_tokens: int) -> DecodeStats:
    """Statistics of one row of a batched decode: its own tokens, the batch's forwards and times."""
    stats = result.stats
    generated = int(result.extra.get("row_generated", [stats.generated_tokens])[row])
    decode_s = max(stats.decode_ms / 1e3, 1e-9)
    return DecodeStats(
        engine=stats.engine,
        block_size=stats.block_size,
        prompt_tokens=prompt_tokens,
        generated_tokens=generated,
        forwards=stats.forwards,
        tokens_per_forward=generated / stats.forwards if stats.forwards else 0.0,
        prefill_ms=stats.prefill_ms,
        decode_ms=stats.decode_ms,
        decode_tokens_per_second=generated / decode_s,
    )
