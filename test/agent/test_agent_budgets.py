"""DrivingAgent task_max_new_tokens and task_thresholds: a task's own answer budget and confidence threshold."""

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


def test_each_task_decodes_at_its_own_threshold(vla):
    # a random model is never sure: threshold 1.0 commits one token per forward, 0.0 the whole block at once
    config = DecodeConfig(block_size=8, confidence_threshold=1.0, max_new_tokens=16)
    images = {"CAM_F0": (np.random.default_rng(0).random((48, 96, 3)) * 255).astype(np.uint8)}
    for batch in (False, True):
        agent = DrivingAgent(vla, config, tasks=("planning", "perception", "understanding"),
                             task_thresholds={"understanding": 0.0}, batch_tasks=batch)
        outputs = agent.run(agent.prepare(images, EgoMotion(), "left"))
        forwards = {t: outputs[t].stats.forwards for t in outputs}
        assert forwards["planning"] == forwards["perception"] == 16 and forwards["understanding"] == 2, forwards
    assert agent.config_for(["understanding"]).confidence_threshold == 0.0
    assert agent.config_for(["planning"]) is config
    with pytest.raises(ValueError, match="different rules"):
        agent.config_for(["perception", "understanding"])


@pytest.mark.parametrize("bad", [{"steering": 0.5}, {"perception": 1.5}, {"perception": -0.1}, {"perception": True}])
def test_bad_thresholds_are_refused(vla, bad):
    with pytest.raises(ValueError, match="task_thresholds"):
        DrivingAgent(vla, DecodeConfig(block_size=8), task_thresholds=bad)


def test_end_in_order_for_some_tasks(vla):
    config = DecodeConfig(block_size=8, confidence_threshold=0.9, max_new_tokens=16)
    agent = DrivingAgent(vla, config, tasks=("planning", "perception", "understanding"),
                         end_in_order_tasks=["understanding"], batch_tasks=True)
    assert agent.config_for(["understanding"]).end_in_order and agent.config_for(["planning"]) is config
    assert [agent.end_in_order_of(t) for t in ("planning", "perception", "understanding")] == [False, False, True]
    with pytest.raises(ValueError, match="different rules"):
        agent.config_for(["perception", "understanding"])
    images = {"CAM_F0": (np.random.default_rng(0).random((48, 96, 3)) * 255).astype(np.uint8)}
    outputs = agent.run(agent.prepare(images, EgoMotion(), "left"))  # not one batch: two groups of one
    assert set(outputs) == {"planning", "perception", "understanding"}
    everywhere = DrivingAgent(vla, DecodeConfig(block_size=8, end_in_order=True), tasks=("planning",))
    assert everywhere.end_in_order_of("planning")
    for bad in (["steering"], "understanding"):
        with pytest.raises(ValueError, match="end_in_order_tasks"):
            DrivingAgent(vla, config, end_in_order_tasks=bad)


def test_reused_keys_for_some_tasks(vla):
    """The scene tasks with reused committed keys, the plan exact: the plan's tokens are the exact decode's."""
    config = DecodeConfig(block_size=8, confidence_threshold=0.8, max_new_tokens=16)
    images = {"CAM_F0": (np.random.default_rng(0).random((48, 96, 3)) * 255).astype(np.uint8)}
    tasks = ("planning", "perception", "understanding")
    exact = DrivingAgent(vla, config, tasks=tasks, batch_tasks=True)
    agent = DrivingAgent(vla, config, tasks=tasks, reuse_kv_tasks=["perception", "understanding"], batch_tasks=True)
    assert [agent.reuse_kv_of(t) for t in tasks] == [False, True, True]
    assert agent.config_for(["perception", "understanding"]).reuse_committed_kv  # one rule: one batch
    assert agent.config_for(["planning"]) is config
    ours, theirs = (a.run(a.prepare(images, EgoMotion(), "left")) for a in (agent, exact))
    assert ours["planning"].stats.engine == theirs["planning"].stats.engine == "fast/sdpa+prefix"
    assert ours["planning"].text == theirs["planning"].text
    assert ours["perception"].stats.engine.endswith("+reuse+prefix")
    for bad in (["steering"], "perception"):
        with pytest.raises(ValueError, match="reuse_kv_tasks"):
            DrivingAgent(vla, config, reuse_kv_tasks=bad)
    with pytest.raises(ValueError, match="fast engine"):
        DrivingAgent(vla, DecodeConfig(block_size=8, engine="reference"), reuse_kv_tasks=["perception"])
