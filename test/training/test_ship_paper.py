"""Shipping a paper-table row: model files copied, lineage with compute in the card, run records archived."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.evaluation import paper_card
from wamdiff2_ros.training import ship_paper


def _run(root, name, steps, wall_s, init="", teacher=""):
    d = root / name
    d.mkdir(parents=True)
    (d / "train_config.json").write_text(json.dumps({"batch_size": 8, "num_threads": 1, "init": init,
                                                     "teacher": teacher, "data": {}}))
    (d / "train_summary.json").write_text(json.dumps({"steps": steps, "wall_time_s": wall_s, "final_loss": 0.5}))
    (d / "model.safetensors").write_bytes(b"weights")
    (d / "config.json").write_text("{}")


def _ship_rows(tmp_path, monkeypatch, registry_text, ships):
    """Ship ``(row, name)`` pairs of a registry (no score store) from tmp_path/runs; the checkpoints folder."""
    registry = tmp_path / "paper.yaml"
    registry.write_text(registry_text)
    monkeypatch.setattr(paper_card, "ARCHIVE", tmp_path / "archive")
    out = tmp_path / "checkpoints"
    common = ["--runs", str(tmp_path / "runs"), "--registry", str(registry), "--store", str(tmp_path / "none.json"),
              "--out", str(out)]
    for row, name in ships:
        assert ship_paper.main(["--row", row, "--name", name, *common]) == 0
    return out


def test_config_of_follows_the_recipe():
    assert paper_card.config_of("tiny-b16") == ("adapt", "adapt_b16.yaml")
    assert paper_card.config_of("mid-b32") == ("adapt", "mid_adapt_b32.yaml")
    assert paper_card.config_of("tiny-b32-s3") == ("distill-model", "distill_model.yaml")
    # the converged-start lineage runs the same configs
    assert paper_card.config_of("conv-b4") == ("adapt", "adapt_b4.yaml")
    assert paper_card.config_of("conv-b32-s2") == ("distill-block", "distill_block.yaml")
    assert paper_card.config_of("conv-deep-b32") == ("adapt", "deep_adapt_b32.yaml")
    assert paper_card.config_of("conv-ar-equal") == ("ar", "ar.yaml")
    assert paper_card.run_name("runs/paper2/tiny-ar") == "tiny-ar-equal"  # stage 0 of that lineage, copied
    assert paper_card.run_name("runs/paper2/tiny-b16") == "conv-b16"
    assert paper_card.run_name("runs/paper2/deep-b32") == "conv-deep-b32"
    assert paper_card.run_name("runs/paper/tiny-b16") == "tiny-b16" and paper_card.run_name("") == ""
    # the fixed-width-plan lineage (runs/paper3): the same configs, its AR restyled first
    assert paper_card.config_of("fix-b32-s3") == ("distill-model", "distill_model.yaml")
    assert paper_card.config_of("fix-ar-restyled") == ("ar", "ar.yaml")
    assert paper_card.run_name("runs/paper3/tiny-ar-restyled") == "fix-ar-restyled"
    assert paper_card.run_name("runs/paper3/deep-b32") == "fix-deep-b32"
    assert paper_card.config_of("fix1-b32-s2") == ("distill-block", "distill_block.yaml")  # not read as fix-*
    assert paper_card.config_of("fix1-deep-b32") == ("adapt", "deep_adapt_b32.yaml")
    assert paper_card.run_name("runs/paper4/tiny-b32-s3") == "fix1-b32-s3"
    with pytest.raises(ValueError):
        paper_card.config_of("v3-b32-kd")


def test_ship_writes_card_and_archives_lineage(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    _run(runs, "mid-ar", 100, 600.0)
    _run(runs, "mid-b4", 50, 300.0, init="runs/paper/mid-ar")
    registry = tmp_path / "paper.yaml"
    registry.write_text("rows:\n  - key: mid-b4\n    label: teacher\n    run: mid-b4\n    block_size: 4\n"
                        "    lineage: [mid-ar, mid-b4]\n")
    store = tmp_path / "store.json"
    agg = {"samples": {"planning": 2}, "planning": {"l2": 1.5, "parse_rate": 1.0, "l2_h": [0.5, 1, 2, 2.5]},
           "understanding": {"accuracy": 0.5, "majority_accuracy": 0.25}, "perception": {"n": 0},
           "speed": {"planning": {"tokens_per_second": 100.0, "tokens_per_forward": 2.0}}}
    store.write_text(json.dumps({"val": {"_split": {"path": "val"}, "mid-b4": {"block_size": 4, "aggregate": agg}}}))
    monkeypatch.setattr(paper_card, "ARCHIVE", tmp_path / "archive")
    out = tmp_path / "checkpoints"
    assert ship_paper.main(["--row", "mid-b4", "--name", "m", "--runs", str(runs), "--registry", str(registry),
                            "--store", str(store), "--out", str(out)]) == 0
    text = (out / "m" / "README.md").read_text()
    assert (out / "m" / "model.safetensors").read_bytes() == b"weights"
    assert "`config/train/paper/mid_adapt_b4.yaml`" in text and "| mid-ar |" in text  # the init of mid-b4
    assert "Total: 150 steps, 1200 samples, 15.0 CPU core-minutes." in text
    assert "**1.500 m**" in text and "majority answer 0.25" in text
    assert (tmp_path / "archive" / "mid-b4" / "train_summary.json").is_file()
    assert ship_paper.main(["--row", "nope", "--name", "m", "--runs", str(runs), "--registry", str(registry),
                            "--store", str(store), "--out", str(out)]) == 2


def test_a_row_with_its_own_threshold_ships_it_as_the_decode_default(tmp_path, monkeypatch):
    from wamdiff2_ros.model.checkpoints import decode_threshold, own_task_thresholds

    runs = tmp_path / "runs"
    _run(runs, "tiny-b32", 50, 300.0)
    (runs / "tiny-b32" / "generation_config.json").write_text(json.dumps({"eos_token_id": 2}))
    out = _ship_rows(tmp_path, monkeypatch,
                     "rows:\n  - key: b32\n    label: student\n    run: tiny-b32\n    block_size: 32\n    lineage: [tiny-b32]\n"
                     "  - key: b32-loose\n    label: student, own threshold\n    run: tiny-b32\n    block_size: 32\n"
                     "    lineage: [tiny-b32]\n    threshold: 0.3\n    task_thresholds: {understanding: 0.9}\n",
                     [("b32", "plain"), ("b32-loose", "loose")])
    assert decode_threshold(None, out / "plain") == 0.9  # no threshold named: the default
    assert decode_threshold(None, out / "loose") == 0.3
    assert own_task_thresholds(out / "loose") == {"understanding": 0.9} and own_task_thresholds(out / "plain") == {}
    assert json.loads((out / "loose" / "generation_config.json").read_text())["eos_token_id"] == 2  # kept
    card = (out / "loose" / "README.md").read_text()
    assert "Decoding default: confidence threshold 0.3; understanding 0.9" in card and "is `b32`" in card
    assert "Decoding default" not in (out / "plain" / "README.md").read_text()


def test_the_card_names_the_cameras_and_world_rules_of_its_data(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    _run(runs, "world-b32", 50, 300.0)
    config = json.loads((runs / "world-b32" / "train_config.json").read_text())
    config["data"] = {"cameras": ["CAM_F0", "CAM_L0", "CAM_B0"], "camera_subsets": "keep_first"}
    (runs / "world-b32" / "train_config.json").write_text(json.dumps(config))
    (runs / "world-b32" / "generation_config.json").write_text(
        json.dumps({"world_rules": {"command_horizon_s": 4.0, "lamp_visor_deg": 35.0}}))
    _run(runs, "tiny-b32", 50, 300.0)
    out = _ship_rows(tmp_path, monkeypatch,
                     "rows:\n  - key: w\n    label: world\n    run: world-b32\n    block_size: 32\n"
                     "    lineage: [world-b32]\n  - key: f\n    label: front\n    run: tiny-b32\n    block_size: 32\n"
                     "    lineage: [tiny-b32]\n", [("w", "w"), ("f", "f")])
    card = (out / "w" / "README.md").read_text()
    assert "3 cameras CAM_F0, CAM_L0, CAM_B0 (each sample the front camera and a random subset" in card
    assert "world rules command_horizon_s 4, lamp_visor_deg 35" in card
    plain = (out / "f" / "README.md").read_text()
    assert "question per scene, front camera;" in plain and "the world's default rules" in plain
