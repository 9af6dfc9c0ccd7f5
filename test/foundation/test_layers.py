"""The package's layers: imports only go down the order, files form no import cycle, every module imports.

The order, lowest first (a module may import its own layer and any layer below it):

    floor       wamdiff2_ros/__init__.py, wamdiff2_ros/geometry.py, wamdiff2_ros/_*.py
    control     wamdiff2_ros/control.py
    model       wamdiff2_ros/model/**
    data        wamdiff2_ros/data/**
    decoding    wamdiff2_ros/decoding/**
    agent       wamdiff2_ros/agent.py
    evaluation  wamdiff2_ros/evaluation/**
    training    wamdiff2_ros/training/**
    bench, ros  wamdiff2_ros/bench/**, wamdiff2_ros/ros/** (one rank: neither imports the other)
    cli         wamdiff2_ros/cli.py

Imports are read statically with :mod:`ast`, so imports inside functions count too; only
the body of ``if TYPE_CHECKING:`` is left out. An import points at the most specific
module file it names (``from wamdiff2_ros.decoding import generate`` is an edge to
``decoding/__init__.py``, ``from wamdiff2_ros.decoding import api`` one to ``decoding/api.py``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import pathlib
import pkgutil
from dataclasses import dataclass

import pytest

PACKAGE = "wamdiff2_ros"
SOURCE = pathlib.Path(__file__).resolve().parents[2] / PACKAGE

# Layer -> rank. Layers of one rank are siblings: neither may import the other.
RANKS = {
    "floor": 0,
    "control": 1,
    "model": 2,
    "data": 3,
    "decoding": 4,
    "agent": 5,
    "evaluation": 6,
    "training": 7,
    "bench": 8,
    "ros": 8,
    "cli": 9,
}
# wamdiff2_ros/<name>/** belongs to layer <name>.
SUBPACKAGES = {"model", "data", "decoding", "evaluation", "training", "bench", "ros"}
# Top-level modules (wamdiff2_ros/<name>.py); `__init__` and `_private` helpers are the floor.
TOP_MODULES = {
    "geometry": "floor",
    # control.py is pure pursuit plus a speed PID on numpy alone and imports nothing of the
    # project; the closed-loop evaluation and the ROS waypoint follower drive with it. A leaf
    # utility like geometry: just above the floor, so it may take angles/frames from geometry
    # while every room from model up may use it.
    "control": "control",
    "agent": "agent",
    "cli": "cli",
}
# Modules that exist only in the colcon install space, never as files here.
GENERATED = {f"{PACKAGE}.msg": "ros"}  # rosidl messages: the ROS room alone uses them

# Violations of today, while the moves are under way. Each entry must still be violated:
# fix the code, then delete the entry (the list can only shrink). Entries are
# "importer -> imported" for an upward import, "missing: importer -> imported" for an
# import of a module that does not exist, and "cycle: a, b, ..." (sorted) for a cycle.
KNOWN_VIOLATIONS: set[str] = set()


def layer_of(module: str) -> str | None:
    """The layer of a module of the package, None when the order does not rank it."""
    for generated, layer in GENERATED.items():
        if module == generated or module.startswith(generated + "."):
            return layer
    parts = module.split(".")
    if parts == [PACKAGE]:
        return "floor"
    if parts[1] in SUBPACKAGES:
        return parts[1]
    if len(parts) == 2:
        return "floor" if parts[1].startswith("_") else TOP_MODULES.get(parts[1])
    return None


def source_modules() -> dict[str, pathlib.Path]:
    """Dotted name -> file of every .py file of the package's source tree."""
    modules = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


@dataclass(frozen=True)
class Import:
    importer: str
    line: int
    target: str  # the most specific module named: a file here, a generated module, or one that does not exist

    def __str__(self) -> str:
        return f"{self.importer} -> {self.target}"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportCollector(ast.NodeVisitor):
    """Absolute names (with line numbers) of every import statement, relative ones resolved."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module.split(".") if is_package else module.split(".")[:-1]
        self.module = module
        self.names: list[tuple[int, str, tuple[str, ...]]] = []  # (line, module, imported names)

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:  # the else branch runs
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.names.append((node.lineno, alias.name, ()))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            up = node.level - 1
            if up >= len(self.package):
                raise AssertionError(f"{self.module}:{node.lineno}: relative import beyond the top-level package")
            base = self.package[: len(self.package) - up]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        self.names.append((node.lineno, name, tuple(a.name for a in node.names)))


def _resolve(name: str, known: set[str]) -> str:
    """``name`` itself, or the generated module it lies in (``wamdiff2_ros.msg.Plan`` -> ``wamdiff2_ros.msg``).

    No fallback to a parent package: ``import wamdiff2_ros.decoding.gone`` names a module
    that must exist, and stays unresolved (reported) when it does not.
    """
    for generated in GENERATED:
        if name == generated or name.startswith(generated + "."):
            return generated
    return name


def project_imports(modules: dict[str, pathlib.Path]) -> list[Import]:
    known = set(modules)
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _ImportCollector(module, path.name == "__init__.py")
        collector.visit(tree)
        for line, name, names in collector.names:
            if name != PACKAGE and not name.startswith(PACKAGE + "."):
                continue
            # `from pkg import x` names the module pkg.x when that is a file, else a name of pkg.
            targets = [f"{name}.{n}" if f"{name}.{n}" in known else name for n in names if n != "*"] or [name]
            for target in dict.fromkeys(targets):
                found.append(Import(module, line, _resolve(target, known)))
    return found


def upward(imports: list[Import]) -> dict[str, list[Import]]:
    """Imports that go up the order or sideways between siblings, by "importer -> imported"."""
    bad: dict[str, list[Import]] = {}
    for imp in imports:
        low, high = layer_of(imp.target), layer_of(imp.importer)
        if low is None or high is None or low == high:
            continue
        if RANKS[low] >= RANKS[high]:
            bad.setdefault(str(imp), []).append(imp)
    return bad


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), those of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first node, as a path that returns to it."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component


def _file(module: str, modules: dict[str, pathlib.Path]) -> str:
    return str(modules[module].relative_to(SOURCE.parent))


@pytest.fixture(scope="module")
def graph():
    modules = source_modules()
    return modules, project_imports(modules)


def test_every_module_has_a_layer(graph):
    modules, _ = graph
    unranked = sorted(_file(m, modules) for m in modules if layer_of(m) is None)
    assert not unranked, f"modules outside the layer order (rank them in {pathlib.Path(__file__).name}): {unranked}"


def test_imports_go_down_name_existing_modules_and_form_no_cycle(graph):
    modules, imports = graph
    problems = []

    missing: dict[str, list[Import]] = {}
    for imp in imports:
        if imp.target not in modules and imp.target not in GENERATED:
            missing.setdefault(f"missing: {imp}", []).append(imp)
    for key in sorted(set(missing) - KNOWN_VIOLATIONS):
        for imp in missing[key]:
            problems.append(f"missing: {_file(imp.importer, modules)}:{imp.line} imports {imp.target}, no such module")

    bad = upward(imports)
    for key in sorted(set(bad) - KNOWN_VIOLATIONS):
        for imp in bad[key]:
            problems.append(f"up: {_file(imp.importer, modules)}:{imp.line} ({layer_of(imp.importer)}) imports "
                            f"{imp.target} ({layer_of(imp.target)})")

    edges: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if imp.target in modules and imp.target != imp.importer:
            edges[imp.importer].add(imp.target)
    cycles = {"cycle: " + ", ".join(c): c for c in strongly_connected(edges)}
    for key in sorted(set(cycles) - KNOWN_VIOLATIONS):
        path = one_cycle(edges, cycles[key])
        problems.append(f"cycle of {len(cycles[key])} files: {', '.join(_file(m, modules) for m in cycles[key])}\n"
                        f"    e.g. {' -> '.join(path)}")

    fixed = sorted(KNOWN_VIOLATIONS - set(missing) - set(bad) - set(cycles))
    for key in fixed:
        problems.append(f"fixed, delete it from KNOWN_VIOLATIONS: {key}")

    assert not problems, "\n".join(problems)


def test_the_checks_see_what_they_should():
    """The checker itself: an upward import, a sibling import, a cycle and a TYPE_CHECKING import."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import codecs\n"
        "from ..data import world\n"
        "import wamdiff2_ros.ros.params\n"
        "if TYPE_CHECKING:\n"
        "    from wamdiff2_ros.training import engine\n"
        "def f():\n"
        "    from wamdiff2_ros.cli import main\n"
    )
    collector = _ImportCollector(f"{PACKAGE}.model.forward", False)
    collector.visit(ast.parse(source))
    assert [name for _, name, _ in collector.names] == [
        "typing", f"{PACKAGE}.model", f"{PACKAGE}.data", f"{PACKAGE}.ros.params", f"{PACKAGE}.cli"]
    imports = [Import(f"{PACKAGE}.model.forward", 1, f"{PACKAGE}.data.world"),
               Import(f"{PACKAGE}.bench.x", 2, f"{PACKAGE}.ros.params"),
               Import(f"{PACKAGE}.data.world", 3, f"{PACKAGE}.model.codecs"),
               Import(f"{PACKAGE}.cli", 4, f"{PACKAGE}.msg")]
    assert sorted(upward(imports)) == [f"{PACKAGE}.bench.x -> {PACKAGE}.ros.params",
                                       f"{PACKAGE}.model.forward -> {PACKAGE}.data.world"]
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert one_cycle({"a": {"b", "d"}, "b": {"c"}, "c": {"a"}, "d": {"b"}}, ["a", "b", "c", "d"]) == ["a", "b", "c", "a"]
    assert layer_of(f"{PACKAGE}._lazy") == "floor" and layer_of(f"{PACKAGE}.unknown") is None
    assert _resolve(f"{PACKAGE}.decoding.gone", {f"{PACKAGE}.decoding"}) == f"{PACKAGE}.decoding.gone"
    assert _resolve(f"{PACKAGE}.msg.Plan", set()) == f"{PACKAGE}.msg"


def _walk() -> list[str]:
    """Every module of the source tree, by pkgutil.walk_packages (it imports the packages)."""
    failed: list[str] = []
    names = [PACKAGE] + [info.name for info in pkgutil.walk_packages([str(SOURCE)], PACKAGE + ".", onerror=failed.append)]
    assert not failed, f"packages that failed to import while walking: {failed}"
    return names


def _import_all(names: list[str]) -> list[str]:
    errors = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # every broken module is reported
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    return errors


def _is_ros(name: str) -> bool:
    return name == f"{PACKAGE}.ros" or name.startswith(f"{PACKAGE}.ros.")


def test_every_module_outside_ros_imports():
    errors = _import_all([n for n in _walk() if not _is_ros(n)])
    assert not errors, "modules that fail to import:\n" + "\n".join(errors)


def _ros_missing() -> str | None:
    for name, what in (("rclpy", "rclpy is not importable"),
                       (f"{PACKAGE}.msg", f"{PACKAGE}.msg (colcon build, install/setup.bash) is not importable")):
        try:
            if importlib.util.find_spec(name) is None:
                return what
        except ImportError:
            return what
    return None


def test_every_ros_module_imports():
    missing = _ros_missing()
    if missing:
        if os.environ.get("WAMDIFF2_REQUIRE_ROS") == "1":  # `make test`: a missing ROS build is an error
            pytest.fail(f"{missing}: run `make setup` and source install/setup.bash")
        pytest.skip(f"wamdiff2_ros.ros modules not imported: {missing}")
    errors = _import_all([n for n in _walk() if _is_ros(n)])
    assert not errors, "modules that fail to import:\n" + "\n".join(errors)
