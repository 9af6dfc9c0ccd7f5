"""Prompt formats: the reference's planning prompt word for word (fixture), and the format as a checkpoint property."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers_torch import one_thread as _one_thread  # noqa: F401 - autouse: one torch thread per test

from wamdiff2_ros.model import prompts
from wamdiff2_ros.model.inputs import build_inputs, chat_prompt
from wamdiff2_ros.model.loader import ModelLoadError, init_model, load_model

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "reference_planning_prompt.json").read_text())
SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "wamdiff2-tiny-b32"




def _reference_question() -> str:
    return prompts.planning_question(FIXTURE["command"], tuple(FIXTURE["velocity"]), tuple(FIXTURE["acceleration"]),
                                     prompt_format="reference")


def test_reference_planning_prompt_word_for_word():
    """Our reference-format question, laid out and chat-formatted, is the reference's training prompt exactly."""
    question = _reference_question()
    assert question == prompts.reference_layout(FIXTURE["human_value"])
    assert chat_prompt(question, 1) == FIXTURE["prompt_text"]
    # the layout is the reference dataset's: text pieces stripped, images between them
    pieces = [c["text"] if c["type"] == "text" else prompts.IMAGE_PLACEHOLDER for c in FIXTURE["content"]]
    assert question == "".join(pieces)
    # the reference's human turn itself converts to the same question (idempotent on the result)
    assert prompts.apply_prompt_format(FIXTURE["human_value"], "reference") == question
    assert prompts.apply_prompt_format(question, "reference") == question


def test_reference_prompt_through_the_chat_template():
    """The shipped chat template, given the reference dataset's content list, renders the same prompt."""
    from jinja2 import Template

    template = (SHIPPED / "chat_template.jinja").read_text()
    content = [dict(c, image="x") if c["type"] == "image" else c for c in FIXTURE["content"]]
    rendered = Template(template).render(messages=[{"role": "user", "content": content}], add_generation_prompt=True)
    assert rendered == FIXTURE["prompt_text"] == chat_prompt(_reference_question(), 1)


def test_our_format_is_unchanged_and_converts():
    ours = prompts.planning_question("right", (4.66, -0.09), (0.17, -1.53))
    assert ours.startswith("Here is a front-view image from a driving vehicle: <image>\nThe navigation")
    assert prompts.apply_prompt_format(ours, "wamdiff2_ros") == ours
    assert prompts.apply_prompt_format(ours, "reference") == _reference_question()
    perception = prompts.apply_prompt_format(prompts.perception_question(), "reference")
    assert perception.startswith("Here is a front-view images from a driving vehicle:<image>Instruction: Detect")
    # several cameras: no reference wording exists, so our image lines stay, laid out the reference's way
    two = prompts.planning_question("left", (3.0, 0.1), (0.2, -0.3), num_images=2, cameras=("CAM_F0", "CAM_L0"))
    converted = prompts.apply_prompt_format(two, "reference")
    assert converted.startswith("Here are images from 2 cameras of a driving vehicle:\nfront view (CAM_F0):<image>")
    one = prompts.apply_prompt_format(prompts.planning_question("left", (3.0, 0.1), (0.2, -0.3)), "reference")
    assert converted.count("<image>") == 2 and converted.rsplit("<image>", 1)[1] == one.rsplit("<image>", 1)[1]
    assert converted.endswith(prompts.REFERENCE_PLANNING_INSTRUCTION)
    assert prompts.apply_prompt_format(converted, "reference") == converted  # idempotent
    # one camera other than the front one (a random camera subset): our image line, the reference's instruction
    rear = prompts.planning_question("left", (3.0, 0.1), (0.2, -0.3), cameras=("CAM_B0",))
    rear_ref = prompts.apply_prompt_format(rear, "reference")
    assert rear_ref.startswith("Here is a back-view image from a driving vehicle:<image>")
    assert rear_ref.rsplit("<image>", 1)[1] == one.rsplit("<image>", 1)[1]
    assert prompts.apply_prompt_format(rear_ref, "reference") == rear_ref
    eight = prompts.perception_question(8, prompts.CAMERAS)
    assert prompts.apply_prompt_format(eight, "reference").count("<image>") == 8
    with pytest.raises(ValueError, match="opens with the images"):
        prompts.apply_prompt_format("What is ahead?", "reference")
    with pytest.raises(ValueError, match="unknown prompt format"):
        prompts.apply_prompt_format(ours, "llava")


def test_prompt_format_is_a_checkpoint_property(tmp_path):
    from wamdiff2_ros.model.testing import toy_image, write_wam_diff2_dir

    vla = init_model("tiny", seed=0)
    assert vla.prompt_format == "wamdiff2_ros"
    vla.save(tmp_path / "ours")
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["prompt_format"] == "wamdiff2_ros"
    # a checkpoint written before the field existed keeps today's format
    old = json.loads((tmp_path / "ours" / "config.json").read_text())
    old.pop("prompt_format")
    (tmp_path / "ours" / "config.json").write_text(json.dumps(old))
    assert load_model(tmp_path / "ours").prompt_format == "wamdiff2_ros"
    # a WAM-Diff2 release (model_type wam_diff2, no field) gets the reference's format
    wam = write_wam_diff2_dir(tmp_path / "ours", tmp_path / "wam")
    released = load_model(wam)
    assert released.prompt_format == "reference"
    question = prompts.planning_question("right", (4.66, -0.09), (0.17, -1.53))
    image = [toy_image(32, 64)]
    got = build_inputs(released, question, image, max_pixels=1024)
    want = released.processor(FIXTURE["prompt_text"], image, max_pixels=1024)
    assert torch.equal(got["input_ids"], want["input_ids"])
    # saving and reloading keeps it; a trained-on format can be set explicitly
    released.save(tmp_path / "wam2")
    assert load_model(tmp_path / "wam2").prompt_format == "reference"
    bad = json.loads((tmp_path / "wam2" / "config.json").read_text())
    bad["prompt_format"] = "chatml"
    (tmp_path / "wam2" / "config.json").write_text(json.dumps(bad))
    with pytest.raises(ModelLoadError, match="unknown prompt format"):
        load_model(tmp_path / "wam2")


@pytest.mark.skipif(not (SHIPPED / "config.json").is_file(), reason="shipped checkpoint not present")
def test_shipped_checkpoints_keep_the_prompt_they_were_trained_on():
    """The paper-path student and AR baseline were trained in the reference's format, the generalist in ours."""
    from wamdiff2_ros.model.testing import toy_image

    question = prompts.planning_question("left", (3.0, 0.1), (0.2, -0.3))
    image = [toy_image(32, 64)]
    for name, form in (("wamdiff2-tiny-b32", "reference"), ("wamdiff2-tiny-ar", "reference"),
                       ("wamdiff2-tiny-generalist", "wamdiff2_ros")):
        vla = load_model(SHIPPED.parent / name)
        assert vla.prompt_format == form, name
        got = build_inputs(vla, question, image)
        want = vla.processor(chat_prompt(prompts.apply_prompt_format(question, form), 1), image)
        assert torch.equal(got["input_ids"], want["input_ids"])
        if form == "reference":  # the reference's wording, not ours
            assert not torch.equal(got["input_ids"], vla.processor(chat_prompt(question, 1), image)["input_ids"])
