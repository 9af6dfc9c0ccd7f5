"""On the shipped student: the agent's three tasks from one frame encoding equal the reference engine's answers.

Real answers (with end tokens) on a synthetic-world frame, one camera and all eight
NAVSIM cameras; the oracle decodes each task's whole prompt from scratch.
"""

from __future__ import annotations

import pytest

from wamdiff2_ros.agent import TASKS, DrivingAgent, EgoMotion
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.model.cameras import NAVSIM_CAMERAS


@pytest.mark.parametrize("num_cameras", [1, 8])
def test_shared_prefix_agent_equals_reference_on_trained_student(shipped, num_cameras):
    from wamdiff2_ros.data.world import World

    cameras = NAVSIM_CAMERAS[:num_cameras]
    world = World(3)  # a frame the shipped student answers in full, its perception boxes included (checked)
    world.step(3.0)
    images = world.render(list(cameras), (512, 256))
    ego = EgoMotion((6.0, 0.0), (0.1, 0.0))
    answers = {}
    for engine, batch in (("reference", False), ("fast", True), ("fast", False)):
        config = DecodeConfig(block_size=32, max_new_tokens=128, engine=engine)
        agent = DrivingAgent(shipped, config, cameras=cameras, tasks=TASKS, batch_tasks=batch)
        ctx = agent.prepare(images, ego, "straight")
        assert (ctx.prefix is None) == (engine == "reference")
        answers[engine, batch] = {t: (o.token_ids, o.error) for t, o in agent.run(ctx).items()}
    assert answers["fast", True] == answers["reference", False] == answers["fast", False]
    if num_cameras == 1:  # the student was trained on the front camera: real, parsable answers
        assert all(error is None for _, error in answers["reference", False].values())
        assert len(answers["reference", False]["perception"][0]) > 32  # more than one block
