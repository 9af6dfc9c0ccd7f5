"""DrivingAgent.prepare/run/assemble: one vision pass and one shared prefix per frame set, planning first.

Every task's tokens must equal the reference engine decoding that task's whole prompt
from scratch, with one camera and with all eight NAVSIM cameras (random tiny model
of the model room, real tokenizer and image processor), whether the other tasks run
as rows of one batch or one after another.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from wamdiff2_ros.agent import TASKS, DrivingAgent, EgoMotion
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.model.cameras import NAVSIM_CAMERAS

EGO = EgoMotion((4.2, -0.1), (0.3, 0.0))


@pytest.fixture(scope="module")
def room_vla():
    from wamdiff2_ros.model.loader import init_model

    torch.set_num_threads(1)
    vla = init_model("tiny", seed=0)
    with torch.no_grad():  # a std-0.02 init predicts near-uniformly (ties); wider weights spread the confidences
        for weight in vla.model.model.language_model.parameters():
            if weight.ndim == 2:
                weight.mul_(5.0)
        vla.model.lm_head.weight.mul_(5.0)
    return vla


def frame(cameras, seed=0, size=(48, 96)):
    rng = np.random.default_rng(seed)
    return {c: (rng.random((*size, 3)) * 255).astype(np.uint8) for c in cameras}


def config(engine="fast", block_size=8):
    return DecodeConfig(block_size=block_size, confidence_threshold=0.5, max_new_tokens=24, engine=engine)


def reference_tokens(vla, cameras, images, tasks=TASKS, command="left", **kwargs):
    agent = DrivingAgent(vla, config("reference", kwargs.pop("block_size", 8)), cameras=cameras, tasks=tasks, **kwargs)
    ctx = agent.prepare(images, EGO, command)
    assert ctx.prefix is None  # the reference engine decodes every prompt from scratch
    return {task: out.token_ids for task, out in agent.run(ctx).items()}


@pytest.mark.parametrize("batch_tasks", [True, False])
@pytest.mark.parametrize("num_cameras", [1, 8])
def test_tasks_from_one_frame_encoding_equal_reference_from_scratch(room_vla, num_cameras, batch_tasks):
    cameras = NAVSIM_CAMERAS[:num_cameras]
    images = frame(cameras, seed=num_cameras)
    agent = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS, vision_tokens_per_camera=6,
                         batch_tasks=batch_tasks)
    ctx = agent.prepare(images, EGO, "left")
    assert ctx.cameras == cameras and ctx.shared_prefix_tokens > 0 and ctx.shared_prefix_tokens % 8 == 0
    outputs = agent.run(ctx)
    expected = reference_tokens(room_vla, cameras, images, vision_tokens_per_camera=6)
    assert {t: o.token_ids for t, o in outputs.items()} == expected
    assert all(len(tokens) > 0 for tokens in expected.values())
    if batch_tasks:  # perception and understanding were rows of one batch: same forwards
        assert outputs["perception"].stats.forwards == outputs["understanding"].stats.forwards


def test_block_size_one_and_thirty_two(room_vla):
    cameras = NAVSIM_CAMERAS[:2]
    images = frame(cameras, seed=5)
    for block_size in (1, 32):
        agent = DrivingAgent(room_vla, config(block_size=block_size), cameras=cameras, tasks=TASKS,
                             vision_tokens_per_camera=6, batch_tasks=True)
        got = {t: o.token_ids for t, o in agent.run(agent.prepare(images, EGO, "left")).items()}
        assert got == reference_tokens(room_vla, cameras, images, vision_tokens_per_camera=6, block_size=block_size)


def test_planning_first_with_callback_and_stamp(room_vla):
    agent = DrivingAgent(room_vla, config(), cameras=NAVSIM_CAMERAS[:2], tasks=TASKS, vision_tokens_per_camera=4,
                         batch_tasks=True)
    seen = []
    ctx = agent.prepare(frame(NAVSIM_CAMERAS[:2]), EGO, "straight", stamp=(12, 345))
    outputs = agent.run(ctx, on_output=lambda c, out: seen.append((c.stamp, out.task, out.latency_ms)))
    assert [task for _, task, _ in seen] == ["planning", "perception", "understanding"]
    assert {stamp for stamp, _, _ in seen} == {(12, 345)}
    assert 0 < seen[0][2] < seen[1][2]  # the plan was out before the other tasks were decoded
    assert ctx.outputs == outputs
    combined = agent.assemble(ctx)
    assert combined.tasks.keys() == set(TASKS) and combined.trajectory.shape == (8, 3)


def test_other_tasks_later_on_the_same_frame_after_newer_frames(room_vla):
    cameras = NAVSIM_CAMERAS[:3]
    agent = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS, vision_tokens_per_camera=4)
    old_images, new_images = frame(cameras, seed=1), frame(cameras, seed=2)
    old = agent.prepare(old_images, EGO, "left")
    plan_only = agent.run(old, ["planning"])
    assert set(plan_only) == {"planning"} and set(old.outputs) == {"planning"}
    plan_output = agent.assemble(old)
    assert plan_output.detections == [] and plan_output.rationale is None
    newer = agent.prepare(new_images, EGO, "right")
    agent.run(newer, "planning")
    later = agent.run(old, ["understanding", "perception"])
    expected = reference_tokens(room_vla, cameras, old_images, vision_tokens_per_camera=4)
    assert {t: o.token_ids for t, o in {**plan_only, **later}.items()} == expected


def test_step_gives_the_same_answers_as_before(room_vla):
    cameras = NAVSIM_CAMERAS[:2]
    images = frame(cameras, seed=3)
    shared = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS).step(images, EGO, "left")
    scratch_agent = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS, shared_prefix=False)
    scratch = scratch_agent.step(images, EGO, "left")
    one_by_one = {t: scratch_agent.run_task(t, images, EGO, "left").token_ids for t in TASKS}
    assert {t: o.token_ids for t, o in shared.tasks.items()} == one_by_one
    assert {t: o.token_ids for t, o in scratch.tasks.items()} == one_by_one
    assert np.array_equal(shared.trajectory, scratch.trajectory) and shared.source == scratch.source
    assert shared.latency_ms > 0


def test_vision_token_budget_per_camera(room_vla):
    """The budget caps each camera's vision tokens (Qwen's resize rule rounds both sides down, so at most)."""
    processor = room_vla.processor
    agent = DrivingAgent(room_vla, config(), cameras=NAVSIM_CAMERAS, tasks=("planning",), vision_tokens_per_camera=4)
    ctx = agent.prepare(frame(NAVSIM_CAMERAS, size=(64, 256)), EGO, "left")
    assert processor.vision_tokens(ctx.inputs["planning"]["image_grid_thw"]) == [4] * 8  # 16 x 64 pixels each
    image_tokens = int((ctx.inputs["planning"]["input_ids"] == processor.image_token_id).sum())
    assert image_tokens == 32
    counts = []
    for budget in (4, 16, 64):
        one = DrivingAgent(room_vla, config(), cameras=NAVSIM_CAMERAS[:1], vision_tokens_per_camera=budget)
        grid = one.prepare(frame(NAVSIM_CAMERAS[:1], size=(96, 160)), EGO, "left").inputs["planning"]["image_grid_thw"]
        counts.append(processor.vision_tokens(grid)[0])
        assert counts[-1] <= budget
    assert counts[0] < counts[1] < counts[2]
    with pytest.raises(ValueError, match="not both"):
        DrivingAgent(room_vla, config(), max_pixels=4096, vision_tokens_per_camera=4)
    with pytest.raises(ValueError, match=">= 1"):
        DrivingAgent(room_vla, config(), vision_tokens_per_camera=0)


def test_camera_subsets_and_bad_requests(room_vla):
    agent = DrivingAgent(room_vla, config(), cameras=NAVSIM_CAMERAS, tasks=("planning", "perception"),
                         vision_tokens_per_camera=4)
    present = ("CAM_B0", "CAM_F0", "CAM_R1")
    ctx = agent.prepare(frame(present), EGO, "left")
    assert ctx.cameras == ("CAM_F0", "CAM_R1", "CAM_B0")  # configured order, missing cameras left out
    assert "3 cameras" in ctx.questions["planning"]
    with pytest.raises(ValueError, match="no image"):
        agent.prepare({"CAM_X": np.zeros((8, 8, 3), np.uint8)}, EGO, "left")
    with pytest.raises(ValueError, match="prepared for this frame set"):
        agent.run(agent.prepare(frame(present), EGO, "left", tasks=["perception"]), ["planning"])
    with pytest.raises(ValueError, match="configured"):
        agent.prepare(frame(present), EGO, "left", tasks=["understanding"])
    with pytest.raises(ValueError, match="batch_tasks"):
        DrivingAgent(room_vla, config(), batch_tasks="sometimes")


def test_planning_never_waits_for_a_perception_decode_in_another_thread(room_vla):
    """Planning and scene tasks decode in separate lanes: a plan comes out while perception is mid-decode."""
    import threading

    cameras = NAVSIM_CAMERAS[:2]
    agent = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS, vision_tokens_per_camera=4)
    older, newer = frame(cameras, seed=6), frame(cameras, seed=7)
    ctx_old = agent.prepare(older, EGO, "left")
    agent.run(ctx_old, ["planning"])
    agent.run(ctx_old, ["understanding"])  # creates the scene lane's engine
    scene_engine = agent._lanes["scene"].engine
    inside, release = threading.Event(), threading.Event()
    original = scene_engine._decode

    def held_decode(*args, **kwargs):  # perception sits in the middle of its decode until released
        inside.set()
        assert release.wait(30)
        return original(*args, **kwargs)

    scene_engine._decode = held_decode
    perception = {}
    worker = threading.Thread(target=lambda: perception.update(agent.run(ctx_old, ["perception"])))
    worker.start()
    try:
        assert inside.wait(30)
        ctx_new = agent.prepare(newer, EGO, "right")
        plan = agent.run(ctx_new, ["planning"])["planning"]  # must not wait for the held perception decode
        assert worker.is_alive() and not perception
    finally:
        release.set()
        worker.join(30)
    expected_new = reference_tokens(room_vla, cameras, newer, tasks=("planning",), command="right",
                                    vision_tokens_per_camera=4)
    expected_old = reference_tokens(room_vla, cameras, older, vision_tokens_per_camera=4)
    assert plan.token_ids == expected_new["planning"]
    assert perception["perception"].token_ids == expected_old["perception"]


def test_scene_lane_pauses_while_a_plan_decodes(room_vla, monkeypatch):
    """planning_priority: a perception decode stops at its next denoise step while the planning lane is busy,
    and goes on, to the same tokens, once the plan is out; without the priority it does not wait."""
    import threading
    import time

    import wamdiff2_ros.agent as agent_module

    monkeypatch.setattr(agent_module, "SCENE_WAIT_S", 60.0)  # no timeout inside the test's window

    cameras = NAVSIM_CAMERAS[:1]
    images = frame(cameras, seed=8)
    agent = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS)
    ctx = agent.prepare(images, EGO, "left")
    expected = agent.run(ctx, ["perception"])["perception"].token_ids  # creates the scene lane's engine
    steps = []
    agent._lanes["scene"].engine.between_steps = lambda: (steps.append(1), agent._yield_to_planning())
    agent._planning_idle.clear()  # as if a plan were decoding in the planning lane
    out = {}
    worker = threading.Thread(target=lambda: out.update(agent.run(ctx, ["perception"])))
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not steps and time.monotonic() < deadline:
            time.sleep(0.01)
        worker.join(0.3)
        assert worker.is_alive() and not out and len(steps) == 1  # parked before its first denoise step
    finally:
        agent._planning_idle.set()  # the plan is out
        worker.join(30)
    assert out["perception"].token_ids == expected and len(steps) > 1
    plain = DrivingAgent(room_vla, config(), cameras=cameras, tasks=TASKS, planning_priority=False)
    plain.run(plain.prepare(images, EGO, "left"), ["perception"])
    assert plain._lanes["scene"].engine.between_steps is None
    assert agent._planning_idle.is_set()
    agent.run(ctx, ["planning"])  # a plan clears the flag while it decodes and sets it again after
    assert agent._planning_idle.is_set()
