"""DrivingAgent task_max_new_tokens: a task's own answer budget (e.g. a long perception answer)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wamdiff2_ros.agent import DrivingAgent, EgoMotion
from wamdiff2_ros.decoding.config import DecodeConfig


@pytest.fixture(scope="module")
def vla():
    from wamdiff2_ros.model.loader import init_model

    torch.set_num_threads(1)
    return init_model("tiny", seed=0)  # random weights: answers never end, so a decode uses its whole budget


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_each_task_decodes_to_its_own_budget(vla, engine):
    config = DecodeConfig(block_size=8, confidence_threshold=0.9, max_new_tokens=16, engine=engine)
    agent = DrivingAgent(vla, config, tasks=("planning", "perception", "understanding"),
                         task_max_new_tokens={"perception": 40})
    images = {"CAM_F0": (np.random.default_rng(0).random((48, 96, 3)) * 255).astype(np.uint8)}
    outputs = agent.run(agent.prepare(images, EgoMotion(), "left"))
    assert [outputs[t].stats.generated_tokens for t in ("planning", "perception", "understanding")] == [16, 40, 16]
    assert len(outputs["perception"].token_ids) == 40 and len(outputs["planning"].token_ids) == 16
    assert agent.config_for(["perception", "understanding"]).max_new_tokens == 40  # a batch: its largest budget
    assert agent.config_for(["planning"]) is config


@pytest.mark.parametrize("bad", [{"steering": 8}, {"perception": 0}, {"perception": 2.5}, {"perception": True}])
def test_bad_budgets_are_refused(vla, bad):
    with pytest.raises(ValueError, match="task_max_new_tokens"):
        DrivingAgent(vla, DecodeConfig(block_size=8), task_max_new_tokens=bad)
