"""The driving agent: camera images + ego status + command -> plan, boxes, rationale.

One object runs the three tasks of the model the same way for the ROS driving node
and for open-loop evaluation: build the prompt (codecs), decode (``generate``),
parse the answer strictly, and fall back to a flagged constant-velocity plan when
the planning answer does not parse. It never raises on model output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from wamdiff2_ros.decoding.config import DecodeConfig, DecodeStats
from wamdiff2_ros.model import codecs

TASKS = ("planning", "perception", "understanding")
# The rationale question the shipped checkpoints were trained on (data.samples.QUESTIONS["next_action"]).
DEFAULT_QUESTION = "What will the ego vehicle do in the next 4 seconds, and why? Answer as '<action>, because <reason>.'"


@dataclass(frozen=True)
class EgoStatus:
    """Ego motion in the ego frame (REP 103: x forward, y left): m/s and m/s^2."""

    velocity: tuple[float, float] = (0.0, 0.0)
    acceleration: tuple[float, float] = (0.0, 0.0)

    def is_finite(self) -> bool:
        return all(math.isfinite(v) for v in (*self.velocity, *self.acceleration))


@dataclass
class TaskOutput:
    """One task's decode: raw text, parsed value or the parse error, decode statistics."""

    task: str
    question: str
    text: str
    value: object | None
    error: str | None
    confidence: float
    stats: DecodeStats
    token_ids: list[int] = field(default_factory=list)  # the answer's tokens (end token excluded)
    token_confidences: list[float] = field(default_factory=list)  # commit confidence of each of token_ids


@dataclass
class AgentOutput:
    """Everything one agent step produced; ``trajectory`` is (8, 3) x, y, heading."""

    trajectory: np.ndarray
    valid: bool
    source: str
    confidence: float
    detections: list[codecs.Box] = field(default_factory=list)
    rationale: str | None = None
    rationale_question: str = ""
    tasks: dict[str, TaskOutput] = field(default_factory=dict)
    latency_ms: float = 0.0

    @property
    def parse_failures(self) -> list[str]:
        return [f"{t.task}: {t.error}" for t in self.tasks.values() if t.error]


def constant_velocity_trajectory(ego: EgoStatus) -> np.ndarray:
    """Fallback plan: keep the current ego-frame velocity for 4 s; (8, 3) x, y, heading."""
    vx, vy = ego.velocity if ego.is_finite() else (0.0, 0.0)
    t = codecs.waypoint_times()
    xy = np.stack([vx * t, vy * t], axis=1)
    heading = math.atan2(vy, vx) if math.hypot(vx, vy) > 1e-3 else 0.0
    return np.concatenate([xy, np.full((len(t), 1), heading)], axis=1)


class DrivingAgent:
    """Runs the model's tasks on one synchronized input set.

    ``vla`` is a :class:`wamdiff2_ros.model.loader.WamDiff2`; ``tasks`` a subset of
    :data:`TASKS` (planning always runs first when present).
    """

    def __init__(
        self,
        vla,
        config: DecodeConfig,
        *,
        cameras: Sequence[str] = ("CAM_F0",),
        tasks: Sequence[str] = ("planning",),
        understanding_question: str = DEFAULT_QUESTION,
        max_pixels: int | None = None,
    ) -> None:
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise ValueError(f"tasks must be a non-empty subset of {TASKS}, got {list(tasks)}")
        bad_cams = [c for c in cameras if c not in codecs.CAMERAS]
        if bad_cams or not cameras:
            raise ValueError(f"cameras must be a non-empty subset of {codecs.CAMERAS}, got {list(cameras)}")
        codecs.understanding_question(understanding_question)  # validates the text
        self.vla = vla
        self.config = config
        self.cameras = tuple(cameras)
        self.tasks = tuple(sorted(set(tasks), key=TASKS.index))
        self.understanding_question = understanding_question
        self.max_pixels = max_pixels

    def question(self, task: str, cameras: Sequence[str], ego: EgoStatus, command: str) -> str:
        n = len(cameras)
        if task == "planning":
            cmd = command if command in codecs.DRIVING_COMMANDS else "unknown"
            return codecs.planning_question(cmd, ego.velocity, ego.acceleration, num_images=n, cameras=cameras)
        if task == "perception":
            return codecs.perception_question(num_images=n, cameras=cameras)
        return codecs.understanding_question(self.understanding_question, num_images=n, cameras=cameras)

    def run_task(self, task: str, images: Mapping[str, np.ndarray], ego: EgoStatus, command: str) -> TaskOutput:
        from wamdiff2_ros.decoding import generate
        from wamdiff2_ros.model.inputs import build_inputs

        cameras = [c for c in self.cameras if c in images]
        question = self.question(task, cameras, ego, command)
        inputs = build_inputs(self.vla, question, [images[c] for c in cameras], max_pixels=self.max_pixels)
        result = generate(self.vla, inputs, self.config)
        text = result.texts[0]
        parsed = codecs.parse_answer(task, text)
        error = parsed.reason if isinstance(parsed, codecs.ParseError) else None
        if error is None and not result.finished[0]:
            error = f"no end token within max_new_tokens={self.config.max_new_tokens}"
        value = None if error else parsed
        token_conf = result.token_confidences[0] if result.token_confidences else []
        return TaskOutput(task, question, text, value, error, float(result.confidences[0]), result.stats,
                          list(result.tokens[0]), list(token_conf))

    def step(self, images: Mapping[str, np.ndarray], ego: EgoStatus, command: str) -> AgentOutput:
        """Run every configured task; always returns a usable (possibly fallback) plan."""
        start = time.perf_counter()
        if not any(c in images for c in self.cameras):
            raise ValueError(f"no image of the configured cameras {self.cameras}")
        outputs = {task: self.run_task(task, images, ego, command) for task in self.tasks}
        plan = outputs.get("planning")
        if plan is not None and plan.value is not None:
            xy = np.asarray(plan.value.waypoints, dtype=np.float64)
            trajectory = np.concatenate([xy, codecs.waypoint_headings(xy)[:, None]], axis=1)
            valid, source, confidence = True, "model", plan.confidence
        else:
            reason = "no_planning_task" if plan is None else "unparsable_answer"
            trajectory = constant_velocity_trajectory(ego)
            valid, source, confidence = False, f"fallback:{reason}", 0.0
        perception = outputs.get("perception")
        understanding = outputs.get("understanding")
        return AgentOutput(
            trajectory=trajectory,
            valid=valid,
            source=source,
            confidence=confidence,
            detections=list(perception.value) if perception is not None and perception.value is not None else [],
            rationale=understanding.value if understanding is not None and understanding.value is not None else None,
            rationale_question=self.understanding_question if understanding is not None else "",
            tasks=outputs,
            latency_ms=1000.0 * (time.perf_counter() - start),
        )
