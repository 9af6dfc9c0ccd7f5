"""``reuse_committed_kv``: a committed block position's keys and values are reused after one more step."""

from __future__ import annotations

import pytest
import torch

from wamdiff2_ros.decoding.config import DecodeConfig, DecodeConfigError
from wamdiff2_ros.decoding.fast import FastEngine, Fresh
from wamdiff2_ros.decoding.testing import tiny_vla


def decode(vla, inputs, reuse, widths=None, **config):
    """Decode with the fast engine; ``widths`` collects every decoder pass's number of columns."""
    engine = FastEngine(vla)
    if widths is not None:
        run = engine.stack.layers_forward

        def counted(hidden, *args, **kwargs):
            widths.append(hidden.shape[1])
            return run(hidden, *args, **kwargs)

        engine.stack.layers_forward = counted
    settings = dict(block_size=8, confidence_threshold=0.3, max_new_tokens=24) | config
    return engine.generate(inputs, DecodeConfig(reuse_committed_kv=reuse, **settings))


def test_fresh_columns_are_the_masked_and_the_just_committed():
    before = torch.tensor([[True, True, False, True, False, False],
                           [False, True, False, False, False, True]])
    masked_columns = torch.tensor([1, 5])  # still masked after the previous step, in some row
    fresh = Fresh.of(before, masked_columns)
    assert fresh.columns.tolist() == [0, 1, 3, 5]
    assert fresh.keep.tolist() == [1, 3]  # where columns 1 and 5 sit among the fresh ones
    assert fresh.write.tolist() == [[True, True, True, False], [False, True, False, True]]
    alone = Fresh.of(before[:1], torch.tensor([1]))
    assert alone.columns.tolist() == [0, 1, 3] and alone.write is None  # one row writes all its fresh columns


def test_one_layer_model_decodes_exactly():
    """With one decoder layer a column's keys and values depend on its token alone: reuse is then exact."""
    vla = tiny_vla(seed=2, layers=1)
    from wamdiff2_ros.decoding.testing import toy_inputs

    inputs = toy_inputs([11, 7], seed=4)
    widths: list[int] = []
    exact, reused = (decode(vla, inputs, reuse, widths if reuse else None, confidence_threshold=0.8)
                     for reuse in (False, True))
    assert reused.tokens == exact.tokens
    assert reused.token_confidences == [pytest.approx(c, abs=1e-5) for c in exact.token_confidences]
    assert reused.stats.forwards == exact.stats.forwards
    assert min(widths) < 8  # some steps ran fewer columns than the block


def test_steps_run_only_the_masked_and_just_committed_columns(vla, make_inputs):
    inputs = make_inputs([11], seed=5)
    widths: list[int] = []
    result = decode(vla, inputs, True, widths, confidence_threshold=0.8)
    assert result.stats.engine.endswith("+reuse")
    assert all(len(t) == 24 for t in result.tokens)
    prefill, steps = widths[0], widths[1:]
    assert prefill == inputs["input_ids"].shape[1]
    assert len(steps) == result.stats.forwards
    assert steps[0] == 8 and min(steps) < 8 and max(steps) <= 16  # 16: a fused clean block + its next block


def test_a_row_decodes_the_same_in_a_batch_as_alone(vla, make_inputs):
    """Rows commit at different steps; a row writes only its own fresh columns, so the batch changes nothing."""
    inputs = make_inputs([11, 6, 14], seed=7)
    batch = decode(vla, inputs, True, confidence_threshold=0.8)
    for row in range(3):
        real = inputs["attention_mask"][row].bool()
        one = {"input_ids": inputs["input_ids"][row][real][None],
               "attention_mask": inputs["attention_mask"][row][real][None]}
        alone = decode(vla, one, True, confidence_threshold=0.8)
        assert alone.tokens[0] == batch.tokens[row]
        assert alone.token_confidences[0] == pytest.approx(batch.token_confidences[row], abs=1e-5)


def test_reuse_changes_a_multi_layer_decode_and_off_is_the_exact_one(vla, make_inputs):
    """It is an approximation: on the 2-layer random model some token or confidence moves."""
    inputs = make_inputs([11, 6, 3, 14], seed=1)
    exact, reused = (decode(vla, inputs, reuse, confidence_threshold=0.8) for reuse in (False, True))
    assert exact.stats.engine == "fast/sdpa"
    moved = [abs(a - b) for ca, cb in zip(exact.token_confidences, reused.token_confidences, strict=True)
             for a, b in zip(ca, cb, strict=False)]
    assert reused.tokens != exact.tokens or max(moved) > 1e-4


def test_reuse_is_refused_by_the_reference_engine():
    with pytest.raises(DecodeConfigError, match="reuse_committed_kv"):
        DecodeConfig(engine="reference", reuse_committed_kv=True)
    with pytest.raises(DecodeConfigError, match="reuse_committed_kv"):
        DecodeConfig(reuse_committed_kv="yes")
