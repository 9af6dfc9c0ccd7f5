"""Shared prefix: tasks decoded from one vision pass and one prefilled prefix give the reference engine's tokens.

The oracle is the reference engine decoding each task's whole prompt from scratch.
Prompts are built from token ids on a random tiny Qwen3-VL: a common opening with one
or several camera images (different grids), then per-task suffixes of different
lengths, with common-prefix lengths that are and are not multiples of B (so the
shared part is cut at a chunk boundary inside the common text, sometimes inside the
image tokens).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.fast import FastEngine
from wamdiff2_ros.decoding.prefix import common_prefix_length, shared_length
from wamdiff2_ros.decoding.prompt import DecodeInputError
from wamdiff2_ros.decoding.reference import ReferenceDecoder
from wamdiff2_ros.decoding.testing import FRAME_GRIDS as GRIDS
from wamdiff2_ros.decoding.testing import frame_prompts


def reference_rows(vla, prompts, config):
    return [ReferenceDecoder(vla).generate(p, config) for p in prompts]


def assert_rows_match(result, rows, expected):
    for i, row in enumerate(rows):
        want = expected[row]
        assert result.tokens[i] == want.tokens[0], f"row {i} (prompt {row})"
        assert result.finished[i] == want.finished[0]
        assert result.confidences[i] == pytest.approx(want.confidences[0], abs=1e-5)


def test_shared_length_is_the_common_prefix_cut_at_a_chunk_boundary():
    rows = [[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 9], [1, 2, 3, 4, 5, 6, 8, 8]]
    assert common_prefix_length(rows) == 5
    assert [shared_length(rows, b) for b in (1, 2, 4, 5, 8)] == [5, 4, 4, 5, 0]
    # every prompt keeps a token of its own, even when one prompt is a prefix of another
    assert shared_length([[1, 2, 3, 4], [1, 2, 3, 4, 5]], 1) == 3
    assert shared_length([[1, 2, 3, 4], [1, 2, 3, 4, 5]], 2) == 2
    with pytest.raises(ValueError):
        shared_length([[1], []], 1)


CASES = [  # (B, common prefix, cameras): multiples of B and not, one and several cameras
    (1, 13, 1), (4, 16, 1), (4, 30, 3), (8, 29, 3), (8, 32, 3), (16, 30, 3), (32, 40, 1), (32, 64, 3),
]


@pytest.mark.parametrize(("block_size", "common", "cameras"), CASES)
def test_batch_from_prefix_equals_reference_from_scratch(vla, block_size, common, cameras):
    prompts = frame_prompts(common, [3, 11, 6], cameras, seed=block_size + common)
    config = DecodeConfig(block_size=block_size, confidence_threshold=0.5, max_new_tokens=24)
    expected = reference_rows(vla, prompts, config)
    engine = FastEngine(vla)
    prefix = engine.encode_prefix(prompts, config)
    assert prefix.length == common // block_size * block_size
    assert prefix.vision.tokens == sum(g[1] * g[2] // 4 for g in GRIDS[:cameras])
    trace = []
    batch = engine.generate_from_prefix(prefix, None, config, trace=trace)
    assert_rows_match(batch, [0, 1, 2], expected)
    assert batch.stats.engine.endswith("+prefix")
    assert batch.stats.prompt_tokens == sum(p["input_ids"].shape[1] for p in prompts)
    assert all(not t.isnan().all() for t in trace)


@pytest.mark.parametrize(("block_size", "common", "cameras"), [(4, 30, 3), (8, 29, 3), (32, 40, 1)])
def test_rows_one_at_a_time_equal_reference(vla, block_size, common, cameras):
    """First decode fills the prefix from its whole prompt; later ones (any order, any subset) continue from it."""
    prompts = frame_prompts(common, [5, 2, 9], cameras, seed=7)
    config = DecodeConfig(block_size=block_size, confidence_threshold=0.5, max_new_tokens=20)
    expected = reference_rows(vla, prompts, config)
    engine = FastEngine(vla)
    prefix = engine.encode_prefix(prompts, config)
    assert prefix.cache is None  # filled by the first decode
    first = engine.generate_from_prefix(prefix, [1], config)
    assert prefix.cache is not None and prefix.cache.slots == prefix.length
    assert_rows_match(first, [1], expected)
    assert_rows_match(engine.generate_from_prefix(prefix, [2, 0], config), [2, 0], expected)
    assert_rows_match(engine.generate_from_prefix(prefix, [0], config), [0], expected)


def test_images_cut_by_the_shared_length_come_from_the_one_vision_pass(vla):
    prompts = frame_prompts(29, [4, 7], cameras=3, seed=3)  # 3 cameras: 20 image tokens, S = 24
    config = DecodeConfig(block_size=8, confidence_threshold=0.5, max_new_tokens=16)
    prefix = FastEngine(vla).encode_prefix(prompts, config, prefill=True)
    assert 0 < prefix.visual_in_prefix < prefix.vision.tokens  # the cut falls inside the image tokens
    calls = []
    visual = vla.model.model.visual
    handle = visual.register_forward_hook(lambda *args: calls.append(1))
    try:
        FastEngine(vla).generate_from_prefix(prefix, None, config)
    finally:
        handle.remove()
    assert calls == []  # decoding from the prefix never runs the vision tower again


def test_prefix_survives_other_requests_and_other_frames(vla, make_inputs):
    config = DecodeConfig(block_size=4, confidence_threshold=0.5, max_new_tokens=16)
    frame_a = frame_prompts(18, [4, 6], cameras=1, seed=1)
    frame_b = frame_prompts(30, [3, 9, 2], cameras=3, seed=2)
    engine = FastEngine(vla)
    prefix_a = engine.encode_prefix(frame_a, config)
    first = engine.generate_from_prefix(prefix_a, [0], config)
    prefix_b = engine.encode_prefix(frame_b, config)
    engine.generate_from_prefix(prefix_b, None, config)
    engine.generate(make_inputs([30, 12], seed=4), config)  # a left-padded batch through the same cache
    again = engine.generate_from_prefix(prefix_a, [0, 1], config)
    assert again.tokens[0] == first.tokens[0]
    assert_rows_match(again, [0, 1], reference_rows(vla, frame_a, config))


def test_rows_finishing_at_different_blocks(vla):
    prompts = frame_prompts(16, [3, 10], cameras=1, seed=9)
    config = DecodeConfig(block_size=4, confidence_threshold=0.3, max_new_tokens=32)
    base = FastEngine(vla).generate_from_prefix(FastEngine(vla).encode_prefix(prompts, config), None, config)
    end = base.tokens[0][5]  # pretend a token row 0 says early is the end token
    stopping = dataclasses.replace(vla, end_token_id=end)
    expected = reference_rows(stopping, prompts, config)
    engine = FastEngine(stopping)
    result = engine.generate_from_prefix(engine.encode_prefix(prompts, config), None, config)
    assert_rows_match(result, [0, 1], expected)
    assert result.finished[0]
    assert result.extra["row_generated"][0] == len(result.tokens[0]) + 1


def test_bad_requests_are_refused_with_a_reason(vla):
    engine = FastEngine(vla)
    config = DecodeConfig(block_size=4, max_new_tokens=8)
    prompts = frame_prompts(12, [3, 4], seed=0)
    prefix = engine.encode_prefix(prompts, config)
    with pytest.raises(DecodeInputError, match="block_size=4"):
        engine.generate_from_prefix(prefix, None, DecodeConfig(block_size=8, max_new_tokens=8))
    with pytest.raises(DecodeInputError, match="rows"):
        engine.generate_from_prefix(prefix, [2], config)
    other = dict(prompts[1], pixel_values=prompts[1]["pixel_values"] + 1.0)
    with pytest.raises(DecodeInputError, match="other images"):
        engine.encode_prefix([prompts[0], other], config)
    padded = dict(prompts[0], attention_mask=torch.cat([torch.zeros(1, 1, dtype=torch.long),
                                                        prompts[0]["attention_mask"][:, 1:]], dim=1))
    with pytest.raises(DecodeInputError, match="unpadded"):
        engine.encode_prefix([padded], config)


def test_api_checks_engine_and_model(vla):
    from wamdiff2_ros.decoding.api import encode_prefix, generate_from_prefix

    prompts = frame_prompts(12, [3, 4], seed=0)
    with pytest.raises(ValueError, match="fast engine"):
        encode_prefix(vla, prompts, DecodeConfig(block_size=4, engine="reference"))
    config = DecodeConfig(block_size=4, confidence_threshold=0.5, max_new_tokens=8)
    prefix = encode_prefix(vla, prompts, config)
    result = generate_from_prefix(vla, prefix, None, config)
    assert_rows_match(result, [0, 1], reference_rows(vla, prompts, config))
