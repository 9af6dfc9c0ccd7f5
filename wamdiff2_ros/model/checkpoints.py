"""Where the shipped checkpoints are: the embedded defaults of the demo, nodes and benchmarks.

Search order for a checkpoint name: ``$WAMDIFF2_CHECKPOINTS/<name>``, the source
tree's ``checkpoints/<name>``, then ``share/wamdiff2_ros/checkpoints/<name>`` of every
prefix in ``$AMENT_PREFIX_PATH`` (the colcon install). A directory counts when it
holds a ``config.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_STUDENT = "wamdiff2-tiny-b32"
DEFAULT_AR = "wamdiff2-tiny-ar"


def checkpoint_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("WAMDIFF2_CHECKPOINTS"):
        dirs.append(Path(os.environ["WAMDIFF2_CHECKPOINTS"]))
    dirs.append(Path(__file__).resolve().parents[2] / "checkpoints")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share" / "wamdiff2_ros" / "checkpoints")
    return dirs


def default_checkpoint(name: str = DEFAULT_STUDENT) -> Path | None:
    """The first directory named ``name`` that holds a checkpoint, or None."""
    for base in checkpoint_dirs():
        candidate = base / name
        if (candidate / "config.json").is_file():
            return candidate
    return None


DEFAULT_THRESHOLD = 0.9  # the decode confidence threshold of a checkpoint that names none (the paper table's)
THRESHOLD_KEY = "confidence_threshold"  # in generation_config.json: the checkpoint's own decode default


def own_threshold(directory: str | os.PathLike | None) -> float | None:
    """The decode confidence threshold a checkpoint ships with (``generation_config.json``), or None.

    A value that is not a number in [0, 1] is an error, not a silent default.
    """
    import json

    if directory is None:
        return None
    path = Path(directory) / "generation_config.json"
    if not path.is_file():
        return None
    value = json.loads(path.read_text()).get(THRESHOLD_KEY)
    return None if value is None else _checked(value, f"{path}: {THRESHOLD_KEY}")


def decode_threshold(given: float | None, directory: str | os.PathLike | None) -> float:
    """``given`` when it is set (>= 0), else the checkpoint's own threshold, else :data:`DEFAULT_THRESHOLD`."""
    if given is not None and given >= 0:
        return float(given)
    own = own_threshold(directory)
    return DEFAULT_THRESHOLD if own is None else own


TASK_THRESHOLDS_KEY = "task_confidence_thresholds"  # in generation_config.json: {task: threshold} where it differs


def is_threshold(value: Any) -> bool:
    """A confidence threshold: a number (not a bool) in [0, 1]."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0.0 <= value <= 1.0


def _checked(value: Any, where: str) -> float:
    if not is_threshold(value):
        raise ValueError(f"{where} = {value!r} is not a number in [0, 1]")
    return float(value)


def own_task_thresholds(directory: str | os.PathLike | None) -> dict[str, float]:
    """The checkpoint's own thresholds of single tasks (``generation_config.json``), e.g. a slower rationale."""
    import json

    path = Path(directory) / "generation_config.json" if directory is not None else None
    if path is None or not path.is_file():
        return {}
    table = json.loads(path.read_text()).get(TASK_THRESHOLDS_KEY) or {}
    if not isinstance(table, dict):
        raise ValueError(f"{path}: {TASK_THRESHOLDS_KEY} must map tasks to thresholds, got {table!r}")
    return {str(task): _checked(value, f"{path}: {TASK_THRESHOLDS_KEY}[{task!r}]") for task, value in table.items()}


END_IN_ORDER_KEY = "end_in_order_tasks"  # in generation_config.json: tasks decoded with DecodeConfig.end_in_order
REUSE_KV_KEY = "reuse_kv_tasks"  # in generation_config.json: tasks decoded with DecodeConfig.reuse_committed_kv


def own_task_list(directory: str | os.PathLike | None, key: str) -> tuple[str, ...]:
    """The tasks a checkpoint's ``generation_config.json`` names under ``key`` (none by default)."""
    import json

    path = Path(directory) / "generation_config.json" if directory is not None else None
    if path is None or not path.is_file():
        return ()
    tasks = json.loads(path.read_text()).get(key) or []
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        raise ValueError(f"{path}: {key} must be a list of task names, got {tasks!r}")
    return tuple(tasks)


def own_end_in_order_tasks(directory: str | os.PathLike | None) -> tuple[str, ...]:
    """The tasks a checkpoint decodes with end tokens in order (``generation_config.json``; none by default)."""
    return own_task_list(directory, END_IN_ORDER_KEY)


def own_reuse_kv_tasks(directory: str | os.PathLike | None) -> tuple[str, ...]:
    """The tasks a checkpoint decodes with reused committed keys and values (none by default: exact decoding)."""
    return own_task_list(directory, REUSE_KV_KEY)


PLAN_STYLE_KEY = "plan_style"  # in generation_config.json: a residual plan style (codecs.RESIDUAL_STYLES) it answers in


def own_plan_style(directory: str | os.PathLike | None) -> str:
    """The plan style a checkpoint answers in where its numbers mean something else than ego-frame waypoints
    (``generation_config.json`` ``plan_style``, e.g. ``cv1``); ``plain`` (absolute waypoints) where it names none."""
    import json

    from wamdiff2_ros.model.codecs import PLAN_STYLES

    path = Path(directory) / "generation_config.json" if directory is not None else None
    if path is None or not path.is_file():
        return "plain"
    style = json.loads(path.read_text()).get(PLAN_STYLE_KEY) or "plain"
    if style not in PLAN_STYLES:
        raise ValueError(f"{path}: {PLAN_STYLE_KEY} must be one of {', '.join(PLAN_STYLES)}, got {style!r}")
    return style


def write_plan_style(directory: str | os.PathLike, style: str) -> None:
    """Record a residual plan style in the checkpoint's ``generation_config.json`` (others: no key, as before)."""
    import json

    from wamdiff2_ros.model.codecs import RESIDUAL_STYLES

    path = Path(directory) / "generation_config.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    if style in RESIDUAL_STYLES:
        data[PLAN_STYLE_KEY] = style
    else:
        data.pop(PLAN_STYLE_KEY, None)
    path.write_text(json.dumps(data, indent=2) + "\n")


def write_own_threshold(directory: str | os.PathLike, threshold: float,
                        task_thresholds: dict[str, float] | None = None,
                        end_in_order_tasks: list[str] | tuple[str, ...] | None = None,
                        reuse_kv_tasks: list[str] | tuple[str, ...] | None = None) -> None:
    """Record ``threshold`` (and single tasks' own, the tasks decoded with end tokens in order, and those decoded
    with reused committed keys and values) as the checkpoint's decode defaults in ``generation_config.json``."""
    import json

    path = Path(directory) / "generation_config.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data[THRESHOLD_KEY] = _checked(threshold, "threshold")
    if task_thresholds:
        data[TASK_THRESHOLDS_KEY] = {t: _checked(v, f"task threshold {t!r}") for t, v in task_thresholds.items()}
    else:
        data.pop(TASK_THRESHOLDS_KEY, None)
    for key, tasks in ((END_IN_ORDER_KEY, end_in_order_tasks), (REUSE_KV_KEY, reuse_kv_tasks)):
        if tasks:
            data[key] = list(tasks)
        else:
            data.pop(key, None)
    path.write_text(json.dumps(data, indent=2) + "\n")
