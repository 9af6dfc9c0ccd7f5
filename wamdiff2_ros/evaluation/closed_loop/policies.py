"""Who drives the ego on a route: the world's autopilot, constant velocity, standing still, or a checkpoint.

A :class:`PolicySpec` is plain data (it crosses process boundaries); :func:`make_policy`
turns it into a policy in the process that runs the route. Planning policies return an
(8, 3) ego-frame plan (x, y, heading at 0.5 s steps, like the model's answer) that the
controller tracks; the autopilot instead lets the world drive the ego (privileged: it
knows the route, the lights and every road user, and drives without a controller).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.agent import DrivingAgent, EgoMotion, constant_velocity_trajectory
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.model.checkpoints import default_checkpoint

BASELINES = ("autopilot", "constant-velocity", "standstill")
SHIPPED = {"ar": "wamdiff2-tiny-ar", "student": "wamdiff2-tiny-b32"}
GATE_SUFFIX = "+gate"  # a model policy named NAME+gate drives with the agent's reject_backwards gate on


@dataclass(frozen=True)
class PolicySpec:
    """``kind``: autopilot / constant-velocity / standstill / model (``path`` = checkpoint directory)."""

    name: str
    kind: str
    path: str = ""
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)


@dataclass
class Observation:
    """What a planning policy sees at one planning step."""

    time_s: float
    ego: EgoMotion  # ego-frame velocity and acceleration
    command: str  # left / straight / right / unknown
    images: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Plan:
    trajectory: np.ndarray  # (8, 3) ego frame
    valid: bool = True
    source: str = "baseline"
    latency_ms: float = 0.0
    tokens: int = 0


class ConstantVelocity:
    """Keeps the current speed and heading (straight ahead) for 4 s."""

    drives_world = False
    cameras: tuple[str, ...] = ()

    def plan(self, obs: Observation) -> Plan:
        return Plan(constant_velocity_trajectory(obs.ego))


class Standstill:
    """Plans to stand still (a sanity baseline: completion 0, stuck time high)."""

    drives_world = False
    cameras: tuple[str, ...] = ()

    def plan(self, obs: Observation) -> Plan:
        return Plan(np.zeros((8, 3)))


class Autopilot:
    """Marker: the world's own driver model drives the ego."""

    drives_world = True
    cameras: tuple[str, ...] = ()

    def plan(self, obs: Observation) -> Plan:  # pragma: no cover - never asked
        raise RuntimeError("the autopilot drives the world directly")


class ModelPolicy:
    """A checkpoint through :class:`~wamdiff2_ros.agent.DrivingAgent` (planning task only)."""

    drives_world = False

    def __init__(self, path: str | Path, *, block_size: int | None = None, confidence_threshold: float | None = None,
                 max_new_tokens: int = 128, engine: str = "fast", device: str = "cpu",
                 cameras: tuple[str, ...] = ("CAM_F0",), reject_backwards: bool = False,
                 world_rules: tuple[tuple[str, float], ...] = ()) -> None:
        # in the function: it imports torch, which the scripted policies (and this module's importers) do without
        from wamdiff2_ros.data.world.rules import checked_world_rules, checkpoint_world_rules
        from wamdiff2_ros.model.checkpoints import decode_threshold
        from wamdiff2_ros.model.loader import load_model

        self.vla = load_model(str(path), device=device)
        if block_size is None:
            block_size = int(getattr(self.vla, "block_size", None) or getattr(self.vla.config, "block_size", 32))
        self.confidence_threshold = decode_threshold(confidence_threshold, self.vla.path)  # None: the checkpoint's
        config = DecodeConfig(block_size=int(block_size), confidence_threshold=self.confidence_threshold,
                              max_new_tokens=int(max_new_tokens), engine=engine, device=device)  # fmt: skip
        self.agent = DrivingAgent(self.vla, config, cameras=cameras, tasks=("planning",),
                                  reject_backwards=reject_backwards)
        self.cameras = tuple(cameras)
        self.block_size = int(block_size)
        # the world rules of the checkpoint's training data (generation_config.json), ``world_rules`` overriding
        self.world_rules = checked_world_rules({**checkpoint_world_rules(self.vla.path), **dict(world_rules)})

    def plan(self, obs: Observation) -> Plan:
        start = time.perf_counter()
        out = self.agent.step(obs.images, obs.ego, obs.command)
        task = out.tasks.get("planning")
        tokens = int(getattr(task.stats, "generated_tokens", 0) or 0) if task is not None else 0
        return Plan(np.asarray(out.trajectory, dtype=np.float64), out.valid, out.source,
                    1000.0 * (time.perf_counter() - start), tokens)  # fmt: skip


def make_policy(spec: PolicySpec) -> Any:
    """The policy object of ``spec`` (loads the checkpoint of a model policy)."""
    if spec.kind == "autopilot":
        return Autopilot()
    if spec.kind == "constant-velocity":
        return ConstantVelocity()
    if spec.kind == "standstill":
        return Standstill()
    if spec.kind == "model":
        opts = dict(spec.options)
        return ModelPolicy(spec.path, **opts)
    raise ValueError(f"unknown policy kind {spec.kind!r}; expected one of {(*BASELINES, 'model')}")


def policy_specs(baselines: list[str], models: list[str], model_options: dict[str, Any] | None = None) -> list[PolicySpec]:
    """Policies from baseline names (``autopilot``, ``constant-velocity``, ``standstill``, ``ar``, ``student``)
    and ``NAME=DIR`` model arguments; names must be unique and directories must hold a config.json.
    A model name ending in ``+gate`` (``student+gate``, ``mine+gate=DIR``) drives with the agent's
    ``reject_backwards`` gate: a parsed plan that goes backwards is replaced by the flagged fallback."""
    options = tuple(sorted((model_options or {}).items()))

    def options_of(name: str) -> tuple[tuple[str, Any], ...]:
        if not name.endswith(GATE_SUFFIX):
            return options
        return tuple(sorted({**dict(options), "reject_backwards": True}.items()))

    out: list[PolicySpec] = []
    for name in baselines:
        shipped = name.removesuffix(GATE_SUFFIX)
        if name in BASELINES:
            out.append(PolicySpec(name, name))
        elif shipped in SHIPPED:
            found = default_checkpoint(SHIPPED[shipped])
            if found is None:
                raise ValueError(f"baseline {name!r}: shipped checkpoint {SHIPPED[shipped]} not found")
            out.append(PolicySpec(f"{name} ({SHIPPED[shipped]})", "model", str(found), options_of(name)))
        else:
            raise ValueError(f"unknown baseline {name!r}; expected some of {(*BASELINES, *SHIPPED)}")
    for item in models:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--model takes NAME=DIR, got {item!r}")
        if not (Path(path) / "config.json").is_file():
            raise ValueError(f"--model {item}: no config.json in {path}")
        out.append(PolicySpec(name, "model", str(Path(path).resolve()), options_of(name)))
    names = [p.name for p in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"policy names must be unique, repeated: {duplicates}")
    if not out:
        raise ValueError("no policies to evaluate")
    return out
