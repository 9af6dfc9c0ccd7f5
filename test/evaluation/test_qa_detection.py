"""QA metrics on hand cases, LingoQA/DriveBench loaders, COCO mAP via pycocotools and BEV centre-distance mAP."""

import json

import pytest

from wamdiff2_ros.evaluation.detection import BevBox, ImageBox, bev_center_distance_map, coco_map
from wamdiff2_ros.evaluation.qa import (
    exact_match,
    load_drivebench,
    load_lingoqa,
    multiple_choice_letter,
    normalize_answer,
    score_items,
    token_f1,
    token_f1_judge,
)


def test_normalised_exact_match_and_f1():
    assert normalize_answer("The  Car, stops!") == "car stops"
    assert exact_match("the car stops.", "Car stops") == 1.0
    assert exact_match("car stops now", ["car stops", "it stops"]) == 0.0
    # pred: {car, stops, now}, gold: {car, stops}: P = 2/3, R = 1, F1 = 0.8
    assert token_f1("car stops now", "car stops") == pytest.approx(0.8)
    assert token_f1("red light", ["green", "red light"]) == 1.0
    assert token_f1("", "anything") == 0.0
    assert multiple_choice_letter("B. turn left") == "B" and multiple_choice_letter("Because") is None


def test_lingoqa_loader_groups_references_and_judges(tmp_path):
    questions = tmp_path / "val.csv"
    questions.write_text(
        "question_id,segment_id,question,answer\n"
        "q1,s1,What is the light?,red\nq1,s1,What is the light?,it is red\n"
        "q2,s1,Are there pedestrians?,no\n"
    )
    preds = tmp_path / "predictions.csv"
    preds.write_text("question_id,segment_id,answer\nq1,s1,It is red.\nq2,s1,yes there are two\n")
    items = load_lingoqa(questions, preds)
    assert [len(i.references) for i in items] == [2, 1]
    result = score_items(items, judge=token_f1_judge(0.5))
    assert result["questions"] == 2
    assert result["exact_match"] == pytest.approx(0.5) and result["judge_accuracy"] == pytest.approx(0.5)
    calls = []
    score_items(items, judge=lambda q, refs, pred: calls.append(q) or 1.0)
    assert calls == ["What is the light?", "Are there pedestrians?"]


def test_drivebench_loader_and_multiple_choice(tmp_path):
    path = tmp_path / "drivebench.json"
    rows = [
        {"scene_token": "s", "frame_token": "f1", "question": "Which? A. left B. right", "answer": "B",
         "question_type": "planning", "pred": "B. right", "image_path": {"CAM_FRONT": "x.jpg"}},
        {"scene_token": "s", "frame_token": "f2", "question": "What is ahead?", "answer": "a truck",
         "question_type": "perception", "pred": "a bus"},
    ]  # fmt: skip
    path.write_text(json.dumps(rows))
    items = load_drivebench(path)
    result = score_items(items)
    assert result["by_category"]["planning"]["judge_accuracy"] == 1.0
    assert result["by_category"]["perception"]["exact_match"] == 0.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": "q"}]))
    with pytest.raises(ValueError, match="'answer'"):
        load_drivebench(bad)


def test_coco_map_perfect_and_shifted():
    gt = [ImageBox(f"img{i}", lbl, (100 + 10 * i, 100, 200 + 10 * i, 180)) for i in range(4) for lbl in ("car", "pedestrian")]
    assert coco_map(gt, [ImageBox(b.image_id, b.label, b.bbox, 0.9) for b in gt])["map"] == pytest.approx(1.0)
    shifted = [ImageBox(b.image_id, b.label, (b.bbox[0] + 20, b.bbox[1], b.bbox[2] + 20, b.bbox[3]), 0.9) for b in gt]
    result = coco_map(gt, shifted)
    assert 0.0 < result["map"] < 1.0 and result["map_50"] == pytest.approx(1.0)  # IoU 80/120 = 0.67
    assert coco_map(gt, [])["map"] == 0.0


def test_bev_center_distance_map():
    gt = [BevBox(f"s{i}", "vehicle", 10.0 + i, 2.0) for i in range(5)]
    assert bev_center_distance_map(gt, gt)["map"] == pytest.approx(1.0)
    off = [BevBox(b.sample_id, b.label, b.x + 1.5, b.y) for b in gt]  # matches only at 2 m and 4 m
    result = bev_center_distance_map(gt, off)
    assert result["per_class"]["vehicle"]["ap_0.5m"] == 0.0 and result["per_class"]["vehicle"]["ap_2m"] == 1.0
    assert result["map"] == pytest.approx(0.5)
