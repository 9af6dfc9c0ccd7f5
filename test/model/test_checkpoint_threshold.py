"""A checkpoint's own decode threshold (generation_config.json): read, checked, and used only when none is given."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros.model.checkpoints import DEFAULT_THRESHOLD, decode_threshold, default_checkpoint, own_threshold


def _checkpoint(tmp_path, **generation):
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 2, **generation}))
    return tmp_path


def test_own_threshold_is_read_and_given_values_win(tmp_path):
    ckpt = _checkpoint(tmp_path, confidence_threshold=0.3)
    assert own_threshold(ckpt) == 0.3
    assert decode_threshold(None, ckpt) == 0.3 and decode_threshold(-1.0, ckpt) == 0.3
    assert decode_threshold(0.9, ckpt) == 0.9 and decode_threshold(0.0, ckpt) == 0.0  # 0 is a threshold, not "unset"


def test_without_an_own_threshold_the_default_applies(tmp_path):
    assert own_threshold(None) is None and decode_threshold(None, None) == DEFAULT_THRESHOLD
    assert own_threshold(tmp_path) is None  # no generation_config.json
    assert decode_threshold(-1.0, _checkpoint(tmp_path)) == DEFAULT_THRESHOLD


@pytest.mark.parametrize("bad", [1.5, -0.2, "0.3", True])
def test_a_bad_own_threshold_is_an_error(tmp_path, bad):
    with pytest.raises(ValueError, match="confidence_threshold"):
        decode_threshold(None, _checkpoint(tmp_path, confidence_threshold=bad))


@pytest.mark.skipif(default_checkpoint() is None, reason="shipped student checkpoint not present")
def test_the_shipped_student_names_its_threshold():
    from wamdiff2_ros.evaluation.paper_table import _row_by_flag, end_in_order_tasks, load_registry
    from wamdiff2_ros.model.checkpoints import own_end_in_order_tasks, own_task_thresholds

    # chosen on validation by the decode rules in docs/runs/paper.yaml: the shipped row's settings, in the checkpoint
    row = _row_by_flag(load_registry(), "student")
    assert own_threshold(default_checkpoint()) == row["threshold"] < 0.9
    assert own_task_thresholds(default_checkpoint()) == (row.get("task_thresholds") or {})
    assert own_end_in_order_tasks(default_checkpoint()) == end_in_order_tasks(row)


def test_task_thresholds_are_written_read_and_checked(tmp_path):
    from wamdiff2_ros.model.checkpoints import own_task_thresholds, write_own_threshold

    ckpt = _checkpoint(tmp_path)
    assert own_task_thresholds(ckpt) == {} and own_task_thresholds(None) == {}
    write_own_threshold(ckpt, 0.3, {"understanding": 0.9})
    assert own_threshold(ckpt) == 0.3 and own_task_thresholds(ckpt) == {"understanding": 0.9}
    assert json.loads((ckpt / "generation_config.json").read_text())["eos_token_id"] == 2  # the rest is kept
    write_own_threshold(ckpt, 0.5)  # none named: the table goes
    assert own_task_thresholds(ckpt) == {} and own_threshold(ckpt) == 0.5
    for bad in ({"understanding": 2.0}, [0.9]):
        (ckpt / "generation_config.json").write_text(json.dumps({"task_confidence_thresholds": bad}))
        with pytest.raises(ValueError, match="task_confidence_thresholds"):
            own_task_thresholds(ckpt)
    with pytest.raises(ValueError, match="threshold"):
        write_own_threshold(ckpt, 1.2)


def test_end_in_order_tasks_are_written_read_and_checked(tmp_path):
    from wamdiff2_ros.model.checkpoints import own_end_in_order_tasks, write_own_threshold

    ckpt = _checkpoint(tmp_path)
    assert own_end_in_order_tasks(ckpt) == () and own_end_in_order_tasks(None) == ()
    write_own_threshold(ckpt, 0.3, {"understanding": 0.7}, ["understanding"])
    assert own_end_in_order_tasks(ckpt) == ("understanding",) and own_threshold(ckpt) == 0.3
    write_own_threshold(ckpt, 0.3)  # none named: the list goes
    assert own_end_in_order_tasks(ckpt) == ()
    (ckpt / "generation_config.json").write_text(json.dumps({"end_in_order_tasks": "understanding"}))
    with pytest.raises(ValueError, match="end_in_order_tasks"):
        own_end_in_order_tasks(ckpt)


def test_reuse_kv_tasks_are_written_read_and_checked(tmp_path):
    from wamdiff2_ros.model.checkpoints import own_end_in_order_tasks, own_reuse_kv_tasks, write_own_threshold

    ckpt = _checkpoint(tmp_path)
    assert own_reuse_kv_tasks(ckpt) == () and own_reuse_kv_tasks(None) == ()
    write_own_threshold(ckpt, 0.3, None, ["understanding"], ["perception", "understanding"])
    assert own_reuse_kv_tasks(ckpt) == ("perception", "understanding")
    assert own_end_in_order_tasks(ckpt) == ("understanding",)
    write_own_threshold(ckpt, 0.3, None, ["understanding"])  # none named: the list goes, the other stays
    assert own_reuse_kv_tasks(ckpt) == () and own_end_in_order_tasks(ckpt) == ("understanding",)
    (ckpt / "generation_config.json").write_text(json.dumps({"reuse_kv_tasks": [1]}))
    with pytest.raises(ValueError, match="reuse_kv_tasks"):
        own_reuse_kv_tasks(ckpt)


def test_drive_node_end_in_order_tasks_parameter():
    pytest.importorskip("rclpy")
    from wamdiff2_ros.ros.drive_node import task_list, task_list_error

    own = ("understanding",)
    assert task_list("auto", own) == own and task_list("none", own) == ()
    assert task_list("perception, understanding", ()) == ("perception", "understanding")
    assert task_list_error("auto") is None and task_list_error("planning,understanding") is None
    assert "unknown tasks ['steering']" in task_list_error("steering")
    assert task_list_error(3) == "must be a string"


def test_drive_node_scene_thresholds_prefer_the_parameter_then_the_checkpoint():
    pytest.importorskip("rclpy")
    from wamdiff2_ros.ros.drive_node import scene_thresholds

    params = {"perception_confidence_threshold": -1.0, "understanding_confidence_threshold": -1.0}
    assert scene_thresholds(params, {}) == {}  # both at the planning threshold
    assert scene_thresholds(params, {"understanding": 0.9}) == {"understanding": 0.9}
    params["understanding_confidence_threshold"] = 0.7
    params["perception_confidence_threshold"] = 0.0  # 0 is a threshold, not "unset"
    assert scene_thresholds(params, {"understanding": 0.9}) == {"understanding": 0.7, "perception": 0.0}


def test_world_rules_are_written_read_and_checked(tmp_path):
    from wamdiff2_ros.data.world.rules import checkpoint_world_rules as own_world_rules
    from wamdiff2_ros.data.world.rules import write_world_rules
    from wamdiff2_ros.model.checkpoints import write_own_threshold

    defaults = {"command_horizon_s": 0.0, "lamp_visor_deg": 60.0}  # the rules every split had before
    ckpt = _checkpoint(tmp_path)
    assert own_world_rules(ckpt) == defaults and own_world_rules(None) == defaults
    write_world_rules(ckpt, {"command_horizon_s": 4.0})
    write_own_threshold(ckpt, 0.3)  # the decode defaults leave the world rules alone
    assert own_world_rules(ckpt) == {**defaults, "command_horizon_s": 4.0} and own_threshold(ckpt) == 0.3
    assert json.loads((ckpt / "generation_config.json").read_text())["world_rules"] == {"command_horizon_s": 4.0}
    write_world_rules(ckpt, defaults)  # only what differs is written: here nothing
    assert "world_rules" not in json.loads((ckpt / "generation_config.json").read_text())
    for bad in ({"command_horizon_s": -1.0}, {"lamp_visor_deg": 0.0}, {"command_horizon_s": "4"},
                {"command_horizon_s": True}, {"gravity": 9.8}, [4.0]):
        (ckpt / "generation_config.json").write_text(json.dumps({"world_rules": bad}))
        with pytest.raises(ValueError, match="world_rules"):
            own_world_rules(ckpt)


def test_a_residual_plan_style_is_recorded_and_read_back(tmp_path):
    import json

    import pytest

    from wamdiff2_ros.model.checkpoints import own_plan_style, write_plan_style

    assert own_plan_style(tmp_path) == "plain" and own_plan_style(None) == "plain"
    (tmp_path / "generation_config.json").write_text(json.dumps({"confidence_threshold": 0.3}))
    write_plan_style(tmp_path, "fixed1")  # an absolute style writes no key
    assert "plan_style" not in json.loads((tmp_path / "generation_config.json").read_text())
    write_plan_style(tmp_path, "cv1")
    data = json.loads((tmp_path / "generation_config.json").read_text())
    assert data == {"confidence_threshold": 0.3, "plan_style": "cv1"} and own_plan_style(tmp_path) == "cv1"
    (tmp_path / "generation_config.json").write_text(json.dumps({"plan_style": "wide"}))
    with pytest.raises(ValueError, match="plan_style"):
        own_plan_style(tmp_path)
