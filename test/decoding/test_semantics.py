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
