"""The reference decoder follows DESIGN.md's decoding rule (checked without any KV cache)."""

from __future__ import annotations

import pytest
import torch

from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.prompt import prepare_prompt, prompt_block_mask
from wamdiff2_ros.decoding.reference import ReferenceDecoder, select_to_commit


def cacheless_decode(vla, input_ids, block, threshold, max_new):
    """Block diffusion by full-sequence forwards with a block-causal mask (no cache, batch 1)."""
    prompt_len = input_ids.shape[1]
    answer: list[int] = []
    while len(answer) < max_new:
        ids = answer + [vla.mask_token_id] * block
        masked = [False] * len(answer) + [True] * block
        for step in range(1, block + 1):
            seq = torch.tensor([input_ids[0].tolist() + ids])
            total = seq.shape[1]
            chunk = torch.cat([torch.arange(prompt_len) // block,
                               (prompt_len + block - 1) // block + torch.arange(total - prompt_len) // block])
            allowed = (chunk[None, :] <= chunk[:, None])[None, None]
            positions = torch.arange(total)[None, None].expand(3, 1, -1)
            logits = vla.model(input_ids=seq, attention_mask=allowed, position_ids=positions).logits[0, prompt_len:]
            scores = logits.float()
            scores[:, vla.mask_token_id] = float("-inf")
            conf, pred = torch.softmax(scores, -1).max(-1)
            for i in select_to_commit(conf.tolist(), masked, threshold, fill_all=step == block):
                ids[i], masked[i] = int(pred[i]), False
            if not any(masked):
                break
        answer = ids
        if vla.end_token_id in answer:
            break
    return answer[:max_new]


@pytest.mark.parametrize(("block_size", "threshold"), [(1, 0.9), (4, 0.9), (4, 0.3), (8, 0.5)])
def test_reference_equals_cacheless_decoding(vla, make_inputs, block_size, threshold):
    inputs = make_inputs([10], seed=2)
    config = DecodeConfig(block_size=block_size, confidence_threshold=threshold, max_new_tokens=16)
    result = ReferenceDecoder(vla).generate(inputs, config)
    assert result.tokens[0] == cacheless_decode(vla, inputs["input_ids"], block_size, threshold, 16)


def test_select_to_commit_rule():
    conf = [0.2, 0.95, 0.5, 0.91]
    assert select_to_commit(conf, [True, True, True, True], 0.9, False) == [1, 3]
    assert select_to_commit(conf, [True, False, True, False], 0.9, False) == [2]  # none sure: most confident
    assert select_to_commit([0.3, 0.3], [True, True], 0.9, False) == [0]  # ties: first index
    assert select_to_commit(conf, [True, False, True, False], 0.9, True) == [0, 2]  # step cap: fill all
    assert select_to_commit(conf, [False] * 4, 0.9, False) == []


def test_end_in_order_rule():
    """An end token waits until every earlier position of the block is committed (or is committed with it)."""
    masked = [True] * 5
    ends = [False, False, False, True, True]
    # sure ends behind a position that stays masked wait; the most confident other position goes instead
    assert select_to_commit([0.5, 0.6, 0.4, 0.95, 1.0], masked, 0.9, False) == [3, 4]
    assert select_to_commit([0.5, 0.6, 0.4, 0.95, 1.0], masked, 0.9, False, ends=ends) == [1]
    # the earlier positions committed in the same step: the ends go with them
    assert select_to_commit([0.92, 0.93, 0.91, 0.95, 1.0], masked, 0.9, False, ends=ends) == [0, 1, 2, 3, 4]
    # ... or already committed
    assert select_to_commit([0, 0, 0, 0.95, 1.0], [False, False, False, True, True], 0.9, False, ends=ends) == [3, 4]
    # the single most confident commit skips an end behind a mask, but the first masked position may end
    assert select_to_commit([0.3, 0.2, 0.1, 0.8, 0.85], masked, 0.9, False, ends=ends) == [0]
    assert select_to_commit([0.3, 0.2, 0.1, 0.8, 0.85], [False] * 3 + [True] * 2, 0.9, False, ends=ends) == [3]
    assert select_to_commit([0.9, 0.2], [True, True], 0.95, False, ends=[True, False]) == [0]  # an empty answer
    # the step cap still fills everything
    assert select_to_commit([0.3, 0.2, 0.1, 0.8, 0.85], masked, 0.9, True, ends=ends) == [0, 1, 2, 3, 4]


def test_vectorised_selection_equals_the_readable_rule():
    from wamdiff2_ros.decoding.selection import commit_step, predict

    gen = torch.Generator().manual_seed(0)
    end, mask_id, vocab = 2, 7, 9
    for trial in range(300):
        rows, block = 3, 6
        logits = torch.randn(rows, block, vocab, generator=gen) * 3
        logits[..., end] += torch.randn(rows, block, generator=gen) * 4  # the end token often wins
        masked = torch.rand(rows, block, generator=gen) < 0.7
        threshold, fill_all = [0.3, 0.6, 0.9][trial % 3], trial % 17 == 0
        for end_in_order in (False, True):
            ids, conf, left = torch.full((rows, block), mask_id), torch.zeros(rows, block), masked.clone()
            commit_step(logits, ids, conf, left, threshold, fill_all, mask_id, end if end_in_order else None)
            step_conf, step_pred = predict(logits, mask_id)
            for r in range(rows):
                ends = (step_pred[r] == end).tolist() if end_in_order else None
                want = select_to_commit(step_conf[r].tolist(), masked[r].tolist(), threshold, fill_all, ends=ends)
                assert (masked[r] & ~left[r]).nonzero().flatten().tolist() == want


def test_prompt_mask_matches_model_room_and_ignores_padding():
    from wamdiff2_ros.model import masks
    for block in (1, 3, 4):
        unpadded = prompt_block_mask(torch.ones(1, 9, dtype=torch.bool), block)[0]
        assert torch.equal(unpadded, masks.prefill_block_mask(9, block))
        padded = prompt_block_mask(torch.tensor([[False, False] + [True] * 9]), block)[0]
        assert torch.equal(padded[2:, 2:], unpadded)
        assert not padded[2:, :2].any()  # nobody attends to padding


def test_positions_continue_after_the_prompt(vla, make_inputs):
    inputs = make_inputs([6, 3], seed=0, image=True)
    prompt = prepare_prompt(vla, inputs, "cpu")
    real = prompt.attention_mask
    for row in range(2):
        pos = prompt.position_ids[:, row][:, real[row]]
        assert int(prompt.response_start[row]) == int(pos.max()) + 1
        assert int(pos[0, 0]) == 0  # positions start at the row's first real token
    # image tokens compress positions: fewer distinct positions than tokens
    assert int(prompt.response_start[0]) < int(real[0].sum())
