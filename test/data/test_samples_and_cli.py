"""Multi-task samples from scenes and the data CLI (synth, inspect, export)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from wamdiff2_ros.cli import main
from wamdiff2_ros.data.navsim import NavsimLogs, parse_frame
from wamdiff2_ros.data.samples import (
    ANSWER_SETS,
    lead_vehicle,
    perception_sample,
    planning_sample,
    scene_samples,
    to_conversation,
    understanding_samples,
)
from wamdiff2_ros.model import codecs, prompts
from wamdiff2_ros.model.conversation import validate_conversation


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds")
    rc = main(["synth", "--out", str(root), "--logs", "2", "--frames", "16", "--seed", "9", "--size", "128x64",
               "--cameras", "CAM_F0,CAM_R0", "--split", "trainval", "--no-progress"])
    assert rc == 0
    return root


def _logs(root):
    return NavsimLogs(root / "navsim_logs" / "trainval", root / "sensor_blobs" / "trainval")


def test_planning_sample_answers_the_ground_truth(synthetic):
    logs = _logs(synthetic)
    scene = logs[3]
    sample = planning_sample(scene)
    parsed = codecs.parse_planning(sample.answer)
    assert isinstance(parsed, codecs.PlanningAnswer)
    assert np.allclose(parsed.waypoints, scene.future_trajectory()[:, :2], atol=0.006)
    command = prompts.command_from_one_hot(scene.current_frame.ego_status.driving_command)
    assert f"The navigation information is: {command}" in sample.question
    assert sample.question.count(prompts.IMAGE_PLACEHOLDER) == len(sample.images) == 1
    conv = to_conversation(sample)
    assert not isinstance(validate_conversation(conv), codecs.ParseError)
    assert conv["image"][0].endswith(".jpg") and conv["id"] == f"{scene.token}_planning"
    two = planning_sample(scene, ("CAM_F0", "CAM_R0"))
    assert len(two.images) == 2 and "CAM_R0" in two.images[1]


def test_perception_sample_lists_visible_boxes(synthetic):
    logs = _logs(synthetic)
    total = 0
    for scene in logs:
        sample = perception_sample(scene)
        boxes = codecs.parse_perception(sample.answer)
        assert isinstance(boxes, list)
        anns = scene.current_frame.annotations
        assert len(boxes) <= len(anns)
        for box in boxes:
            assert box.camera == "CAM_F0" and box.x > 0 and box.bbox is not None
            assert any(np.allclose([box.x, box.y], row[:2], atol=0.006) for row in anns.boxes)
        total += len(boxes)
    assert total > 0


def test_understanding_answers_come_from_small_sets(synthetic):
    logs = _logs(synthetic)
    kinds = set()
    for scene in logs:
        road_map = logs.map_for(scene)
        for sample in understanding_samples(scene, road_map):
            kind = sample.meta["question_type"]
            kinds.add(kind)
            assert sample.answer in ANSWER_SETS[kind]
    assert {"lead_presence", "lead_distance", "traffic_light", "route_maneuver", "next_action"} <= kinds
    # without a map (real logs) the map questions are left out
    plain = {s.meta["question_type"] for s in understanding_samples(logs[0], None)}
    assert "traffic_light" not in plain and "lead_presence" in plain


def test_lead_vehicle_facts_from_boxes():
    frame = {
        "token": "t", "timestamp": 1, "log_name": "l", "scene_token": "s", "map_location": "m",
        "roadblock_ids": ["1"], "traffic_lights": [], "cams": {},
        "ego2global_translation": np.zeros(3), "ego2global_rotation": np.array([1.0, 0, 0, 0]),
        "ego_dynamic_state": [5.0, 0.0, 0.0, 0.0], "driving_command": np.array([0, 1, 0, 0]),
        "anns": {
            "gt_boxes": np.array([[35.0, 0.2, 0.8, 4.5, 1.9, 1.6, 0.0],  # farther, same lane
                                  [14.0, -0.5, 0.8, 4.5, 1.9, 1.6, 0.1],  # the lead
                                  [8.0, 3.5, 0.8, 4.5, 1.9, 1.6, 3.1],  # oncoming lane
                                  [6.0, 0.0, 0.9, 0.6, 0.6, 1.8, 0.0]]),  # pedestrian
            "gt_names": np.array(["vehicle", "vehicle", "vehicle", "pedestrian"]),
            "gt_velocity_3d": np.array([[9, 0, 0], [7.0, 0.5, 0], [-8, 0, 0], [1, 0, 0]], dtype=float),
            "instance_tokens": ["a", "b", "c", "d"], "track_tokens": ["A", "B", "C", "D"],
        },
    }
    lead = lead_vehicle(parse_frame(frame))
    assert lead is not None and lead.track_token == "B" and lead.distance == 14.0
    assert 7.0 < lead.speed < 7.1


def test_cli_inspect_and_export(synthetic, tmp_path, capsys):
    logs_dir = synthetic / "navsim_logs" / "trainval"
    blobs = synthetic / "sensor_blobs" / "trainval"
    capsys.readouterr()
    assert main(["data", "inspect", "--logs", str(logs_dir), "--sensor-blobs", str(blobs), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["logs"] == 2 and summary["frames"] == 32 and summary["scenes"] == 2 * (16 - 12 + 1)
    assert summary["cameras"] == ["CAM_F0", "CAM_R0"]
    assert summary["missing_images"] == 0
    assert main(["data", "inspect", "--logs", str(logs_dir)]) == 0
    text = capsys.readouterr().out
    for key in ("frames", "scenes", "cameras", "logs"):
        assert key in text
    out = tmp_path / "train.json"
    assert main(["data", "export", "--logs", str(logs_dir), "--sensor-blobs", str(blobs), "--out", str(out),
                 "--relative-to", str(blobs)]) == 0
    samples = json.loads(out.read_text())
    tasks = {s["id"].split("_", 1)[1].split("_")[0] for s in samples}
    assert {"planning", "perception", "qa"} <= tasks
    for s in samples:
        assert not isinstance(validate_conversation(s), codecs.ParseError)
        assert all((blobs / p).is_file() for p in s["image"])
    n_scenes = summary["scenes"]
    assert sum(s["id"].endswith("_planning") for s in samples) == n_scenes
    assert len(scene_samples(_logs(synthetic)[0], None)) >= 3


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["synth", "--out", str(tmp_path), "--size", "big", "--no-progress"]) == 2
    assert "WIDTHxHEIGHT" in capsys.readouterr().err
    assert main(["synth", "--out", str(tmp_path), "--cameras", "CAM_X9", "--no-progress"]) == 2
    assert "CAM_X9" in capsys.readouterr().err
    assert main(["synth", "--out", str(tmp_path), "--command-horizon", "-1", "--no-progress"]) == 2
    assert "command_horizon_s" in capsys.readouterr().err
    assert main(["synth", "--out", str(tmp_path), "--lamp-visor", "120", "--no-progress"]) == 2
    assert "lamp_visor_deg" in capsys.readouterr().err
    assert main(["data", "inspect", "--logs", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    evil = tmp_path / "logs"
    evil.mkdir()

    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    (evil / "x.pkl").write_bytes(pickle.dumps([Payload()]))
    assert main(["data", "inspect", "--logs", str(evil)]) == 2
    captured = capsys.readouterr()
    assert "refusing" in captured.err and "print" in captured.err and "ran" not in captured.out


def test_a_residual_planning_sample_answers_the_departure_from_constant_velocity(synthetic):
    scene = _logs(synthetic)[3]
    velocity = tuple(float(v) for v in scene.current_frame.ego_status.ego_velocity)
    sample = planning_sample(scene, plan_style="cv1")
    parsed = codecs.parse_planning(sample.answer)
    assert isinstance(parsed, codecs.PlanningAnswer)
    truth = scene.future_trajectory()[:, :2]
    np.testing.assert_allclose(parsed.waypoints, truth - codecs.constant_velocity_waypoints(velocity), atol=0.05 + 1e-6)
    np.testing.assert_allclose(codecs.plan_waypoints(parsed, "cv1", velocity), truth, atol=0.05 + 1e-6)
    assert sample.question == planning_sample(scene, plan_style="fixed1").question  # the prompt is unchanged
