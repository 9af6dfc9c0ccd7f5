"""DecodeConfig validation, generate() dispatch and clear errors on bad inputs."""

from __future__ import annotations

import warnings

import pytest
import torch

from wamdiff2_ros.decoding import DecodeConfig, DecodeInputError, generate
from wamdiff2_ros.decoding.config import DecodeConfigError
from wamdiff2_ros.decoding.fast import FastEngine, batch_bucket, decode_mask


@pytest.mark.parametrize(("field", "value"), [
    ("block_size", 0), ("confidence_threshold", 1.5), ("max_steps_per_block", 0), ("max_new_tokens", 0),
    ("engine", "turbo"), ("attention_backend", "xformers"), ("cuda_graphs", "yes"), ("dtype", "int8"), ("prune_committed", "yes"),
    ("device", "tpu"),
])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(DecodeConfigError, match=field):
        DecodeConfig(**{field: value})


def test_config_helpers():
    config = DecodeConfig(block_size=8, max_new_tokens=20)
    assert config.step_cap == 8 and config.num_blocks == 3
    assert DecodeConfig.from_dict(config.to_dict()) == config
    with pytest.raises(DecodeConfigError, match="unknown"):
        DecodeConfig.from_dict({"block": 4})


def test_generate_dispatches_both_engines(vla, make_inputs):
    inputs = make_inputs([8, 5], seed=1)
    fast = generate(vla, inputs, DecodeConfig(block_size=4, max_new_tokens=12))
    ref = generate(vla, inputs, DecodeConfig(block_size=4, max_new_tokens=12, engine="reference"))
    assert fast.tokens == ref.tokens
    assert fast.stats.engine == "fast/sdpa" and ref.stats.engine == "reference"
    assert fast.texts == ["", ""]  # no tokenizer on the test model
    stats = fast.stats
    assert stats.prompt_tokens == 13 and stats.generated_tokens == 24 and stats.block_size == 4
    assert stats.tokens_per_forward == pytest.approx(24 / stats.forwards)


def test_generate_refuses_mismatched_dtype(vla, make_inputs):
    with pytest.raises(ValueError, match="dtype"):
        generate(vla, make_inputs([4]), DecodeConfig(dtype="bfloat16"))


@pytest.mark.parametrize(("inputs", "message"), [
    ({}, "input_ids"),
    ({"input_ids": torch.zeros(5, dtype=torch.long)}, "input_ids"),
    ({"input_ids": torch.tensor([[1, 2, 3]]), "attention_mask": torch.tensor([[1, 1, 0]])}, "left padded"),
    ({"input_ids": torch.tensor([[1, 2, 300000]])}, "vocabulary"),
    ({"input_ids": torch.tensor([[1, 2]]), "pixel_values": torch.zeros(4, 96)}, "image_grid_thw"),
])
def test_bad_inputs_are_refused_clearly(vla, inputs, message):
    for engine in ("fast", "reference"):
        with pytest.raises(DecodeInputError, match=message):
            generate(vla, inputs, DecodeConfig(block_size=4, max_new_tokens=4, engine=engine))


def test_gpu_only_options_fall_back_on_cpu_with_a_warning():
    with pytest.warns(RuntimeWarning, match="flashinfer"):
        backend, graphs = FastEngine.settings(DecodeConfig(attention_backend="flashinfer"), torch.device("cpu"))
    assert (backend, graphs) == ("sdpa", False)
    with pytest.warns(RuntimeWarning, match="cuda_graphs"):
        assert FastEngine.settings(DecodeConfig(cuda_graphs=True), torch.device("cpu")) == ("sdpa", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert FastEngine.settings(DecodeConfig(), torch.device("cpu")) == ("sdpa", False)


def test_fast_engine_reuses_its_static_cache(vla, make_inputs):
    engine = FastEngine(vla)
    engine.generate(make_inputs([9]), DecodeConfig(block_size=4, max_new_tokens=16))
    cache = engine.cache
    engine.generate(make_inputs([5]), DecodeConfig(block_size=4, max_new_tokens=8))
    assert engine.cache is cache  # smaller request: no reallocation
    # the cache aliases nothing of the model: weights are shared, not copied
    params = {p.data_ptr() for p in vla.model.parameters()}
    assert engine.stack.embed.data_ptr() in params and engine.stack.layers[0].q.data_ptr() in params


def test_decode_mask_shapes_and_fused_rows():
    key_valid = torch.zeros(1, 12, dtype=torch.bool)
    key_valid[0, 1:8] = True  # pad at slot 0, prompt + clean block up to slot 8
    step = decode_mask(key_valid, 8, 4, False, 12)
    assert step.shape == (1, 1, 4, 12) and step[0, 0, 0].tolist() == [False] + [True] * 11
    fused = decode_mask(key_valid, 8, 4, True, 12)
    assert fused.shape == (1, 1, 8, 12)
    assert fused[0, 0, 0].tolist() == [False] + [True] * 7 + [False] * 4  # clean half: not the new block
    assert torch.equal(fused[0, 0, 4:], step[0, 0])
    assert [batch_bucket(n) for n in (1, 2, 3, 5, 8)] == [1, 2, 4, 8, 8]
