"""Prompt building, multi-camera selection, image budgets, and the shipped BPE tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from wamdiff2_ros.model.cameras import NAVSIM_CAMERAS, per_camera_pixels, select_camera_images, validate_cameras
from wamdiff2_ros.model.inputs import build_inputs, chat_prompt
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.model.testing import toy_image
from wamdiff2_ros.model.tokenizer import ASSET_TOKENIZER, SPECIAL_TOKENS, train_tokenizer, wrap_tokenizer


@pytest.fixture(scope="module")
def vla():
    torch.set_num_threads(1)
    return init_model("tiny", seed=0, block_size=4)


def test_chat_prompt_format():
    assert chat_prompt("Plan.", 0) == "<|im_start|>user\nPlan.<|im_end|>\n<|im_start|>assistant\n"
    two = chat_prompt("Plan.", 2)
    assert two.count("<|vision_start|><|image_pad|><|vision_end|>") == 2 and two.index("<|image_pad|>") < two.index("Plan.")
    placed = chat_prompt("Front: <image> Left: <image> go", 2)
    assert "Front: <|vision_start|>" in placed and "Left: <|vision_start|>" in placed
    with pytest.raises(ValueError, match="placeholders"):
        chat_prompt("<image>", 2)


def test_build_inputs_text_only(vla):
    inputs = build_inputs(vla, "Is the light green?", answer="yes")
    ids = inputs["input_ids"][0].tolist()
    assert vla.tokenizer.decode(ids) == "<|im_start|>user\nIs the light green?<|im_end|>\n<|im_start|>assistant\n"
    assert inputs["position_ids"].shape == (3, 1, len(ids))
    assert inputs["position_ids"][0, 0].tolist() == list(range(len(ids)))
    assert "pixel_values" not in inputs
    response = inputs["response_ids"][0].tolist()
    assert response[-1] == vla.end_token_id and vla.tokenizer.decode(response[:-1]) == "yes"


def test_build_inputs_with_cameras_and_budget(vla):
    frames = {cam: toy_image(seed=i) for i, cam in enumerate(NAVSIM_CAMERAS)}
    images = select_camera_images(frames, ["CAM_F0", "CAM_L0", "CAM_R0"])
    inputs = build_inputs(vla, "Plan.", images)
    grid = inputs["image_grid_thw"]
    assert grid.shape == (3, 3)
    n_tokens = int((inputs["input_ids"] == vla.image_token_id).sum())
    assert n_tokens == int((grid.prod(-1) // 4).sum())
    assert inputs["pixel_values"].shape[0] == int(grid.prod(-1).sum())
    assert torch.equal(inputs["mm_token_type_ids"][0].bool(), inputs["input_ids"][0] == vla.image_token_id)
    # mRoPE: image tokens share the temporal index and the text after them continues past max(h, w)
    pos = inputs["position_ids"][:, 0]
    assert pos[:, -1].tolist() == [int(pos.max())] * 3
    small = build_inputs(vla, "Plan.", images, max_pixels=32 * 32)
    assert int((small["input_ids"] == vla.image_token_id).sum()) < n_tokens
    with pytest.raises(ValueError, match="below one vision token"):
        build_inputs(vla, "Plan.", images, max_pixels=100)


def test_build_inputs_rejects_bad_images(vla):
    with pytest.raises(ValueError, match=r"shape \(H, W, 3\)"):
        build_inputs(vla, "x", [np.zeros((10, 10), dtype=np.uint8)])
    with pytest.raises(TypeError, match="numpy array"):
        build_inputs(vla, "x", [[1, 2, 3]])
    floats = build_inputs(vla, "x", [toy_image().astype(np.float32) / 255.0])
    ints = build_inputs(vla, "x", [toy_image()])
    assert torch.allclose(floats["pixel_values"], ints["pixel_values"], atol=1e-2)


def test_camera_selection():
    assert validate_cameras(None) == ("CAM_F0",)
    assert validate_cameras("all") == NAVSIM_CAMERAS
    assert validate_cameras("CAM_F0, CAM_B0") == ("CAM_F0", "CAM_B0")
    with pytest.raises(ValueError, match="unknown camera"):
        validate_cameras(["CAM_X"])
    with pytest.raises(ValueError, match="duplicates"):
        validate_cameras(["CAM_F0", "CAM_F0"])
    with pytest.raises(ValueError, match="no image for camera"):
        select_camera_images({"CAM_F0": toy_image()}, ["CAM_F0", "CAM_L0"])
    assert per_camera_pixels(8192 * 3, 3) == 8192


def test_tokenizer_digits_and_special_tokens():
    tok = wrap_tokenizer()
    pieces = tok.convert_ids_to_tokens(tok("x=-12.34,5.06")["input_ids"])
    digits = [p for p in pieces if any(c.isdigit() for c in p)]
    assert all(len(p.lstrip("Ġ")) == 1 for p in digits) and len(digits) == 7
    for special in SPECIAL_TOKENS:
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1
    text = "<|im_start|>user\nTurn left, 3.50 m/s.<|im_end|>"
    assert tok.decode(tok(text)["input_ids"]) == text


def test_shipped_tokenizer_regenerates_identically():
    shipped = json.loads(ASSET_TOKENIZER.read_text())
    fresh = json.loads(train_tokenizer().to_str())
    assert fresh["model"]["vocab"] == shipped["model"]["vocab"]
    assert fresh["model"]["merges"] == shipped["model"]["merges"]
    assert [t["content"] for t in fresh["added_tokens"]] == list(SPECIAL_TOKENS)
