"""World rules: the WorldConfig fields that change what a driving model's inputs mean, and where they are recorded.

A model must run in a world with the rules of its training data. A synthetic split records them in its root's
``synth_config.json`` (:func:`split_world_rules`); training copies them into the checkpoint's
``generation_config.json`` (``world_rules``, :func:`checkpoint_world_rules`, :func:`write_world_rules`); the closed
loop and ``sim_node`` build each model's world with them. WorldConfig's defaults are the rules of every split and
checkpoint made before the rules were recorded.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from wamdiff2_ros.data.world.config import WorldConfig

__all__ = ["WORLD_RULES", "SYNTH_CONFIG", "checked_world_rules", "world_rules", "split_world_rules",
           "checkpoint_world_rules", "write_world_rules"]

#: the WorldConfig fields a driving model learns from (what its inputs mean): a model must be run in a world with the
#: rules of its training data (``synth_config.json`` of a split, ``world_rules`` of a checkpoint's generation config)
WORLD_RULES: tuple[str, ...] = ("command_horizon_s", "lamp_visor_deg")
_LIMITS = {"command_horizon_s": (0.0, 60.0), "lamp_visor_deg": (1.0, 90.0)}


def checked_world_rules(rules: dict[str, Any] | None, where: str = "world rules") -> dict[str, float]:
    """Every world rule, each from ``rules`` where given (else WorldConfig's default), checked; unknown keys fail."""
    rules = dict(rules or {})
    unknown = sorted(set(rules) - set(WORLD_RULES))
    if unknown:
        raise ValueError(f"{where}: unknown world rule(s) {unknown}; expected some of {list(WORLD_RULES)}")
    defaults = {f.name: f.default for f in fields(WorldConfig) if f.name in WORLD_RULES}
    out = {}
    for key in WORLD_RULES:
        value = rules.get(key, defaults[key])
        low, high = _LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low <= value <= high:
            raise ValueError(f"{where}: {key} = {value!r} is not a number in [{low:g}, {high:g}]")
        out[key] = float(value)
    return out


def world_rules(config: WorldConfig, where: str = "world rules") -> dict[str, float]:
    """The world rules of ``config``, checked (``where`` names them in the error)."""
    return checked_world_rules({key: getattr(config, key) for key in WORLD_RULES}, where)


SYNTH_CONFIG = "synth_config.json"  # in a split's root: the world rules its logs were written with


def split_world_rules(logs_dir: str | Path) -> dict[str, float]:
    """The world rules a synthetic split was written with (its ``synth_config.json``); WorldConfig's defaults
    (the rules of every split before the file existed, and of other data) where it names none."""
    path = Path(logs_dir) / SYNTH_CONFIG
    return checked_world_rules(json.loads(path.read_text()) if path.is_file() else {}, str(path))


WORLD_RULES_KEY = "world_rules"  # in generation_config.json: the world rules of its training data (WorldConfig)


def checkpoint_world_rules(directory: str | os.PathLike | None) -> dict[str, float]:
    """The world rules a checkpoint was trained with (``data.world.rules.WORLD_RULES``: the driving command's
    look-ahead, the signal lamps' visor), WorldConfig's defaults where it names none: a simulator feeding the
    model must use the same rules."""
    path = Path(directory) / "generation_config.json" if directory is not None else None
    if path is None or not path.is_file():
        return checked_world_rules({})
    rules = json.loads(path.read_text()).get(WORLD_RULES_KEY) or {}
    if not isinstance(rules, dict):
        raise ValueError(f"{path}: {WORLD_RULES_KEY} must map rule names to numbers, got {rules!r}")
    return checked_world_rules(rules, f"{path}: {WORLD_RULES_KEY}")


def write_world_rules(directory: str | os.PathLike, rules: dict[str, float]) -> None:
    """Record the world rules of a checkpoint's training data in its ``generation_config.json`` (only those that
    differ from WorldConfig's defaults; none: no key)."""
    defaults = checked_world_rules({})
    rules = {k: v for k, v in checked_world_rules(rules).items() if v != defaults[k]}
    path = Path(directory) / "generation_config.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    if rules:
        data[WORLD_RULES_KEY] = rules
    else:
        data.pop(WORLD_RULES_KEY, None)
    path.write_text(json.dumps(data, indent=2) + "\n")
