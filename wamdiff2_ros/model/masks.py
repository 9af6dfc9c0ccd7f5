"""Block-causal attention masks and (m)RoPE position ids for prefill, decoding and training.

Boolean masks use ``True`` = the query row may attend to the key column. Tokens are grouped
in blocks of ``block_size`` (B): bidirectional inside a block, causal across blocks; B=1 is
plain causal attention. Block numbering follows the reference implementation:

- the prompt (prefix) is cut in B-sized chunks from position 0, the last one possibly
  shorter;
- the response starts a new block right after the prompt and is a whole number of blocks
  (each answer is padded with the end token to its own whole blocks, see
  :func:`wamdiff2_ros.model.losses.pad_responses`);
- in the training layout ``[prefix | clean response | noisy response]`` a noisy block sees
  the whole prefix, the clean blocks before it and itself. The noisy copy reuses the
  clean copy's positions.
- Deliberate difference from the reference: its training mask lets prefix and clean
  rows see every token of their own and earlier blocks, noisy copies included (the
  clean block k attends to noisy block k, and later clean blocks to earlier noisy
  blocks). Here prefix and clean rows never see noisy tokens, because inference cannot:
  a committed block's KV is written by one clean forward over ``[KV cache ; block]``,
  with no noisy tokens anywhere in the context, so the clean rows are trained exactly as
  they are computed at decode time. The noisy rows, which carry the loss, attend to the
  same positions in both layouts (in the reference, the clean states they read have
  themselves looked at noisy tokens).

transformers' Qwen3-VL takes a 4D mask as-is (``masking_utils`` returns a 4D tensor
unchanged), so :func:`to_additive_4d` output can be passed as ``attention_mask``.
"""

from __future__ import annotations

import torch

PREFIX, CLEAN, NOISY = 0, 1, 2


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        minimum = 1 if name == "block_size" else 0
        if value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")


def num_blocks(length: int, block_size: int) -> int:
    """How many B-sized blocks cover ``length`` tokens (the last may be partial)."""
    _check_sizes(length=length, block_size=block_size)
    return -(-length // block_size)


def prefix_block_ids(length: int, block_size: int) -> torch.LongTensor:
    """Block index of each prompt position: chunks of B from position 0."""
    _check_sizes(length=length, block_size=block_size)
    return torch.arange(length) // block_size


def sequence_block_ids(prefix_len: int, response_len: int, block_size: int) -> torch.LongTensor:
    """Block index of each position of ``[prefix | response]``; the response starts a new block."""
    _check_sizes(prefix_len=prefix_len, response_len=response_len, block_size=block_size)
    first = num_blocks(prefix_len, block_size)
    return torch.cat([prefix_block_ids(prefix_len, block_size), first + torch.arange(response_len) // block_size])


def block_causal_mask(block_ids: torch.Tensor) -> torch.BoolTensor:
    """(L, L) mask where position q sees k iff ``block_ids[k] <= block_ids[q]``."""
    ids = block_ids.reshape(-1)
    return ids.unsqueeze(0) <= ids.unsqueeze(1)


def prefill_block_mask(length: int, block_size: int) -> torch.BoolTensor:
    """(L, L) prompt prefill mask: chunks of B from position 0, bidirectional inside, causal across."""
    return block_causal_mask(prefix_block_ids(length, block_size))


def inference_block_mask(prefix_len: int, response_len: int, block_size: int) -> torch.BoolTensor:
    """(P+R, P+R) mask of ``[prompt | response]`` as decoding sees it (prompt chunks, then response blocks).

    One forward with this mask equals prefilling the prompt and then feeding the response
    block by block through a KV cache.
    """
    return block_causal_mask(sequence_block_ids(prefix_len, response_len, block_size))


def training_layout(prefix_len: int, response_len: int, block_size: int) -> tuple[torch.LongTensor, torch.LongTensor]:
    """``(block_ids, token_types)`` of the layout ``[prefix | clean | noisy]`` (types PREFIX/CLEAN/NOISY)."""
    _check_sizes(prefix_len=prefix_len, response_len=response_len, block_size=block_size)
    if response_len % block_size:
        raise ValueError(
            f"response length {response_len} is not a multiple of block_size {block_size}; pad it with pad_response()"
        )
    response_blocks = sequence_block_ids(prefix_len, response_len, block_size)[prefix_len:]
    block_ids = torch.cat([prefix_block_ids(prefix_len, block_size), response_blocks, response_blocks])
    types = torch.cat(
        [
            torch.full((prefix_len,), PREFIX, dtype=torch.long),
            torch.full((response_len,), CLEAN, dtype=torch.long),
            torch.full((response_len,), NOISY, dtype=torch.long),
        ]
    )
    return block_ids, types


def training_block_mask(prefix_len: int, response_len: int, block_size: int) -> torch.BoolTensor:
    """(P+2R, P+2R) mask of ``[prefix | clean response | noisy response]``.

    Prefix and clean tokens are block-causal among themselves and never see noisy tokens
    (the reference lets them see the noisy tokens of their own and earlier blocks; we do
    not, because at inference the clean KV is written with no noisy tokens in context:
    see the module doc). A noisy block sees the whole prefix, the clean blocks strictly
    before it, and itself.
    """
    block_ids, types = training_layout(prefix_len, response_len, block_size)
    bq, bk = block_ids.unsqueeze(1), block_ids.unsqueeze(0)
    tq, tk = types.unsqueeze(1), types.unsqueeze(0)
    clean_part = (tq != NOISY) & (tk != NOISY) & (bk <= bq)
    noisy_part = (tq == NOISY) & ((tk == PREFIX) | ((tk == CLEAN) & (bk < bq)) | ((tk == NOISY) & (bk == bq)))
    return clean_part | noisy_part


def decode_step_mask(past_len: int, query_len: int) -> torch.BoolTensor:
    """(Q, past+Q) mask for one block over a KV cache: everything visible (bidirectional in the block)."""
    _check_sizes(past_len=past_len, query_len=query_len)
    return torch.ones(query_len, past_len + query_len, dtype=torch.bool)


def to_additive_4d(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Boolean (L, S) or (B, L, S) mask -> additive float (B, 1, L, S): 0 where allowed, dtype min elsewhere.

    Works with every attention implementation transformers has on CPU (``sdpa``, ``eager``).
    A row with nothing allowed would give NaN; callers must keep at least one True per row.
    """
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor, got {mask.dtype}")
    if mask.ndim == 2:
        mask = mask.unsqueeze(0)
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    if mask.ndim != 4:
        raise ValueError(f"mask must have 2, 3 or 4 dims, got shape {tuple(mask.shape)}")
    if not bool(mask.any(-1).all()):
        raise ValueError("every query row of the mask must allow at least one key")
    out = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return out.masked_fill(~mask, torch.finfo(dtype).min)


def continue_position_ids(position_ids: torch.Tensor, length: int, offset: int = 0) -> torch.LongTensor:
    """(3, B, length) text positions that follow a prompt's 3D positions (``max + 1 + offset`` onwards)."""
    if position_ids.ndim != 3 or position_ids.shape[0] != 3:
        raise ValueError(f"position_ids must have shape (3, batch, length), got {tuple(position_ids.shape)}")
    start = position_ids.amax(dim=(0, 2)) + 1 + offset  # (B,)
    steps = torch.arange(length, device=position_ids.device)
    return (start[:, None] + steps[None, :]).unsqueeze(0).expand(3, -1, -1).to(position_ids.dtype)


def training_position_ids(prefix_position_ids: torch.Tensor, response_len: int) -> torch.LongTensor:
    """(3, B, P+2R) Qwen3-VL mRoPE positions of ``[prefix | clean | noisy]``; the noisy copy reuses the clean one's."""
    clean = continue_position_ids(prefix_position_ids, response_len)
    return torch.cat([prefix_position_ids, clean, clean], dim=-1)
