"""sim_node: the synthetic driving world in closed loop, driven by geometry_msgs/Twist.

The world (wamdiff2_ros.data.world) runs in real time at ``physics_rate_hz``. The ego
is a kinematic bicycle (rear axle, wheelbase ``wheelbase``): the commanded yaw rate
becomes a steering angle ``atan(L * yaw_rate / v)`` (clamped to ``max_steer``), the
commanded speed is tracked within acceleration limits. Until the first command
arrives the world's autopilot drives. Published like the replay node (cameras,
ego/odometry, ego/accel, driving_command, relative to the node's namespace) plus
sim/status (DiagnosticArray: route progress, collisions, distance driven). Stamps are
simulation time; with ``publish_clock`` it is also published on ``/clock``
(rosgraph_msgs/Clock) for nodes run with ``use_sim_time:=true``. Frame ids are the
``map_frame`` and ``base_frame`` parameters.
"""

from __future__ import annotations

import math
import sys
import threading
import time

from wamdiff2_ros.model.codecs import CAMERAS, DRIVING_COMMANDS
from wamdiff2_ros.ros.params import in_range, one_of, spec, subset_of

PARAMS = [
    spec("seed", 0, "world seed", in_range(0, 2**31 - 1)),
    spec("cameras", ["CAM_F0"], "cameras to render", subset_of(CAMERAS)),
    spec("image_width", 512, "rendered image width", in_range(32, 4096)),
    spec("image_height", 256, "rendered image height", in_range(32, 4096)),
    spec("camera_topic_format", "cameras/{camera}/image", "topic per camera; '/compressed' is appended for compressed"),
    spec("image_transport", "raw", "raw or compressed (jpeg)", one_of("raw", "compressed")),
    spec("camera_rate_hz", 2.0, "rendered frames per second", in_range(0.1, 30.0)),
    spec("physics_rate_hz", 20.0, "simulation steps per second", in_range(1.0, 200.0)),
    spec("cmd_topic", "wamdiff2/cmd_vel", "geometry_msgs/Twist command (linear.x m/s, angular.z rad/s)"),
    spec("cmd_timeout_s", 2.0, "brake when no command arrived for this long (simulated time)", in_range(0.1, 60.0)),
    spec("publish_clock", False, "publish simulation time on /clock (for use_sim_time:=true)"),
    spec("map_frame", "map", "frame id of the odometry pose"),
    spec("base_frame", "base_link", "frame id of the vehicle (odometry child, acceleration)"),
    spec("wheelbase", 2.9, "m", in_range(0.5, 10.0)),
    spec("max_steer", 0.6, "rad", in_range(0.05, 1.5)),
    spec("max_accel", 3.0, "m/s^2", in_range(0.1, 20.0)),
    spec("max_decel", 6.0, "m/s^2", in_range(0.1, 20.0)),
    spec("duration_s", 0.0, "stop after this much simulated time (0 = run until stopped)", in_range(0.0, 1e6)),
]

EPOCH_NS = 1_700_000_000_000_000_000


class KinematicBicycle:
    """Rear-axle kinematic bicycle: (x, y, yaw, v) driven by (speed command, yaw-rate command)."""

    def __init__(self, x: float, y: float, yaw: float, v: float, wheelbase: float, max_steer: float,
                 max_accel: float, max_decel: float) -> None:
        self.x, self.y, self.yaw, self.v = x, y, yaw, v
        self.L, self.max_steer, self.max_accel, self.max_decel = wheelbase, max_steer, max_accel, max_decel
        self.accel = 0.0
        self.yaw_rate = 0.0

    def step(self, v_cmd: float, yaw_rate_cmd: float, dt: float) -> None:
        dv = max(-self.max_decel * dt, min(self.max_accel * dt, v_cmd - self.v))
        self.accel = dv / dt if dt > 0 else 0.0
        v_mid = max(0.0, self.v + dv / 2)
        steer = math.atan(self.L * yaw_rate_cmd / v_mid) if v_mid > 0.1 else 0.0
        steer = max(-self.max_steer, min(self.max_steer, steer))
        self.yaw_rate = v_mid * math.tan(steer) / self.L
        self.x += v_mid * math.cos(self.yaw + self.yaw_rate * dt / 2) * dt
        self.y += v_mid * math.sin(self.yaw + self.yaw_rate * dt / 2) * dt
        self.yaw = math.atan2(math.sin(self.yaw + self.yaw_rate * dt), math.cos(self.yaw + self.yaw_rate * dt))
        self.v = max(0.0, self.v + dv)


class SimNode:
    def __init__(self, node) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import AccelStamped, Twist
        from nav_msgs.msg import Odometry
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import CompressedImage, Image

        from wamdiff2_ros.data.world import World
        from wamdiff2_ros.msg import DrivingCommand
        from wamdiff2_ros.ros.params import declare

        self.node = node
        self.p = declare(node, PARAMS)
        self.world = World(int(self.p["seed"]))
        ego = self.world.ego_state()
        self.vehicle = KinematicBicycle(ego.x, ego.y, ego.yaw, ego.speed, self.p["wheelbase"], self.p["max_steer"],
                                        self.p["max_accel"], self.p["max_decel"])
        self.compressed = self.p["image_transport"] == "compressed"
        fmt = self.p["camera_topic_format"] + ("/compressed" if self.compressed else "")
        self.image_pubs = {
            c: node.create_publisher(CompressedImage if self.compressed else Image, fmt.format(camera=c),
                                     qos_profile_sensor_data)
            for c in self.p["cameras"]
        }
        self.odom_pub = node.create_publisher(Odometry, "ego/odometry", 10)
        self.accel_pub = node.create_publisher(AccelStamped, "ego/accel", 10)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.cmd_pub = node.create_publisher(DrivingCommand, "driving_command", latched)
        self.status_pub = node.create_publisher(DiagnosticArray, "sim/status", 10)
        self.clock_pub = node.create_publisher(Clock, "/clock", 10) if self.p["publish_clock"] else None
        self.command: tuple[float, float] | None = None
        self.command_time = 0.0
        self.commands_received = 0
        self.bad_commands = 0
        self.collided_with: set[str] = set()
        self.collision_events = 0
        self.distance = 0.0
        self.start_s = self.world.route_progress().s
        node.create_subscription(Twist, self.p["cmd_topic"], self.on_cmd, 10)
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self.run, name="sim", daemon=True)
        self.thread.start()
        node.get_logger().info(f"synthetic world seed {self.p['seed']}: route {self.world.route_progress().length:.0f} m")

    def on_cmd(self, msg) -> None:
        v, w = float(msg.linear.x), float(msg.angular.z)
        if not (math.isfinite(v) and math.isfinite(w)):
            self.bad_commands += 1
            return
        with self.lock:
            self.command = (v, w)
            self.command_time = self.world.time_s
            self.commands_received += 1

    def stamp(self) -> int:
        return EPOCH_NS + int(self.world.time_s * 1e9)

    def run(self) -> None:
        import rclpy

        dt = 1.0 / self.p["physics_rate_hz"]
        frame_every = max(1, int(round(self.p["physics_rate_hz"] / self.p["camera_rate_hz"])))
        tick = 0
        next_time = time.monotonic()
        while rclpy.ok() and not self.stopping:
            self.step(dt)
            try:
                self.publish_clock()
                self.publish_state()
                if tick % frame_every == 0:
                    self.publish_frame()
                    self.publish_status()
            except Exception:  # noqa: BLE001 - the context goes away on shutdown
                if not rclpy.ok() or self.stopping:
                    return
                raise
            tick += 1
            if self.p["duration_s"] and self.world.time_s >= self.p["duration_s"]:
                self.publish_status(final=True)
                time.sleep(0.5)
                rclpy.try_shutdown()
                return
            next_time += dt
            time.sleep(max(0.0, next_time - time.monotonic()))

    def publish_clock(self) -> None:
        if self.clock_pub is not None:
            from rosgraph_msgs.msg import Clock

            from wamdiff2_ros.ros.msg_utils import fill_stamp

            msg = Clock()
            fill_stamp(msg.clock, self.stamp())
            self.clock_pub.publish(msg)

    def step(self, dt: float) -> None:
        with self.lock:
            command, age = self.command, self.world.time_s - self.command_time
        if command is None:  # autopilot until the first command
            before = self.world.ego_state()
            self.world.step(dt)
            ego = self.world.ego_state()
            self.vehicle.x, self.vehicle.y, self.vehicle.yaw, self.vehicle.v = ego.x, ego.y, ego.yaw, ego.speed
            self.distance += math.hypot(ego.x - before.x, ego.y - before.y)
            self.start_s = self.world.route_progress().s
        else:
            v_cmd, w_cmd = command if age <= self.p["cmd_timeout_s"] else (0.0, 0.0)
            x0, y0 = self.vehicle.x, self.vehicle.y
            self.vehicle.step(v_cmd, w_cmd, dt)
            self.distance += math.hypot(self.vehicle.x - x0, self.vehicle.y - y0)
            v = self.vehicle
            self.world.step_with_ego(v.x, v.y, v.yaw, v.v, dt, v.accel)
        hits = self.world.collisions()
        new = set(hits) - self.collided_with
        if new:
            self.collision_events += len(new)
            self.collided_with |= new

    def publish_state(self) -> None:
        from geometry_msgs.msg import AccelStamped
        from nav_msgs.msg import Odometry

        from wamdiff2_ros.msg import DrivingCommand
        from wamdiff2_ros.ros.msg_utils import fill_stamp

        stamp = self.stamp()
        v = self.vehicle
        odom = Odometry()
        fill_stamp(odom.header.stamp, stamp)
        odom.header.frame_id, odom.child_frame_id = self.p["map_frame"], self.p["base_frame"]
        odom.pose.pose.position.x, odom.pose.pose.position.y = v.x, v.y
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(v.yaw / 2), math.cos(v.yaw / 2)
        odom.twist.twist.linear.x = v.v
        odom.twist.twist.angular.z = v.yaw_rate
        self.odom_pub.publish(odom)
        accel = AccelStamped()
        fill_stamp(accel.header.stamp, stamp)
        accel.header.frame_id = self.p["base_frame"]
        accel.accel.linear.x, accel.accel.linear.y = v.accel, v.v * v.yaw_rate
        self.accel_pub.publish(accel)
        cmd = DrivingCommand(command=DRIVING_COMMANDS.index(self.world.route_command()))
        fill_stamp(cmd.header.stamp, stamp)
        self.cmd_pub.publish(cmd)

    def publish_frame(self) -> None:
        from sensor_msgs.msg import CompressedImage, Image

        from wamdiff2_ros.ros.image_conversion import rgb_to_compressed, rgb_to_image
        from wamdiff2_ros.ros.msg_utils import fill_stamp

        stamp = self.stamp()
        size = (int(self.p["image_width"]), int(self.p["image_height"]))
        images = self.world.render(list(self.p["cameras"]), size)
        for camera, rgb in images.items():
            msg = rgb_to_compressed(CompressedImage, rgb) if self.compressed else rgb_to_image(Image, rgb)
            fill_stamp(msg.header.stamp, stamp)
            msg.header.frame_id = camera
            self.image_pubs[camera].publish(msg)

    def status(self) -> dict[str, str]:
        progress = self.world.route_progress()
        return {
            "sim_time_s": f"{self.world.time_s:.2f}",
            "route_progress_m": f"{progress.s - self.start_s:.2f}",
            "route_fraction": f"{progress.fraction:.4f}",
            "lateral_offset_m": f"{progress.lateral_offset:.2f}",
            "heading_error_rad": f"{progress.heading_error:.3f}",
            "distance_m": f"{self.distance:.2f}",
            "speed_mps": f"{self.vehicle.v:.2f}",
            "collisions": str(self.collision_events),
            "commands_received": str(self.commands_received),
            "bad_commands": str(self.bad_commands),
            "controlled": "external" if self.command is not None else "autopilot",
        }

    def publish_status(self, final: bool = False) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        from wamdiff2_ros.ros.msg_utils import fill_stamp

        values = self.status()
        level = DiagnosticStatus.WARN if self.collision_events else DiagnosticStatus.OK
        status = DiagnosticStatus(name="wamdiff2_ros: sim_node", hardware_id="synthetic_world", level=level,
                                  message="final" if final else "running")
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        fill_stamp(msg.header.stamp, self.stamp())
        self.status_pub.publish(msg)

    def shutdown(self) -> None:
        self.stopping = True
        self.thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    from wamdiff2_ros.ros.node_main import run_node

    return run_node("sim_node", SimNode, argv)


if __name__ == "__main__":
    sys.exit(main())
