"""Ground truth for evaluation from NAVSIM-format logs: future ego poses, agent boxes over time, maps.

Future boxes come from the annotations of the scene's future frames (each in its own
ego frame), moved into the current ego frame through the logged global ego poses and
tracked by ``track_tokens``; NAVSIM's open-loop scoring lets agents follow their
logged futures the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from wamdiff2_ros.evaluation.scene import AgentBoxes, SceneGroundTruth
from wamdiff2_ros.geometry import wrap_angle

COMMANDS = ("left", "straight", "right", "unknown")


def _relative(origin: np.ndarray, pose: np.ndarray) -> tuple[np.ndarray, float]:
    """Rotation (2, 2) and yaw offset taking frame ``pose`` coordinates into frame ``origin`` (both global)."""
    dyaw = float(pose[2] - origin[2])
    cos, sin = np.cos(dyaw), np.sin(dyaw)
    return np.array([[cos, -sin], [sin, cos]]), dyaw


def _into_origin(points: np.ndarray, origin: np.ndarray, pose: np.ndarray) -> np.ndarray:
    rot, _ = _relative(origin, pose)
    c0, s0 = np.cos(origin[2]), np.sin(origin[2])
    offset = np.array([[c0, s0], [-s0, c0]]) @ (pose[:2] - origin[:2])
    return points @ rot.T + offset


def agents_from_frames(frames: list[Any], current_index: int, num_poses: int) -> AgentBoxes:
    """Agent boxes of frames ``current_index .. current_index + num_poses`` in the current ego frame."""
    origin = np.asarray(frames[current_index].ego_status.ego_pose, dtype=np.float64)
    steps = [frames[current_index + k] for k in range(num_poses + 1) if current_index + k < len(frames)]
    order: dict[str, int] = {}
    names: list[str] = []
    for frame in steps:
        anns = frame.annotations
        if anns is None:
            continue
        for token, name in zip(anns.track_tokens, anns.names, strict=False):
            if token not in order:
                order[token] = len(order)
                names.append(str(name))
    k_total, n = num_poses + 1, len(order)
    boxes = np.zeros((k_total, n, 7))
    valid = np.zeros((k_total, n), bool)
    velocities = np.zeros((k_total, n, 2))
    for k, frame in enumerate(steps):
        anns = frame.annotations
        if anns is None or len(anns) == 0:
            continue
        pose = np.asarray(frame.ego_status.ego_pose, dtype=np.float64)
        _, dyaw = _relative(origin, pose)
        rot, _ = _relative(origin, pose)
        local = np.asarray(anns.boxes, dtype=np.float64).reshape(-1, 7)
        idx = np.array([order[t] for t in anns.track_tokens])
        moved = local.copy()
        moved[:, :2] = _into_origin(local[:, :2], origin, pose)
        moved[:, 6] = wrap_angle(local[:, 6] + dyaw, method="modulo")
        boxes[k, idx] = moved
        valid[k, idx] = True
        vel = np.asarray(anns.velocity_3d, dtype=np.float64).reshape(len(local), -1)[:, :2]
        velocities[k, idx] = vel @ rot.T
    return AgentBoxes(boxes, valid, names, list(order), velocities)


def scene_ground_truth(scene: Any, road_map: Any = None, num_poses: int = 8) -> SceneGroundTruth:
    """A :class:`SceneGroundTruth` from a :class:`wamdiff2_ros.data.navsim.Scene`."""
    current = scene.current_frame
    status = current.ego_status
    command = np.asarray(status.driving_command).reshape(-1)
    command_name = COMMANDS[int(np.argmax(command))] if command.size == 4 and command.any() else "unknown"
    return SceneGroundTruth(
        token=scene.token,
        trajectory=scene.future_trajectory(num_poses),
        agents=agents_from_frames(scene.frames, scene.current_index, num_poses),
        timestamp_us=int(current.timestamp),
        ego_velocity=np.asarray(status.ego_velocity, dtype=np.float64),
        ego_acceleration=np.asarray(status.ego_acceleration, dtype=np.float64),
        ego_pose_global=np.asarray(status.ego_pose, dtype=np.float64),
        driving_command=command_name,
        log_name=scene.metadata.log_name,
        map=road_map,
    )


def ground_truth_from_logs(
    logs: Any, tokens: Iterable[str] | None = None, *, with_maps: bool = True, progress: bool = False
) -> dict[str, SceneGroundTruth]:
    """Ground truth of every scene (or of ``tokens``) of a :class:`wamdiff2_ros.data.navsim.NavsimLogs`.

    Scenes without annotations (test splits) are skipped: there is nothing to score against.
    """
    from tqdm import tqdm

    wanted = list(tokens) if tokens is not None else logs.scene_tokens()
    maps: dict[str, Any] = {}
    out: dict[str, SceneGroundTruth] = {}
    for token in tqdm(wanted, desc="ground truth", unit="scene", disable=not progress):
        scene = logs[token]
        if scene.current_frame.annotations is None:
            continue
        road_map = None
        if with_maps:
            log = scene.metadata.log_name
            if log not in maps:
                maps[log] = logs.map_for(scene) if hasattr(logs, "map_for") else None
            road_map = maps[log]
        out[token] = scene_ground_truth(scene, road_map, logs.num_future_frames)
    return out
