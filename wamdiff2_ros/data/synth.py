"""Writer of synthetic NAVSIM-format data: logs, camera jpgs and maps from the synthetic world.

Output layout (the real NAVSIM/OpenScene layout, plus the maps)::

    DIR/navsim_logs/<split>/<log_name>.pkl          list of frame dicts, 2 Hz
    DIR/sensor_blobs/<split>/<log_name>/<CAM>/<token>.jpg
    DIR/maps/<log_name>.json                         synthetic map (RoadMap.to_json)

Frames carry every field of the real schema (numpy types where the real logs have
them). Cameras that were not rendered are written as ``{}`` (as NAVSIM itself does
for cameras without data); ``lidar_path`` names a point cloud that is not written.
``roadblock_ids`` are the route's road ids (``"1000" + road``) and intersection ids
(``"2000" + intersection``) in route order. ``traffic_lights`` lists the lane
connectors of intersections within 100 m of the ego. The maps live outside
``navsim_logs/`` so a reader of real logs never sees them. Everything is
deterministic from the seed.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wamdiff2_ros.data.geometry import rotation_z
from wamdiff2_ros.data.world import (
    CAMERA_MOUNTS,
    LIDAR2EGO_ROTATION,
    LIDAR2EGO_TRANSLATION,
    AgentBox,
    World,
    WorldConfig,
    camera_calibration,
)
from wamdiff2_ros.data.world.rules import SYNTH_CONFIG, checked_world_rules
from wamdiff2_ros.geometry import quaternion_from_yaw, wrap_angle

__all__ = ["SynthLog", "log_name_for", "synthesize_log", "synthesize", "frame_token"]

FRAME_INTERVAL_US = 500_000
SCENE_LENGTH_FRAMES = 40
MAP_LOCATION = "synthetic"
TRAFFIC_LIGHT_RANGE_M = 100.0


@dataclass
class SynthLog:
    """What the generator knows about a written log (ground truth for tests)."""

    log_name: str
    log_path: Path
    map_path: Path
    frame_tokens: list[str] = field(default_factory=list)
    ego_poses: list[tuple[float, float, float]] = field(default_factory=list)  # global x, y, yaw (rear axle)
    boxes: list[list[AgentBox]] = field(default_factory=list)  # global boxes written to anns, per frame
    commands: list[str] = field(default_factory=list)
    image_paths: list[dict[str, Path]] = field(default_factory=list)


def _hex(*parts: object, n: int = 8) -> str:
    return hashlib.blake2b("/".join(str(p) for p in parts).encode(), digest_size=n).hexdigest()


def log_name_for(seed: int, index: int) -> str:
    return f"synthetic_s{seed}_{index:04d}"


def frame_token(log_name: str, index: int) -> str:
    return _hex(log_name, "frame", index)


def _log_seed(seed: int, index: int) -> int:
    return int(_hex(seed, index, n=4), 16)


def _transform(rotation_wxyz: np.ndarray, translation: np.ndarray) -> np.ndarray:
    w, x, y, z = rotation_wxyz
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    out = np.eye(4)
    out[:3, :3] = r
    out[:3, 3] = translation
    return out


def _annotations(world: World, ego_x: float, ego_y: float, ego_yaw: float, frame_tok: str,
                 max_range: float) -> tuple[dict, list[AgentBox]]:
    boxes, names, velocity, instance_tokens, track_tokens, kept = [], [], [], [], [], []
    rot = rotation_z(-ego_yaw)[:2, :2]
    for agent in world.agents():
        dx, dy = agent.x - ego_x, agent.y - ego_y
        if math.hypot(dx, dy) > max_range:
            continue
        lx, ly = rot @ np.array([dx, dy])
        vx, vy = rot @ np.array([agent.vx, agent.vy])
        boxes.append([lx, ly, agent.z, agent.length, agent.width, agent.height,
                      float(wrap_angle(agent.yaw - ego_yaw, method="atan2"))])
        names.append(agent.name)
        velocity.append([vx, vy, 0.0])
        instance_tokens.append(_hex(agent.track_token, frame_tok))
        track_tokens.append(agent.track_token)
        kept.append(agent)
    anns = {
        "gt_boxes": np.array(boxes, dtype=np.float64).reshape(-1, 7),
        "gt_names": np.array(names, dtype=str) if names else np.array([], dtype="<U10"),
        "gt_velocity_3d": np.array(velocity, dtype=np.float64).reshape(-1, 3),
        "instance_tokens": instance_tokens,
        "track_tokens": track_tokens,
    }
    return anns, kept


def _roadblock_ids(world: World) -> list[str]:
    out: list[str] = []
    for lane_id in world.map.route:
        lane = world.map.lanes[lane_id]
        rid = f"2000{lane.intersection}" if lane.kind == "connector" else f"1000{lane.road}"
        if not out or out[-1] != rid:
            out.append(rid)
    return out


def synthesize_log(out_dir: str | Path, seed: int, index: int, num_frames: int, cameras: Sequence[str] = ("CAM_F0",),
                   size: tuple[int, int] = (512, 256), split: str = "synthetic", jpeg_quality: int = 90,
                   config: WorldConfig | None = None, progress: object | None = None,
                   write_images: bool = True, command_horizon_s: float = 0.0, lamp_visor_deg: float = 60.0) -> SynthLog:
    """Drive one synthetic world for ``num_frames`` frames at 2 Hz and write its log, images and map.

    ``command_horizon_s``, ``lamp_visor_deg``: the world rules (``WorldConfig``; 0 and 60, the defaults, are
    those of every split before 2026-12-05); ignored when ``config`` is given.
    """
    import cv2

    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    for cam in cameras:
        if cam not in CAMERA_MOUNTS:
            raise ValueError(f"unknown camera {cam!r}; expected some of {', '.join(CAMERA_MOUNTS)}")
    out_dir = Path(out_dir)
    log_name = log_name_for(seed, index)
    logs_dir = out_dir / "navsim_logs" / split
    blobs_dir = out_dir / "sensor_blobs" / split
    maps_dir = out_dir / "maps"
    for d in (logs_dir, maps_dir):
        d.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = WorldConfig(route_length=max(300.0, num_frames * 0.5 * 13.5 + 150.0),
                             command_horizon_s=command_horizon_s, lamp_visor_deg=lamp_visor_deg)
    world = World(_log_seed(seed, index), config)
    calibrations = {cam: camera_calibration(cam, size) for cam in CAMERA_MOUNTS}
    lidar2ego = _transform(LIDAR2EGO_ROTATION, LIDAR2EGO_TRANSLATION)
    result = SynthLog(log_name, logs_dir / f"{log_name}.pkl", maps_dir / f"{log_name}.json")
    tokens = [frame_token(log_name, i) for i in range(num_frames)]
    log_token = _hex(log_name, "log")
    t0 = 1_600_000_000_000_000 + (_log_seed(seed, index) % 1_000_000) * 1_000_000
    roadblocks = _roadblock_ids(world)
    for cam in cameras:
        (blobs_dir / log_name / cam).mkdir(parents=True, exist_ok=True)
    frames = []
    for i in range(num_frames):
        if i > 0:
            world.step(0.5)
        tok = tokens[i]
        ego = world.ego_state()
        quat = quaternion_from_yaw(ego.yaw)
        can_bus = np.array([
            ego.x, ego.y, 0.0, *quat, ego.ax, ego.ay, 0.0, ego.vx, ego.vy, 0.0, 0.0, 0.0, ego.yaw_rate, 0.0, 0.0,
        ], dtype=np.float64)
        command = world.route_command()
        one_hot = np.zeros(4, dtype=np.int64)
        one_hot[("left", "straight", "right", "unknown").index(command)] = 1
        ego2global = _transform(quat, can_bus[:3])
        anns, kept = _annotations(world, ego.x, ego.y, ego.yaw, tok, config.annotation_range)
        cams: dict[str, dict] = {}
        paths: dict[str, Path] = {}
        images = world.render(tuple(cameras), size, calibrations) if write_images and cameras else {}
        for cam in CAMERA_MOUNTS:
            if cam not in cameras:
                cams[cam] = {}
                continue
            data_path = f"{log_name}/{cam}/{tok}.jpg"
            cams[cam] = {"data_path": data_path, **{k: v.copy() for k, v in calibrations[cam].items()}}
            paths[cam] = blobs_dir / data_path
            if write_images:
                ok, buf = cv2.imencode(".jpg", images[cam][..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, jpeg_quality])
                if not ok:
                    raise RuntimeError(f"could not encode {data_path}")
                paths[cam].write_bytes(buf.tobytes())
        scene_index = i // SCENE_LENGTH_FRAMES
        frames.append({
            "token": tok,
            "frame_idx": i % SCENE_LENGTH_FRAMES,
            "timestamp": t0 + i * FRAME_INTERVAL_US,
            "log_name": log_name,
            "log_token": log_token,
            "scene_name": f"log-{index:04d}-scene-{scene_index:03d}",
            "scene_token": _hex(log_name, "scene", scene_index),
            "map_location": MAP_LOCATION,
            "roadblock_ids": list(roadblocks),
            "vehicle_name": "synthetic-ego",
            "can_bus": can_bus,
            "lidar_path": f"{log_name}/MergedPointCloud/{tok}.pcd",
            "lidar2ego_translation": LIDAR2EGO_TRANSLATION.copy(),
            "lidar2ego_rotation": [float(v) for v in LIDAR2EGO_ROTATION],
            "ego2global_translation": can_bus[:3],
            "ego2global_rotation": can_bus[3:7],
            "ego_dynamic_state": [ego.vx, ego.vy, ego.ax, ego.ay],
            "traffic_lights": [(tl.lane_connector_id, tl.is_red)
                               for tl in world.traffic_lights(within=TRAFFIC_LIGHT_RANGE_M)],
            "driving_command": one_hot,
            "cams": cams,
            "sample_prev": tokens[i - 1] if i > 0 else None,
            "sample_next": tokens[i + 1] if i + 1 < num_frames else None,
            "ego2global": ego2global,
            "lidar2ego": lidar2ego.copy(),
            "lidar2global": ego2global @ lidar2ego,
            "anns": anns,
        })
        result.frame_tokens.append(tok)
        result.ego_poses.append((ego.x, ego.y, ego.yaw))
        result.boxes.append(kept)
        result.commands.append(command)
        result.image_paths.append(paths)
        if progress is not None:
            progress.update(1)  # type: ignore[attr-defined]
    with open(result.log_path, "wb") as f:
        pickle.dump(frames, f, protocol=pickle.HIGHEST_PROTOCOL)
    import json

    world.map.time_origin_us = t0
    result.map_path.write_text(json.dumps(world.map.to_json(), separators=(",", ":")))
    return result


def synthesize(out_dir: str | Path, num_logs: int, num_frames: int, seed: int = 0,
               cameras: Sequence[str] = ("CAM_F0",), size: tuple[int, int] = (512, 256), split: str = "synthetic",
               progress: bool = True, jpeg_quality: int = 90, command_horizon_s: float = 0.0,
               lamp_visor_deg: float = 60.0) -> list[SynthLog]:
    """Write ``num_logs`` synthetic logs of ``num_frames`` frames each under ``out_dir`` and its world rules into
    ``synth_config.json`` (``command_horizon_s``, ``lamp_visor_deg``: see :func:`synthesize_log`)."""
    if num_logs < 1:
        raise ValueError(f"num_logs must be >= 1, got {num_logs}")
    if not split or "/" in split or split in (".", ".."):
        raise ValueError(f"split must be a plain folder name, got {split!r}")
    rules = checked_world_rules({"command_horizon_s": command_horizon_s, "lamp_visor_deg": lamp_visor_deg})
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / SYNTH_CONFIG).write_text(json.dumps(rules) + "\n")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=num_logs * num_frames, desc="synth", unit="frame")
    try:
        return [
            synthesize_log(out_dir, seed, i, num_frames, cameras, size, split, jpeg_quality, progress=bar,
                           command_horizon_s=command_horizon_s, lamp_visor_deg=lamp_visor_deg)
            for i in range(num_logs)
        ]
    finally:
        if bar is not None:
            bar.close()
