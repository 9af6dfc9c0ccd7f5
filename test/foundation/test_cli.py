"""The `wamdiff2` dispatcher: lists every sub-command, and every target is an existing function."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers_ros import ros_available

from wamdiff2_ros import cli


def _targets() -> list[str]:
    out = []
    for _, spec in cli.COMMANDS.values():
        out += [t for _, t in spec.values()] if isinstance(spec, dict) else [spec]
    return out


def test_help_lists_all_subcommands():
    out = subprocess.run([sys.executable, "-m", "wamdiff2_ros.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for command in ("model", "bench", "synth", "data", "train", "eval", "bag", "demo"):
        assert f"    {command}" in out.stdout


def test_every_target_names_a_module_in_the_package():
    for target in _targets():
        module, _, name = target.partition(":")
        assert module.startswith("wamdiff2_ros.") and name.isidentifier(), target


@pytest.mark.parametrize("target", _targets())
def test_every_target_resolves_to_a_function(target):
    """Each target's module imports and holds the function (and ``name_arguments``, if any, is callable too)."""
    if target.startswith("wamdiff2_ros.ros.") and not ros_available():
        if os.environ.get("WAMDIFF2_REQUIRE_ROS") == "1":  # `make test`: a missing ROS build is an error
            pytest.fail("wamdiff2_ros.msg is not importable: run `make setup` and source install/setup.bash")
        pytest.skip("a wamdiff2_ros.ros target needs rclpy and the built messages")
    add_arguments, run = cli._resolve(target)
    assert callable(run), target
    assert add_arguments is None or callable(add_arguments), target


def test_a_missing_target_is_a_bug_not_a_message(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "demo", ("test", "wamdiff2_ros.no_such_module:run"))
    with pytest.raises(ModuleNotFoundError):
        cli.main(["demo"])
    monkeypatch.setitem(cli.COMMANDS, "demo", ("test", "wamdiff2_ros.cli:no_such_function"))
    with pytest.raises(AttributeError):
        cli.main(["demo"])


def test_dispatch_runs_target_with_its_arguments(monkeypatch):
    seen = {}

    def fake(args):
        seen["n"] = args.n
        return 0

    def fake_arguments(parser):
        parser.add_argument("--n", type=int, required=True)

    monkeypatch.setattr(cli, "_resolve", lambda target: (fake_arguments, fake))
    assert cli.main(["model", "info", "--n", "3"]) == 0
    assert seen == {"n": 3}


def test_unknown_subcommand_is_an_error():
    out = subprocess.run([sys.executable, "-m", "wamdiff2_ros.cli", "model", "nope"], capture_output=True, text=True)
    assert out.returncode != 0
