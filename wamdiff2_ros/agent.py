"""The driving agent: camera images + ego motion + command -> plan, boxes, rationale.

One object runs the three tasks of the model the same way for the ROS driving node
and for open-loop and closed-loop evaluation: build the prompt (codecs), decode
(``wamdiff2_ros.decoding``), parse the answer strictly, and fall back to a flagged
constant-velocity plan when the planning answer does not parse. It never raises on
model output. The parse and fallback rule is public so that scoring code that decodes
prompts itself applies the same one: :func:`parse_task_answer`, :func:`plan_or_fallback`.

A frame set is prepared once (:meth:`DrivingAgent.prepare`): its images are resized
once and, with the fast engine, encoded by one vision pass, and the prompt prefix its
tasks share is prefilled once; the tasks then continue from it (:meth:`DrivingAgent.run`),
planning first. The tokens are the same as decoding each task from scratch.

Importing this module does not import torch: the decoders and the model inputs are
imported by the methods that decode, since the light half (:class:`EgoMotion`, the parse
and fallback rules) serves torch-free code (closed-loop runner, ROS conversions, sim node).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from wamdiff2_ros.decoding.config import DecodeConfig, DecodeStats
from wamdiff2_ros.model import codecs, prompts
from wamdiff2_ros.model.checkpoints import is_threshold, own_plan_style

TASKS = ("planning", "perception", "understanding")
SCENE_WAIT_S = 1.0  # planning_priority: the longest a scene-lane denoise step waits for a plan to finish
# The rationale question the shipped checkpoints were trained on (data.samples.QUESTIONS["next_action"]).
DEFAULT_QUESTION = "What will the ego vehicle do in the next 4 seconds, and why? Answer as '<action>, because <reason>.'"


@dataclass(frozen=True)
class EgoMotion:
    """The agent's ego input: motion in the ego frame (REP 103: x forward, y left), m/s and m/s^2.

    Not NAVSIM's ``wamdiff2_ros.data.navsim.EgoStatus`` (a logged global-frame pose and state).
    """

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
    latency_ms: float = 0.0  # from the start of the frame set's prepare() to this output


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


def _kept_velocity(ego: EgoMotion) -> tuple[float, float]:
    """The velocity the constant-velocity plan keeps: the ego's, or standing still when its motion is not finite."""
    return ego.velocity if ego.is_finite() else (0.0, 0.0)


def constant_velocity_trajectory(ego: EgoMotion) -> np.ndarray:
    """Fallback plan: keep the current ego-frame velocity for 4 s; (8, 3) x, y, heading."""
    vx, vy = _kept_velocity(ego)
    xy = codecs.constant_velocity_waypoints((vx, vy))
    heading = math.atan2(vy, vx) if math.hypot(vx, vy) > 1e-3 else 0.0
    return np.concatenate([xy, np.full((len(xy), 1), heading)], axis=1)


def parse_task_answer(task: str, text: str, *, finished: bool = True,
                      max_new_tokens: int | None = None) -> tuple[object | None, str | None]:
    """The strict parse rule of every task: ``(value, None)`` or ``(None, reason)``.

    An answer that does not parse, or that was cut off (``finished`` False: no end token
    within ``max_new_tokens``), is an error, even when its text would parse.
    """
    parsed = codecs.parse_answer(task, text)
    if isinstance(parsed, codecs.ParseError):
        return None, parsed.reason
    if not finished:
        return None, f"no end token within max_new_tokens={max_new_tokens}"
    return parsed, None


def _trajectory_or_fallback(plan: object | None, ego: EgoMotion) -> tuple[np.ndarray, bool]:
    """(8, 3) x, y, heading of a parsed plan, else the constant-velocity fallback; and whether it fell back."""
    if plan is None:
        return constant_velocity_trajectory(ego), True
    xy = np.asarray(plan.waypoints, dtype=np.float64)
    return np.concatenate([xy, codecs.waypoint_headings(xy)[:, None]], axis=1), False


def ego_frame_plan(plan: codecs.PlanningAnswer, plan_style: str, ego: EgoMotion) -> codecs.PlanningAnswer:
    """The ego-frame waypoints a parsed answer means: a residual style's (``cv1``) plus the constant-velocity
    plan of the velocity its prompt reported (``codecs.plan_waypoints``); others as they are."""
    if plan_style not in codecs.RESIDUAL_STYLES:
        return plan
    return codecs.PlanningAnswer(codecs.plan_waypoints(plan, plan_style, _kept_velocity(ego)))


def plan_or_fallback(answer_text: str, ego: EgoMotion, *, finished: bool = True,
                     plan_style: str = "plain") -> tuple[np.ndarray, bool]:
    """What the agent drives for a planning answer: ``(trajectory, fell_back)``.

    ``trajectory`` is (8, 3) x, y, heading (``[:, :2]`` are the waypoints): the answer's
    plan when it parses strictly (:func:`parse_task_answer`; in ``plan_style``, the
    checkpoint's, :func:`ego_frame_plan`), else the constant-velocity fallback of ``ego``
    with ``fell_back`` True. ``finished``: the decode ended with its end token (a cut-off
    answer falls back).
    """
    plan, _ = parse_task_answer("planning", answer_text, finished=finished)
    return _trajectory_or_fallback(None if plan is None else ego_frame_plan(plan, plan_style, ego), ego)


class _Lane:
    """One decode lane of an agent: its own fast engine (created on first use) and a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.engine = None


@dataclass
class FrameContext:
    """One synchronized frame set, prepared once for its tasks (see :meth:`DrivingAgent.prepare`).

    ``stamp`` is the caller's (e.g. the input images' header stamp), carried unchanged
    so each task output can be published with the stamp of the frames it came from.
    ``prefix`` is the fast engine's shared prefix (None with the reference engine or
    ``shared_prefix=False``); ``outputs`` collects every task decoded on this frame set.
    """

    cameras: tuple[str, ...]
    ego: EgoMotion
    command: str
    questions: dict[str, str]
    inputs: dict[str, dict]
    prefix: Any = None
    stamp: Any = None
    started: float = 0.0  # time.perf_counter() when prepare() began
    prepare_ms: float = 0.0
    outputs: dict[str, TaskOutput] = field(default_factory=dict)

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.questions)

    @property
    def shared_prefix_tokens(self) -> int:
        """Prompt tokens prefilled once for all tasks (0 without a shared prefix)."""
        return 0 if self.prefix is None else int(self.prefix.length)


class DrivingAgent:
    """Runs the model's tasks on one synchronized input set.

    ``vla`` is a :class:`wamdiff2_ros.model.loader.WamDiff2`; ``tasks`` a subset of
    :data:`TASKS` (planning always runs first when present); ``cameras`` any of the
    eight NAVSIM cameras (images are put in the prompt in this order).
    ``vision_tokens_per_camera`` caps the vision tokens of each camera image (the
    image is resized to at most that many (patch x merge)^2 pixel cells);
    ``max_pixels`` is the same budget in pixels (give one of the two; neither = the
    checkpoint's default). ``shared_prefix`` (fast engine only): one vision pass and
    one prefill of the shared prompt prefix per frame set (False: every task decodes
    its whole prompt from scratch, as before; the tokens are the same).
    ``reject_backwards``: a plan that parses but goes backwards (its forward coordinate
    drops by more than ``codecs.BACKWARDS_TOLERANCE_M`` between waypoints: a lost digit of
    parallel decoding, never a plan of a car that does not reverse) is not driven; the
    flagged fallback ``fallback:plan_goes_backwards`` is (default False: every parsed plan is driven).
    ``planning_priority`` (fast engine): the scene lane (perception, understanding) pauses
    before each of its denoise steps while a plan decodes in the planning lane, at most
    ``SCENE_WAIT_S`` per step, so on a CPU the two decodes do not share the cores and the
    interpreter lock and the plan comes out at its own speed; tokens are unchanged.
    ``task_max_new_tokens``: answer budget of some tasks (e.g. a long perception
    answer), the others keep ``config.max_new_tokens``; rows batched together
    share the largest budget of their group.
    ``task_thresholds``: confidence threshold of some tasks (e.g. planning fast at a low
    threshold, the free-text rationale at a high one), the others keep
    ``config.confidence_threshold``; only tasks of one threshold are batched together.
    ``end_in_order_tasks``: tasks decoded with ``DecodeConfig.end_in_order`` (an end token
    waits for every earlier position of its block: a short rationale is not cut), besides
    all of them when ``config.end_in_order``; only tasks of one rule are batched together.
    ``reuse_kv_tasks``: tasks decoded with ``DecodeConfig.reuse_committed_kv`` (approximate:
    committed block positions' keys and values reused), besides all of them when
    ``config.reuse_committed_kv``; likewise batched only with tasks of the same rule.
    ``batch_tasks``: decode the non-planning tasks of one :meth:`run` as rows of one
    batch (True), one after another from the shared prefix (False), or "auto": batch
    on CUDA, where a row more is nearly free, and not on the CPU, where a 2-row batch
    was measured slower than the two rows in turn (``bench/agent_tasks.py``).

    Two ways to use it:

    * ``step(images, ego, command) -> AgentOutput``: every configured task on one frame
      set, one combined output (evaluation, simple loops).
    * planning first, the other tasks when the caller wants them::

          ctx = agent.prepare(images, ego, command, stamp=stamp)  # images encoded once
          plan = agent.run(ctx, ["planning"])["planning"]          # decoded alone, at once
          ...                                                      # publish the plan
          rest = agent.run(ctx, ["perception", "understanding"])   # later, same ctx (another thread is fine)
          out = agent.assemble(ctx)                                # AgentOutput of all so far

      ``run(ctx)`` with several tasks decodes planning first on its own and calls
      ``on_output(ctx, task_output)`` as soon as it is parsed, then the remaining tasks
      (as rows of one batch with ``batch_tasks``). The first decode of a frame set
      prefills its whole prompt and keeps the shared part, so planning alone costs no
      more than before. A ctx may be run any number of times (its prefix
      stays valid; decoding other frame sets in between does not disturb it).

    Threads: planning and the other tasks decode in two lanes, each with its own fast
    engine (static KV cache and CUDA graphs; the weights are shared), so a planning
    thread never waits for a perception or rationale decode running in another thread.
    Calls in the same lane take turns (a lock); :meth:`prepare` may run at any time.
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
        vision_tokens_per_camera: int | None = None,
        shared_prefix: bool = True,
        batch_tasks: bool | str = "auto",
        task_max_new_tokens: Mapping[str, int] | None = None,
        task_thresholds: Mapping[str, float] | None = None,
        end_in_order_tasks: Sequence[str] = (),
        reuse_kv_tasks: Sequence[str] = (),
        reject_backwards: bool = False,
        planning_priority: bool = True,
    ) -> None:
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise ValueError(f"tasks must be a non-empty subset of {TASKS}, got {list(tasks)}")
        bad_cams = [c for c in cameras if c not in prompts.CAMERAS]
        if bad_cams or not cameras:
            raise ValueError(f"cameras must be a non-empty subset of {prompts.CAMERAS}, got {list(cameras)}")
        prompts.understanding_question(understanding_question)  # validates the text
        self.vla = vla
        self.config = config
        self.cameras = tuple(cameras)
        self.tasks = tuple(sorted(set(tasks), key=TASKS.index))
        self.understanding_question = understanding_question
        if vision_tokens_per_camera is not None:
            if max_pixels is not None:
                raise ValueError("give max_pixels or vision_tokens_per_camera, not both")
            if getattr(vla, "processor", None) is None:
                raise ValueError("vision_tokens_per_camera needs a checkpoint with an image processor")
            max_pixels = vla.processor.max_pixels_for_tokens(vision_tokens_per_camera)
        self.max_pixels = max_pixels
        self.vision_tokens_per_camera = vision_tokens_per_camera
        self.shared_prefix = bool(shared_prefix) and config.engine == "fast"
        if batch_tasks not in (True, False, "auto"):
            raise ValueError(f'batch_tasks must be true, false or "auto", got {batch_tasks!r}')
        self.batch_tasks = config.device.startswith("cuda") if batch_tasks == "auto" else bool(batch_tasks)
        self._lanes = {"planning": _Lane(), "scene": _Lane()}  # planning | perception + understanding
        budgets = dict(task_max_new_tokens or {})
        bad = {t: n for t, n in budgets.items()
               if t not in TASKS or isinstance(n, bool) or not isinstance(n, int) or n < 1}
        if bad:
            raise ValueError(f"task_max_new_tokens must map tasks of {TASKS} to integers >= 1, got {bad}")
        self.task_max_new_tokens = budgets
        thresholds = dict(task_thresholds or {})
        bad = {t: v for t, v in thresholds.items() if t not in TASKS or not is_threshold(v)}
        if bad:
            raise ValueError(f"task_thresholds must map tasks of {TASKS} to numbers in [0, 1], got {bad}")
        self.task_thresholds = {t: float(v) for t, v in thresholds.items()}
        for name, named in (("end_in_order_tasks", end_in_order_tasks), ("reuse_kv_tasks", reuse_kv_tasks)):
            if isinstance(named, str) or any(t not in TASKS for t in named):
                raise ValueError(f"{name} must be a list of tasks of {TASKS}, got {named!r}")
        self.end_in_order_tasks = frozenset(end_in_order_tasks)
        self.reuse_kv_tasks = frozenset(reuse_kv_tasks)
        if self.reuse_kv_tasks and config.engine != "fast":
            raise ValueError(f"reuse_kv_tasks {sorted(self.reuse_kv_tasks)} need the fast engine, not {config.engine!r}")
        self.reject_backwards = bool(reject_backwards)
        self.planning_priority = bool(planning_priority)
        # the plan style the checkpoint answers in (generation_config.json; a residual one is turned into waypoints)
        self.plan_style = own_plan_style(getattr(vla, "path", None))
        self._planning_idle = threading.Event()  # cleared while a plan decodes (the planning lane's lock is held)
        self._planning_idle.set()

    def question(self, task: str, cameras: Sequence[str], ego: EgoMotion, command: str) -> str:
        n = len(cameras)
        if task == "planning":
            cmd = command if command in prompts.DRIVING_COMMANDS else "unknown"
            return prompts.planning_question(cmd, ego.velocity, ego.acceleration, num_images=n, cameras=cameras)
        if task == "perception":
            return prompts.perception_question(num_images=n, cameras=cameras)
        return prompts.understanding_question(self.understanding_question, num_images=n, cameras=cameras)

    def run_task(self, task: str, images: Mapping[str, np.ndarray], ego: EgoMotion, command: str) -> TaskOutput:
        """One task from scratch: its own image preprocessing, vision pass and full prefill (no sharing)."""
        # in the method: torch (see the module docstring)
        from wamdiff2_ros.decoding import generate
        from wamdiff2_ros.model.inputs import build_inputs

        cameras = [c for c in self.cameras if c in images]
        question = self.question(task, cameras, ego, command)
        inputs = build_inputs(self.vla, question, [images[c] for c in cameras], max_pixels=self.max_pixels)
        config = self.config_for([task])
        result = generate(self.vla, inputs, config)
        return self._task_output(task, question, result, 0, result.stats, ego, config)

    def prepare(self, images: Mapping[str, np.ndarray], ego: EgoMotion, command: str, *,
                tasks: Sequence[str] | None = None, stamp: Any = None) -> FrameContext:
        """Encode one frame set for ``tasks`` (default: the configured ones).

        Builds every task's prompt, resizes the images once and, with the shared prefix
        on, runs the vision tower once and prefills the longest prefix all the task
        prompts share (down to a B-chunk boundary). Raises ValueError when no image of
        the configured cameras is given or a task is not configured.
        """
        # in the method: torch (see the module docstring)
        from wamdiff2_ros.decoding.api import encode_prefix
        from wamdiff2_ros.model.inputs import build_frame_inputs

        started = time.perf_counter()
        cameras = tuple(c for c in self.cameras if c in images)
        if not cameras:
            raise ValueError(f"no image of the configured cameras {self.cameras}")
        tasks = self._tasks(tasks)
        questions = {task: self.question(task, cameras, ego, command) for task in tasks}
        built = build_frame_inputs(self.vla, list(questions.values()), [images[c] for c in cameras],
                                   max_pixels=self.max_pixels)
        inputs = dict(zip(tasks, built, strict=True))
        prefix = None
        if self.shared_prefix:
            prefix = encode_prefix(self.vla, built, self.config)
        return FrameContext(cameras, ego, command, questions, inputs, prefix, stamp, started,
                            1000.0 * (time.perf_counter() - started))

    def run(self, ctx: FrameContext, tasks: Sequence[str] | None = None, *,
            on_output: Callable[[FrameContext, TaskOutput], None] | None = None,
            planning_first: bool = True) -> dict[str, TaskOutput]:
        """Decode ``tasks`` (default: all of ``ctx``) of a prepared frame set; returns them by task.

        Planning (when asked, and ``planning_first``) is decoded on its own first; the
        other tasks follow as rows of one batch (``batch_tasks``; one at a time without
        a shared prefix).
        ``on_output(ctx, output)`` is called for each task as soon as it is parsed.
        The outputs are also kept in ``ctx.outputs``.
        """
        tasks = self._tasks(tasks, ctx)
        groups = [[t] for t in tasks if t == "planning"] if planning_first else []
        rest = [t for t in tasks if not (planning_first and t == "planning")]
        if rest:
            if ctx.prefix is not None and self.batch_tasks:  # rows of one batch share one decode rule
                by_rule: dict[tuple[float, bool, bool], list[str]] = {}
                for t in rest:
                    by_rule.setdefault(self.rule_of(t), []).append(t)
                groups += list(by_rule.values())
            else:
                groups += [[t] for t in rest]
        results: dict[str, TaskOutput] = {}
        for group in groups:
            for output in self._decode_group(ctx, group):
                results[output.task] = ctx.outputs[output.task] = output
                if on_output is not None:
                    on_output(ctx, output)
        return results

    def assemble(self, ctx: FrameContext, outputs: Mapping[str, TaskOutput] | None = None) -> AgentOutput:
        """One :class:`AgentOutput` from task outputs of ``ctx`` (default: all decoded so far).

        The plan is the model's when the planning answer parsed, else a flagged
        constant-velocity fallback. ``latency_ms`` runs from prepare() to now.
        """
        outputs = dict(ctx.outputs if outputs is None else outputs)
        plan = outputs.get("planning")
        value = None if plan is None else plan.value
        backwards = (self.reject_backwards and value is not None
                     and codecs.plan_goes_backwards(value.waypoints))
        trajectory, fell_back = _trajectory_or_fallback(None if backwards else value, ctx.ego)
        if not fell_back:
            valid, source, confidence = True, "model", plan.confidence
        else:
            reason = ("no_planning_task" if plan is None else "plan_goes_backwards" if backwards
                      else "unparsable_answer")
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
            latency_ms=1000.0 * (time.perf_counter() - ctx.started),
        )

    def step(self, images: Mapping[str, np.ndarray], ego: EgoMotion, command: str) -> AgentOutput:
        """Run every configured task; always returns a usable (possibly fallback) plan."""
        ctx = self.prepare(images, ego, command)
        self.run(ctx)
        return self.assemble(ctx)

    # -- internals ----------------------------------------------------------------------
    def _tasks(self, tasks: Sequence[str] | None, ctx: FrameContext | None = None) -> tuple[str, ...]:
        allowed = self.tasks if ctx is None else ctx.tasks
        if tasks is None:
            return allowed
        if isinstance(tasks, str):
            tasks = [tasks]
        unknown = [t for t in tasks if t not in allowed]
        if unknown or not tasks:
            where = "configured" if ctx is None else "prepared for this frame set"
            raise ValueError(f"tasks must be a non-empty subset of the {where} tasks {allowed}, got {list(tasks)}")
        return tuple(sorted(set(tasks), key=TASKS.index))

    def _decode_group(self, ctx: FrameContext, group: list[str]) -> list[TaskOutput]:
        """Decode ``group`` (one task, or several as rows of one batch from the shared prefix)."""
        # in the method: torch (see the module docstring)
        from wamdiff2_ros.decoding.api import check_model
        from wamdiff2_ros.decoding.fast import FastEngine

        config = self.config_for(group)
        check_model(self.vla, config)
        planning = "planning" in group
        lane = self._lanes["planning" if planning else "scene"]
        with lane.lock:
            if self.config.engine == "fast" and lane.engine is None:
                lane.engine = FastEngine(self.vla)
                if not planning and self.planning_priority:
                    lane.engine.between_steps = self._yield_to_planning
            if planning:
                self._planning_idle.clear()
            try:
                result, stats = self._decode_in_lane(lane, ctx, group, config)
            finally:
                if planning:
                    self._planning_idle.set()
        done = 1000.0 * (time.perf_counter() - ctx.started)
        outputs = []
        for i, task in enumerate(group):
            output = self._task_output(task, ctx.questions[task], result, i, stats[i], ctx.ego, config)
            output.latency_ms = done
            outputs.append(output)
        return outputs

    def _yield_to_planning(self) -> None:
        """The scene lane's scheduling point: wait while a plan decodes (at most ``SCENE_WAIT_S``)."""
        self._planning_idle.wait(SCENE_WAIT_S)

    def _decode_in_lane(self, lane: _Lane, ctx: FrameContext, group: list[str],
                        config: DecodeConfig) -> tuple[Any, list[DecodeStats]]:
        """Decode ``group`` of ``ctx`` with ``lane``'s engine (the caller holds the lane's lock)."""
        # in the method: torch (see the module docstring)
        from wamdiff2_ros.decoding.api import generate
        from wamdiff2_ros.decoding.outputs import row_stats

        if ctx.prefix is not None:
            rows = [ctx.tasks.index(t) for t in group]
            result = lane.engine.generate_from_prefix(ctx.prefix, rows, config)
            return result, [row_stats(result, i, ctx.prefix.prompts[r].real_tokens) for i, r in enumerate(rows)]
        if lane.engine is not None:
            result = lane.engine.generate(ctx.inputs[group[0]], config)
        else:
            result = generate(self.vla, ctx.inputs[group[0]], config)
        return result, [result.stats]

    def threshold_of(self, task: str) -> float:
        """The confidence threshold ``task`` decodes at: its own (``task_thresholds``) or ``config``'s."""
        return self.task_thresholds.get(task, self.config.confidence_threshold)

    def end_in_order_of(self, task: str) -> bool:
        """Whether ``task`` decodes with ``DecodeConfig.end_in_order`` (``end_in_order_tasks`` or ``config``'s)."""
        return self.config.end_in_order or task in self.end_in_order_tasks

    def reuse_kv_of(self, task: str) -> bool:
        """Whether ``task`` decodes with ``DecodeConfig.reuse_committed_kv`` (``reuse_kv_tasks`` or ``config``'s)."""
        return self.config.reuse_committed_kv or task in self.reuse_kv_tasks

    def rule_of(self, task: str) -> tuple[float, bool, bool]:
        """(threshold, end_in_order, reuse_committed_kv) of ``task``: only tasks of one rule share a batch."""
        return self.threshold_of(task), self.end_in_order_of(task), self.reuse_kv_of(task)

    def config_for(self, tasks: Sequence[str]) -> DecodeConfig:
        """The decode config of a group of tasks: ``config`` with the group's largest answer budget and its rule
        (threshold, end rule, reused keys)."""
        budget = max(self.task_max_new_tokens.get(t, self.config.max_new_tokens) for t in tasks)
        rules = {self.rule_of(t) for t in tasks}
        if len(rules) > 1:
            raise ValueError(f"tasks {list(tasks)} decode by different rules (threshold, end tokens in order, reused "
                             f"keys) {sorted(rules)}: not one batch")
        threshold, end, reuse = rules.pop()
        wanted = {"confidence_threshold": threshold, "end_in_order": end, "reuse_committed_kv": reuse,
                  "max_new_tokens": budget}
        changes = {k: v for k, v in wanted.items() if getattr(self.config, k) != v}
        return replace(self.config, **changes) if changes else self.config

    def _task_output(self, task: str, question: str, result, row: int, stats: DecodeStats, ego: EgoMotion,
                     config: DecodeConfig | None = None) -> TaskOutput:
        """Parse row ``row`` of a :class:`DecodeResult` strictly into a :class:`TaskOutput` (a plan as ego-frame
        waypoints, :func:`ego_frame_plan`)."""
        text = result.texts[row]
        value, error = parse_task_answer(task, text, finished=bool(result.finished[row]),
                                         max_new_tokens=(config or self.config).max_new_tokens)
        if task == "planning" and value is not None:
            value = ego_frame_plan(value, self.plan_style, ego)
        token_conf = result.token_confidences[row] if result.token_confidences else []
        return TaskOutput(task, question, text, value, error, float(result.confidences[row]), stats,
                          list(result.tokens[row]), list(token_conf))
