"""Deployment pieces without processes: checkpoint resolution, per-box scores, CARLA control maths, package.xml."""

from __future__ import annotations

import ast
import math
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ checkpoints
def _fake_prefix(root: Path, with_checkpoint: bool = True) -> Path:
    (root / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (root / "share" / "ament_index" / "resource_index" / "packages" / "wamdiff2_ros").write_text("")
    if with_checkpoint:
        ckpt = root / "share" / "wamdiff2_ros" / "checkpoints" / "wamdiff2-tiny-b32"
        ckpt.mkdir(parents=True)
        (ckpt / "config.json").write_text("{}")
    return root


def test_shipped_checkpoint_is_found_through_the_ament_index(tmp_path, monkeypatch):
    pytest.importorskip("ament_index_python")
    from wamdiff2_ros.ros.checkpoint_paths import find_checkpoint

    prefix = _fake_prefix(tmp_path / "install")
    monkeypatch.delenv("WAMDIFF2_CHECKPOINTS", raising=False)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    found, looked = find_checkpoint()
    assert found == prefix / "share" / "wamdiff2_ros" / "checkpoints" / "wamdiff2-tiny-b32"
    assert looked[0] == prefix / "share" / "wamdiff2_ros" / "checkpoints"


def test_without_ament_index_python_the_same_lookup_is_done_by_hand(tmp_path, monkeypatch):
    from wamdiff2_ros.ros.checkpoint_paths import find_checkpoint

    empty = _fake_prefix(tmp_path / "other", with_checkpoint=False)
    prefix = _fake_prefix(tmp_path / "install")
    monkeypatch.setitem(sys.modules, "ament_index_python", None)  # import fails as where it is not installed
    monkeypatch.setitem(sys.modules, "ament_index_python.packages", None)
    monkeypatch.delenv("WAMDIFF2_CHECKPOINTS", raising=False)
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'nothing'}:{empty}:{prefix}")
    found, looked = find_checkpoint()
    assert found == prefix / "share" / "wamdiff2_ros" / "checkpoints" / "wamdiff2-tiny-b32"
    assert looked[:2] == [empty / "share" / "wamdiff2_ros" / "checkpoints", prefix / "share" / "wamdiff2_ros" / "checkpoints"]


def test_missing_checkpoint_is_refused_saying_where_it_looked(tmp_path, monkeypatch):
    import wamdiff2_ros.ros.checkpoint_paths as paths
    from wamdiff2_ros.ros.drive_node import resolve_model
    from wamdiff2_ros.ros.params import ParameterError

    monkeypatch.setattr(paths, "checkpoint_search_dirs", lambda: [tmp_path / "a", tmp_path / "b"])
    with pytest.raises(ParameterError) as err:
        resolve_model("")
    text = str(err.value)
    assert str(tmp_path / "a") in text and str(tmp_path / "b") in text and "preset:tiny" in text
    with pytest.raises(ParameterError, match="no config.json"):
        resolve_model(str(tmp_path / "nowhere"))


# ------------------------------------------------------------------ per-box scores
def test_each_box_scores_its_own_tokens():
    from transformers import AutoTokenizer

    from wamdiff2_ros.model import codecs
    from wamdiff2_ros.ros.detection_scores import box_scores, token_char_ends

    tokenizer = AutoTokenizer.from_pretrained(REPO / "checkpoints" / "wamdiff2-tiny-b32")
    boxes = [codecs.Box("vehicle", 12.5, -3.0, 0.8, 4.5, 1.9, 1.6, 0.3, camera="CAM_F0"),
             codecs.Box("pedestrian", 5.0, 2.0, 0.9, 0.6, 0.6, 1.7, -0.1),
             codecs.Box("bicycle", 8.0, 1.0, 0.7, 1.8, 0.6, 1.4, 0.0)]
    text = codecs.encode_perception(boxes)
    ids = tokenizer.encode(text, add_special_tokens=False)
    ends = token_char_ends(tokenizer, ids)
    cuts = [m.start() for m in re.finditer(";", text)]
    wanted = (0.95, 0.4, 0.7)
    confidences = [wanted[sum(e > c + 1 for c in cuts)] for e in ends]
    scores = box_scores(tokenizer, ids, confidences, text, len(boxes))
    assert scores is not None and np.allclose(scores, wanted, atol=0.03), scores
    assert box_scores(tokenizer, ids, confidences, text, 2) is None  # items and boxes do not match
    assert box_scores(None, ids, confidences, text, 3) is None


# ------------------------------------------------------------------ CARLA control maths
def test_steering_angle_and_pedals_follow_ros_and_carla_signs():
    from wamdiff2_ros.control import FollowerLimits, pedal_command, steering_angle

    assert steering_angle(0.1, 2.9) == pytest.approx(math.atan(0.29))
    assert steering_angle(-0.1, 2.9) == pytest.approx(-math.atan(0.29))
    assert steering_angle(10.0, 2.9, 0.7) == 0.7
    limits = FollowerLimits(max_accel=3.0, max_decel=6.0)
    left = pedal_command(1.5, 0.35, limits, 0.7)
    assert (left.throttle, left.brake, left.steer) == (0.5, 0.0, -0.5)  # CARLA: negative steer is left
    braking = pedal_command(-3.0, -0.7, limits, 0.7)
    assert (braking.throttle, braking.brake, braking.steer) == (0.0, 0.5, 1.0)
    assert pedal_command(float("nan"), 0.0, limits, 0.7).brake == 1.0


# ------------------------------------------------------------------ package.xml
ROS_IMPORTS = {  # top-level module -> package.xml key
    "rclpy": "rclpy", "rcl_interfaces": "rcl_interfaces", "rosgraph_msgs": "rosgraph_msgs",
    "ament_index_python": "ament_index_python", "std_msgs": "std_msgs", "geometry_msgs": "geometry_msgs",
    "sensor_msgs": "sensor_msgs", "nav_msgs": "nav_msgs", "visualization_msgs": "visualization_msgs",
    "diagnostic_msgs": "diagnostic_msgs", "builtin_interfaces": "builtin_interfaces", "cv_bridge": "cv_bridge",
    "ackermann_msgs": "ackermann_msgs", "launch": "launch", "launch_ros": "launch_ros",
    "numpy": "python3-numpy", "cv2": "python3-opencv", "yaml": "python3-yaml", "torch": "python3-torch",
    "transformers": "python3-transformers-pip", "rosbags": "python3-rosbags-pip", "matplotlib": "python3-matplotlib",
    "tqdm": "python3-tqdm",
}
# Imported but with no rosdep key: installed by requirements-model.txt (README, Deploy).
PIP_ONLY = {"safetensors", "tokenizers", "pycocotools", "mcap", "rosbags_image", "rich", "PIL", "flashinfer", "zstandard"}
OPTIONAL = {"carla_msgs", "pandas", "lz4"}  # carla_msgs: no rosdistro release (the follower names it); the others guarded
# Keys of ros/rosdistro rosdep/python.yaml (commit 8468e88c, 2026-08-22) that package.xml uses; each was
# checked there (python3-pytorch-pip is only an end-of-life alias; python3-safetensors-pip does not exist).
ROSDISTRO_PYTHON_KEYS = {"python3-numpy", "python3-opencv", "python3-yaml", "python3-torch", "python3-transformers-pip",
                         "python3-rosbags-pip", "python3-matplotlib", "python3-tqdm", "python3-pytest",
                         "python3-hypothesis"}


def _imports() -> set[str]:
    names = set()
    for path in (REPO / "wamdiff2_ros").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    for path in (REPO / "launch").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_package_xml_declares_everything_the_code_imports():
    root = ET.parse(REPO / "package.xml").getroot()
    declared = {e.text for e in root if e.tag.endswith("depend")}
    third_party = {n for n in _imports() if n not in sys.stdlib_module_names and n not in ("wamdiff2_ros", "__future__")}
    unknown = third_party - set(ROS_IMPORTS) - PIP_ONLY - OPTIONAL
    assert not unknown, f"imports with no package.xml mapping here: {unknown}"
    missing = {ROS_IMPORTS[n] for n in third_party & set(ROS_IMPORTS)} - declared
    assert not missing, f"package.xml misses {missing}"
    python_keys = {k for k in declared if k.startswith("python3-")}
    assert python_keys <= ROSDISTRO_PYTHON_KEYS, f"not rosdep keys of rosdistro: {python_keys - ROSDISTRO_PYTHON_KEYS}"
    assert root.find("license").text == "Apache-2.0" and "Apache License" in (REPO / "LICENSE").read_text()[:200]
    assert "Version 2.0, January 2004" in (REPO / "LICENSE").read_text()


def test_model_requirements_hold_no_ros_and_pin_torch():
    model = [line.strip() for line in (REPO / "requirements-model.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "torch==2.13.0" in model and "transformers" in model
    assert not [r for r in model if r.startswith(("ros-", "colcon", "catkin"))]
    dev = (REPO / "requirements.in").read_text()
    assert "-r requirements-model.txt" in dev and "ros-kilted-rosgraph-msgs" in dev
    lock = {line.split("==")[0].lower() for line in (REPO / "requirements.lock").read_text().splitlines() if "==" in line}
    assert {"ros-kilted-rosgraph-msgs", "ros-kilted-ament-cmake-pytest", "torch", "transformers"} <= lock


# ------------------------------------------------------------------ README, Deploy
def _deploy_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## Deploy")
    return text[start:text.index("\n## ", start + 1)]


def test_readme_deploy_commands_name_real_arguments_parameters_files_and_tests():
    section = _deploy_section()
    for topic in ("carla_ackermann_control", "namespace:=car1", "--clock", "use_sim_time:=true", "rosdep install",
                  "requirements-model.txt", "colcon test --packages-select wamdiff2_ros"):
        assert topic in section, f"Deploy does not cover {topic}"
    assert "pip install -r src/wamdiff2_ros/requirements.in" not in section and "-pip -y" not in section
    commands = " ".join(section.replace("\\\n", " ").splitlines())
    launches = re.findall(r"ros2 launch wamdiff2_ros (\S+\.launch\.py)((?: [a-z_]+:=\S+)*)", commands)
    assert len(launches) >= 6
    for name, args in launches:
        tree = ast.parse((REPO / "launch" / name).read_text())
        declared = {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and getattr(n.func, "id", "") == "DeclareLaunchArgument"}
        used = {a.split(":=")[0] for a in args.split()}
        assert used <= declared, f"{name} has no launch arguments {used - declared}"
    from wamdiff2_ros.ros.replay_node import PARAMS

    paused = next(s for s in PARAMS if s.name == "paused")
    assert "ros2 param set /navsim_replay_node paused true" in section and not paused.read_only
    for test_file in set(re.findall(r"`(test_[a-z_]+\.py)`", section)):
        assert (REPO / "test" / "ros" / test_file).is_file(), f"README names {test_file}, which does not exist"


def test_detections_message_carries_each_box_score(ros_env):
    from transformers import AutoTokenizer

    from wamdiff2_ros.agent import AgentOutput, TaskOutput
    from wamdiff2_ros.decoding.config import DecodeStats
    from wamdiff2_ros.model import codecs
    from wamdiff2_ros.ros.conversions import detections_msg

    tokenizer = AutoTokenizer.from_pretrained(REPO / "checkpoints" / "wamdiff2-tiny-b32")
    boxes = [codecs.Box("vehicle", 10.0, 1.0, 0.8, 4.5, 1.9, 1.6, 0.0), codecs.Box("pedestrian", 6.0, -2.0, 0.9, 0.6, 0.6, 1.7, 0.0)]
    text = codecs.encode_perception(boxes)
    ids = tokenizer.encode(text, add_special_tokens=False)
    first = len(tokenizer.encode(text[: text.index(";")], add_special_tokens=False))
    confidences = [0.9] * first + [0.5] * (len(ids) - first)
    stats = DecodeStats("fast", 32, 10, len(ids), 4, 1.0, 1.0, 1.0, 1.0)
    task = TaskOutput("perception", "q", text, boxes, None, 0.7, stats, ids, confidences)
    out = AgentOutput(np.zeros((8, 3)), True, "model", 0.7, detections=boxes, tasks={"perception": task})
    msg = detections_msg(out, 1_000, "car1/base_link", tokenizer=tokenizer)
    scores = [d.score for d in msg.detections]
    assert msg.header.frame_id == "car1/base_link"
    assert scores[0] == pytest.approx(0.9, abs=0.03) and scores[1] == pytest.approx(0.5, abs=0.03)
    fallback = detections_msg(out, 1_000)  # no tokenizer: the task's confidence, as before
    assert [d.score for d in fallback.detections] == pytest.approx([0.7, 0.7])
