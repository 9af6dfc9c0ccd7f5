"""navsim_replay_node: NAVSIM logs (real or synthetic) -> the driver's input topics + ground truth.

Per scene (NAVSIM's scene filter: 4 history frames, 8 future frames, interval 1),
the current frame is published with its log timestamp as the stamp: camera images,
ego odometry (pose in ``map`` = ego2global, twist in ``base_link``), acceleration,
driving command and a SceneInfo carrying the scene token, plus ground truth on
topics of its own (future trajectory as a Trajectory, boxes as a DetectionArray).
Timing: the log's stamps played at ``speed`` on the replay's own clock, which
``paused`` (settable at run time) stops, or ``lockstep`` (the next frame only after
the driver's Trajectory for this one, or ``lockstep_timeout_s``). With
``publish_clock`` that clock goes out on ``/clock`` (rosgraph_msgs/Clock), like
``ros2 bag play --clock``: drivers run with ``use_sim_time:=true`` then judge
timeouts and rates in log time, whatever the speed or a pause. Topics are relative
to the node's namespace; frame ids are the ``map_frame`` and ``base_frame`` parameters.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

from wamdiff2_ros.data.navsim import NavsimLogs
from wamdiff2_ros.geometry import quaternion_from_yaw
from wamdiff2_ros.model.prompts import CAMERAS, DRIVING_COMMANDS, command_from_one_hot
from wamdiff2_ros.ros.image_conversion import rgb_to_image
from wamdiff2_ros.ros.msg_utils import fill_stamp, stamp_to_ns
from wamdiff2_ros.ros.node_main import run_node
from wamdiff2_ros.ros.params import ParameterError, declare, in_range, one_of, spec, subset_of
from wamdiff2_ros.ros.replay_clock import ReplayClock

# rclpy and the message classes (wamdiff2_ros.msg is built by colcon) are imported in the
# methods that use them: they exist only in a ROS install, and this module imports without.

PARAMS = [
    spec("logs_dir", "", "navsim_logs/<split> directory (or one .pkl)"),
    spec("sensor_blobs_dir", "", "sensor_blobs/<split> directory"),
    spec("cameras", ["CAM_F0"], "cameras to publish", subset_of(CAMERAS)),
    spec("camera_topic_format", "cameras/{camera}/image", "topic per camera; '/compressed' is appended for compressed"),
    spec("image_transport", "raw", "raw (decode the jpg) or compressed (pass the jpg bytes)", one_of("raw", "compressed")),
    spec("speed", 1.0, "playback speed factor of the log's 2 Hz", in_range(0.01, 100.0)),
    spec("paused", False, "hold the replay and its clock (settable while running)", read_only=False),
    spec("publish_clock", False, "publish the replay's log time on /clock (for use_sim_time:=true)"),
    spec("clock_rate_hz", 50.0, "/clock messages per second of wall time", in_range(1.0, 1000.0)),
    spec("map_frame", "map", "frame id of the odometry pose"),
    spec("base_frame", "base_link", "frame id of the ego vehicle (odometry child, ground truth)"),
    spec("lockstep", False, "publish the next frame only after the driver's trajectory for this one"),
    spec("lockstep_timeout_s", 30.0, "give up waiting for the driver after this long", in_range(0.1, 600.0)),
    spec("lockstep_resend_s", 10.0, "re-send the frame's images if unanswered this long", in_range(0.1, 600.0)),
    spec("trajectory_topic", "wamdiff2/trajectory", "driver output watched in lock-step mode"),
    spec("max_scenes", 0, "stop after this many scenes (0 = all)", in_range(0, 10**9)),
    spec("loop", False, "start again after the last scene"),
    spec("start_delay_s", 1.0, "wait this long before the first frame (discovery)", in_range(0.0, 60.0)),
    spec("wait_for_subscribers_s", 30.0, "before starting, wait up to this long for a camera subscriber", in_range(0.0, 600.0)),
    spec("exit_when_done", True, "shut the node down after the last scene"),
    spec("exit_ack_timeout_s", 5.0, "before exiting, wait up to this long for subscribers to acknowledge the reliable topics",
         in_range(0.0, 600.0)),
]


class NavsimReplay:
    def __init__(self, node) -> None:
        from geometry_msgs.msg import AccelStamped
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import CompressedImage, Image

        from wamdiff2_ros.msg import DetectionArray, DrivingCommand, SceneInfo, Trajectory

        self.node = node
        self.p = declare(node, PARAMS)
        self.log = node.get_logger()
        if not self.p["logs_dir"]:
            raise ParameterError("parameter 'logs_dir' is empty: give the navsim_logs/<split> directory")
        blobs = self.p["sensor_blobs_dir"] or None
        try:
            self.logs = NavsimLogs(self.p["logs_dir"], blobs)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"cannot read logs: {exc}") from exc
        if len(self.logs) == 0:
            raise ParameterError(f"no scenes in {self.p['logs_dir']}")
        self.compressed = self.p["image_transport"] == "compressed"
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

        fmt = self.p["camera_topic_format"] + ("/compressed" if self.compressed else "")
        self.image_pubs = {
            c: node.create_publisher(CompressedImage if self.compressed else Image, fmt.format(camera=c), qos_profile_sensor_data)
            for c in self.p["cameras"]
        }
        self.odom_pub = node.create_publisher(Odometry, "ego/odometry", 10)
        self.accel_pub = node.create_publisher(AccelStamped, "ego/accel", 10)
        command_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.cmd_pub = node.create_publisher(DrivingCommand, "driving_command", command_qos)
        # Ground truth and scene tokens are kept for late subscribers (evaluation, recorders).
        latched = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.info_pub = node.create_publisher(SceneInfo, "navsim/scene_info", latched)
        self.gt_traj_pub = node.create_publisher(Trajectory, "navsim/gt_trajectory", latched)
        self.gt_box_pub = node.create_publisher(DetectionArray, "navsim/gt_boxes", latched)
        from rosgraph_msgs.msg import Clock

        self.clock = ReplayClock(float(self.p["speed"]))
        self.clock_pub = node.create_publisher(Clock, "/clock", 10) if self.p["publish_clock"] else None
        self.answered: set[int] = set()
        self.answered_event = threading.Event()
        if self.p["lockstep"]:
            node.create_subscription(Trajectory, self.p["trajectory_topic"], self.on_trajectory, 10)
        self.published = 0
        self.timeouts = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, name="navsim_replay", daemon=True)
        self.thread.start()
        self.clock_thread = threading.Thread(target=self.run_clock, name="navsim_replay_clock", daemon=True)
        self.clock_thread.start()
        self.log.info(f"replaying {len(self.logs)} scenes from {self.p['logs_dir']} "
                      f"(speed x{self.p['speed']}, lockstep={self.p['lockstep']})")

    def on_trajectory(self, msg) -> None:
        self.answered.add(stamp_to_ns(msg.header.stamp))
        self.answered_event.set()

    def run_clock(self) -> None:
        """Follow the ``paused`` parameter and publish the replay clock on /clock (when asked)."""
        import rclpy
        from rosgraph_msgs.msg import Clock

        period = 1.0 / self.p["clock_rate_hz"]
        while rclpy.ok() and not self.done.is_set():
            try:
                self.clock.set_paused(bool(self.node.get_parameter("paused").value))
                now = self.clock.now()
                if self.clock_pub is not None and now is not None:
                    msg = Clock()
                    fill_stamp(msg.clock, now)
                    self.clock_pub.publish(msg)
            except Exception:  # the context goes away on shutdown
                if not rclpy.ok():
                    return
                raise
            time.sleep(period)

    def wait_for_log_time(self, stamp_ns: int) -> None:
        """Wait until the replay clock reaches ``stamp_ns`` (a gap over 5 s of log time, or back, is not waited for)."""
        import rclpy

        now = self.clock.now()
        if now is not None and 0 <= stamp_ns - now <= 5_000_000_000:
            while rclpy.ok() and self.clock.now() < stamp_ns:
                time.sleep(0.005)
        while rclpy.ok() and self.clock.paused:
            time.sleep(0.01)
        self.clock.jump(stamp_ns)

    def run(self) -> None:
        import rclpy

        deadline = time.monotonic() + self.p["wait_for_subscribers_s"]
        first = next(iter(self.image_pubs.values()))

        def audience_missing() -> bool:  # lock-step needs the driver itself, not just any subscriber
            if self.p["lockstep"] and self.node.count_publishers(self.p["trajectory_topic"]) == 0:
                return True
            return first.get_subscription_count() == 0

        while audience_missing() and time.monotonic() < deadline and rclpy.ok():
            time.sleep(0.1)
        time.sleep(self.p["start_delay_s"])
        limit = self.p["max_scenes"] or len(self.logs)
        while rclpy.ok():
            for i in range(min(limit, len(self.logs))):
                if not rclpy.ok():
                    return
                try:
                    scene = self.logs[i]
                    self.wait_for_log_time(int(scene.current_frame.timestamp) * 1000)
                    stamp = self.publish_scene(scene)
                except Exception as exc:  # a bad frame must not end the replay
                    self.log.error(f"scene {i}: {type(exc).__name__}: {exc}")
                    continue
                self.published += 1
                if self.p["lockstep"]:
                    deadline = time.monotonic() + self.p["lockstep_timeout_s"]
                    resend = time.monotonic() + self.p["lockstep_resend_s"]
                    while stamp not in self.answered and time.monotonic() < deadline and rclpy.ok():
                        self.answered_event.wait(0.05)
                        self.answered_event.clear()
                        if time.monotonic() > resend:  # sensor QoS is best effort: the frame may be lost
                            self.publish_images(self.logs[i], stamp)
                            resend = time.monotonic() + self.p["lockstep_resend_s"]
                    if stamp not in self.answered:
                        self.timeouts += 1
                        self.log.warning(f"no trajectory for scene {i} within {self.p['lockstep_timeout_s']} s")
                    else:
                        self.clock.jump(stamp + 500_000_000)  # lock-step: the next frame is due now
            if not self.p["loop"]:
                break
        self.log.info(f"replay done: {self.published} scenes, {self.timeouts} lock-step timeouts")
        self.done.set()
        if self.p["exit_when_done"]:
            self.flush()
            rclpy.try_shutdown()

    def flush(self) -> None:
        """Wait until the reliable topics' subscribers have acknowledged every sample (or the timeout)."""
        from rclpy.duration import Duration

        timeout = Duration(seconds=self.p["exit_ack_timeout_s"])
        unacked = [pub.topic_name for pub in (self.info_pub, self.gt_traj_pub, self.gt_box_pub, self.cmd_pub)
                   if not pub.wait_for_all_acked(timeout)]
        if unacked:
            self.log.warning(f"exiting with samples not acknowledged on {', '.join(unacked)}")
        time.sleep(0.2)  # best-effort topics (images, odometry) get a moment too

    def publish_scene(self, scene) -> int:
        from geometry_msgs.msg import AccelStamped
        from nav_msgs.msg import Odometry

        from wamdiff2_ros.msg import DrivingCommand, SceneInfo

        frame = scene.current_frame
        stamp = int(frame.timestamp) * 1000
        ego = frame.ego_status
        info = SceneInfo(scene_token=scene.token, log_name=frame.log_name)
        fill_stamp(info.header.stamp, stamp)
        self.info_pub.publish(info)

        odom = Odometry()
        fill_stamp(odom.header.stamp, stamp)
        odom.header.frame_id, odom.child_frame_id = self.p["map_frame"], self.p["base_frame"]
        x, y, heading = (float(v) for v in ego.ego_pose)
        odom.pose.pose.position.x, odom.pose.pose.position.y = x, y
        qw, _, _, qz = (float(v) for v in quaternion_from_yaw(heading))
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = qz, qw
        odom.twist.twist.linear.x, odom.twist.twist.linear.y = (float(v) for v in ego.ego_velocity[:2])
        self.odom_pub.publish(odom)
        accel = AccelStamped()
        fill_stamp(accel.header.stamp, stamp)
        accel.header.frame_id = self.p["base_frame"]
        accel.accel.linear.x, accel.accel.linear.y = (float(v) for v in ego.ego_acceleration[:2])
        self.accel_pub.publish(accel)
        cmd = DrivingCommand()
        fill_stamp(cmd.header.stamp, stamp)
        try:
            cmd.command = DRIVING_COMMANDS.index(command_from_one_hot(ego.driving_command))
        except ValueError:
            cmd.command = DrivingCommand.UNKNOWN
        self.cmd_pub.publish(cmd)
        self.publish_ground_truth(scene, stamp)
        self.publish_images(scene, stamp)  # last: the driver plans when the images arrive
        return stamp

    def publish_images(self, scene, stamp: int) -> None:
        from sensor_msgs.msg import CompressedImage, Image

        frame = scene.current_frame
        for camera, pub in self.image_pubs.items():
            cam = frame.cameras[camera]
            if self.compressed:
                msg = CompressedImage(format="jpeg")
                msg.data = cam.image_path.read_bytes()
            else:
                msg = rgb_to_image(Image, cam.load_image(), "rgb8")
            fill_stamp(msg.header.stamp, stamp)
            msg.header.frame_id = camera
            pub.publish(msg)

    def publish_ground_truth(self, scene, stamp: int) -> None:
        from wamdiff2_ros.msg import Detection, DetectionArray, Trajectory, Waypoint

        gt = Trajectory(valid=True, source="ground_truth", scene_token=scene.token)
        fill_stamp(gt.header.stamp, stamp)
        gt.header.frame_id = self.p["base_frame"]
        future = scene.future_trajectory()
        for i, (x, y, h) in enumerate(np.asarray(future, dtype=float), start=1):
            wp = Waypoint(x=x, y=y, heading=h)
            fill_stamp(wp.time_from_start, int(i * 0.5e9))
            gt.waypoints.append(wp)
        self.gt_traj_pub.publish(gt)
        anns = scene.current_frame.annotations
        boxes = DetectionArray()
        fill_stamp(boxes.header.stamp, stamp)
        boxes.header.frame_id = self.p["base_frame"]
        if anns is not None:
            for box, name in zip(np.asarray(anns.boxes, dtype=float), anns.names, strict=False):
                det = Detection(label=str(name), score=1.0, yaw=float(box[6]))
                det.center.x, det.center.y, det.center.z = float(box[0]), float(box[1]), float(box[2])
                det.size.x, det.size.y, det.size.z = float(box[3]), float(box[4]), float(box[5])
                boxes.detections.append(det)
        self.gt_box_pub.publish(boxes)


def main(argv: list[str] | None = None) -> int:
    return run_node("navsim_replay_node", NavsimReplay, argv)


if __name__ == "__main__":
    sys.exit(main())
