"""Declarative node parameters: one spec per parameter, declared with a descriptor, validated.

A node lists :class:`ParamSpec`s; :func:`declare` declares each with a
ParameterDescriptor (description, read-only flag, the rule as text, and a
``FloatingPointRange``/``IntegerRange`` for numeric ranges, so ``ros2 param
describe`` shows them), checks the values it got from the parameter file or command
line, and installs a callback that refuses a bad runtime change with the reason. A
bad start-up value raises :class:`ParameterError` naming the parameter and the rule.
An integer given for a float parameter (``speed:=2``) is taken as that float.
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
    bounds: tuple[float, float] | None = None


def one_of(*choices: Any) -> tuple[Check, str]:
    return (lambda v: None if v in choices else f"must be one of {list(choices)}"), f"one of {list(choices)}"


def in_range(lo: float, hi: float) -> tuple[Check, str, tuple[float, float]]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            return f"must be a number in [{lo}, {hi}]"
        return None

    return check, f"in [{lo}, {hi}]", (lo, hi)


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


def spec(name: str, default: Any, description: str, rule: tuple | None = None, read_only: bool = True) -> ParamSpec:
    """One parameter; ``rule`` is ``(check, text)`` or, from :func:`in_range`, ``(check, text, (lo, hi))``."""
    check, text, *bounds = rule if rule is not None else (None, "")
    return ParamSpec(name, default, description, check, text, read_only, bounds[0] if bounds else None)


def descriptor_of(s: ParamSpec):
    """The rcl_interfaces ParameterDescriptor of a spec (with its numeric range, if any)."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    descriptor = ParameterDescriptor(description=s.description, read_only=s.read_only, additional_constraints=s.rule)
    if s.bounds is not None and isinstance(s.default, float):
        descriptor.floating_point_range = [FloatingPointRange(from_value=float(s.bounds[0]), to_value=float(s.bounds[1]))]
    elif s.bounds is not None and isinstance(s.default, int) and not isinstance(s.default, bool):
        descriptor.integer_range = [IntegerRange(from_value=int(s.bounds[0]), to_value=int(s.bounds[1]), step=1)]
    return descriptor


def _declare_one(node, s: ParamSpec) -> None:
    """Declare ``s``; an int override of a float parameter becomes that float; a refusal is a ParameterError."""
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    from rclpy.parameter import Parameter

    overrides = getattr(node, "_parameter_overrides", {})  # rclpy keeps --ros-args/-p values here
    given = overrides.get(s.name)
    value = given.value if given is not None else s.default
    if isinstance(s.default, float) and isinstance(value, int) and not isinstance(value, bool):
        overrides[s.name] = Parameter(s.name, Parameter.Type.DOUBLE, float(value))
        value = float(value)
    try:
        node.declare_parameter(s.name, s.default, descriptor_of(s))
    except InvalidParameterTypeException:
        kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(type(s.default), "a list")
        raise ParameterError(f"parameter '{s.name}' = {value!r} refused: must be {kind} "
                             f"(like the default {s.default!r})") from None
    except InvalidParameterValueException as exc:
        reason = (s.check(value) if s.check is not None else None) or str(exc)
        raise ParameterError(f"parameter '{s.name}' = {value!r} refused: {reason}") from None


def validate(specs: Sequence[ParamSpec], values: dict[str, Any]) -> None:
    """Raise ParameterError for the first value that breaks its rule."""
    for s in specs:
        if s.check is not None:
            reason = s.check(values[s.name])
            if reason:
                raise ParameterError(f"parameter '{s.name}' = {values[s.name]!r} refused: {reason}")


def declare(node, specs: Sequence[ParamSpec], cross_check: Callable[[dict[str, Any]], str | None] | None = None) -> dict[str, Any]:
    """Declare ``specs`` on an rclpy node and return their validated values."""
    from rcl_interfaces.msg import SetParametersResult

    by_name = {s.name: s for s in specs}
    for s in specs:
        _declare_one(node, s)
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
