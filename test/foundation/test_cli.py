"""The `wamdiff2` dispatcher: lists every sub-command, refuses unfinished ones honestly."""

from __future__ import annotations

import subprocess
import sys

from wamdiff2_ros import cli


def test_help_lists_all_subcommands():
    out = subprocess.run([sys.executable, "-m", "wamdiff2_ros.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for command in ("model", "bench", "synth", "data", "train", "eval", "bag", "demo"):
        assert f"    {command}" in out.stdout


def test_every_target_names_a_module_in_the_package():
    for _, spec in cli.COMMANDS.values():
        targets = [t for _, t in spec.values()] if isinstance(spec, dict) else [spec]
        for target in targets:
            module, _, name = target.partition(":")
            assert module.startswith("wamdiff2_ros.") and name.isidentifier(), target


def test_unfinished_command_says_so_and_exits_nonzero(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "demo", ("test", "wamdiff2_ros.no_such_module:run"))
    assert cli.main(["demo"]) == 2
    assert "not implemented yet" in capsys.readouterr().err
    monkeypatch.setitem(cli.COMMANDS, "demo", ("test", "wamdiff2_ros.cli:no_such_function"))
    assert cli.main(["demo"]) == 2


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
