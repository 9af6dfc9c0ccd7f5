"""drive_node: cameras + ego state + command -> WAM-Diff2 -> trajectory, boxes, rationale.

Callbacks only validate and store inputs; the newest synchronized frame set is kept
(one replaced before any worker took it counts as a drop). Planning first: a planning
thread decodes the plan on the newest set at ``planning_rate_hz`` and publishes the
Trajectory and Path the moment it is parsed; a scene thread runs perception and
understanding at their own rates (``perception_rate_hz``, ``understanding_rate_hz``;
0 = off) on the newest set. The two threads use the agent's two decode lanes, so a
scene decode never waits for nor blocks a plan, and the scene thread runs at a lower OS
priority (``scene_thread_nice``) so a short CPU goes to planning first; a frame set is
prepared once (one vision pass, one shared prefix) by whichever thread takes it first. The model is loaded before any
subscription exists, so the node is ready when it starts listening. Every output
(and its DecodeStats) is stamped with the stamp of the frame set it came from,
frame ``base_frame``; /diagnostics counts decodes, latency and rate per task. Nothing a peer sends can crash it:
bad images, NaN ego states, out-of-order stamps and unparsable answers are counted
and reported on /diagnostics; a bad plan becomes a flagged constant-velocity one.

Time: the task rates, camera timeouts and ego freshness are judged on the node's ROS
clock (``use_sim_time:=true`` follows ``/clock``: a slowed or paused replay stops no
camera); latency is wall time. Names: outputs are relative (``wamdiff2/...`` in the
node's namespace), inputs are parameters (relative by default) or remaps;
``/diagnostics`` stays global as ROS tools expect. Counters and arrival times are
shared between the executor and the worker thread only under ``stats_lock``.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from wamdiff2_ros.agent import DEFAULT_QUESTION, TASKS, DrivingAgent, EgoMotion
from wamdiff2_ros.decoding.config import DTYPES, ENGINES, DecodeConfig
from wamdiff2_ros.model.checkpoints import (
    DEFAULT_STUDENT,
    decode_threshold,
    own_end_in_order_tasks,
    own_reuse_kv_tasks,
    own_task_thresholds,
)
from wamdiff2_ros.model.prompts import CAMERAS, DRIVING_COMMANDS
from wamdiff2_ros.ros import conversions as conv
from wamdiff2_ros.ros.checkpoint_paths import find_checkpoint
from wamdiff2_ros.ros.ego_history import EgoHistory
from wamdiff2_ros.ros.image_conversion import ImageError, compressed_to_rgb, image_to_rgb
from wamdiff2_ros.ros.msg_utils import stamp_to_ns
from wamdiff2_ros.ros.node_main import run_node
from wamdiff2_ros.ros.params import ParameterError, declare, in_range, one_of, spec, subset_of
from wamdiff2_ros.ros.sync import FrameSet, FrameSynchronizer
from wamdiff2_ros.ros.task_rates import RateGate, TaskBook

# rclpy and the message classes (wamdiff2_ros.msg is built by colcon) are imported in the
# methods that use them: they exist only in a ROS install, and this module imports without.

# /diagnostics warns when at least this share of the last FALLBACK_WINDOW plans (and at least FALLBACK_MIN of them)
# were the constant-velocity fallback: the model is not answering these inputs (e.g. cameras it was not trained on)
FALLBACK_WINDOW, FALLBACK_MIN, FALLBACK_WARN_SHARE = 20, 10, 0.9
RATE_PARAMS = {"planning": "planning_rate_hz", "perception": "perception_rate_hz",
               "understanding": "understanding_rate_hz"}
LANES = {"planning": ("planning",), "scene": ("perception", "understanding")}  # one worker thread each

PARAMS = [
    spec("model_path", "", "checkpoint directory; empty = the shipped default; 'preset:tiny' = random weights"),
    spec("cameras", ["CAM_F0"], "NAVSIM camera names fed to the model, reference first", subset_of(CAMERAS)),
    spec("camera_topics", ["cameras/CAM_F0/image"], "one image topic per camera, same order"),
    spec("image_transport", "raw", "sensor_msgs/Image (raw) or CompressedImage (compressed)", one_of("raw", "compressed")),
    spec("ego_topic", "ego/odometry", "nav_msgs/Odometry of the ego vehicle (twist in base_link)"),
    spec("accel_topic", "ego/accel", "geometry_msgs/AccelStamped in base_link; empty = differentiate odometry"),
    spec("command_topic", "driving_command", "wamdiff2_ros/DrivingCommand (transient local: the last one sent is kept)"),
    spec("scene_info_topic", "navsim/scene_info", "wamdiff2_ros/SceneInfo from the replay node; empty = none"),
    spec("base_frame", "base_link", "frame id of every output (e.g. ego_vehicle for the CARLA bridge)"),
    spec("tasks", ["planning", "perception", "understanding"], "tasks run per frame set", subset_of(TASKS)),
    spec("understanding_question", DEFAULT_QUESTION, "question of the rationale task"),
    spec("block_size", 32, "diffusion block size B (1 = autoregressive)", in_range(1, 256)),
    spec("confidence_threshold", -1.0, "commit threshold of a denoise step; -1 = the checkpoint's own "
         "(generation_config.json confidence_threshold, else 0.9)", in_range(-1.0, 1.0)),
    spec("max_new_tokens", 160, "answer token budget per task", in_range(8, 4096)),
    spec("perception_confidence_threshold", -1.0, "commit threshold of perception; -1 = the checkpoint's own for "
         "perception (generation_config.json task_confidence_thresholds) when confidence_threshold is -1 too, else "
         "confidence_threshold's", in_range(-1.0, 1.0)),
    spec("understanding_confidence_threshold", -1.0, "commit threshold of the rationale (free text suffers most from "
         "low thresholds); -1 as perception_confidence_threshold", in_range(-1.0, 1.0)),
    spec("end_in_order_tasks", "auto", "tasks whose end token waits for every earlier position of its block (a short "
         "answer is not cut): 'auto' = the checkpoint's own (generation_config.json end_in_order_tasks), 'none', "
         "or a comma list of tasks", (lambda v: task_list_error(v), "auto, none or a comma list of tasks")),
    spec("reuse_kv_tasks", "auto", "tasks decoded with reused committed keys and values (approximate, faster; fast "
         "engine): 'auto' = the checkpoint's own (generation_config.json reuse_kv_tasks), 'none', or a comma list of "
         "tasks", (lambda v: task_list_error(v), "auto, none or a comma list of tasks")),
    spec("perception_max_new_tokens", 0, "answer budget of perception (many boxes); 0 = max_new_tokens",
         in_range(0, 4096)),
    spec("understanding_max_new_tokens", 0, "answer budget of the rationale; 0 = max_new_tokens", in_range(0, 4096)),
    spec("reject_backwards_plans", False, "a parsed plan whose forward coordinate drops by more than 0.5 m between "
         "waypoints (a lost digit of parallel decoding) is not published; the flagged fallback "
         "'fallback:plan_goes_backwards' is"),
    spec("engine", "fast", "decoder engine", one_of(*ENGINES)),
    spec("device", "cpu", "torch device: cpu or cuda[:N]"),
    spec("dtype", "float32", "model dtype", one_of(*DTYPES)),
    spec("planning_rate_hz", 10.0, "at most this many plans per second, each on the newest frame set; 0 = no "
         "planning", in_range(0.0, 100.0), read_only=False),
    spec("perception_rate_hz", 1.0, "at most this many perception decodes per second, on the newest frame set, "
         "never delaying a plan; 0 = off", in_range(0.0, 100.0), read_only=False),
    spec("understanding_rate_hz", 0.5, "at most this many rationales per second, on the newest frame set, never "
         "delaying a plan; 0 = off", in_range(0.0, 100.0), read_only=False),
    spec("scene_thread_nice", 10, "OS niceness of the perception/understanding thread (Linux): when the CPU is "
         "short the planning thread gets it first; 0 = same priority as planning", in_range(0, 19)),
    spec("max_rate_hz", 0.0, "former name of planning_rate_hz: when > 0 it is the planning rate", in_range(0.0, 100.0),
         read_only=False),
    spec("sync_slop_s", 0.05, "camera stamps within this many seconds form one set", in_range(0.0, 10.0)),
    spec("camera_timeout_s", 1.0, "a camera silent this long is left out of sets", in_range(0.05, 60.0)),
    spec("stale_after_s", 2.0, "frames older than the newest stamp by this much are dropped", in_range(0.05, 600.0)),
    spec("ego_timeout_s", 1.0, "ego state whose stamp is this far from the images' is not used", in_range(0.05, 60.0)),
    spec("ego_wait_s", 0.05, "a frame set waits (wall seconds, in the worker) at most this long for odometry and "
         "acceleration stamped at or after its own stamp, then takes the state nearest its stamp; 0 = no wait",
         in_range(0.0, 5.0)),
    spec("require_ego", False, "plan only frame sets that have their ego state (odometry within ego_timeout_s): "
         "a set without one waits for it while it is the newest set, and is skipped when a newer one comes "
         "(diagnostics: skipped_no_ego). For a lock-step simulator's start, which sends t = 0's state again until "
         "a plan comes"),
    spec("max_pixels", 0, "vision budget per image in pixels; 0 = the model's default", in_range(0, 4096 * 4096)),
    spec("vision_tokens_per_camera", 0, "vision tokens per camera image (the image is resized to fit); 0 = the "
         "model's default; give this or max_pixels", in_range(0, 65536)),
    spec("diagnostics_rate_hz", 1.0, "/diagnostics messages per second (wall clock)", in_range(0.1, 100.0)),
    spec("torch_threads", 1, "CPU threads for torch (0 = torch's default); more threads than free cores "
         "slows a small model down by orders of magnitude", in_range(0, 256)),
]


def _cross_check(values: dict[str, Any]) -> str | None:
    if len(values["camera_topics"]) != len(values["cameras"]):
        return (
            f"camera_topics has {len(values['camera_topics'])} entries but cameras has {len(values['cameras'])}; "
            "give one topic per camera"
        )
    if values["max_pixels"] and values["vision_tokens_per_camera"]:
        return "give max_pixels or vision_tokens_per_camera, not both (the other = 0)"
    device = values["device"]
    if not (device == "cpu" or device.startswith("cuda")):
        return f"parameter 'device' = {device!r} refused: must be cpu or cuda[:N]"
    return None


def task_list_error(value: Any) -> str | None:
    """Why a task-list parameter (``end_in_order_tasks``, ``reuse_kv_tasks``) is refused, or None."""
    if not isinstance(value, str):
        return "must be a string"
    bad = [t for t in task_list(value, ()) if t not in TASKS]
    return f"unknown tasks {bad}; give 'auto', 'none' or a comma list of {list(TASKS)}" if bad else None


def task_list(value: str, own: tuple[str, ...]) -> tuple[str, ...]:
    """The tasks a task-list parameter names: the parameter, or the checkpoint's own for 'auto'."""
    if value == "auto":
        return tuple(own)
    return () if value == "none" else tuple(t.strip() for t in value.split(","))


def scene_thresholds(params: dict[str, Any], own: dict[str, float]) -> dict[str, float]:
    """Perception's and understanding's own thresholds: the task's parameter when set (>= 0), else the
    checkpoint's own for the task (``own``, given only when ``confidence_threshold`` is the checkpoint's too);
    a task in neither decodes at the planning threshold (left out)."""
    out = {}
    for task in ("perception", "understanding"):
        given = float(params[f"{task}_confidence_threshold"])
        if given >= 0:
            out[task] = given
        elif task in own:
            out[task] = float(own[task])
    return out


class NoEgoState(Exception):
    """A frame set without its ego state, under ``require_ego``: not planned."""


@dataclass
class Job:
    """One synchronized frame set with its inputs; prepared (``ctx``) once, by the first worker that takes it."""

    frames: FrameSet
    command: str
    scene_token: str
    received_ns: int
    received_wall_ns: int = 0  # monotonic, for latency (received_ns is on the node's clock)
    seq: int = 0
    taken: bool = False  # some worker decoded it (else a newer set replacing it is a drop)
    ctx: Any = None
    ctx_lock: threading.Lock = field(default_factory=threading.Lock)


def resolve_model(path: str, device: str = "cpu", dtype: str = "float32"):
    """Load the model named by the parameter (see ``model_path``); returns (vla, label).

    Random weights only for an explicit ``preset:NAME``. An empty path is the shipped
    student, found through the ament index (ros.checkpoint_paths); a missing or
    unloadable checkpoint raises ParameterError saying where it looked.
    """
    from pathlib import Path

    # in the function: torch, so that parameters are checked (a bad one refused) before the seconds it takes
    import torch

    from wamdiff2_ros.model.loader import init_model, load_model

    torch_dtype = getattr(torch, dtype)
    if path.startswith("preset:"):
        return init_model(path.split(":", 1)[1], device=device, dtype=torch_dtype), f"{path} (random weights)"
    if not path:
        found, looked = find_checkpoint(DEFAULT_STUDENT)
        if found is None:
            raise ParameterError(
                f"model_path is empty and the shipped checkpoint '{DEFAULT_STUDENT}' is not installed; looked in "
                f"{', '.join(str(d) for d in looked)}. Build the package with colcon (it installs checkpoints/ to "
                "share/wamdiff2_ros/checkpoints), give model_path:=<checkpoint directory>, or model_path:=preset:tiny "
                "for random weights"
            )
        path = str(found)
    elif not (Path(path) / "config.json").is_file():
        raise ParameterError(f"model_path '{path}' holds no checkpoint: no config.json in {Path(path).resolve()}")
    try:
        return load_model(path, device=device, dtype=torch_dtype), path
    except (OSError, ValueError, KeyError) as exc:
        raise ParameterError(f"model_path '{path}' could not be loaded: {type(exc).__name__}: {exc}") from exc


class DriveNode:
    """Wraps an rclpy Node (composition keeps rclpy out of module import)."""

    def __init__(self, node) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import AccelStamped
        from nav_msgs.msg import Odometry, Path
        from rclpy.clock import Clock, ClockType
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from sensor_msgs.msg import CompressedImage, Image
        from visualization_msgs.msg import MarkerArray

        from wamdiff2_ros.msg import DecodeStats, DetectionArray, DrivingCommand, Rationale, SceneInfo, Trajectory

        self.node = node
        self.p = declare(node, PARAMS, _cross_check)
        self.log = node.get_logger()
        self.stats_lock = threading.Lock()  # counts, latencies, arrivals, sync, last_error
        self.counts: Counter = Counter()
        self.books: dict[str, TaskBook] = {t: TaskBook() for t in TASKS}  # per task: latencies, output times
        self.recent_fallbacks: deque[bool] = deque(maxlen=FALLBACK_WINDOW)  # the last plans: fell back or not
        self.arrivals: dict[str, deque[int]] = {c: deque(maxlen=50) for c in self.p["cameras"]}
        self.model_state = "loading"
        self.model_label = ""
        self.last_error = ""

        self.diag_pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.publish_diagnostics()
        if self.p["torch_threads"]:
            import torch

            torch.set_num_threads(int(self.p["torch_threads"]))
        self.log.info("loading model ...")
        vla, self.model_label = resolve_model(self.p["model_path"], self.p["device"], self.p["dtype"])
        try:
            threshold = decode_threshold(float(self.p["confidence_threshold"]), getattr(vla, "path", None))
            own = own_task_thresholds(getattr(vla, "path", None)) if self.p["confidence_threshold"] < 0 else {}
            ends = task_list(self.p["end_in_order_tasks"], own_end_in_order_tasks(getattr(vla, "path", None)))
            reused = task_list(self.p["reuse_kv_tasks"], own_reuse_kv_tasks(getattr(vla, "path", None)))
        except ValueError as exc:
            raise ParameterError(f"model_path: {exc}") from None
        task_thresholds = scene_thresholds(self.p, own)
        if reused and self.p["engine"] != "fast":  # the reference engine decodes exactly
            self.log.warning(f"reuse_kv_tasks {', '.join(reused)}: needs engine 'fast'; decoding exactly")
            reused = ()
        config = DecodeConfig(
            block_size=int(self.p["block_size"]),
            confidence_threshold=threshold,
            max_new_tokens=int(self.p["max_new_tokens"]),
            engine=self.p["engine"],
            device=self.p["device"],
            dtype=self.p["dtype"],
        )
        self.log.info(f"decode confidence threshold {threshold:g}"
                      + (" (the checkpoint's own)" if self.p["confidence_threshold"] < 0 else "")
                      + "".join(f", {task} {value:g}" for task, value in task_thresholds.items())
                      + (f"; end tokens in order: {', '.join(ends)}" if ends else "")
                      + (f"; reused committed keys: {', '.join(reused)}" if reused else ""))
        self.agent = DrivingAgent(
            vla,
            config,
            cameras=self.p["cameras"],
            tasks=self.p["tasks"],
            understanding_question=self.p["understanding_question"],
            max_pixels=int(self.p["max_pixels"]) or None,
            vision_tokens_per_camera=int(self.p["vision_tokens_per_camera"]) or None,
            task_max_new_tokens={t: int(self.p[f"{t}_max_new_tokens"]) for t in ("perception", "understanding")
                                 if self.p[f"{t}_max_new_tokens"]},
            task_thresholds=task_thresholds,
            end_in_order_tasks=[t for t in ends if t in self.p["tasks"]],
            reuse_kv_tasks=[t for t in reused if t in self.p["tasks"]],
            reject_backwards=bool(self.p["reject_backwards_plans"]),
        )
        self.block_size = config.block_size

        self.frame_id = self.p["base_frame"]
        self.tokenizer = getattr(vla, "tokenizer", None)
        self.pub_traj = node.create_publisher(Trajectory, "wamdiff2/trajectory", 10)
        self.pub_path = node.create_publisher(Path, "wamdiff2/path", 10)
        self.pub_det = node.create_publisher(DetectionArray, "wamdiff2/detections", 10)
        self.pub_markers = node.create_publisher(MarkerArray, "wamdiff2/detection_markers", 10)
        self.pub_rationale = node.create_publisher(Rationale, "wamdiff2/rationale", 10)
        self.pub_stats = node.create_publisher(DecodeStats, "wamdiff2/decode_stats", 10)

        self.sync = FrameSynchronizer(
            cameras=list(self.p["cameras"]),
            slop_ns=int(self.p["sync_slop_s"] * 1e9),
            camera_timeout_ns=int(self.p["camera_timeout_s"] * 1e9),
            stale_ns=int(self.p["stale_after_s"] * 1e9),
        )
        self.lock = threading.Lock()
        self.wakeup = threading.Condition(self.lock)
        self.newest: Job | None = None  # the newest frame set; every worker takes the newest when its task is due
        self.seq = 0
        self.stopping = False
        # odometry and acceleration by stamp: a set is planned on the state of its own stamp (ros.ego_history)
        self.ego_history = EgoHistory(accel_expected=bool(self.p["accel_topic"]))
        self.ego_arrived = threading.Condition(self.lock)  # a worker waiting for its set's state wakes on it
        self.ego_ok = False
        self.ego_received_ns = -(10**30)
        self.command = "unknown"
        self.scene_tokens: dict[int, str] = {}

        compressed = self.p["image_transport"] == "compressed"
        node.create_subscription(Odometry, self.p["ego_topic"], self.on_odometry, 10)
        if self.p["accel_topic"]:
            node.create_subscription(AccelStamped, self.p["accel_topic"], self.on_accel, 10)
        # transient local: a route command sent before this node started still arrives
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(DrivingCommand, self.p["command_topic"], self.on_command, latched)
        if self.p["scene_info_topic"]:
            node.create_subscription(SceneInfo, self.p["scene_info_topic"], self.on_scene_info, 50)
        # cameras last: rclpy's executor takes ready subscriptions in creation order, so when callbacks queue up
        # the ego state, command and scene info sent before a frame's images are taken before the image that
        # completes the frame set (otherwise the set is planned on the previous ego state, or none at all)
        for camera, topic in zip(self.p["cameras"], self.p["camera_topics"], strict=True):
            node.create_subscription(
                CompressedImage if compressed else Image,
                topic,
                lambda msg, c=camera: self.on_image(c, msg, compressed),
                qos_profile_sensor_data,
            )
        # planning and the scene tasks in two threads, each on its own decode lane of the agent:
        # a perception or rationale decode never delays a plan
        self.workers = [threading.Thread(target=self.run_worker, args=(lane,), name=f"wamdiff2_{lane}", daemon=True)
                        for lane, tasks in LANES.items() if set(tasks) & set(self.agent.tasks)]
        self.model_state = "ready"
        for worker in self.workers:
            worker.start()
        # diagnostics on the steady clock: a paused /clock must not silence health reports
        node.create_timer(1.0 / self.p["diagnostics_rate_hz"], self.publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.publish_diagnostics()
        rates = {t: self.rate_hz(t) for t in self.agent.tasks}
        if not any(rates.values()):
            self.log.warning(f"every task's rate is 0 {rates}: nothing runs until a rate parameter is set")
        self.log.info(f"ready: model {self.model_label}, cameras {list(self.p['cameras'])}, task rates (Hz) {rates}")

    # ----------------------------------------------------------------- inputs
    def now_ns(self, stamp_ns: int = 0) -> int:
        """The node's ROS clock (sim time under use_sim_time), or `stamp_ns` while that clock reads 0.

        Under use_sim_time the clock reads 0 until the first /clock arrives, and a message can
        beat it on its own subscription; an arrival recorded at 0 would later read as a source
        silent since the epoch, so callers pass the message's stamp.
        """
        return self.node.get_clock().now().nanoseconds or stamp_ns

    def count(self, key: str, n: int = 1, error: str | None = None) -> None:
        with self.stats_lock:
            self.counts[key] += n
            if error is not None:
                self.last_error = error

    def on_image(self, camera: str, msg, compressed: bool) -> None:
        try:
            rgb = compressed_to_rgb(msg) if compressed else image_to_rgb(msg)
        except ImageError as exc:
            self.count("bad_image", error=f"{camera}: {exc}")
            self.log.warning(f"dropped image from {camera}: {exc}", throttle_duration_sec=2.0)
            return
        except Exception as exc:  # a peer must never crash the node
            self.count("bad_image", error=f"{camera}: {type(exc).__name__}: {exc}")
            return
        stamp = stamp_to_ns(msg.header.stamp)
        now = self.now_ns(stamp)
        dropped = []
        with self.stats_lock:
            self.arrivals[camera].append(now)
            before = {key: self.sync.counts[key] for key in ("out_of_order", "stale")}
            frames = self.sync.add(camera, stamp, rgb, now)
            for key, count in before.items():
                if self.sync.counts[key] > count:
                    self.counts[f"{key}_frames"] += 1
                    dropped.append(key)
        for key in dropped:
            self.log.warning(f"dropped {key.replace('_', '-')} frame from {camera}", throttle_duration_sec=2.0)
        if frames is not None:
            self.submit(frames, now)

    def on_odometry(self, msg) -> None:
        vx, vy = float(msg.twist.twist.linear.x), float(msg.twist.twist.linear.y)
        if not all(math.isfinite(v) for v in (vx, vy, msg.pose.pose.position.x, msg.pose.pose.position.y)):
            self.count("ego_invalid", error="ego odometry has NaN/Inf")
            self.log.warning("ignored odometry with NaN/Inf", throttle_duration_sec=2.0)
            return
        stamp = stamp_to_ns(msg.header.stamp)
        with self.lock:
            self.ego_history.add_odometry(stamp, vx, vy)
            self.ego_ok = True
            self.ego_received_ns = self.now_ns(stamp)
            self.ego_arrived.notify_all()

    def on_accel(self, msg) -> None:
        ax, ay = float(msg.accel.linear.x), float(msg.accel.linear.y)
        if not (math.isfinite(ax) and math.isfinite(ay)):
            self.count("ego_invalid")
            return
        with self.lock:
            self.ego_history.add_accel(stamp_to_ns(msg.header.stamp), ax, ay)
            self.ego_arrived.notify_all()

    def on_command(self, msg) -> None:
        index = int(msg.command)
        if 0 <= index < len(DRIVING_COMMANDS):
            self.command = DRIVING_COMMANDS[index]
        else:
            self.count("bad_command")
            self.command = "unknown"

    def on_scene_info(self, msg) -> None:
        self.scene_tokens[stamp_to_ns(msg.header.stamp)] = str(msg.scene_token)
        while len(self.scene_tokens) > 256:
            self.scene_tokens.pop(next(iter(self.scene_tokens)))

    def submit(self, frames: FrameSet, now: int) -> None:
        with self.lock:
            self.seq += 1
            job = Job(frames, self.command, self.scene_tokens.get(frames.stamp_ns, ""), now, time.monotonic_ns(),
                      self.seq)
            replaced = self.newest is not None and not self.newest.taken
            self.newest = job
            self.wakeup.notify_all()
        if replaced:
            self.count("dropped_sets")

    # ----------------------------------------------------------------- workers
    def rate_hz(self, task: str) -> float:
        """The task's rate now (runtime parameters); ``max_rate_hz`` > 0 is the old name of the planning rate."""
        if task == "planning":
            legacy = float(self.node.get_parameter("max_rate_hz").value)
            if legacy > 0:
                return legacy
        return float(self.node.get_parameter(RATE_PARAMS[task]).value)

    def run_worker(self, lane: str) -> None:
        """Decode this lane's tasks, each at its rate, on the newest frame set; keep serving on errors."""
        tasks = [t for t in LANES[lane] if t in self.agent.tasks]
        gates = {t: RateGate() for t in tasks}
        if lane != "planning" and self.p["scene_thread_nice"]:
            try:  # Linux: a thread's own niceness; when CPU is short the plan gets it first
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), int(self.p["scene_thread_nice"]))
            except (AttributeError, OSError) as exc:
                self.log.warning(f"scene_thread_nice not applied: {exc}")
        done_seq = dict.fromkeys(tasks, 0)  # the newest frame set each task has decoded or passed over
        while True:
            with self.lock:
                if self.stopping:
                    return
                job = self.newest
            rates = {t: self.rate_hz(t) for t in tasks}
            fresh = [t for t in tasks if job is not None and rates[t] > 0 and job.seq > done_seq[t]]
            # judged on the set's stamp: too soon after the task's last set, the task passes over it for a later one
            due = [t for t in fresh if gates[t].due(rates[t], job.frames.stamp_ns)]
            for t in fresh:
                done_seq[t] = job.seq
            if not due:
                with self.lock:  # woken by a new frame set (or, to see changed rates, after half a second)
                    if not self.stopping and self.newest is job:
                        self.wakeup.wait(timeout=0.5)
                continue
            with self.lock:
                job.taken = True
            for t in due:
                gates[t].start(rates[t], job.frames.stamp_ns)
            try:
                self.decode(job, due)
            except NoEgoState:
                self.log.warning("frame set skipped: no ego state for its stamp (require_ego)",
                                 throttle_duration_sec=2.0)
            except Exception as exc:  # keep serving; report on diagnostics
                if self.stopping or not self.node.context.ok():
                    return  # shutting down: publishers are gone
                error = f"inference ({', '.join(due)}): {type(exc).__name__}: {exc}"
                self.count("inference_errors", error=error)
                self.log.error(error, throttle_duration_sec=2.0)

    def context_for(self, job: Job, tasks: list[str]):
        """The job's prepared frame set (images encoded once, shared prefix), made by the first worker to need it."""
        with job.ctx_lock:
            if job.ctx is None or not set(tasks) <= set(job.ctx.tasks):
                # every task enabled now, so a scene worker taking this set later reuses its prefix
                wanted = {t for t in self.agent.tasks if self.rate_hz(t) > 0} | set(tasks)
                ego, ego_ok = self.ego_for(job)
                if not ego_ok and self.p["require_ego"]:
                    self.count("skipped_no_ego")
                    raise NoEgoState
                job.ctx = self.agent.prepare(job.frames.frames, ego, job.command, stamp=job.frames.stamp_ns,
                                             tasks=[t for t in self.agent.tasks if t in wanted])
                self.count("inferences")
                self.count("missing_ego", 0 if ego_ok else 1)
            return job.ctx

    def ego_for(self, job: Job) -> tuple[EgoMotion, bool]:
        """The ego state of a frame set's stamp: wait up to ``ego_wait_s`` for it, then take the nearest.

        Judged by stamps, not arrival (replays and bags run on their own clock); a state further
        than ``ego_timeout_s`` from the set is none (zero motion, counted as ``missing_ego``).
        With ``require_ego`` a set without any usable state waits on for one as long as it is
        the newest set (a simulator sends its first state again until a plan comes; the same
        stamp's frames again would be out of order).
        """
        stamp_ns = job.frames.stamp_ns
        timeout_ns = int(self.p["ego_timeout_s"] * 1e9)
        required = bool(self.p["require_ego"])
        deadline = time.monotonic() + float(self.p["ego_wait_s"])
        with self.lock:
            while not self.stopping and not self.ego_history.reached(stamp_ns, required):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.ego_arrived.wait(timeout=left)
            reached = self.ego_history.reached(stamp_ns, required)
            ego, ok, used = self.ego_history.at(stamp_ns, timeout_ns)
            while required and not ok and not self.stopping and self.newest is job:
                self.ego_arrived.wait(timeout=0.5)
                ego, ok, used = self.ego_history.at(stamp_ns, timeout_ns)
        if ok and used != stamp_ns:
            self.count("ego_stamp_mismatch")  # planned on a state not stamped with the set (a rate mismatch or late)
        if not reached:
            self.count("ego_wait_timeouts")
        return ego, ok

    def decode(self, job: Job, tasks: list[str]) -> None:
        taken = time.monotonic_ns()
        ctx = self.context_for(job, tasks)
        prepared = time.monotonic_ns()
        self.agent.run(ctx, tasks, on_output=lambda _ctx, output: self.publish(job, output, (taken, prepared)))

    def publish(self, job: Job, output, marks: tuple[int, int] | None = None) -> None:
        """Publish one task's output with its frame set's stamp, the moment it is decoded.

        ``marks``: monotonic ns when a worker took the set and when it was prepared, for the stage times.
        """
        decoded = time.monotonic_ns()
        if not job.scene_token:
            job.scene_token = self.scene_tokens.get(job.frames.stamp_ns, "")
        out = self.agent.assemble(job.ctx, {output.task: output})
        stamp, frame = job.frames.stamp_ns, self.frame_id
        if output.task == "planning":
            self.pub_traj.publish(conv.trajectory_msg(out, stamp, self.block_size, job.scene_token, frame))
            self.pub_path.publish(conv.path_msg(out, stamp, frame))
        elif output.task == "perception":
            detections = conv.detections_msg(out, stamp, frame, tokenizer=self.tokenizer)
            self.pub_det.publish(detections)
            self.pub_markers.publish(conv.markers_msg(detections, stamp, frame_id=frame))
        else:
            self.pub_rationale.publish(conv.rationale_msg(out, stamp, job.command, frame))
        for msg in conv.decode_stats_msgs(out, stamp, frame):
            self.pub_stats.publish(msg)
        wall = time.monotonic_ns()
        with self.stats_lock:
            self.counts[f"decodes/{output.task}"] += 1
            if output.task == "planning":
                self.counts["fallbacks"] += 0 if out.valid else 1
                self.recent_fallbacks.append(not out.valid)
            if output.error:
                self.counts["parse_failures"] += 1
                self.last_error = f"{output.task}: {output.error}"[:300]
            stages = None
            if marks is not None:
                taken, prepared = marks
                stages = {"wait": (taken - job.received_wall_ns) / 1e6, "prepare": (prepared - taken) / 1e6,
                          "decode": (decoded - prepared) / 1e6, "publish": (wall - decoded) / 1e6}
            self.books[output.task].add((wall - job.received_wall_ns) / 1e6, wall, stages)
        if output.task == "planning":
            self.publish_diagnostics()

    # ------------------------------------------------------------ diagnostics
    def publish_diagnostics(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        with self.stats_lock:  # the worker and the executor both call this; callbacks append meanwhile
            status = self._diagnostic_status(DiagnosticStatus, KeyValue)
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.diag_pub.publish(msg)

    def _diagnostic_status(self, DiagnosticStatus, KeyValue):  # the message classes, capitalised like their names
        now = self.now_ns()
        # one status per node: "wamdiff2_ros: drive_node" at the root, "wamdiff2_ros: car1/drive_node" in /car1
        name = self.node.get_fully_qualified_name().lstrip("/")
        status = DiagnosticStatus(name=f"wamdiff2_ros: {name}", hardware_id="wamdiff2")
        values = {"model_state": self.model_state, "model": self.model_label}
        if self.model_state != "ready":
            status.level, status.message = DiagnosticStatus.WARN, f"model {self.model_state}"
        else:
            # no clock yet (sim time before the first /clock): nothing can have timed out
            stopped = self.sync.stopped(now) if hasattr(self, "sync") and now > 0 else []
            status.level, status.message = DiagnosticStatus.OK, "driving"
            if stopped:
                status.level, status.message = DiagnosticStatus.WARN, f"no frames from {stopped}"
            if self.sync.reference in stopped:
                status.level = DiagnosticStatus.ERROR
            for camera, times in self.arrivals.items():
                recent = [t for t in times if now - t < 5e9]
                rate = (len(recent) - 1) / ((recent[-1] - recent[0]) / 1e9) if len(recent) > 1 and recent[-1] > recent[0] else 0.0
                values[f"input_rate_hz/{camera}"] = f"{rate:.2f}"
            wall = time.monotonic_ns()
            for task in self.agent.tasks:  # frame set received -> this task's output published
                for q, ms in self.books[task].percentiles().items():
                    values[f"latency_ms_{q}/{task}"] = f"{ms:.1f}"
                values[f"output_rate_hz/{task}"] = f"{self.books[task].rate_hz(wall):.2f}"
                for stage, ms in self.books[task].stage_medians().items():  # where the latency goes (medians)
                    values[f"stage_ms_p50/{task}/{stage}"] = f"{ms:.1f}"
                values[f"rate_limit_hz/{task}"] = f"{self.rate_hz(task):g}"
            first = next((t for t in self.agent.tasks if self.books[t].latencies_ms), None)
            for q, ms in (self.books[first].percentiles().items() if first else ()):
                values[f"latency_ms_{q}"] = f"{ms:.1f}"  # the plan's (the first task's without planning)
            values["ego_state"] = "ok" if self.ego_ok and now - self.ego_received_ns <= self.p["ego_timeout_s"] * 1e9 else "missing"
            values["driving_command"] = self.command
            values["confidence_threshold"] = f"{self.agent.config.confidence_threshold:g}"
            for task in self.agent.tasks:
                values[f"confidence_threshold/{task}"] = f"{self.agent.threshold_of(task):g}"
            values["end_in_order_tasks"] = ",".join(t for t in self.agent.tasks if self.agent.end_in_order_of(t)) or "none"
            values["reuse_kv_tasks"] = ",".join(t for t in self.agent.tasks if self.agent.reuse_kv_of(t)) or "none"
            values["clock"] = "sim" if self.node.get_parameter("use_sim_time").value else "system"
            recent, fell = len(self.recent_fallbacks), sum(self.recent_fallbacks)
            values["fallback_share_recent"] = f"{fell / recent:.2f}" if recent else "-"
            if status.level == DiagnosticStatus.OK and recent >= FALLBACK_MIN and fell >= FALLBACK_WARN_SHARE * recent:
                status.level = DiagnosticStatus.WARN
                status.message = (f"{fell} of the last {recent} plans are the constant-velocity fallback: the model's "
                                  "answers do not parse (inputs it was not trained on? see last_error)")
        for key in ("inferences", "fallbacks", "parse_failures", "dropped_sets", "bad_image", "ego_invalid",
                    "out_of_order_frames", "stale_frames", "missing_ego", "ego_stamp_mismatch", "ego_wait_timeouts",
                    "skipped_no_ego",
                    "bad_command", "inference_errors"):
            values[key] = str(self.counts[key])
        for task in self.agent.tasks if hasattr(self, "agent") else ():
            values[f"decodes/{task}"] = str(self.counts[f"decodes/{task}"])
        if hasattr(self, "sync"):  # complete camera sets, and reference frames replaced before their set completed
            values["frame_sets_emitted"] = str(self.sync.counts["emitted"])
            values["frame_sets_skipped"] = str(self.sync.counts["skipped"])
        values["last_error"] = self.last_error
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return status

    def shutdown(self) -> None:
        with self.lock:
            self.stopping = True
            self.wakeup.notify_all()
        for worker in getattr(self, "workers", []):
            if worker.is_alive():
                worker.join(timeout=30)


def main(argv: list[str] | None = None) -> int:
    return run_node("drive_node", DriveNode, argv)


if __name__ == "__main__":
    sys.exit(main())
