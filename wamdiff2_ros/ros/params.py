"""Declarative node parameters: one spec per parameter, declared with a descriptor, validated.

A node lists :class:`ParamSpec`s; :func:`declare` declares each with a
ParameterDescriptor (description, read-only flag, the rule as text), checks the
values it got from the parameter file or command line, and installs a callback that
refuses a bad runtime change with the reason. A bad start-up value raises
:class:`ParameterError` naming the parameter and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], str | None]


class ParameterError(ValueError):
    """A parameter value breaks its rule; str() says which and why."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    check: Check | None = None
    rule: str = ""
    read_only: bool = True


def one_of(*choices: Any) -> tuple[Check, str]:
    return (lambda v: None if v in choices else f"must be one of {list(choices)}"), f"one of {list(choices)}"


def in_range(lo: float, hi: float) -> tuple[Check, str]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            return f"must be a number in [{lo}, {hi}]"
        return None

    return check, f"in [{lo}, {hi}]"


def subset_of(choices: Sequence[str], non_empty: bool = True) -> tuple[Check, str]:
    def check(v: Any) -> str | None:
        items = list(v) if isinstance(v, (list, tuple)) else None
        if items is None or (non_empty and not items):
            return f"must be a non-empty list drawn from {list(choices)}"
        bad = [x for x in items if x not in choices]
        if bad:
            return f"unknown entries {bad}; allowed {list(choices)}"
        if len(set(items)) != len(items):
            return "entries must be unique"
        return None

    return check, f"non-empty subset of {list(choices)}"


def spec(name: str, default: Any, description: str, rule: tuple[Check, str] | None = None, read_only: bool = True) -> ParamSpec:
    check, text = rule if rule is not None else (None, "")
    return ParamSpec(name, default, description, check, text, read_only)


def validate(specs: Sequence[ParamSpec], values: dict[str, Any]) -> None:
    """Raise ParameterError for the first value that breaks its rule."""
    for s in specs:
        if s.check is not None:
            reason = s.check(values[s.name])
            if reason:
                raise ParameterError(f"parameter '{s.name}' = {values[s.name]!r} refused: {reason}")


def declare(node, specs: Sequence[ParamSpec], cross_check: Callable[[dict[str, Any]], str | None] | None = None) -> dict[str, Any]:
    """Declare ``specs`` on an rclpy node and return their validated values."""
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult

    by_name = {s.name: s for s in specs}
    for s in specs:
        descriptor = ParameterDescriptor(
            description=s.description, read_only=s.read_only, additional_constraints=s.rule
        )
        node.declare_parameter(s.name, s.default, descriptor)
    values = {s.name: node.get_parameter(s.name).value for s in specs}
    validate(specs, values)
    if cross_check is not None and (reason := cross_check(values)):
        raise ParameterError(reason)

    def on_set(params) -> SetParametersResult:
        for p in params:
            s = by_name.get(p.name)
            if s is None or s.check is None:
                continue
            reason = s.check(p.value)
            if reason:
                return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return values
