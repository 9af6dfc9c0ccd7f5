"""A checkpoint's own decode threshold (generation_config.json): read, checked, and used only when none is given."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.model.checkpoints import DEFAULT_THRESHOLD, decode_threshold, default_checkpoint, own_threshold


def _checkpoint(tmp_path, **generation):
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, **generation}))
    return tmp_path


def test_own_threshold_is_read_and_given_values_win(tmp_path):
    ckpt = _checkpoint(tmp_path, confidence_threshold=0.3)
    assert own_threshold(ckpt) == 0.3
    assert decode_threshold(None, ckpt) == 0.3 and decode_threshold(-1.0, ckpt) == 0.3
    assert decode_threshold(0.9, ckpt) == 0.9 and decode_threshold(0.0, ckpt) == 0.0  # 0 is a threshold, not "unset"


def test_without_an_own_threshold_the_default_applies(tmp_path):
    assert own_threshold(None) is None and decode_threshold(None, None) == DEFAULT_THRESHOLD
    assert own_threshold(tmp_path) is None  # no generation_config.json
    assert decode_threshold(-1.0, _checkpoint(tmp_path)) == DEFAULT_THRESHOLD


@pytest.mark.parametrize("bad", [1.5, -0.2, "0.3", True])
def test_a_bad_own_threshold_is_an_error(tmp_path, bad):
    with pytest.raises(ValueError, match="confidence_threshold"):
        decode_threshold(None, _checkpoint(tmp_path, confidence_threshold=bad))


@pytest.mark.skipif(default_checkpoint() is None, reason="shipped student checkpoint not present")
def test_the_shipped_student_names_its_threshold():
    # chosen on validation by the decode threshold rule in docs/runs/paper.yaml
    assert own_threshold(default_checkpoint()) == 0.3
