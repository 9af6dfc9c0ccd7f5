"""Launch files parse and name only installed executables and files; config files fit the nodes."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
NODE_SPECS = {
    "drive_node": "wamdiff2_ros.ros.drive_node",
    "navsim_replay_node": "wamdiff2_ros.ros.replay_node",
    "waypoint_follower_node": "wamdiff2_ros.ros.waypoint_follower_node",
    "sim_node": "wamdiff2_ros.ros.sim_node",
    "bag_recorder_node": "wamdiff2_ros.ros.recorder_node",
}


def _literals(tree: ast.AST) -> tuple[set[str], set[str], list[tuple[str, set[str]]]]:
    executables, files, node_params = set(), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            package = next((kw.value.value for kw in node.keywords if kw.arg == "package"
                            and isinstance(kw.value, ast.Constant)), "wamdiff2_ros")
            if package != "wamdiff2_ros":
                continue  # another package's node (carla_ackermann_control)
            for kw in node.keywords:
                if kw.arg == "executable" and isinstance(kw.value, ast.Constant):
                    executables.add(kw.value.value)
            name = next((kw.value.value for kw in node.keywords if kw.arg == "executable"
                         and isinstance(kw.value, ast.Constant)), None)
            params = next((kw.value for kw in node.keywords if kw.arg == "parameters"), None)
            if name and isinstance(params, ast.List):
                keys = {k.value for d in params.elts if isinstance(d, ast.Dict) for k in d.keys if isinstance(k, ast.Constant)}
                node_params.append((name, keys))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".yaml"):
            files.add(node.value)
    return executables, files, node_params


def _declared(node_name: str) -> set[str]:
    return {s.name for s in importlib.import_module(NODE_SPECS[node_name]).PARAMS} | {"use_sim_time"}


def _launch_arguments(tree: ast.AST) -> set[str]:
    return {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") ==
            "DeclareLaunchArgument" and n.args and isinstance(n.args[0], ast.Constant)}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_takes_namespace_and_sim_time(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    assert {"namespace", "use_sim_time"} <= _launch_arguments(tree), f"{path.name} lacks namespace/use_sim_time"
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "Node":
            keys = {kw.arg for kw in call.keywords}
            package = next(kw.value.value for kw in call.keywords if kw.arg == "package")
            if package == "wamdiff2_ros":
                assert "namespace" in keys, f"{path.name}: a wamdiff2_ros node ignores the namespace argument"
            params = next(kw.value for kw in call.keywords if kw.arg == "parameters")
            names = {k.value for d in params.elts if isinstance(d, ast.Dict) for k in d.keys if isinstance(k, ast.Constant)}
            assert names & {"use_sim_time", "publish_clock"}, (  # a node either follows /clock or is its source
                f"{path.name}: {package} node gets neither use_sim_time nor publish_clock")


def test_carla_launch_starts_what_the_bridge_needs():
    tree = ast.parse((REPO / "launch" / "carla.launch.py").read_text())
    assert {"role_name", "control", "use_sim_time"} <= _launch_arguments(tree)
    packages = {kw.value.value for c in ast.walk(tree) if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "Node"
                for kw in c.keywords if kw.arg == "package"}
    assert packages == {"wamdiff2_ros", "carla_ackermann_control"}
    config = yaml.safe_load((REPO / "config" / "carla.yaml").read_text())["waypoint_follower_node"]["ros__parameters"]
    assert config["output"] == "ackermann" and config["cmd_topic"] == "/carla/ego_vehicle/ackermann_cmd"


def test_there_are_four_launch_files():
    assert {p.name for p in LAUNCH_FILES} >= {"drive.launch.py", "replay.launch.py", "sim.launch.py", "carla.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_real_executables_files_and_parameters(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)
    executables, files, node_params = _literals(tree)
    assert executables, "no Node actions"
    for exe in executables:
        assert exe in NODE_SPECS, f"{path.name} runs unknown executable {exe}"
        assert (REPO / "scripts" / exe).is_file(), f"scripts/{exe} missing"
    for name in files:
        assert (REPO / "config" / name).is_file(), f"{path.name} names config/{name}, which does not exist"
    for exe, keys in node_params:
        unknown = keys - _declared(exe)
        assert not unknown, f"{path.name} passes undeclared parameters {unknown} to {exe}"


def test_launch_files_and_executables_are_installed(ros_env):
    prefix = next((p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
                   if (Path(p) / "share" / "wamdiff2_ros" / "package.xml").is_file()), None)
    assert prefix, "wamdiff2_ros is not installed in AMENT_PREFIX_PATH"
    share = Path(prefix) / "share" / "wamdiff2_ros"
    for path in LAUNCH_FILES:
        assert (share / "launch" / path.name).is_file(), f"{path.name} not installed"
        executables, files, _ = _literals(ast.parse(path.read_text()))
        for exe in executables:
            assert os.access(Path(prefix) / "lib" / "wamdiff2_ros" / exe, os.X_OK), f"{exe} not installed"
        for name in files:
            assert (share / "config" / name).is_file(), f"config/{name} not installed"


@pytest.mark.skipif(importlib.util.find_spec("launch_ros") is None, reason="launch_ros is not installed (not on PyPI)")
@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_loads_with_launch_ros(path):  # pragma: no cover - needs a ROS 2 distribution
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities


@pytest.mark.parametrize("path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_config_file_parameters_are_declared_and_valid(path):
    from wamdiff2_ros.ros.params import validate

    data = yaml.safe_load(path.read_text())
    for node_name, section in data.items():
        assert node_name in NODE_SPECS, f"{path.name}: unknown node {node_name}"
        params = section["ros__parameters"]
        specs = importlib.import_module(NODE_SPECS[node_name]).PARAMS
        declared = {s.name: s for s in specs}
        unknown = set(params) - set(declared)
        assert not unknown, f"{path.name}: {node_name} has no parameters {unknown}"
        values = {s.name: params.get(s.name, s.default) for s in specs}
        validate(specs, values)  # raises ParameterError with the reason
        for key, value in params.items():
            default = declared[key].default
            assert type(value) is type(default), (  # rclpy refuses an int for a float parameter
                f"{path.name}: {key}={value!r} has type {type(value).__name__}, the node declares {type(default).__name__}"
            )
