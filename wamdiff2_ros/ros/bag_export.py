"""`wamdiff2 bag export`: NAVSIM logs -> a rosbag2 with the replay node's topics (no rclpy needed).

Same topics and stamps as navsim_replay_node (camera images, /ego/odometry,
/ego/accel, /driving_command, /navsim/scene_info, /navsim/gt_trajectory,
/navsim/gt_boxes), written with `rosbags` and this package's message definitions
embedded, so `ros2 bag play` feeds drive_node and Foxglove shows it. Images are the
stored jpg bytes as CompressedImage (``--images compressed``, default) or decoded
rgb8 Images (``--images raw``). Receive times equal the log's timestamps.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from wamdiff2_ros.data.bags import BagError, BagWriter, detection_array_message, header, trajectory_message
from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.model.prompts import DRIVING_COMMANDS, command_from_one_hot


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logs", required=True, help="navsim_logs/<split> directory (or one .pkl)")
    parser.add_argument("--sensor-blobs", required=True, help="sensor_blobs/<split> directory")
    parser.add_argument("--out", required=True, help="bag folder to create")
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    parser.add_argument("--cameras", default="CAM_F0", help="comma-separated camera names")
    parser.add_argument("--images", choices=("compressed", "raw"), default="compressed")
    parser.add_argument("--limit", type=int, default=0, help="at most this many scenes (0 = all)")


def _stamp(ts, ns: int):
    return ts.types["builtin_interfaces/msg/Time"](sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def export_scenes(scenes, out: Path, storage: str = "mcap", cameras=("CAM_F0",), images: str = "compressed",
                  progress: bool = True) -> dict[str, int]:
    """Write ``scenes`` (NavsimLogs or any sequence of Scene) as a bag; returns message counts per topic."""
    counts: dict[str, int] = {}
    items = scenes
    if progress:
        from tqdm import tqdm

        items = tqdm(scenes, desc="bag export", unit="scene")
    with BagWriter(out, storage=storage) as bag:
        ts = bag.typestore
        T = ts.types

        def write(topic: str, stamp: int, msg) -> None:
            bag.write(topic, stamp, msg)
            counts[topic] = counts.get(topic, 0) + 1

        for scene in items:
            frame = scene.current_frame
            stamp = int(frame.timestamp) * 1000
            ego = frame.ego_status
            write("/navsim/scene_info", stamp, T["wamdiff2_ros/msg/SceneInfo"](
                header=header(ts, stamp, "base_link"), scene_token=scene.token, log_name=frame.log_name))
            x, y, heading = (float(v) for v in ego.ego_pose)
            vx, vy = (float(v) for v in ego.ego_velocity[:2])
            pose = T["geometry_msgs/msg/Pose"](
                position=T["geometry_msgs/msg/Point"](x=x, y=y, z=0.0),
                orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=math.sin(heading / 2), w=math.cos(heading / 2)))
            zero36 = np.zeros(36, dtype=np.float64)
            twist = T["geometry_msgs/msg/Twist"](linear=T["geometry_msgs/msg/Vector3"](x=vx, y=vy, z=0.0),
                                                 angular=T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0))
            write("/ego/odometry", stamp, T["nav_msgs/msg/Odometry"](
                header=header(ts, stamp, "map"), child_frame_id="base_link",
                pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=zero36),
                twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=zero36)))
            ax, ay = (float(v) for v in ego.ego_acceleration[:2])
            write("/ego/accel", stamp, T["geometry_msgs/msg/AccelStamped"](
                header=header(ts, stamp, "base_link"),
                accel=T["geometry_msgs/msg/Accel"](linear=T["geometry_msgs/msg/Vector3"](x=ax, y=ay, z=0.0),
                                                   angular=T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0))))
            try:
                command = DRIVING_COMMANDS.index(command_from_one_hot(ego.driving_command))
            except ValueError:
                command = 3
            write("/driving_command", stamp, T["wamdiff2_ros/msg/DrivingCommand"](
                header=header(ts, stamp, "base_link"), command=command))
            write("/navsim/gt_trajectory", stamp, trajectory_message(
                ts, scene.future_trajectory(), stamp, source="ground_truth", scene_token=scene.token))
            anns = frame.annotations
            boxes = []
            if anns is not None:
                for box, name in zip(np.asarray(anns.boxes, dtype=float), anns.names, strict=False):
                    boxes.append(SimpleNamespace(label=str(name), x=box[0], y=box[1], z=box[2], length=box[3],
                                                 width=box[4], height=box[5], yaw=box[6]))
            write("/navsim/gt_boxes", stamp, detection_array_message(ts, boxes, stamp))
            for camera in cameras:
                cam = frame.cameras[camera]
                if images == "compressed":
                    msg = T["sensor_msgs/msg/CompressedImage"](
                        header=header(ts, stamp, camera), format="jpeg",
                        data=np.frombuffer(cam.image_path.read_bytes(), dtype=np.uint8))
                    topic = f"/cameras/{camera}/image/compressed"
                else:
                    rgb = cam.load_image()
                    msg = T["sensor_msgs/msg/Image"](
                        header=header(ts, stamp, camera), height=rgb.shape[0], width=rgb.shape[1], encoding="rgb8",
                        is_bigendian=0, step=rgb.shape[1] * 3, data=np.ascontiguousarray(rgb).reshape(-1))
                    topic = f"/cameras/{camera}/image"
                write(topic, stamp, msg)
    return counts


def export(args: argparse.Namespace) -> int:
    cameras = tuple(c.strip() for c in args.cameras.split(",") if c.strip())
    try:
        logs = NavsimLogs(args.logs, args.sensor_blobs, max_scenes=args.limit or None)
    except (OSError, ValueError) as exc:
        print(f"wamdiff2 bag export: cannot read logs: {exc}", file=sys.stderr)
        return 2
    if len(logs) == 0:
        print(f"wamdiff2 bag export: no scenes in {args.logs}", file=sys.stderr)
        return 2
    try:
        counts = export_scenes(logs, Path(args.out), args.storage, cameras, args.images)
    except (BagError, OSError, KeyError, ValueError) as exc:
        print(f"wamdiff2 bag export: {exc}", file=sys.stderr)
        return 2
    total = sum(counts.values())
    print(f"wrote {total} messages ({len(logs)} scenes) to {args.out} [{args.storage}]")
    for topic, n in sorted(counts.items()):
        print(f"  {topic}: {n}")
    return 0
