"""Training configs: YAML + key=value overrides, validation with clear errors, the shipped stage files."""

from __future__ import annotations

from pathlib import Path

import pytest

from wamdiff2_ros.training.config import TrainConfigError, load_config, parse_overrides

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "config" / "train").glob("*.yaml"))


def test_every_stage_has_a_config():
    names = {p.stem for p in CONFIGS}
    assert {"ar", "adapt_b4", "adapt_b8", "adapt_b16", "adapt_b32", "distill_block", "distill_model",
            "small_ar", "small_adapt_b32"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_configs_validate(path):
    cfg = load_config(path)
    assert cfg.output_dir and cfg.data.logs_dir


def test_progressive_ladder_chains_block_sizes():
    chain = [load_config(REPO / "config" / "train" / f"{n}.yaml") for n in ("ar", "adapt_b4", "adapt_b8", "adapt_b16", "adapt_b32")]
    assert [c.block_size for c in chain] == [1, 4, 8, 16, 32]
    for prev, cur in zip(chain, chain[1:], strict=False):
        assert cur.init == prev.output_dir  # each stage starts from the previous one
    distill = load_config(REPO / "config" / "train" / "distill_block.yaml")
    assert distill.teacher == chain[1].output_dir and distill.teacher_block_size == 4 and distill.block_size == 32
    model = load_config(REPO / "config" / "train" / "distill_model.yaml")
    assert model.init == distill.output_dir and model.block_size == model.teacher_block_size == 32


def test_overrides_are_typed(tmp_path):
    cfg = load_config(CONFIGS[0], ["steps=7", "lr=3e-4", "data.max_scenes=5", "data.tasks=planning", "progress=false"])
    assert cfg.steps == 7 and cfg.lr == pytest.approx(3e-4) and cfg.data.max_scenes == 5
    assert cfg.data.tasks == ["planning"] and cfg.progress is False


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["stepz=3"], "unknown key 'stepz'"),
        (["steps=many"], "steps must be an integer"),
        (["steps=0"], "steps=0"),
        (["data.tasks=driving"], "data.tasks"),
        (["stage=adapt", "block_size=1"], "block_size"),
        (["mixed_precision=fp8"], "mixed_precision"),
        (["noequals"], "not key=value"),
        (["stage=adapt", "block_size=4", "certainty_weight=-1"], "certainty_weight"),
        (["stage=ar", "block_size=1", "certainty_weight=0.5"], "adapt stage only"),
    ],
)
def test_bad_values_are_refused_with_a_reason(override, message):
    with pytest.raises(TrainConfigError, match=message):
        load_config(CONFIGS[0], override)


def test_distillation_needs_a_dividing_teacher_block():
    with pytest.raises(TrainConfigError, match="teacher"):
        load_config(None, None, stage="distill_block", output_dir="x", block_size=32, data={"logs_dir": "d"})
    with pytest.raises(TrainConfigError, match="teacher_block_size"):
        load_config(None, None, stage="distill_block", output_dir="x", block_size=32, teacher="t",
                    teacher_block_size=5, data={"logs_dir": "d"})


def test_missing_file_is_named(tmp_path):
    with pytest.raises(TrainConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(TrainConfigError, match="mapping"):
        load_config(bad)


def test_parse_overrides_nests():
    assert parse_overrides(["a=1", "data.b=x"]) == {"a": "1", "data": {"b": "x"}}
