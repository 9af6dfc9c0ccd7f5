"""Block-causal masks: B=1 equals causal, hand-written small cases, noisy-block visibility, positions."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from wamdiff2_ros.model.masks import (
    continue_position_ids,
    decode_step_mask,
    inference_block_mask,
    prefill_block_mask,
    to_additive_4d,
    training_block_mask,
    training_layout,
    training_position_ids,
)


def causal(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()


@pytest.mark.parametrize("length", [1, 2, 7, 16])
def test_b1_prefill_and_inference_masks_are_causal(length):
    assert torch.equal(prefill_block_mask(length, 1), causal(length))
    assert torch.equal(inference_block_mask(length, 5, 1), causal(length + 5))


@pytest.mark.parametrize("prefix_len,response_len", [(1, 1), (4, 3), (9, 6)])
def test_b1_training_mask_is_causal_per_copy(prefix_len, response_len):
    """B=1: [prefix|clean] is causal; noisy token j sees prefix, clean[:j] and itself (AR context of j)."""
    p, r = prefix_len, response_len
    mask = training_block_mask(p, r, 1)
    assert torch.equal(mask[: p + r, : p + r], causal(p + r))
    assert not mask[: p + r, p + r :].any()
    for j in range(r):
        row = mask[p + r + j]
        expected = torch.zeros(p + 2 * r, dtype=torch.bool)
        expected[: p + j] = True
        expected[p + r + j] = True
        assert torch.equal(row, expected)


def test_prefill_block_mask_hand_case():
    expected = torch.tensor(
        [
            [1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1, 1, 1],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(prefill_block_mask(7, 3), expected)
    assert prefill_block_mask(3, 8).all()  # one partial chunk: fully bidirectional


def test_training_block_mask_hand_case():
    # P=3, R=4, B=2: prefix blocks {0,1: block 0}, {2: block 1}; response blocks 2 and 3.
    # columns: p0 p1 p2 | c0 c1 c2 c3 | n0 n1 n2 n3
    rows = [
        "11000000000",  # p0 (chunk 0 = p0, p1)
        "11000000000",  # p1
        "11100000000",  # p2 (partial last chunk 1)
        "11111000000",  # c0
        "11111000000",  # c1
        "11111110000",  # c2
        "11111110000",  # c3
        "11100001100",  # n0: prefix + own noisy block
        "11100001100",  # n1
        "11111000011",  # n2: prefix + clean block 0 + own noisy block
        "11111000011",  # n3
    ]
    expected = torch.tensor([[c == "1" for c in row] for row in rows])
    assert torch.equal(training_block_mask(3, 4, 2), expected)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 12), st.integers(1, 5), st.integers(1, 4))
def test_noisy_block_visibility_property(prefix_len, response_blocks, block_size):
    r = response_blocks * block_size
    p = prefix_len
    mask = training_block_mask(p, r, block_size)
    block_ids, types = training_layout(p, r, block_size)
    for q in range(p + r, p + 2 * r):
        own = (q - p - r) // block_size
        seen = set(torch.nonzero(mask[q]).flatten().tolist())
        expected = set(range(p))
        expected |= {p + j for j in range(r) if j // block_size < own}
        expected |= {p + r + j for j in range(r) if j // block_size == own}
        assert seen == expected
    # clean/prefix rows never see noisy tokens, and [prefix|clean] equals the inference mask
    assert not mask[: p + r, p + r :].any()
    assert torch.equal(mask[: p + r, : p + r], inference_block_mask(p, r, block_size))
    assert torch.equal(block_ids[p : p + r], block_ids[p + r :])


def test_training_mask_rejects_unpadded_response():
    with pytest.raises(ValueError, match="multiple of block_size"):
        training_block_mask(3, 5, 4)
    with pytest.raises(ValueError, match="block_size"):
        prefill_block_mask(4, 0)


def test_to_additive_4d():
    mask = prefill_block_mask(5, 2)
    add = to_additive_4d(mask, torch.float32)
    assert add.shape == (1, 1, 5, 5)
    assert torch.equal(add[0, 0] == 0, mask)
    assert (add[0, 0][~mask] == torch.finfo(torch.float32).min).all()
    assert to_additive_4d(mask.unsqueeze(0).expand(3, -1, -1), torch.bfloat16).shape == (3, 1, 5, 5)
    with pytest.raises(TypeError):
        to_additive_4d(mask.float())
    with pytest.raises(ValueError, match="at least one key"):
        to_additive_4d(torch.zeros(2, 2, dtype=torch.bool))
    assert decode_step_mask(6, 3).shape == (3, 9) and decode_step_mask(6, 3).all()


def test_training_position_ids_copy_clean_positions():
    prefix = torch.tensor([[[0, 1, 2, 2, 2, 3, 4]], [[0, 1, 2, 2, 3, 4, 5]], [[0, 1, 2, 3, 2, 3, 6]]])
    pos = training_position_ids(prefix, 4)
    assert pos.shape == (3, 1, 7 + 8)
    assert torch.equal(pos[:, :, :7], prefix)
    clean, noisy = pos[:, :, 7:11], pos[:, :, 11:]
    assert torch.equal(clean, noisy)
    assert clean[:, 0].tolist() == [[7, 8, 9, 10]] * 3  # text continues after the prompt's max position
    assert torch.equal(continue_position_ids(prefix, 2, offset=4), torch.tensor([[[11, 12]]] * 3))
