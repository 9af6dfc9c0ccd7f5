"""AgentOutput -> ROS messages (Trajectory, Path, DetectionArray, MarkerArray, Rationale, DecodeStats).

The message classes are imported in the functions: they exist only in a ROS install
(this package's own ones only once colcon has built them), and this module imports without.
"""

from __future__ import annotations

import numpy as np

from wamdiff2_ros.agent import AgentOutput
from wamdiff2_ros.geometry import quaternion_from_yaw
from wamdiff2_ros.model.codecs import waypoint_times
from wamdiff2_ros.ros.detection_scores import box_scores
from wamdiff2_ros.ros.msg_utils import fill_stamp

FRAME_ID = "base_link"
LABEL_COLOURS = {
    "vehicle": (0.1, 0.5, 1.0),
    "pedestrian": (1.0, 0.3, 0.2),
    "bicycle": (1.0, 0.8, 0.1),
}


def _header(msg, stamp_ns: int, frame_id: str = FRAME_ID):
    fill_stamp(msg.header.stamp, stamp_ns)
    msg.header.frame_id = frame_id
    return msg


def yaw_to_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation by ``yaw`` about z (geometry_msgs order)."""
    w, x, y, z = (float(v) for v in quaternion_from_yaw(yaw))
    return x, y, z, w


def trajectory_msg(out: AgentOutput, stamp_ns: int, block_size: int, scene_token: str = "", frame_id: str = FRAME_ID):
    from wamdiff2_ros.msg import Trajectory, Waypoint

    msg = _header(Trajectory(), stamp_ns, frame_id)
    for (x, y, heading), t in zip(np.asarray(out.trajectory, dtype=float), waypoint_times(), strict=True):
        wp = Waypoint(x=float(x), y=float(y), heading=float(heading))
        fill_stamp(wp.time_from_start, int(round(t * 1e9)))
        msg.waypoints.append(wp)
    msg.valid = bool(out.valid)
    msg.source = out.source
    msg.block_size = int(block_size)
    msg.confidence = float(out.confidence)
    msg.scene_token = scene_token
    return msg


def path_msg(out: AgentOutput, stamp_ns: int, frame_id: str = FRAME_ID):
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Path

    msg = _header(Path(), stamp_ns, frame_id)
    origin = PoseStamped()
    _header(origin, stamp_ns, frame_id)
    origin.pose.orientation.w = 1.0
    msg.poses.append(origin)
    for (x, y, heading), t in zip(np.asarray(out.trajectory, dtype=float), waypoint_times(), strict=True):
        pose = PoseStamped()
        _header(pose, stamp_ns + int(round(t * 1e9)), frame_id)
        pose.pose.position.x, pose.pose.position.y = float(x), float(y)
        qx, qy, qz, qw = yaw_to_quaternion(float(heading))
        pose.pose.orientation.x, pose.pose.orientation.y = qx, qy
        pose.pose.orientation.z, pose.pose.orientation.w = qz, qw
        msg.poses.append(pose)
    return msg


def detections_msg(out: AgentOutput, stamp_ns: int, frame_id: str = FRAME_ID, tokenizer=None):
    """Boxes with their own scores (their tokens' mean commit confidence, given the tokenizer), else the task's."""
    from wamdiff2_ros.msg import Detection, DetectionArray

    msg = _header(DetectionArray(), stamp_ns, frame_id)
    task = out.tasks.get("perception")
    score = float(task.confidence) if task is not None else 0.0
    scores = None
    if task is not None and out.detections:
        scores = box_scores(tokenizer, task.token_ids, task.token_confidences, task.text, len(out.detections))
    scores = scores or [score] * len(out.detections)
    for box, box_score in zip(out.detections, scores, strict=True):
        det = Detection(label=box.label, score=float(box_score), yaw=float(box.yaw), camera=box.camera)
        det.center.x, det.center.y, det.center.z = float(box.x), float(box.y), float(box.z)
        det.size.x, det.size.y, det.size.z = float(box.length), float(box.width), float(box.height)
        det.bbox = [float(v) for v in (box.bbox or (0.0, 0.0, 0.0, 0.0))]
        msg.detections.append(det)
    return msg


def markers_msg(detections, stamp_ns: int, lifetime_s: float = 1.0, frame_id: str = FRAME_ID):
    """Boxes as CUBE markers (plus a DELETEALL first, so old boxes vanish)."""
    from visualization_msgs.msg import Marker, MarkerArray

    msg = MarkerArray()
    clear = Marker(action=Marker.DELETEALL)
    _header(clear, stamp_ns, frame_id)
    msg.markers.append(clear)
    for i, det in enumerate(detections.detections):
        m = Marker(ns="wamdiff2_detections", id=i, type=Marker.CUBE, action=Marker.ADD)
        _header(m, stamp_ns, frame_id)
        m.pose.position = det.center
        qx, qy, qz, qw = yaw_to_quaternion(det.yaw)
        m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = qx, qy, qz, qw
        m.scale.x, m.scale.y, m.scale.z = max(det.size.x, 0.05), max(det.size.y, 0.05), max(det.size.z, 0.05)
        r, g, b = LABEL_COLOURS.get(det.label, (0.7, 0.7, 0.7))
        m.color.r, m.color.g, m.color.b, m.color.a = r, g, b, 0.6
        fill_stamp(m.lifetime, int(lifetime_s * 1e9))
        msg.markers.append(m)
    return msg


def rationale_msg(out: AgentOutput, stamp_ns: int, command: str, frame_id: str = FRAME_ID):
    from wamdiff2_ros.msg import Rationale

    msg = _header(Rationale(), stamp_ns, frame_id)
    msg.task = "understanding"
    msg.question = out.rationale_question
    msg.text = out.rationale or ""
    msg.driving_command = command
    return msg


def decode_stats_msgs(out: AgentOutput, stamp_ns: int, frame_id: str = FRAME_ID):
    from wamdiff2_ros.msg import DecodeStats

    msgs = []
    for task in out.tasks.values():
        s = task.stats
        msg = _header(DecodeStats(), stamp_ns, frame_id)
        msg.engine = f"{s.engine}:{task.task}"
        msg.block_size = int(s.block_size)
        msg.prompt_tokens = int(s.prompt_tokens)
        msg.generated_tokens = int(s.generated_tokens)
        msg.forwards = int(s.forwards)
        msg.tokens_per_forward = float(s.tokens_per_forward)
        msg.prefill_ms = float(s.prefill_ms)
        msg.decode_ms = float(s.decode_ms)
        msg.decode_tokens_per_second = float(s.decode_tokens_per_second)
        msgs.append(msg)
    return msgs
