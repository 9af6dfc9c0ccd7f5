"""Sequence-level distillation: teacher answers written by `wamdiff2 train relabel`, then trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from wamdiff2_ros import cli
from wamdiff2_ros.data.tokenized import TokenizedDataset
from wamdiff2_ros.evaluation.ladder_cards import relabel_row
from wamdiff2_ros.model import codecs
from wamdiff2_ros.model.inputs import encode_response
from wamdiff2_ros.model.loader import load_model
from wamdiff2_ros.training.engine import DistInfo, evaluation_loss, load_dataset, load_student, train
from wamdiff2_ros.training.relabel import TARGETS_VERSION, apply_targets, load_targets, target_key

TEACHER = Path(__file__).resolve().parents[2] / "checkpoints" / "wamdiff2-tiny-ar"
PLAN = "1.00,0.00,2.00,0.00,3.00,0.01,4.00,0.01,5.00,0.02,6.00,0.02,7.00,0.03,8.00,0.03"


def _write_targets(path: Path, answers: dict[str, str], **extra) -> Path:
    path.write_text(json.dumps({"version": TARGETS_VERSION, "tasks": ["planning"], "answers": answers, **extra}))
    return path


def _planning_rows(cfg, vla):
    rows = TokenizedDataset.build(cfg.data, vla, cfg.data.cache_dir, progress=False).rows
    return [r for r in rows if r["task"] == "planning"]


def test_relabel_cli_keeps_only_parsed_teacher_answers(tmp_path, make_config):
    cfg = make_config(tmp_path / "student", stage="adapt", block_size=4)
    config_file = tmp_path / "stage.yaml"
    config_file.write_text(yaml.safe_dump(cfg.to_dict()))
    out = tmp_path / "targets.json"
    rc = cli.main(["train", "relabel", "--teacher", str(TEACHER), "--config", str(config_file), "--out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    planning = _planning_rows(cfg, load_model(TEACHER))
    assert data["kept"] + data["rejected"] == len(planning) > 0
    assert data["kept"] == len(data["answers"])
    assert set(data["answers"]) <= {target_key(r) for r in planning}
    for text in data["answers"].values():  # only answers the strict parser accepts become targets
        assert not isinstance(codecs.parse_answer("planning", text), codecs.ParseError)
    assert load_targets(out) == data["answers"]


def test_relabel_cli_rejects_a_task_outside_the_config(tmp_path, make_config):
    cfg = make_config(tmp_path / "student", stage="adapt", block_size=4, data={"tasks": ["planning"]})
    config_file = tmp_path / "stage.yaml"
    config_file.write_text(yaml.safe_dump(cfg.to_dict()))
    rc = cli.main(["train", "relabel", "--teacher", str(TEACHER), "--config", str(config_file),
                   "--out", str(tmp_path / "t.json"), "--tasks", "understanding"])
    assert rc == 2 and not (tmp_path / "t.json").exists()


def test_targets_replace_answers_and_the_student_learns_them(tmp_path, make_config):
    probe = make_config(tmp_path / "probe", stage="adapt", block_size=4)
    vla = load_model(TEACHER, block_size=4)
    planning = _planning_rows(probe, vla)
    targets = _write_targets(tmp_path / "targets.json", {target_key(r): PLAN for r in planning},
                             teacher="checkpoints/some-teacher", kept=len(planning), rejected=0, wall_s=2.0)
    cfg = make_config(tmp_path / "kd", stage="adapt", block_size=4, init=str(TEACHER), steps=8,
                      data={"targets": str(targets)})

    rows = load_dataset(cfg, vla, DistInfo()).rows
    replaced = [r for r in rows if r["task"] == "planning"]
    assert replaced and all(r["answer"] == PLAN for r in replaced)
    assert all(torch.equal(r["response_ids"], encode_response(vla, PLAN)[0]) for r in replaced)
    assert any(r["answer"] != PLAN for r in rows if r["task"] != "planning")  # other tasks keep ground truth
    cached = TokenizedDataset.build(cfg.data, vla, cfg.data.cache_dir, progress=False).rows
    assert all(r["answer"] != PLAN for r in cached if r["task"] == "planning")  # the cache is not rewritten

    start = load_student(cfg, torch.device("cpu"))
    result = train(cfg)
    plan_rows = [r for r in rows if r["task"] == "planning"]
    assert evaluation_loss(cfg, result.vla, plan_rows) < evaluation_loss(cfg, start, plan_rows)

    row = relabel_row(result.output_dir.parent, result.output_dir.name, "adapt_b32.yaml")  # the shipped card names the relabel step
    assert row is not None and "--teacher checkpoints/some-teacher" in row and f"{len(planning)} answers kept" in row
    assert relabel_row(tmp_path, "probe", "adapt_b32.yaml") is None


def test_apply_targets_counts_and_ignores_unknown_keys():
    vla = load_model(TEACHER)
    rows = [{"task": "planning", "id": "a", "answer": "x", "response_ids": torch.tensor([1])},
            {"task": "understanding", "id": "a", "answer": "yes.", "response_ids": torch.tensor([2])}]
    assert apply_targets(rows, {"planning/a": PLAN, "planning/zzz": PLAN}, vla) == 1
    assert rows[0]["answer"] == PLAN and rows[1]["answer"] == "yes."


@pytest.mark.parametrize("content, error", [
    (None, FileNotFoundError),
    ("not json {", ValueError),
    (json.dumps({"version": 99, "answers": {}}), ValueError),
    (json.dumps({"version": TARGETS_VERSION, "answers": {"planning/a": 3}}), ValueError),
    (json.dumps([1, 2]), ValueError),
])
def test_bad_targets_files_get_clear_errors(tmp_path, content, error):
    path = tmp_path / "targets.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(error, match="data.targets"):
        load_targets(path)


def test_targets_that_name_no_sample_are_an_error(tmp_path, make_config):
    targets = _write_targets(tmp_path / "targets.json", {"planning/not-a-sample": PLAN})
    cfg = make_config(tmp_path / "kd", stage="adapt", block_size=4, data={"targets": str(targets)})

    with pytest.raises(ValueError, match="names none"):
        load_dataset(cfg, load_model(TEACHER, block_size=4), DistInfo())
