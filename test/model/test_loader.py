"""Loader round trips for the three checkpoint kinds, `model init`/`model info`, plain-transformers loading."""

from __future__ import annotations

import json

import pytest
import torch

from wamdiff2_ros.cli import main as cli_main
from wamdiff2_ros.model.loader import ModelLoadError, WamDiff2, init_model, load_model
from wamdiff2_ros.model.presets import PRESETS, build_config
from wamdiff2_ros.model.testing import write_qwen3vl_dir, write_wam_diff2_dir


@pytest.fixture(scope="module", autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny() -> WamDiff2:
    return init_model("tiny", seed=3, block_size=4)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, tiny):
    return tiny.save(tmp_path_factory.mktemp("tiny"))


def _same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _text_logits(vla: WamDiff2, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return vla.model(input_ids=torch.tensor([ids]), use_cache=False).logits


def test_own_checkpoint_round_trip(tiny, tiny_dir):
    loaded = load_model(tiny_dir)
    assert _same_weights(tiny.model, loaded.model)
    assert (loaded.block_size, loaded.mask_token_id, loaded.end_token_id, loaded.pad_token_id) == (
        4, tiny.mask_token_id, tiny.end_token_id, tiny.pad_token_id)
    assert loaded.tokenizer.convert_ids_to_tokens(loaded.mask_token_id) == "<|mask|>"
    assert loaded.tokenizer.convert_ids_to_tokens(loaded.end_token_id) == "<|im_end|>"
    assert loaded.processor is not None and loaded.processor.patch_size == PRESETS["tiny"].patch_size
    assert not loaded.model.training
    assert load_model(tiny_dir, block_size=8).block_size == 8
    ids = loaded.tokenizer("turn left at 12.5 m/s")["input_ids"]
    assert torch.equal(_text_logits(tiny, ids), _text_logits(loaded, ids))


def test_init_is_deterministic_per_seed():
    a, b, c = init_model("tiny", seed=1), init_model("tiny", seed=1), init_model("tiny", seed=2)
    assert _same_weights(a.model, b.model)
    assert not _same_weights(a.model, c.model)


def test_qwen3vl_dir_gets_mask_token_and_resized_embeddings(tmp_path):
    directory = write_qwen3vl_dir(tmp_path / "qwen", exact_vocab=True)
    raw = json.loads((directory / "config.json").read_text())
    assert raw["model_type"] == "qwen3_vl" and "mask_token_id" not in raw
    old_vocab = raw["text_config"]["vocab_size"]
    vla = load_model(directory)
    assert vla.mask_token_id == old_vocab  # appended after the existing tokens
    assert vla.tokenizer.convert_ids_to_tokens(vla.mask_token_id) == "<|mask|>"
    assert vla.vocab_size > vla.mask_token_id
    assert vla.model.lm_head.weight.shape[0] == vla.vocab_size
    assert vla.block_size == 1 and vla.config.mask_token_id == vla.mask_token_id
    # the saved checkpoint now records the mask token and reloads without another resize
    saved = vla.save(tmp_path / "converted")
    again = load_model(saved)
    assert again.mask_token_id == vla.mask_token_id and again.vocab_size == vla.vocab_size
    assert _same_weights(vla.model, again.model)


def test_wam_diff2_dir_uses_config_mask_id_and_same_weights(tiny, tiny_dir, tmp_path):
    directory = write_wam_diff2_dir(tiny_dir, tmp_path / "wam", mask_token_id=tiny.mask_token_id)
    raw = json.loads((directory / "config.json").read_text())
    assert raw["model_type"] == "wam_diff2" and "rope_scaling" in raw["text_config"]
    vla = load_model(directory, block_size=4)
    assert vla.mask_token_id == tiny.mask_token_id
    assert vla.model.config.text_config.rope_parameters["mrope_section"] == PRESETS["tiny"].mrope_section
    assert _same_weights(tiny.model, vla.model)


def test_wam_diff2_dir_without_mask_id_defaults_to_151671(tiny_dir, tmp_path):
    vla = load_model(write_wam_diff2_dir(tiny_dir, tmp_path / "wam"))
    assert vla.mask_token_id == 151671
    assert vla.vocab_size > 151671


@pytest.mark.parametrize("case", ["missing", "file", "no_config", "bad_json", "other_type", "no_weights"])
def test_bad_directories_give_clear_errors(tmp_path, tiny_dir, case):
    target = tmp_path / "ckpt"
    if case == "no_weights":
        target.mkdir()
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            (target / name).write_bytes((tiny_dir / name).read_bytes())
    elif case == "file":
        target.write_text("x")
    elif case != "missing":
        target.mkdir()
        if case == "bad_json":
            (target / "config.json").write_text("{not json")
        elif case == "other_type":
            (target / "config.json").write_text(json.dumps({"model_type": "llama"}))
    expected = {"missing": "does not exist", "file": "not a directory", "no_config": "no config.json",
                "bad_json": "cannot read", "other_type": "not supported", "no_weights": "cannot load the weights"}[case]
    with pytest.raises(ModelLoadError, match=expected):
        load_model(target)


def test_bad_block_size_and_preset():
    with pytest.raises(ValueError, match="unknown model preset"):
        init_model("huge")
    with pytest.raises(ValueError, match="block_size"):
        init_model("tiny", block_size=0)


def test_cli_init_then_plain_transformers_and_info(tmp_path, capsys):
    from transformers import AutoTokenizer, Qwen3VLForConditionalGeneration

    out = tmp_path / "init"
    assert cli_main(["model", "init", "--preset", "tiny", "--out", str(out), "--seed", "5", "--block-size", "8"]) == 0
    capsys.readouterr()
    model = Qwen3VLForConditionalGeneration.from_pretrained(str(out), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert (out / "model.safetensors").is_file()
    assert model.config.block_size == 8
    assert tokenizer.convert_tokens_to_ids("<|mask|>") == model.config.mask_token_id
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == model.config.end_token_id
    assert cli_main(["model", "info", str(out), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["model_type"] == "qwen3_vl" and facts["block_size"] == 8
    assert facts["parameters"] == sum(p.numel() for p in model.parameters())
    assert facts["mask_token_id"] == model.config.mask_token_id
    assert facts["vocab_size"] == model.config.text_config.vocab_size
    # a second init into the non-empty directory is refused
    assert cli_main(["model", "init", "--preset", "tiny", "--out", str(out)]) == 2
    assert cli_main(["model", "info", str(tmp_path / "nothing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_preset_sizes_are_ordered_and_2b_shape_matches_qwen3vl_2b():
    counts = {}
    for name in PRESETS:
        with torch.device("meta"):
            from transformers import Qwen3VLForConditionalGeneration

            config = build_config(
                name, vocab_size=731, special_token_ids={"image": 5, "video": 6, "vision_start": 3, "vision_end": 4},
                mask_token_id=7, end_token_id=2, pad_token_id=0,
            )
            counts[name] = sum(p.numel() for p in Qwen3VLForConditionalGeneration(config).parameters())
    assert 1e6 < counts["tiny"] < 5e6
    assert 3 * counts["tiny"] < counts["small"] < 30e6
    assert 2.0e9 < counts["2b-shape"] < 2.3e9
