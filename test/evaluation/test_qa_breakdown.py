"""QA per question type and the paired comparison with constant velocity, on hand-made records."""

from __future__ import annotations

import pytest

from wamdiff2_ros.evaluation import paper_table, qa_breakdown


def _qa(qtype: str, answer: str, prediction: str) -> dict:
    return {"task": "understanding", "question_type": qtype, "answer": answer, "prediction": prediction,
            "correct": prediction == answer, "parsed": True}


TRAIN = {"traffic_light": {"red": 5, "green": 2}, "lead_presence": {"no": 3, "yes": 1}}


def test_per_type_accuracy_validity_and_majority_share():
    records = [_qa("traffic_light", "green", "green"), _qa("traffic_light", "red", "nd"),
               _qa("traffic_light", "red", "red"), _qa("lead_presence", "yes", "no")]
    out = qa_breakdown.by_question_type(records, TRAIN)
    tl = out["traffic_light"]
    assert tl["n"] == 3 and tl["accuracy"] == pytest.approx(2 / 3)
    assert tl["valid_rate"] == pytest.approx(2 / 3)  # `nd` is none of the light's answers
    assert tl["majority_answer"] == "red" and tl["majority_accuracy"] == pytest.approx(2 / 3)
    assert tl["gives_majority"] == pytest.approx(1 / 3)
    assert out["lead_presence"]["accuracy"] == 0.0 and out["lead_presence"]["gives_majority"] == 1.0
    assert qa_breakdown.invalid_answers(records) == [("traffic_light", "nd", 1)]
    text = "\n".join(qa_breakdown.markdown(("s", records), ("a", records[:1]), TRAIN))
    assert "| traffic_light | 3 | red | 0.67 | 1.00 (1.00; 0.00) | 0.67 (0.67; 0.33) |" in text
    assert "| lead_presence | 1 | no | 0.00 | – |" in text and "`nd` (traffic_light, 1x)" in text


def _plan(l2: float, fallback_x: float) -> dict:
    gt = [[float(i + 1), 0.0] for i in range(8)]
    return {"task": "planning", "l2_h": [l2] * 4, "gt": gt, "fallback": [[x + fallback_x, y] for x, y in gt]}


def test_versus_constant_velocity_is_the_paired_difference():
    records = [_plan(1.0, 2.0), _plan(3.0, 2.0)]  # constant velocity is off by 2 m at every waypoint
    v = paper_table.versus_constant_velocity(records, n=200)
    assert v["n"] == 2 and v["mean"] == pytest.approx(0.0)
    better = paper_table.versus_constant_velocity([_plan(0.5, 2.0), _plan(1.5, 2.0)], n=200)
    assert better["mean"] == pytest.approx(1.0) and better["relative_pct"] == pytest.approx(50.0)
    assert better["low"] == pytest.approx(0.5) and better["high"] == pytest.approx(1.5)
