"""data.cruise_telemetry: a seeded fraction of planning prompts report the acceleration as (0, 0), the plan and every
other sample unchanged, so a model cannot copy the autopilot's braking or turning from the telemetry."""

from __future__ import annotations

import re

import pytest

from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.data.tokenized import DataConfig, build_samples
from wamdiff2_ros.training.config import TrainConfig

ACCEL = re.compile(r"current accelerate is: \(([-0-9.]+),([-0-9.]+)\)")


def _accel(question: str) -> tuple[float, float]:
    match = ACCEL.search(question)
    assert match, question
    return float(match.group(1)), float(match.group(2))


def test_a_fraction_of_planning_prompts_report_cruise_and_keep_their_plans(tmp_path):
    synthesize(tmp_path, num_logs=2, num_frames=30, seed=5, size=(64, 32), progress=False)
    base = DataConfig(logs_dir=str(tmp_path), tasks=["planning", "understanding"], seed=2)
    logged = build_samples(base)
    cruise = build_samples(DataConfig(**{**base.__dict__, "cruise_telemetry": 0.5}))
    assert [s.sample_id for s in cruise] == [s.sample_id for s in logged]
    assert [s.answer for s in cruise] == [s.answer for s in logged]  # plans and QA answers unchanged
    plans = [(a, b) for a, b in zip(logged, cruise, strict=True) if a.task == "planning"]
    assert any(_accel(a.question) != (0.0, 0.0) for a, _ in plans)  # the logs do report accelerations
    flagged = [(a, b) for a, b in plans if b.meta.get("cruise_telemetry")]
    assert 0.25 * len(plans) < len(flagged) < 0.75 * len(plans)
    for a, b in plans:
        if b.meta.get("cruise_telemetry"):
            assert _accel(b.question) == (0.0, 0.0)
            assert b.question == ACCEL.sub("current accelerate is: (0.00,0.00)", a.question)
        else:
            assert b.question == a.question
    qa = [(a, b) for a, b in zip(logged, cruise, strict=True) if a.task != "planning"]
    assert qa and all(a.question == b.question for a, b in qa)
    again = build_samples(DataConfig(**{**base.__dict__, "cruise_telemetry": 0.5}))
    assert [s.question for s in again] == [s.question for s in cruise]  # deterministic from the seed


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "half"])
def test_config_rejects_a_bad_fraction(value):
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.data.cruise_telemetry = value
    with pytest.raises(ValueError, match="cruise_telemetry"):
        cfg.validate()
