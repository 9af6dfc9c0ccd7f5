"""Fast and reference engines agree on the shipped (trained) checkpoint, not only on random models."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("block_size", [1, 8, 32])
def test_fast_equals_reference_on_trained_student(shipped, block_size):
    from wamdiff2_ros.bench.workload import driving_questions
    from wamdiff2_ros.decoding import DecodeConfig, generate
    from wamdiff2_ros.model.inputs import build_inputs

    question, images = driving_questions(1, seed=4)[0]  # a planning prompt on a synthetic frame
    inputs = build_inputs(shipped, question, images)
    results = {}
    for engine in ("reference", "fast"):
        config = DecodeConfig(block_size=block_size, max_new_tokens=96, engine=engine)
        results[engine] = generate(shipped, inputs, config)
    assert results["fast"].tokens == results["reference"].tokens
    assert results["fast"].texts == results["reference"].texts
    assert results["fast"].confidences == pytest.approx(results["reference"].confidences, abs=1e-4)
    assert len(results["fast"].tokens[0]) > 10  # a real answer, not an immediate end token


def test_pruned_last_layer_gives_the_same_answer_with_fewer_flops(shipped):
    """prune_committed on (default) and off decode the same tokens on the trained student."""
    from wamdiff2_ros.bench.workload import driving_questions
    from wamdiff2_ros.decoding import DecodeConfig, generate
    from wamdiff2_ros.model.inputs import build_inputs

    question, images = driving_questions(1, seed=4)[0]
    inputs = build_inputs(shipped, question, images)
    pruned, full = (generate(shipped, inputs, DecodeConfig(block_size=32, max_new_tokens=96, prune_committed=p))
                    for p in (True, False))
    assert pruned.tokens == full.tokens
    assert pruned.confidences == pytest.approx(full.confidences, abs=1e-5)
    assert pruned.stats.forwards == full.stats.forwards > 1
