"""Training configuration: one YAML file per stage, ``key=value`` overrides, validation with clear errors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wamdiff2_ros.data.tokenized import CAMERA_SUBSETS, DataConfig
from wamdiff2_ros.model.codecs import PLAN_STYLES
from wamdiff2_ros.model.prompts import CAMERAS

STAGES = ("ar", "adapt", "distill_block", "distill_model")
MIXED_PRECISION = ("no", "bf16", "fp16")
ROLLOUT_ENGINES = ("fast", "reference")
PROMPT_FORMATS = ("", "wamdiff2_ros", "reference")  # "": the init checkpoint's (a fresh preset: wamdiff2_ros)


class TrainConfigError(ValueError):
    """A training config file or override is missing, malformed or out of range."""


@dataclass
class TrainConfig:
    """Everything one stage needs; every field can be overridden with ``key=value`` (``data.key=value``)."""

    stage: str = "ar"
    output_dir: str = ""
    init: str = ""  # checkpoint dir to start from (empty: a fresh preset)
    preset: str = "tiny"
    block_size: int = 1
    prompt_format: str = ""  # question wording/layout the model is trained on (model.prompts.PROMPT_FORMATS); "": keep the init's
    teacher: str = ""  # distillation teacher checkpoint dir
    teacher_block_size: int = 0  # 0: the reference's choice, half the student's block size (its collate's teacher mask)
    jsd_weight: float = 1.0
    diffusion_weight: float = 0.0  # distillation: weight of the 1/t-weighted CE (the reference: kd_ratio 1.0, i.e. 0)
    jsd_beta: float = 0.5
    on_policy: bool = True  # distillation: every rollout_every steps the noisy states are the student's own answers
    rollout_every: int = 2  # the reference's generate_interval
    rollout_threshold: float = 0.9  # confidence threshold of the student's block decode in the rollout
    rollout_max_tokens: int = 256  # answer budget of the rollout (whole blocks are decoded)
    rollout_engine: str = "fast"  # decoding engine of the rollout (same tokens either way)
    certainty_weight: float = 0.0  # adapt: weight of the entropy of already-correct masked predictions
    steps: int = 100
    batch_size: int = 8  # per process, per micro-step
    grad_accum: int = 1
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 10
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    mixed_precision: str = "no"
    save_every: int = 0  # 0: only at the end
    stop_after: int = 0  # stop (with a checkpoint) after this many steps of this run; 0: run to `steps`
    log_every: int = 10
    seed: int = 0
    device: str = "auto"  # auto: cuda when available (one GPU per process), else cpu
    num_threads: int = 0  # torch threads per process (0: leave torch's default)
    progress: bool = True
    data: DataConfig = field(default_factory=DataConfig)

    def validate(self) -> TrainConfig:
        def bad(name: str, why: str) -> TrainConfigError:
            return TrainConfigError(f"train config: {name}={_get(self, name)!r}: {why}")

        if self.stage not in STAGES:
            raise bad("stage", f"must be one of {', '.join(STAGES)}")
        if not self.output_dir:
            raise bad("output_dir", "is required")
        for name in ("block_size", "steps", "batch_size", "grad_accum", "rollout_every", "rollout_max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(name, "must be an integer >= 1")
        if self.teacher_block_size < 0:
            raise bad("teacher_block_size", "must be >= 1, or 0 for the reference's half of block_size")
        if self.stage == "ar" and self.block_size != 1:
            raise bad("block_size", "stage ar trains B=1")
        if self.stage != "ar" and self.block_size < 2:
            raise bad("block_size", "diffusion stages need block_size >= 2 (B=1 is the ar stage)")
        if self.stage in ("distill_block", "distill_model") and not self.teacher:
            raise bad("teacher", f"stage {self.stage} needs a teacher checkpoint")
        if self.stage in ("distill_block", "distill_model") and self.block_size % self.effective_teacher_block_size:
            what = "0 means half of block_size, which" if self.teacher_block_size == 0 else "it"
            raise bad("teacher_block_size", f"{what} must divide the student's block_size {self.block_size}")
        if not 0.0 <= self.rollout_threshold <= 1.0:
            raise bad("rollout_threshold", "must be in [0, 1]")
        if self.rollout_engine not in ROLLOUT_ENGINES:
            raise bad("rollout_engine", f"must be one of {', '.join(ROLLOUT_ENGINES)}")
        if self.prompt_format not in PROMPT_FORMATS:
            raise bad("prompt_format", f"must be one of {', '.join(repr(f) for f in PROMPT_FORMATS)}")
        for name in ("jsd_weight", "diffusion_weight"):
            if getattr(self, name) < 0:
                raise bad(name, "must be >= 0")
        if self.mixed_precision not in MIXED_PRECISION:
            raise bad("mixed_precision", f"must be one of {', '.join(MIXED_PRECISION)}")
        if not self.lr > 0:
            raise bad("lr", "must be > 0")
        if self.certainty_weight < 0:
            raise bad("certainty_weight", "must be >= 0")
        if self.certainty_weight and self.stage != "adapt":
            raise bad("certainty_weight", "applies to the adapt stage only")
        if not 0.0 <= self.jsd_beta <= 1.0:
            raise bad("jsd_beta", "must be in [0, 1]")
        if not self.data.logs_dir:
            raise bad("data.logs_dir", "is required")
        unknown = [t for t in self.data.tasks if t not in ("planning", "perception", "understanding")]
        if unknown or not self.data.tasks:
            raise bad("data.tasks", "must be a non-empty subset of planning, perception, understanding")
        if self.data.plan_style not in PLAN_STYLES:
            raise bad("data.plan_style", f"must be one of {', '.join(PLAN_STYLES)}")
        if self.data.camera_subsets not in CAMERA_SUBSETS:
            raise bad("data.camera_subsets", f"must be one of {CAMERA_SUBSETS}")
        unknown_cams = [c for c in self.data.cameras if c not in CAMERAS]
        if unknown_cams or not self.data.cameras:
            raise bad("data.cameras", f"must be a non-empty subset of {', '.join(CAMERAS)}")
        cruise = self.data.cruise_telemetry
        if isinstance(cruise, bool) or not isinstance(cruise, (int, float)) or not 0.0 <= cruise <= 1.0:
            raise bad("data.cruise_telemetry", "must be a fraction in [0, 1] (0: off)")
        for key in ("oversample_starts", "oversample_turns"):
            factor = getattr(self.data, key)
            if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
                raise bad(f"data.{key}", "must be an integer >= 1 (1: off)")
        return self

    @property
    def effective_teacher_block_size(self) -> int:
        """The teacher's block size: as set, or (0) the reference's half of the student's (at least 1)."""
        return self.teacher_block_size or max(1, self.block_size // 2)

    @property
    def distills(self) -> bool:
        return self.stage in ("distill_block", "distill_model")

    def on_policy_step(self, step: int) -> bool:
        """Whether step ``step`` (0-based) trains on the student's rollout (every ``rollout_every`` steps from 0)."""
        return self.distills and self.on_policy and step % self.rollout_every == 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _get(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _coerce(name: str, current: Any, value: Any) -> Any:
    """``value`` (from YAML or a ``key=value`` string) converted to the type of the field's default."""
    import yaml

    if isinstance(value, str) and not isinstance(current, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise TrainConfigError(f"train config: {name}: cannot parse {value!r}: {exc}") from None
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise TrainConfigError(f"train config: {name} must be true or false, got {value!r}")
        return value
    if isinstance(current, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TrainConfigError(f"train config: {name} must be an integer, got {value!r}")
        return value
    if isinstance(current, float):
        if isinstance(value, str):  # YAML 1.1 reads "3e-4" (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TrainConfigError(f"train config: {name} must be a number, got {value!r}")
        return float(value)
    if isinstance(current, list):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise TrainConfigError(f"train config: {name} must be a list, got {value!r}")
        return [str(v) for v in value]
    if isinstance(current, str):
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)):
            raise TrainConfigError(f"train config: {name} must be a string, got {value!r}")
        return str(value)
    return value


def _apply(cfg: Any, items: dict[str, Any], prefix: str = "") -> None:
    names = {f.name for f in dataclasses.fields(cfg)}
    for key, value in items.items():
        full = prefix + key
        if key not in names:
            raise TrainConfigError(f"train config: unknown key {full!r} (known: {', '.join(sorted(names))})")
        current = getattr(cfg, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise TrainConfigError(f"train config: {full} must be a mapping")
            _apply(current, value, full + ".")
        else:
            setattr(cfg, key, _coerce(full, current, value))


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """``["lr=3e-4", "data.max_scenes=10"]`` -> nested dict (values stay strings until coerced)."""
    out: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise TrainConfigError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        parts = key.strip().split(".")
        if not all(parts):
            raise TrainConfigError(f"override {item!r} has an empty key")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise TrainConfigError(f"override {item!r} conflicts with another override")
        node[parts[-1]] = value
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | None = None, **fields: Any) -> TrainConfig:
    """A validated :class:`TrainConfig` from a YAML file, then ``key=value`` overrides, then keyword fields."""
    import yaml

    cfg = TrainConfig()
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise TrainConfigError(f"train config file {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise TrainConfigError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise TrainConfigError(f"{path}: must hold a mapping of config keys")
        _apply(cfg, data)
    if overrides:
        _apply(cfg, parse_overrides(overrides))
    if fields:
        _apply(cfg, fields)
    return cfg.validate()
