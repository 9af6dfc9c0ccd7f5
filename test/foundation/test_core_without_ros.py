"""The core rooms import without rclpy; `pip install .` gives the core and the CLI only."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import zipfile

CORE = ("model", "decoding", "training", "data", "evaluation", "bench")
CORE_MODULES = ("agent", "control", "_lazy")  # top-level modules of the core

PROBE = r"""
import importlib, json, pkgutil, sys
import wamdiff2_ros
imported = []
for room in %r:
    pkg = importlib.import_module("wamdiff2_ros." + room)
    imported.append(pkg.__name__)
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
        imported.append(info.name)
for module in %r:
    importlib.import_module("wamdiff2_ros." + module)
    imported.append("wamdiff2_ros." + module)
importlib.import_module("wamdiff2_ros.cli")
print(json.dumps({"imported": imported, "ros": sorted(m for m in sys.modules if m.split(".")[0] in ("rclpy", "rosidl_runtime_py", "launch", "launch_ros") or m == "wamdiff2_ros.msg")}))
"""


def test_core_modules_never_import_ros(repo):
    out = subprocess.run([sys.executable, "-c", PROBE % (CORE, CORE_MODULES)], cwd=repo, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["ros"] == [], f"core imported ROS modules: {info['ros']}"
    assert len(info["imported"]) >= len(CORE)


def test_wheel_holds_core_and_cli_but_no_generated_messages(repo, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(repo)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    (wheel,) = pathlib.Path(tmp_path).glob("wamdiff2_ros-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for room in (*CORE, "ros"):
        assert f"wamdiff2_ros/{room}/__init__.py" in names, room
    assert "wamdiff2_ros/cli.py" in names
    for module in CORE_MODULES:
        assert f"wamdiff2_ros/{module}.py" in names, module
    assert "wamdiff2_ros/model/assets/tokenizer.json" in names  # `wamdiff2 model init` builds on it
    assert "wamdiff2_ros/model/presets.py" in names
    assert not any(n.startswith("wamdiff2_ros/msg/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "wamdiff2 = wamdiff2_ros.cli:main" in text


def test_installed_wheel_runs_cli_outside_the_source_tree(repo, tmp_path):
    """Install the wheel into a bare target dir and run `wamdiff2 --help` from there."""
    target = tmp_path / "site"
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel_dir), str(repo)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = wheel_dir.glob("*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )
    code = (
        "import sys, os; sys.path.insert(0, sys.argv[1]);"
        "sys.path = [p for p in sys.path if os.path.realpath(p or '.') != os.path.realpath(sys.argv[2])];"
        "import wamdiff2_ros.cli as c; assert c.__file__.startswith(sys.argv[1]), c.__file__;"
        "sys.exit(c.main(['--help']))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(target), str(repo)], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for command in ("model", "bench", "synth", "data", "train", "eval", "bag", "demo"):
        assert command in out.stdout
    # a fresh model from the installed wheel alone (its tokenizer asset included)
    init = code.replace("sys.exit(c.main(['--help']))", "sys.exit(c.main(sys.argv[3:]))")
    made = tmp_path / "fresh-tiny"
    out = subprocess.run([sys.executable, "-c", init, str(target), str(repo), "model", "init", "--preset", "tiny",
                          "--out", str(made)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (made / "config.json").is_file() and (made / "tokenizer.json").is_file()


def test_version_is_written_once(repo):
    """setup.py and the CLI read wamdiff2_ros.__version__; package.xml (parsed by ROS tools) must carry the same."""
    import re

    import wamdiff2_ros

    xml = (repo / "package.xml").read_text()
    assert re.search(r"<version>([^<]+)</version>", xml).group(1) == wamdiff2_ros.__version__
    out = subprocess.run([sys.executable, "-m", "wamdiff2_ros.cli", "--version"], capture_output=True, text=True, cwd=repo)
    assert out.stdout.strip() == f"wamdiff2_ros {wamdiff2_ros.__version__}"
    for path in ("setup.py", "wamdiff2_ros/cli.py"):
        assert wamdiff2_ros.__version__ not in (repo / path).read_text(), f"{path} writes the version again"
