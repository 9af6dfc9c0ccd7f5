"""`wamdiff2 bench`: every benchmark is a sub-command, its --help works, and the bench/*.py launchers run them."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys

import pytest
from helpers_ros import REPO

from wamdiff2_ros import cli

SUBCOMMANDS = ("decode", "decode-profile", "synth", "train-step", "sweep", "paired-speed", "trace", "agent-tasks", "gpu-prefix-check")
# bench/<script>: the sub-command it launches (ros_latency.py starts ROS nodes: a script of its own)
LAUNCHERS = {"decode.py": "decode", "decode_profile.py": "decode-profile", "synth.py": "synth",
             "threshold_sweep.py": "sweep", "paired_speed.py": "paired-speed", "agent_tasks.py": "agent-tasks",
             "gpu_prefix_check.py": "gpu-prefix-check"}


def _help(run, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        run()
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_bench_help_lists_every_benchmark(capsys):
    assert tuple(cli.COMMANDS["bench"][1]) == SUBCOMMANDS
    text = _help(lambda: cli.main(["bench", "--help"]), capsys)
    for name in SUBCOMMANDS:
        assert re.search(rf"^ +{name}\s", text, re.MULTILINE), name
    for _, target in cli.COMMANDS["bench"][1].values():
        assert target.startswith("wamdiff2_ros.bench."), target


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_help_works(name, capsys):
    text = _help(lambda: cli.main(["bench", name, "--help"]), capsys)
    assert f"usage: wamdiff2 bench {name}" in text and "--json" in text


@pytest.mark.parametrize("script", sorted(LAUNCHERS))
def test_launchers_take_the_subcommand_flags(script, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [f"bench/{script}", "--help"])
    text = _help(lambda: runpy.run_path(str(REPO / "bench" / script), run_name="__main__"), capsys)
    assert f"usage: bench/{script}" in text
    flags = set(re.findall(r"--[a-z][a-z-]*", text))
    assert flags == set(re.findall(r"--[a-z][a-z-]*", _help(lambda: cli.main(["bench", LAUNCHERS[script], "--help"]),
                                                             capsys)))


def test_bench_folder_holds_the_launchers_and_what_the_docs_run():
    assert {p.name for p in (REPO / "bench").glob("*.py")} == {*LAUNCHERS, "ros_latency.py"}
    for doc in ("Makefile", "README.md", "docs/BENCHMARKS.md", "bench/gpu_decode.sh", "wamdiff2_ros/data/README.md"):
        text = (REPO / doc).read_text(encoding="utf-8")
        for path in re.findall(r"\bbench/[a-z_]+\.(?:py|sh)\b", text):
            assert (REPO / path).is_file(), f"{doc} names {path}, which does not exist"
        for name in re.findall(r"wamdiff2 bench ([a-z-]+)", text):
            assert name in SUBCOMMANDS, f"{doc} names `wamdiff2 bench {name}`, which is no sub-command"


def _ros_latency(*args: str) -> subprocess.CompletedProcess:
    """bench/ros_latency.py with ``args``, for the checks it makes before any node starts."""
    return subprocess.run([sys.executable, str(REPO / "bench" / "ros_latency.py"), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("spec", ["cand", "=runs/x", "a:b=runs/x"])
def test_ros_latency_refuses_a_malformed_model(spec):
    done = _ros_latency("--model", spec)
    assert done.returncode == 2 and "--model wants NAME=DIR" in done.stderr, done.stderr


@pytest.mark.parametrize("spec", ["cand=runs/x@high", "cand=runs/x@1.5"])
def test_ros_latency_refuses_a_bad_threshold(spec):
    done = _ros_latency("--model", spec)
    assert done.returncode == 2 and "THRESHOLD must be a number in [0, 1]" in done.stderr, done.stderr


def test_ros_latency_takes_a_named_model_into_its_cells(tmp_path):
    """A --model NAME is a cell's MODEL; a folder without a checkpoint stops the bench before any node starts."""
    done = _ros_latency("--model", f"cand={tmp_path}", "--cells", "planning:1:cand")
    assert done.returncode == 1 and "checkpoints missing" in done.stderr and str(tmp_path) in done.stderr, done.stderr


def test_ros_latency_image_transport_is_raw_or_compressed():
    done = _ros_latency("--image-transport", "jpeg")
    assert done.returncode == 2 and "--image-transport" in done.stderr, done.stderr


def test_ros_latency_table_says_how_many_plans_were_fallbacks():
    """A cell whose plans are the flagged constant-velocity fallback (not the model's answer) must say so."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ros_latency", REPO / "bench" / "ros_latency.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    plan = {"outputs": 85, "fallbacks": 85, "achieved_rate_hz": 5.0, "latency_ms": bench.percentiles([90.0, 100.0])}
    cell = {"cell": "planning:8:b32", "block_size": 32, "per_task": {"planning": plan}, "dropped_sets": 0,
            "driver_alive_at_end": True, "plan_stages_ms_p50": {}}
    row = next(line for line in bench.table([cell]).splitlines() if line.startswith("| planning:8:b32"))
    assert row.split(" | ")[3:5] == ["85", "85"]  # plans, fallback plans
    assert row.split(" | ")[2] == "-"  # no threshold reported by the node
    cell["confidence_threshold"] = 0.3
    assert bench.table([cell]).splitlines()[2].split(" | ")[2] == "0.3"
