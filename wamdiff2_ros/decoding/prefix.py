"""A frame set's shared prompt prefix: how long it may be, and the suffix batch that continues from it.

Several task prompts about one frame set (same images, same opening lines) share a
token prefix. The prompt is prefilled block-causally in chunks of B from position 0,
bidirectional inside a chunk, so the keys and values of a token depend on every
token of its own chunk: a cached prefix is reusable only up to the last chunk
boundary at or before the first token where the prompts differ. :func:`shared_length`
computes that from the token ids alone (never from the prompt wording), and keeps at
least one token of every prompt out of the prefix so each task has a suffix to
prefill.

Suffix batch layout (the fast engine's cache, per row): slots ``[0, S)`` hold the
shared prefix (copied from :class:`SharedPrefix`), ``[S, n_r)`` the row's own prompt
suffix, ``[n_r, L)`` padding (``L`` = longest prompt; never attended to), and the
response blocks start at slot ``L`` for every row. Slot index equals the token's index
in the unpadded prompt, so chunk ``j // B`` is the prompt's own chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .kv_cache import StaticKVCache
from .prompt import PreparedPrompt


def common_prefix_length(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix every row starts with."""
    if not rows:
        return 0
    first, length = rows[0], min(len(r) for r in rows)
    for i in range(length):
        token = first[i]
        if any(r[i] != token for r in rows[1:]):
            return i
    return length


def shared_length(rows: Sequence[Sequence[int]], block_size: int) -> int:
    """Prefix length S whose prefilled K/V every row can reuse under block-causal prefill.

    The longest common prefix rounded down to a multiple of ``block_size``, and short
    enough that every row keeps at least one token of its own (S <= shortest - 1).
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if not rows or min(len(r) for r in rows) == 0:
        raise ValueError("shared_length needs non-empty prompts")
    limit = min(common_prefix_length(rows), min(len(r) for r in rows) - 1)
    return limit // block_size * block_size


@dataclass
class VisionFeatures:
    """One vision-tower pass over a frame set's images: merged tokens and deepstack features, in prompt order."""

    embeds: torch.Tensor  # (V, D) one row per image placeholder token
    deepstack: list[torch.Tensor]  # per deepstack layer, (V, D)

    @property
    def tokens(self) -> int:
        return int(self.embeds.shape[0])

    def rows(self, start: int, stop: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Features of placeholder tokens ``[start, stop)``."""
        return self.embeds[start:stop], [d[start:stop] for d in self.deepstack]


@dataclass
class SharedPrefix:
    """A frame set encoded once: its task prompts, one vision pass, and the prefilled K/V of their shared prefix.

    Built by ``FastEngine.encode_prefix`` for one block size; ``FastEngine.generate_from_prefix``
    decodes any subset of ``prompts`` (as rows of one batch) from it. The K/V live in
    their own small cache (None until the first decode fills it), so decoding other
    requests in between does not invalidate them.
    """

    block_size: int
    length: int  # S, a multiple of block_size
    prompts: list[PreparedPrompt]  # one unpadded (batch 1) prompt per task
    cache: StaticKVCache | None  # (1 row, S slots); None until filled, and when S == 0
    vision: VisionFeatures | None
    visual_in_prefix: int  # image placeholder tokens among the first S tokens
    image_token_id: int | None
    prefill_ms: float = 0.0  # time spent in encode_prefix (vision pass; prefix prefill if asked)

    @property
    def ids(self) -> list[list[int]]:
        return [p.input_ids[0].tolist() for p in self.prompts]


@dataclass
class SuffixBatch:
    """Rows that continue from a shared prefix of length S (see the module docstring for the slot layout)."""

    input_ids: torch.Tensor  # (b, W) suffix ids, right padded; W = L - S
    position_ids: torch.Tensor  # (3, b, W) mRoPE positions (pads: 0)
    real: torch.Tensor  # (b, W) bool, True = a real suffix token
    prompt_valid: torch.Tensor  # (b, L) bool, which prompt slots hold real tokens (prefix included)
    mask: torch.Tensor  # (b, W, L) bool, what each suffix query may attend to
    response_start: torch.Tensor  # (b,) long, text position of the first response token
    lengths: list[int]  # n_r, real prompt tokens per row

    @property
    def prompt_length(self) -> int:
        return int(self.prompt_valid.shape[1])


def suffix_batch(prompts: Sequence[PreparedPrompt], prefix_length: int, block_size: int, pad_token_id: int) -> SuffixBatch:
    """Lay out the suffixes of unpadded ``prompts`` after a shared prefix of ``prefix_length`` tokens.

    Query ``S + i`` of a row attends to the whole prefix, and to the row's real suffix
    tokens whose chunk (slot // B) is not later than its own; a pad query attends to
    itself only (no empty softmax row; its output is never read).
    """
    s = prefix_length
    lengths = [p.length for p in prompts]
    if any(p.batch_size != 1 for p in prompts):
        raise ValueError("suffix_batch takes unpadded single prompts (batch 1 each)")
    if s >= min(lengths):
        raise ValueError(f"prefix length {s} leaves no suffix token for a prompt of {min(lengths)} tokens")
    device = prompts[0].input_ids.device
    b, total = len(prompts), max(lengths)
    width = total - s
    ids = torch.full((b, width), pad_token_id, dtype=torch.long, device=device)
    positions = torch.zeros((3, b, width), dtype=torch.long, device=device)
    real = torch.zeros((b, width), dtype=torch.bool, device=device)
    for r, p in enumerate(prompts):
        n = p.length - s
        ids[r, :n] = p.input_ids[0, s:]
        positions[:, r, :n] = p.position_ids[:, 0, s:]
        real[r, :n] = True
    prompt_valid = torch.cat([torch.ones((b, s), dtype=torch.bool, device=device), real], dim=1)
    slots = torch.arange(total, device=device)
    chunk = torch.div(slots, block_size, rounding_mode="floor")
    query_chunk = chunk[s:]
    allowed = (chunk[None, None, :] <= query_chunk[None, :, None]) & prompt_valid[:, None, :]
    eye = torch.zeros((width, total), dtype=torch.bool, device=device)
    eye[torch.arange(width, device=device), torch.arange(s, total, device=device)] = True
    mask = (allowed & real[:, :, None]) | eye[None]
    response_start = torch.stack([p.response_start[0] for p in prompts])
    return SuffixBatch(ids, positions, real, prompt_valid, mask, response_start, lengths)
