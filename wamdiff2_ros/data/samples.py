"""Multi-task training samples from NAVSIM scenes: planning, perception and understanding QA.

* planning: the reference prompt (images, navigation command, velocity and
  acceleration) answered by the 8 ground-truth waypoints (4 s at 0.5 s, ego frame);
* perception: the boxes of the current frame that a camera sees (centre in front of
  it and in the image, within ``max_distance``), with their image boxes;
* understanding: templated questions whose answers come from scene facts (lead
  vehicle presence, distance and speed, the route's traffic light, the manoeuvre at
  the next intersection, what the ego does next and why). Answers are drawn from
  small fixed sets (:data:`ANSWER_SETS`) so accuracy is an exact match.

Prompt and answer texts come from :mod:`wamdiff2_ros.model.codecs`; this module only
derives the facts. Works on real logs too (questions needing a map are skipped
when there is none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.data.navsim import Frame, Scene
from wamdiff2_ros.geometry import box_corners, wrap_angle
from wamdiff2_ros.model import codecs, prompts
from wamdiff2_ros.model.conversation import make_conversation

__all__ = [
    "ANSWER_SETS",
    "QUESTIONS",
    "Sample",
    "LeadVehicle",
    "lead_vehicle",
    "planning_sample",
    "perception_sample",
    "understanding_samples",
    "scene_samples",
    "to_conversation",
]

QUESTIONS: dict[str, str] = {
    "lead_presence": "Is there a vehicle ahead in the ego lane within 50 meters? Answer yes or no.",
    "lead_distance": "How far ahead is the closest vehicle in the ego lane? "
    "Answer one of: no lead vehicle, under 10 m, 10 to 20 m, 20 to 30 m, 30 to 50 m.",
    "lead_speed": "How fast is the closest vehicle ahead in the ego lane moving? "
    "Answer one of: stopped, under 5 m/s, 5 to 10 m/s, over 10 m/s.",
    "traffic_light": "What is the state of the traffic light that controls the ego vehicle's route ahead? "
    "Answer one of: red, yellow, green, no traffic light ahead.",
    "route_maneuver": "Which maneuver does the route take at the next intersection? "
    "Answer one of: turn left, go straight, turn right, no intersection ahead.",
    "next_action": "What will the ego vehicle do in the next 4 seconds, and why? "
    "Answer as '<action>, because <reason>.'",
}

ACTIONS = ("stay stopped", "turn left", "turn right", "slow down", "speed up", "keep going")
REASONS = (
    "the traffic light ahead is red",
    "the traffic light ahead is yellow",
    "a vehicle ahead is close",
    "the route turns left",
    "the route turns right",
    "the road ahead is clear",
)

ANSWER_SETS: dict[str, tuple[str, ...]] = {
    "lead_presence": ("yes", "no"),
    "lead_distance": ("no lead vehicle", "under 10 m", "10 to 20 m", "20 to 30 m", "30 to 50 m"),
    "lead_speed": ("stopped", "under 5 m/s", "5 to 10 m/s", "over 10 m/s"),
    "traffic_light": ("red", "yellow", "green", "no traffic light ahead"),
    "route_maneuver": ("turn left", "go straight", "turn right", "no intersection ahead"),
    "next_action": tuple(f"{a}, because {r}." for a in ACTIONS for r in REASONS),
}

LEAD_RANGE_M = 50.0
LEAD_HALF_LANE_M = 1.8
LIGHT_RANGE_M = 60.0


@dataclass
class Sample:
    """One training / evaluation sample (a question about a scene and its answer)."""

    task: str  # planning / perception / understanding
    sample_id: str
    images: list[str]
    question: str
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class LeadVehicle:
    distance: float  # centre x in the ego frame, m
    lateral: float
    speed: float
    track_token: str


def lead_vehicle(frame: Frame, max_distance: float = LEAD_RANGE_M) -> LeadVehicle | None:
    """Closest vehicle box ahead in the ego lane (|y| < 1.8 m, heading within 45 deg), from ``anns``."""
    anns = frame.annotations
    if anns is None:
        return None
    best = None
    for i in range(len(anns)):
        if anns.names[i] != "vehicle":
            continue
        x, y, _z, length, _w, _h, yaw = (float(v) for v in anns.boxes[i])
        if not (0.0 < x <= max_distance) or abs(y) > LEAD_HALF_LANE_M:
            continue
        if abs(wrap_angle(yaw)) > math.pi / 4:
            continue
        if best is None or x < best.distance:
            speed = float(np.hypot(*anns.velocity_3d[i][:2]))
            best = LeadVehicle(x, y, speed, anns.track_tokens[i])
    return best


def _image_list(scene: Scene, cameras: Sequence[str], frames_per_camera: int) -> list[str]:
    """Camera-major, oldest first (the order of ``prompts.image_preamble``)."""
    n_hist = scene.metadata.num_history_frames
    if not 1 <= frames_per_camera <= n_hist:
        raise ValueError(f"frames_per_camera must be in 1..{n_hist}, got {frames_per_camera}")
    indices = range(n_hist - frames_per_camera, n_hist)
    out = []
    for cam in cameras:
        for i in indices:
            camera = scene.frames[i].cameras[cam]
            out.append(str(camera.image_path) if camera.image_path is not None else camera.data_path)
    return out


def _base_meta(scene: Scene) -> dict[str, Any]:
    frame = scene.current_frame
    return {
        "scene_token": scene.token,
        "log_name": scene.metadata.log_name,
        "timestamp": frame.timestamp,
    }


def planning_sample(scene: Scene, cameras: Sequence[str] = ("CAM_F0",), frames_per_camera: int = 1,
                    plan_style: str = "plain", cruise_telemetry: bool = False) -> Sample:
    """The reference's planning sample: command, velocity, acceleration -> 8 waypoints (``codecs.PLAN_STYLES``).

    ``cruise_telemetry``: the prompt reports the acceleration as (0, 0), as a car at a steady speed on a straight
    road would (the plan is unchanged), so the braking or the turn it holds must be read from the images and command
    (``DataConfig.cruise_telemetry``); ``meta["cruise_telemetry"]`` records it.
    """
    frame = scene.current_frame
    command = prompts.command_from_one_hot(frame.ego_status.driving_command)
    trajectory = scene.future_trajectory(prompts.NUM_WAYPOINTS)
    images = _image_list(scene, cameras, frames_per_camera)
    acceleration = (0.0, 0.0) if cruise_telemetry else tuple(float(v) for v in frame.ego_status.ego_acceleration)
    velocity = tuple(float(v) for v in frame.ego_status.ego_velocity)
    question = prompts.planning_question(
        command,
        velocity,
        acceleration,
        num_images=len(images),
        cameras=tuple(cameras),
    )
    meta = _base_meta(scene) | {"command": command, "trajectory": np.round(trajectory, 4).tolist()}
    if cruise_telemetry:
        meta["cruise_telemetry"] = True
    return Sample("planning", f"{scene.token}_planning", images, question,
                  codecs.encode_planning(trajectory[:, :2], plan_style, velocity), meta)


# --------------------------------------------------------------------------- perception


def _box_corners_ego(box: np.ndarray) -> np.ndarray:
    """Corners (8, 3) of a (7,) box: front-left, front-right, rear-right, rear-left at the bottom, then the top."""
    x, y, z, length, width, height, yaw = box
    ground = box_corners(x, y, length, width, yaw)[[0, 3, 2, 1]]  # clockwise from front-left
    dz = np.array([-1, -1, -1, -1, 1, 1, 1, 1]) * height / 2
    return np.column_stack([np.concatenate([ground, ground]), z + dz])


def _lidar2ego(frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    raw = frame.raw
    if "lidar2ego" in raw:
        m = np.asarray(raw["lidar2ego"], dtype=np.float64)
        if m.shape == (4, 4):
            return m[:3, :3], m[:3, 3]
    return np.eye(3), np.zeros(3)


_SIZE_CACHE: dict[tuple[str, float, float], tuple[int, int]] = {}


def _image_size(frame: Frame, cam: str) -> tuple[int, int]:
    camera = frame.cameras[cam]
    # one size per camera folder and calibration (a log's images of one camera share it)
    folder = str(camera.image_path.parent) if camera.image_path is not None else f"{frame.log_name}/{cam}"
    key = (folder, float(camera.intrinsics[0, 2]), float(camera.intrinsics[1, 2]))
    if key not in _SIZE_CACHE:
        size = None
        if camera.image_path is not None and camera.image_path.is_file():
            import cv2

            img = cv2.imread(str(camera.image_path), cv2.IMREAD_UNCHANGED)
            if img is not None:
                size = (img.shape[1], img.shape[0])
        if size is None:  # principal point at the image centre
            size = (int(round(2 * camera.intrinsics[0, 2])), int(round(2 * camera.intrinsics[1, 2])))
        _SIZE_CACHE[key] = size
    return _SIZE_CACHE[key]


def visible_boxes(frame: Frame, cameras: Sequence[str] = ("CAM_F0",), max_distance: float = 50.0) -> list[codecs.Box]:
    """Annotated boxes whose centre projects into one of ``cameras`` (nearest first), with image boxes."""
    anns = frame.annotations
    if anns is None:
        raise ValueError(f"frame {frame.token} has no annotations (test split?): no perception target")
    r_l2e, t_l2e = _lidar2ego(frame)
    out: list[tuple[float, codecs.Box]] = []
    seen: set[int] = set()
    for cam in cameras:
        camera = frame.cameras[cam]
        width, height = _image_size(frame, cam)
        r_c2e = r_l2e @ camera.sensor2lidar_rotation
        t_c2e = r_l2e @ camera.sensor2lidar_translation + t_l2e
        k = camera.intrinsics
        for i in range(len(anns)):
            if i in seen or anns.names[i] not in prompts.LABELS:
                continue
            box = anns.boxes[i]
            dist = float(np.hypot(box[0], box[1]))
            if dist > max_distance:
                continue
            center = (box[:3] - t_c2e) @ r_c2e
            if center[2] < 0.5:
                continue
            u = k[0, 0] * center[0] / center[2] + k[0, 2]
            v = k[1, 1] * center[1] / center[2] + k[1, 2]
            if not (0 <= u < width and 0 <= v < height):
                continue
            corners = (_box_corners_ego(box) - t_c2e) @ r_c2e
            corners = corners[corners[:, 2] > 0.1]
            uv = corners[:, :2] / corners[:, 2:3] * np.array([k[0, 0], k[1, 1]]) + k[:2, 2]
            x1, y1 = np.clip(uv.min(axis=0), 0, [width - 1, height - 1])
            x2, y2 = np.clip(uv.max(axis=0), 0, [width - 1, height - 1])
            bbox = (
                round(1000 * x1 / width), round(1000 * y1 / height), round(1000 * x2 / width), round(1000 * y2 / height)
            )
            seen.add(i)
            out.append((dist, codecs.Box(anns.names[i], *(float(v) for v in box), bbox=bbox, camera=cam)))
    out.sort(key=lambda item: item[0])
    return [b for _, b in out[: codecs.MAX_BOXES]]


def perception_sample(scene: Scene, cameras: Sequence[str] = ("CAM_F0",), max_distance: float = 50.0) -> Sample:
    """Boxes of the current frame visible in ``cameras`` (one image per camera)."""
    boxes = visible_boxes(scene.current_frame, cameras, max_distance)
    images = _image_list(scene, cameras, 1)
    question = prompts.perception_question(num_images=len(images), cameras=tuple(cameras))
    meta = _base_meta(scene) | {"num_boxes": len(boxes)}
    return Sample("perception", f"{scene.token}_perception", images, question, codecs.encode_perception(boxes), meta)


# --------------------------------------------------------------------------- understanding


def _distance_bin(lead: LeadVehicle | None) -> str:
    if lead is None:
        return "no lead vehicle"
    for limit, text in ((10, "under 10 m"), (20, "10 to 20 m"), (30, "20 to 30 m")):
        if lead.distance < limit:
            return text
    return "30 to 50 m"


def _speed_bin(speed: float) -> str:
    if speed < 0.5:
        return "stopped"
    if speed < 5.0:
        return "under 5 m/s"
    if speed < 10.0:
        return "5 to 10 m/s"
    return "over 10 m/s"


@dataclass
class _RouteFacts:
    light: str  # red / yellow / green / no traffic light ahead
    light_distance: float
    maneuver: str  # turn left / go straight / turn right / no intersection ahead


def _route_facts(scene: Scene, road_map: Any) -> _RouteFacts:
    """Next signal and manoeuvre along the synthetic route from the ego's current pose."""
    from wamdiff2_ros.data.world import LanePath

    path = LanePath(road_map, road_map.route)
    pose = scene.current_frame.ego_status.ego_pose
    s, _lat, _dist = path.poly.project(np.array(pose[:2]))
    s = float(s)
    time_s = (scene.current_frame.timestamp - road_map.time_origin_us) / 1e6
    light, light_distance, maneuver = "no traffic light ahead", math.inf, "no intersection ahead"
    for s_stop, inter_id, arm in path.stops:
        ahead = s_stop - s - 4.0  # stop line seen from the front bumper (rear axle + ~4 m)
        if ahead < -1.0:
            continue
        inter = road_map.intersections[inter_id]
        maneuver = {"left": "turn left", "straight": "go straight", "right": "turn right"}[inter.turn]
        if ahead <= LIGHT_RANGE_M:
            light = inter.signal_state(arm % 2, time_s)
            light_distance = ahead
        break
    return _RouteFacts(light, light_distance, maneuver)


def _next_action(scene: Scene) -> str:
    traj = scene.future_trajectory(prompts.NUM_WAYPOINTS)
    speed_now = float(np.hypot(*scene.current_frame.ego_status.ego_velocity))
    if float(np.hypot(*traj[-1, :2])) < 1.0:
        return "stay stopped"
    heading = float(traj[-1, 2])
    if heading > 0.5:
        return "turn left"
    if heading < -0.5:
        return "turn right"
    steps = np.diff(np.vstack([[0.0, 0.0], traj[:, :2]]), axis=0)
    speed_end = float(np.hypot(*steps[-4:].T).mean() / prompts.WAYPOINT_INTERVAL_S)
    if speed_end < 0.6 * speed_now - 1.0:
        return "slow down"
    if speed_end > speed_now + 1.5:
        return "speed up"
    return "keep going"


def _reason(action: str, lead: LeadVehicle | None, facts: _RouteFacts | None, command: str) -> str:
    braking = action in ("stay stopped", "slow down")
    if facts is not None and braking and facts.light in ("red", "yellow") and facts.light_distance < 40.0:
        return f"the traffic light ahead is {facts.light}"
    if braking and lead is not None and lead.distance < 25.0:
        return "a vehicle ahead is close"
    if action == "turn left" or (action != "turn right" and command == "left" and not braking):
        return "the route turns left"
    if action == "turn right" or (command == "right" and not braking):
        return "the route turns right"
    if braking and lead is not None:
        return "a vehicle ahead is close"
    return "the road ahead is clear"


def understanding_samples(scene: Scene, road_map: Any | None = None, cameras: Sequence[str] = ("CAM_F0",),
                          frames_per_camera: int = 1) -> list[Sample]:
    """Templated QA samples from scene facts; ``road_map`` (synthetic logs) adds light and manoeuvre questions."""
    frame = scene.current_frame
    images = _image_list(scene, cameras, frames_per_camera)
    facts = None if road_map is None else _route_facts(scene, road_map)
    answers: dict[str, str] = {}
    if frame.annotations is not None:
        lead = lead_vehicle(frame)
        answers["lead_presence"] = "yes" if lead is not None else "no"
        answers["lead_distance"] = _distance_bin(lead)
        if lead is not None:
            answers["lead_speed"] = _speed_bin(lead.speed)
    else:
        lead = None
    if facts is not None:
        answers["traffic_light"] = facts.light
        answers["route_maneuver"] = facts.maneuver
    if scene.metadata.num_future_frames >= prompts.NUM_WAYPOINTS:
        command = prompts.command_from_one_hot(frame.ego_status.driving_command)
        action = _next_action(scene)
        answers["next_action"] = f"{action}, because {_reason(action, lead, facts, command)}."
    out = []
    for key, answer in answers.items():
        assert answer in ANSWER_SETS[key], (key, answer)
        question = prompts.understanding_question(QUESTIONS[key], num_images=len(images), cameras=tuple(cameras))
        meta = _base_meta(scene) | {"question_type": key, "answer_set": list(ANSWER_SETS[key])}
        out.append(Sample("understanding", f"{scene.token}_qa_{key}", images, question, answer, meta))
    return out


def scene_samples(scene: Scene, road_map: Any | None = None, cameras: Sequence[str] = ("CAM_F0",),
                  tasks: Sequence[str] = codecs.TASKS) -> list[Sample]:
    """All samples of the requested tasks for one scene (perception skipped without annotations)."""
    out: list[Sample] = []
    if "planning" in tasks:
        out.append(planning_sample(scene, cameras))
    if "perception" in tasks and scene.current_frame.annotations is not None:
        out.append(perception_sample(scene, cameras))
    if "understanding" in tasks:
        out += understanding_samples(scene, road_map, cameras)
    return out


def to_conversation(sample: Sample, datasource: str = "navsim", relative_to: str | Path | None = None) -> dict:
    """The sample in the reference conversation JSON layout (image paths optionally made relative)."""
    images = sample.images
    if relative_to is not None:
        root = Path(relative_to).resolve()
        images = [str(Path(p).resolve().relative_to(root)) if Path(p).is_absolute() else p for p in images]
    return make_conversation(datasource, sample.sample_id, images, sample.question, sample.answer)

