"""Fast engine == reference engine: same tokens, logits within 1e-4 (fp32, random tiny models)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.fast import FastEngine
from wamdiff2_ros.decoding.reference import ReferenceDecoder

LENGTHS = {1: [11], 4: [11, 6, 3, 14]}


def run_both(vla, inputs, config):
    ref_trace, fast_trace = [], []
    ref = ReferenceDecoder(vla).generate(inputs, config, trace=ref_trace)
    fast = FastEngine(vla).generate(inputs, config, trace=fast_trace)
    return ref, fast, ref_trace, fast_trace


def assert_parity(ref, fast, ref_trace, fast_trace):
    assert fast.tokens == ref.tokens
    assert fast.finished == ref.finished
    assert fast.confidences == pytest.approx(ref.confidences, abs=1e-5)
    assert fast.stats.generated_tokens == ref.stats.generated_tokens
    assert len(fast_trace) == len(ref_trace)  # same number of denoise steps
    for a, b in zip(ref_trace, fast_trace, strict=True):
        computed = ~b.isnan()  # eager fast forwards skip the committed columns' last layer (NaN there)
        assert computed.any()
        torch.testing.assert_close(b[computed], a[computed], atol=1e-4, rtol=0)


@pytest.mark.parametrize("threshold", [0.9, 0.3])
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("block_size", [1, 4, 8, 16, 32])
def test_fast_matches_reference_text(vla, make_inputs, block_size, batch, threshold):
    inputs = make_inputs(LENGTHS[batch], seed=block_size)
    config = DecodeConfig(block_size=block_size, confidence_threshold=threshold, max_new_tokens=40)
    ref, fast, ref_trace, fast_trace = run_both(vla, inputs, config)
    assert_parity(ref, fast, ref_trace, fast_trace)
    assert all(len(t) == 40 for t in ref.tokens)  # the random model never says the end token here
    # the clean KV-writing forward is fused into the next block's first step in the fast engine
    blocks = config.num_blocks
    assert ref.stats.forwards == fast.stats.forwards + blocks - 1
    if block_size == 1:
        assert fast.stats.forwards == 40  # ordinary AR: one forward per token
    if threshold == 0.3 and block_size >= 8:
        assert fast.stats.tokens_per_forward > 1.5  # several tokens committed per step


def test_eager_steps_compute_only_the_masked_columns(vla, make_inputs):
    """Each denoise step's last layer runs for exactly the columns still masked before it."""
    inputs = make_inputs([11], seed=5)
    config = DecodeConfig(block_size=8, confidence_threshold=0.3, max_new_tokens=24)
    commits, fast_trace = [], []
    ReferenceDecoder(vla).generate(inputs, config, commits=commits)
    FastEngine(vla).generate(inputs, config, trace=fast_trace)
    steps = sorted({(c.block, c.step) for c in commits})
    assert len(steps) == len(fast_trace)
    pruned_somewhere = False
    for (block, step), logits in zip(steps, fast_trace, strict=True):
        before = {c.position - block * 8 for c in commits if c.block == block and c.step < step}
        computed = {int(i) for i in (~logits[0].isnan().all(dim=-1)).nonzero().squeeze(1)}
        assert computed == set(range(8)) - before
        pruned_somewhere |= bool(before)
    assert pruned_somewhere


@pytest.mark.parametrize(("block_size", "batch"), [(1, 1), (4, 2), (8, 1), (32, 2)])
def test_fast_matches_reference_with_image(vla, make_inputs, block_size, batch):
    inputs = make_inputs([9, 5][:batch], seed=3, image=True)
    config = DecodeConfig(block_size=block_size, confidence_threshold=0.5, max_new_tokens=32)
    assert_parity(*run_both(vla, inputs, config))


def test_image_changes_the_answer(vla, make_inputs):
    inputs = make_inputs([9], seed=3, image=True)
    other = dict(inputs, pixel_values=torch.randn_like(inputs["pixel_values"]))
    config = DecodeConfig(block_size=4, max_new_tokens=16)
    trace_a, trace_b = [], []
    FastEngine(vla).generate(inputs, config, trace=trace_a)
    FastEngine(vla).generate(other, config, trace=trace_b)
    assert not torch.allclose(trace_a[0], trace_b[0])


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_end_token_stops_rows(vla, make_inputs, block_size):
    inputs = make_inputs(LENGTHS[4], seed=7)
    config = DecodeConfig(block_size=block_size, confidence_threshold=0.3, max_new_tokens=32)
    base = FastEngine(vla).generate(inputs, config)
    end = base.tokens[0][5]  # pretend a token the model says early in row 0 is the end token
    first = base.tokens[0].index(end)
    stopping = dataclasses.replace(vla, end_token_id=end)
    ref, fast, ref_trace, fast_trace = run_both(stopping, inputs, config)
    assert_parity(ref, fast, ref_trace, fast_trace)
    assert fast.finished[0] and fast.tokens[0] == base.tokens[0][:first]
    for row in range(4):  # other rows: the same answer cut at their own first end token
        cut = base.tokens[row].index(end) if end in base.tokens[row] else len(base.tokens[row])
        assert fast.tokens[row] == base.tokens[row][:cut]
        assert fast.finished[row] == (end in base.tokens[row])


@pytest.mark.parametrize(("block_size", "end_at"), [(4, 3), (16, 7)])
def test_end_in_order_parity_and_no_cut_answers(vla, make_inputs, block_size, end_at):
    """end_in_order: both engines agree; an answer's end token never precedes a position committed after it."""
    inputs = make_inputs(LENGTHS[4], seed=11)
    config = DecodeConfig(block_size=block_size, confidence_threshold=0.3, max_new_tokens=32)
    base = FastEngine(vla).generate(inputs, config)
    stopping = dataclasses.replace(vla, end_token_id=base.tokens[0][end_at])  # a token row 0 says: the end token
    ordered = dataclasses.replace(config, end_in_order=True)
    ref, fast, ref_trace, fast_trace = run_both(stopping, inputs, ordered)
    assert_parity(ref, fast, ref_trace, fast_trace)

    def early_ends(cfg: DecodeConfig) -> int:
        """End tokens committed while an earlier position of their block was still masked (before the step cap)."""
        commits: list = []
        ReferenceDecoder(stopping).generate(inputs, cfg, commits=commits)
        return sum(c.token == stopping.end_token_id and c.step < cfg.step_cap
                   and any(d.row == c.row and d.block == c.block and d.position < c.position and d.step > c.step
                           for d in commits)
                   for c in commits)

    assert early_ends(ordered) == 0
    assert early_ends(config) > 0  # without the rule this batch commits some end token early


def test_all_rows_finished_stops_early(vla, make_inputs):
    inputs = make_inputs([11], seed=7)
    config = DecodeConfig(block_size=4, confidence_threshold=0.3, max_new_tokens=64)
    base = FastEngine(vla).generate(inputs, config)
    stopping = dataclasses.replace(vla, end_token_id=base.tokens[0][2])
    ref, fast, _, _ = run_both(stopping, inputs, config)
    assert fast.finished == [True] and ref.finished == [True]
    assert fast.stats.forwards < base.stats.forwards
    assert ref.stats.forwards == fast.stats.forwards  # one block only: no clean forward at all


def test_batch_rows_equal_single_prompts(vla, make_inputs):
    inputs = make_inputs(LENGTHS[4], seed=11)
    config = DecodeConfig(block_size=8, confidence_threshold=0.5, max_new_tokens=24)
    batched = FastEngine(vla).generate(inputs, config)
    for row in range(4):
        single = {k: v[row:row + 1, inputs["attention_mask"][row].bool()] for k, v in inputs.items()}
        alone = FastEngine(vla).generate(single, config)
        assert alone.tokens[0] == batched.tokens[row]


def test_step_cap_fills_leftovers(vla, make_inputs):
    inputs = make_inputs([11, 4], seed=5)
    config = DecodeConfig(block_size=8, confidence_threshold=0.999, max_steps_per_block=2, max_new_tokens=32)
    ref, fast, ref_trace, fast_trace = run_both(vla, inputs, config)
    assert_parity(ref, fast, ref_trace, fast_trace)
    assert fast.stats.forwards == 2 * config.num_blocks
    assert all(len(t) == 32 for t in fast.tokens)


def test_model_room_tiny_preset_parity():
    from wamdiff2_ros.model import loader
    from wamdiff2_ros.model.inputs import build_inputs

    torch.set_num_threads(1)
    vla = loader.init_model("tiny", seed=0)
    image = (torch.rand(48, 96, 3, generator=torch.Generator().manual_seed(0)) * 255).to(torch.uint8).numpy()
    inputs = build_inputs(vla, "Front camera: <image> Predict 8 waypoints.", [image])
    config = DecodeConfig(block_size=8, max_new_tokens=24)
    assert_parity(*run_both(vla, inputs, config))
    assert vla.mask_token_id not in sum(ReferenceDecoder(vla).generate(inputs, config).tokens, [])
