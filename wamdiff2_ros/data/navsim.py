"""Reader for NAVSIM/OpenScene logs: frames, scenes, agent input, future trajectory, images.

Layout (as NAVSIM expects it)::

    navsim_logs/<split>/<log_name>.pkl     list of per-frame dicts at 2 Hz
    sensor_blobs/<split>/<data_path>        camera jpgs named by cams[CAM]["data_path"]

A frame dict holds ``token``, ``timestamp`` (µs), ``log_name``, ``scene_token``,
``map_location``, ``roadblock_ids``, ``can_bus`` (18,), ``ego2global_translation``
(3,), ``ego2global_rotation`` (w, x, y, z), ``ego_dynamic_state`` [vx, vy, ax, ay]
(ego frame), ``driving_command`` one-hot (left, straight, right, unknown),
``traffic_lights`` [(lane_connector_id, is_red)], ``cams`` (8 cameras, each
``data_path``, ``sensor2lidar_rotation`` (3, 3), ``sensor2lidar_translation`` (3,),
``cam_intrinsic`` (3, 3), ``distortion``) and, except in test splits, ``anns``
(``gt_boxes`` (N, 7) x, y, z, length, width, height, yaw in the ego frame,
``gt_names``, ``gt_velocity_3d``, ``instance_tokens``, ``track_tokens``).

Scenes are cut like NAVSIM's scene filter: windows of ``num_history_frames +
num_future_frames`` frames every ``frame_interval`` frames; the current frame is the
last history frame and names the scene (its token). Pickles are read with the
allow-list unpickler; a malformed frame raises :class:`LogFormatError` naming the
file, the frame and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wamdiff2_ros.data.geometry import absolute_to_relative_se2
from wamdiff2_ros.data.pickle_safe import safe_load_pickle
from wamdiff2_ros.geometry import yaw_from_quaternion

__all__ = [
    "CAMERA_NAMES",
    "NAVSIM_INTERVAL_S",
    "LogFormatError",
    "EgoStatus",
    "Camera",
    "Cameras",
    "Annotations",
    "Frame",
    "SceneMetadata",
    "Scene",
    "AgentInput",
    "parse_frame",
    "load_log",
    "find_logs",
    "NavsimLogs",
]

#: NAVSIM's eight cameras, in NAVSIM's order.
CAMERA_NAMES: tuple[str, ...] = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")
#: Time between NAVSIM frames (2 Hz).
NAVSIM_INTERVAL_S = 0.5


class LogFormatError(ValueError):
    """A log file or one of its frames does not follow the NAVSIM schema."""

    def __init__(self, path: str | Path, message: str, frame: int | None = None, field_name: str | None = None):
        self.path = str(path)
        self.frame = frame
        self.field = field_name
        where = self.path
        if frame is not None:
            where += f": frame {frame}"
        if field_name is not None:
            where += f": field '{field_name}'"
        super().__init__(f"{where}: {message}")


# --------------------------------------------------------------------------- dataclasses


@dataclass
class EgoStatus:
    """Ego pose (x, y, heading), velocity and acceleration (ego frame) and driving command."""

    ego_pose: np.ndarray  # (3,) float64
    ego_velocity: np.ndarray  # (2,) float32, ego frame
    ego_acceleration: np.ndarray  # (2,) float32, ego frame
    driving_command: np.ndarray  # (4,) int, one-hot (left, straight, right, unknown)
    in_global_frame: bool = False


@dataclass
class Camera:
    """One camera of a frame: image location and calibration (OpenCV pinhole, lidar frame)."""

    name: str
    data_path: str
    image_path: Path | None
    sensor2lidar_rotation: np.ndarray  # (3, 3)
    sensor2lidar_translation: np.ndarray  # (3,)
    intrinsics: np.ndarray  # (3, 3)
    distortion: np.ndarray  # (k,)

    def load_image(self) -> np.ndarray:
        """The camera image as an RGB uint8 array (H, W, 3)."""
        if self.image_path is None:
            raise FileNotFoundError(f"{self.name}: no sensor_blobs directory given, cannot load {self.data_path}")
        return read_rgb(self.image_path, what=self.name)


@dataclass
class Cameras:
    """The cameras of one frame by NAVSIM name (only those present in the log)."""

    cameras: dict[str, Camera] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Camera:
        try:
            return self.cameras[name.upper()]
        except KeyError:
            raise KeyError(f"camera {name!r} not in this frame (has {', '.join(self.cameras) or 'none'})") from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.upper() in self.cameras

    def names(self) -> list[str]:
        return list(self.cameras)


@dataclass
class Annotations:
    """Boxes of one frame in the ego frame: (N, 7) x, y, z, length, width, height, yaw."""

    boxes: np.ndarray
    names: list[str]
    velocity_3d: np.ndarray
    instance_tokens: list[str]
    track_tokens: list[str]

    def __len__(self) -> int:
        return int(self.boxes.shape[0])


@dataclass
class Frame:
    """One 2 Hz frame of a log."""

    token: str
    timestamp: int  # µs
    log_name: str
    scene_token: str
    map_location: str
    roadblock_ids: list[str]
    traffic_lights: list[tuple[int, bool]]
    ego_status: EgoStatus  # global frame
    cameras: Cameras
    annotations: Annotations | None  # None in test splits
    can_bus: np.ndarray | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class SceneMetadata:
    log_name: str
    scene_token: str
    map_name: str
    initial_token: str
    num_history_frames: int
    num_future_frames: int
    log_path: str = ""


@dataclass
class AgentInput:
    """What a driving agent sees: history ego statuses (relative to the current frame) and cameras."""

    ego_statuses: list[EgoStatus]
    cameras: list[Cameras]


@dataclass
class Scene:
    """A NAVSIM scene: ``num_history_frames`` frames up to the current one, then future frames."""

    metadata: SceneMetadata
    frames: list[Frame]
    sensor_blobs_dir: Path | None = None

    @property
    def token(self) -> str:
        return self.metadata.initial_token

    @property
    def current_index(self) -> int:
        return self.metadata.num_history_frames - 1

    @property
    def current_frame(self) -> Frame:
        return self.frames[self.current_index]

    def _global_poses(self, indices: Sequence[int]) -> np.ndarray:
        return np.array([self.frames[i].ego_status.ego_pose for i in indices], dtype=np.float64)

    def future_trajectory(self, num_poses: int | None = None) -> np.ndarray:
        """(num_poses, 3) future ego poses x, y, heading in the current ego frame, 0.5 s apart."""
        n = self.metadata.num_future_frames if num_poses is None else int(num_poses)
        start = self.current_index
        if start + n >= len(self.frames):
            raise ValueError(
                f"scene {self.token} has {len(self.frames) - start - 1} future frames, {n} requested"
            )
        origin = self.frames[start].ego_status.ego_pose
        return absolute_to_relative_se2(origin, self._global_poses(range(start + 1, start + n + 1)))

    def history_trajectory(self) -> np.ndarray:
        """(num_history_frames, 3) past and current ego poses in the current ego frame."""
        origin = self.current_frame.ego_status.ego_pose
        return absolute_to_relative_se2(origin, self._global_poses(range(self.metadata.num_history_frames)))

    def agent_input(self) -> AgentInput:
        """History ego statuses relative to the current frame, with their cameras (NAVSIM's AgentInput)."""
        local = self.history_trajectory()
        statuses = []
        for i in range(self.metadata.num_history_frames):
            status = self.frames[i].ego_status
            statuses.append(
                EgoStatus(
                    ego_pose=local[i].astype(np.float32),
                    ego_velocity=status.ego_velocity,
                    ego_acceleration=status.ego_acceleration,
                    driving_command=status.driving_command,
                    in_global_frame=False,
                )
            )
        return AgentInput(statuses, [self.frames[i].cameras for i in range(self.metadata.num_history_frames)])

    def image_paths(self, cameras: Sequence[str] = ("CAM_F0",), frame_index: int | None = None) -> dict[str, Path]:
        """Paths of the camera images of a frame (default: the current frame)."""
        frame = self.frames[self.current_index if frame_index is None else frame_index]
        out: dict[str, Path] = {}
        for name in cameras:
            cam = frame.cameras[name]
            if cam.image_path is None:
                raise FileNotFoundError(f"scene {self.token}: no sensor_blobs directory given for {name}")
            out[name.upper()] = cam.image_path
        return out

    def load_images(self, cameras: Sequence[str] = ("CAM_F0",), frame_index: int | None = None) -> dict[str, np.ndarray]:
        """RGB uint8 images (H, W, 3) of the current frame (or ``frame_index``) by camera name."""
        frame = self.frames[self.current_index if frame_index is None else frame_index]
        return {name.upper(): frame.cameras[name].load_image() for name in cameras}


def read_rgb(path: Path, what: str = "image") -> np.ndarray:
    """Read an image file as RGB uint8; missing or unreadable files name the path."""
    import cv2

    if not path.is_file():
        raise FileNotFoundError(f"{what}: image file {path} does not exist")
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{what}: {path} is not a readable image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


# --------------------------------------------------------------------------- parsing


class _FrameParser:
    """Checks one frame dict field by field; errors name the file, frame index and field."""

    def __init__(self, path: Path, index: int, frame: Any):
        self.path = path
        self.index = index
        if not isinstance(frame, Mapping):
            raise LogFormatError(path, f"expected a dict, got {type(frame).__name__}", index)
        self.frame = frame

    def fail(self, name: str, message: str) -> LogFormatError:
        return LogFormatError(self.path, message, self.index, name)

    def get(self, container: Mapping, key: str, name: str) -> Any:
        if key not in container:
            raise self.fail(name, "missing")
        return container[key]

    def text(self, container: Mapping, key: str, name: str | None = None) -> str:
        name = name or key
        value = self.get(container, key, name)
        if isinstance(value, np.str_ | bytes):
            value = value.decode() if isinstance(value, bytes) else str(value)
        if not isinstance(value, str):
            raise self.fail(name, f"expected a string, got {type(value).__name__}")
        return value

    def integer(self, container: Mapping, key: str, name: str | None = None) -> int:
        name = name or key
        value = self.get(container, key, name)
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise self.fail(name, f"expected an integer, got {type(value).__name__}")
        return int(value)

    def array(self, container: Mapping, key: str, shape: tuple[int | None, ...], name: str | None = None,
              dtype: Any = np.float64) -> np.ndarray:
        name = name or key
        value = self.get(container, key, name)
        try:
            arr = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise self.fail(name, f"not numeric ({exc})") from None
        if arr.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, arr.shape, strict=False)):
            want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise self.fail(name, f"expected shape {want}, got {tuple(arr.shape)}")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise self.fail(name, "has non-finite values")
        return arr

    def strings(self, container: Mapping, key: str, name: str | None = None) -> list[str]:
        name = name or key
        value = self.get(container, key, name)
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
            raise self.fail(name, f"expected a list of strings, got {type(value).__name__}")
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bytes):
                item = item.decode()
            if not isinstance(item, str | np.str_ | int | np.integer):
                raise self.fail(f"{name}[{i}]", f"expected a string, got {type(item).__name__}")
            out.append(str(item))
        return out

    def traffic_lights(self) -> list[tuple[int, bool]]:
        value = self.get(self.frame, "traffic_lights", "traffic_lights")
        if not isinstance(value, Sequence | np.ndarray) or isinstance(value, str | bytes):
            raise self.fail("traffic_lights", f"expected a list of (lane_connector_id, is_red), got {type(value).__name__}")
        out = []
        for i, item in enumerate(value):
            try:
                connector, is_red = item
                out.append((int(connector), bool(is_red)))
            except (TypeError, ValueError):
                raise self.fail(f"traffic_lights[{i}]", f"expected (lane_connector_id, is_red), got {item!r}") from None
        return out

    def cameras(self, sensor_blobs_dir: Path | None) -> Cameras:
        cams = self.get(self.frame, "cams", "cams")
        if not isinstance(cams, Mapping):
            raise self.fail("cams", f"expected a dict of cameras, got {type(cams).__name__}")
        out: dict[str, Camera] = {}
        for cam_name, cam in cams.items():
            name = f"cams.{cam_name}"
            if not isinstance(cam, Mapping):
                raise self.fail(name, f"expected a dict, got {type(cam).__name__}")
            if not cam:  # NAVSIM writes {} for a camera without data
                continue
            data_path = self.text(cam, "data_path", f"{name}.data_path")
            out[str(cam_name).upper()] = Camera(
                name=str(cam_name).upper(),
                data_path=data_path,
                image_path=None if sensor_blobs_dir is None else sensor_blobs_dir / data_path,
                sensor2lidar_rotation=self.array(cam, "sensor2lidar_rotation", (3, 3), f"{name}.sensor2lidar_rotation"),
                sensor2lidar_translation=self.array(cam, "sensor2lidar_translation", (3,), f"{name}.sensor2lidar_translation"),
                intrinsics=self.array(cam, "cam_intrinsic", (3, 3), f"{name}.cam_intrinsic"),
                distortion=self.array(cam, "distortion", (None,), f"{name}.distortion"),
            )
        return Cameras(out)

    def annotations(self) -> Annotations | None:
        if "anns" not in self.frame or self.frame["anns"] is None:
            return None
        anns = self.frame["anns"]
        if not isinstance(anns, Mapping):
            raise self.fail("anns", f"expected a dict, got {type(anns).__name__}")
        boxes = self.array(anns, "gt_boxes", (None, 7), "anns.gt_boxes")
        n = boxes.shape[0]
        names = self.strings(anns, "gt_names", "anns.gt_names")
        velocity = self.array(anns, "gt_velocity_3d", (None, 3), "anns.gt_velocity_3d")
        instance_tokens = self.strings(anns, "instance_tokens", "anns.instance_tokens")
        track_tokens = self.strings(anns, "track_tokens", "anns.track_tokens")
        for key, length in (("gt_names", len(names)), ("gt_velocity_3d", velocity.shape[0]),
                            ("instance_tokens", len(instance_tokens)), ("track_tokens", len(track_tokens))):
            if length != n:
                raise self.fail(f"anns.{key}", f"has {length} entries but anns.gt_boxes has {n}")
        return Annotations(boxes, names, velocity, instance_tokens, track_tokens)

    def parse(self, sensor_blobs_dir: Path | None) -> Frame:
        f = self.frame
        translation = self.array(f, "ego2global_translation", (3,))
        rotation = self.array(f, "ego2global_rotation", (4,))
        norm = float(np.linalg.norm(rotation))
        if not 0.9 < norm < 1.1:
            raise self.fail("ego2global_rotation", f"expected a unit quaternion (w, x, y, z), norm is {norm:.3f}")
        dynamic = self.array(f, "ego_dynamic_state", (4,))
        command = self.array(f, "driving_command", (4,), dtype=np.float64)
        if not (np.all((command == 0) | (command == 1)) and command.sum() == 1):
            raise self.fail("driving_command", f"expected a one-hot vector of 4, got {command.tolist()}")
        can_bus = self.array(f, "can_bus", (18,)) if "can_bus" in f else None
        ego = EgoStatus(
            ego_pose=np.array([translation[0], translation[1], yaw_from_quaternion(rotation)], dtype=np.float64),
            ego_velocity=dynamic[:2].astype(np.float32),
            ego_acceleration=dynamic[2:].astype(np.float32),
            driving_command=command.astype(np.int64),
            in_global_frame=True,
        )
        return Frame(
            token=self.text(f, "token"),
            timestamp=self.integer(f, "timestamp"),
            log_name=self.text(f, "log_name"),
            scene_token=self.text(f, "scene_token"),
            map_location=self.text(f, "map_location"),
            roadblock_ids=self.strings(f, "roadblock_ids"),
            traffic_lights=self.traffic_lights(),
            ego_status=ego,
            cameras=self.cameras(sensor_blobs_dir),
            annotations=self.annotations(),
            can_bus=can_bus,
            raw=dict(f),
        )


def parse_frame(frame: Any, path: str | Path = "<frame>", index: int = 0, sensor_blobs_dir: Path | None = None) -> Frame:
    """Check and convert one NAVSIM frame dict."""
    return _FrameParser(Path(path), index, frame).parse(sensor_blobs_dir)


def load_log(path: str | Path, sensor_blobs_dir: str | Path | None = None) -> list[Frame]:
    """Load and check one ``<log>.pkl`` (allow-list unpickler); frames in timestamp order."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"log file {path} does not exist")
    data = safe_load_pickle(path)
    if not isinstance(data, list):
        raise LogFormatError(path, f"expected a list of frame dicts, got {type(data).__name__}")
    blobs = None if sensor_blobs_dir is None else Path(sensor_blobs_dir)
    frames = [parse_frame(item, path, i, blobs) for i, item in enumerate(data)]
    for i in range(1, len(frames)):
        if frames[i].timestamp <= frames[i - 1].timestamp:
            raise LogFormatError(path, f"timestamp {frames[i].timestamp} is not after the previous frame's "
                                 f"{frames[i - 1].timestamp}", i, "timestamp")
    return frames


def find_logs(logs_dir: str | Path) -> list[Path]:
    """``*.pkl`` logs in ``logs_dir`` (a file, a split folder, or a folder of split folders)."""
    logs_dir = Path(logs_dir)
    if logs_dir.is_file():
        return [logs_dir]
    if not logs_dir.is_dir():
        raise FileNotFoundError(f"logs directory {logs_dir} does not exist")
    logs = sorted(logs_dir.glob("*.pkl"))
    if not logs:
        logs = sorted(logs_dir.glob("*/*.pkl"))
    return logs


# --------------------------------------------------------------------------- scenes


class NavsimLogs:
    """Scenes of a folder of NAVSIM logs, cut like NAVSIM's scene filter.

    ``logs_dir`` is ``navsim_logs/<split>`` (or one ``.pkl``, or ``navsim_logs`` with
    split folders); ``sensor_blobs_dir`` is ``sensor_blobs/<split>`` (or
    ``sensor_blobs``, then the split folder of each log is used when it exists).
    Scenes whose current frame has no ``roadblock_ids`` are skipped when
    ``has_route`` (as NAVSIM does). ``maps_dir`` defaults to ``<logs root>/../maps``
    when that exists (synthetic logs put their maps there); ``Scene.map`` is then
    available through :meth:`map_for`.
    """

    def __init__(
        self,
        logs_dir: str | Path,
        sensor_blobs_dir: str | Path | None = None,
        num_history_frames: int = 4,
        num_future_frames: int = 8,
        frame_interval: int = 1,
        has_route: bool = True,
        log_names: Sequence[str] | None = None,
        max_scenes: int | None = None,
        progress: bool = False,
    ) -> None:
        if num_history_frames < 1:
            raise ValueError(f"num_history_frames must be >= 1, got {num_history_frames}")
        if num_future_frames < 0:
            raise ValueError(f"num_future_frames must be >= 0, got {num_future_frames}")
        if frame_interval < 1:
            raise ValueError(f"frame_interval must be >= 1, got {frame_interval}")
        self.logs_dir = Path(logs_dir)
        self.sensor_blobs_dir = None if sensor_blobs_dir is None else Path(sensor_blobs_dir)
        self.num_history_frames = num_history_frames
        self.num_future_frames = num_future_frames
        self.frame_interval = frame_interval
        self.log_paths = find_logs(self.logs_dir)
        if log_names is not None:
            wanted = set(log_names)
            self.log_paths = [p for p in self.log_paths if p.stem in wanted]
        self.logs: dict[str, list[Frame]] = {}
        self._scenes: list[tuple[str, int]] = []  # (log stem, start index)
        self._log_path: dict[str, Path] = {}
        num_frames = num_history_frames + num_future_frames
        paths: Any = self.log_paths
        if progress:
            from tqdm import tqdm

            paths = tqdm(paths, desc="Loading logs", unit="log")
        for path in paths:
            frames = load_log(path, self._blobs_for(path))
            self.logs[path.stem] = frames
            self._log_path[path.stem] = path
            for start in range(0, len(frames), frame_interval):
                window = frames[start : start + num_frames]
                if len(window) < num_frames:
                    continue
                if has_route and not window[num_history_frames - 1].roadblock_ids:
                    continue
                self._scenes.append((path.stem, start))
                if max_scenes is not None and len(self._scenes) >= max_scenes:
                    break
            if max_scenes is not None and len(self._scenes) >= max_scenes:
                break
        self._index = {self._scene_token(i): i for i in range(len(self._scenes))}

    def _blobs_for(self, log_path: Path) -> Path | None:
        if self.sensor_blobs_dir is None:
            return None
        split_dir = self.sensor_blobs_dir / log_path.parent.name
        if split_dir.is_dir() and not (self.sensor_blobs_dir / log_path.stem).is_dir():
            return split_dir
        return self.sensor_blobs_dir

    def _scene_token(self, i: int) -> str:
        log, start = self._scenes[i]
        return self.logs[log][start + self.num_history_frames - 1].token

    def __len__(self) -> int:
        return len(self._scenes)

    def scene_tokens(self) -> list[str]:
        return [self._scene_token(i) for i in range(len(self._scenes))]

    def num_frames(self) -> int:
        return sum(len(frames) for frames in self.logs.values())

    def camera_names(self) -> list[str]:
        """Camera names found in any frame, in NAVSIM order."""
        found: set[str] = set()
        for frames in self.logs.values():
            for frame in frames:
                found.update(frame.cameras.names())
        return [c for c in CAMERA_NAMES if c in found] + sorted(found - set(CAMERA_NAMES))

    def __getitem__(self, key: int | str) -> Scene:
        if isinstance(key, str):
            if key not in self._index:
                raise KeyError(f"no scene with token {key!r}")
            key = self._index[key]
        if not -len(self) <= key < len(self):
            raise IndexError(f"scene index {key} out of range ({len(self)} scenes)")
        log, start = self._scenes[key]
        frames = self.logs[log][start : start + self.num_history_frames + self.num_future_frames]
        current = frames[self.num_history_frames - 1]
        meta = SceneMetadata(
            log_name=current.log_name,
            scene_token=current.scene_token,
            map_name=current.map_location,
            initial_token=current.token,
            num_history_frames=self.num_history_frames,
            num_future_frames=self.num_future_frames,
            log_path=str(self._log_path[log]),
        )
        return Scene(meta, list(frames), self._blobs_for(self._log_path[log]))

    def __iter__(self) -> Iterator[Scene]:
        for i in range(len(self)):
            yield self[i]

    def maps_dir(self) -> Path | None:
        """Where synthetic maps live (``<dataset root>/maps``), if that folder exists."""
        for parent in (self.logs_dir, *self.logs_dir.parents[:3]):
            candidate = parent / "maps"
            if candidate.is_dir():
                return candidate
        return None

    def map_for(self, scene_or_log: Scene | str) -> Any | None:
        """The synthetic map (:class:`~wamdiff2_ros.data.world.map.RoadMap`) of a log, or None for real logs."""
        log_name = scene_or_log.metadata.log_name if isinstance(scene_or_log, Scene) else scene_or_log
        maps = self.maps_dir()
        if maps is None or not (maps / f"{log_name}.json").is_file():
            return None
        from wamdiff2_ros.data.world import RoadMap

        return RoadMap.from_json(json.loads((maps / f"{log_name}.json").read_text()))


def summarize(logs: NavsimLogs) -> dict[str, Any]:
    """Counts for ``wamdiff2 data inspect``."""
    frames = logs.num_frames()
    with_anns = sum(1 for fr in logs.logs.values() for f in fr if f.annotations is not None)
    boxes = sum(len(f.annotations) for fr in logs.logs.values() for f in fr if f.annotations is not None)
    durations = [
        (fr[-1].timestamp - fr[0].timestamp) / 1e6 for fr in logs.logs.values() if len(fr) > 1
    ]
    return {
        "logs": len(logs.logs),
        "frames": frames,
        "scenes": len(logs),
        "cameras": logs.camera_names(),
        "frames_with_annotations": with_anns,
        "boxes": boxes,
        "duration_s": round(float(sum(durations)), 1) if durations else 0.0,
        "num_history_frames": logs.num_history_frames,
        "num_future_frames": logs.num_future_frames,
        "frame_interval": logs.frame_interval,
        "maps_dir": None if logs.maps_dir() is None else str(logs.maps_dir()),
        "log_names": sorted(logs.logs),
    }

