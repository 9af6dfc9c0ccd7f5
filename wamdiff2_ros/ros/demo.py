"""`wamdiff2 demo`: the nodes end to end over DDS, recorded to a bag, summarised and plotted.

replay mode: synthetic NAVSIM logs are written, then navsim_replay_node (lock-step)
feeds drive_node; closed-loop mode: sim_node builds closed-loop benchmark route
``--route`` (of ``--route-seed``) and renders it (256x128, raw, 2 Hz), drive_node plans,
waypoint_follower_node turns plans into Twist commands that drive the world, lock-step
on sim_node's /clock (planning takes no simulated time, as in ``wamdiff2 eval
closed-loop``); the route monitor in sim_node scores it and the summary's
``closed_loop`` holds the benchmark's metrics (ros/closed_loop_summary.py).
A bag_recorder_node records inputs and outputs. After ``--seconds`` (or when the
replay ends) every process gets SIGINT, and DIR/summary.json plus DIR/bev.png are
written from the bag.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.model.checkpoints import default_checkpoint
from wamdiff2_ros.ros.closed_loop_summary import headline, route_summary
from wamdiff2_ros.ros.demo_summary import summarize_bag
from wamdiff2_ros.ros.launching import NodeGroup, isolated_env

INPUT_TOPICS = [
    "/ego/odometry:nav_msgs/msg/Odometry",
    "/ego/accel:geometry_msgs/msg/AccelStamped",
    "/driving_command:wamdiff2_ros/msg/DrivingCommand",
]
OUTPUT_TOPICS = [
    "/wamdiff2/trajectory:wamdiff2_ros/msg/Trajectory",
    "/wamdiff2/path:nav_msgs/msg/Path",
    "/wamdiff2/detections:wamdiff2_ros/msg/DetectionArray",
    "/wamdiff2/detection_markers:visualization_msgs/msg/MarkerArray",
    "/wamdiff2/rationale:wamdiff2_ros/msg/Rationale",
    "/wamdiff2/decode_stats:wamdiff2_ros/msg/DecodeStats",
    "/diagnostics:diagnostic_msgs/msg/DiagnosticArray",
]
REPLAY_TOPICS = [
    "/navsim/scene_info:wamdiff2_ros/msg/SceneInfo",
    "/navsim/gt_trajectory:wamdiff2_ros/msg/Trajectory",
    "/navsim/gt_boxes:wamdiff2_ros/msg/DetectionArray",
]
CLOSED_LOOP_TOPICS = ["/wamdiff2/cmd_vel:geometry_msgs/msg/Twist", "/sim/status:diagnostic_msgs/msg/DiagnosticArray",
                      "/sim/route_metrics:std_msgs/msg/String"]
CLOSED_LOOP_IMAGE = (256, 128)  # what the benchmark feeds the model


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=45.0, help="how long to run (default 45)")
    parser.add_argument("--out", default="demo_out", help="output folder (bag, summary.json, bev.png, logs)")
    parser.add_argument("--mode", choices=("replay", "closed-loop"), default="replay")
    parser.add_argument("--model", default="", help="checkpoint dir or preset:tiny; default: the shipped checkpoint")
    parser.add_argument("--tasks", default="planning,perception,understanding")
    parser.add_argument("--cameras", default="CAM_F0", help="comma-separated NAVSIM camera names")
    parser.add_argument("--block-size", type=int, default=0, help="0 = the checkpoint's block size")
    parser.add_argument("--max-new-tokens", type=int, default=0,
                        help="answer budget of every task (0 = drive.yaml's; a random model's answers never end)")
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--route", type=int, default=0, help="closed-loop: benchmark route index (default 0)")
    parser.add_argument("--route-seed", type=int, default=0, help="closed-loop: seed of the route set (default 0)")
    parser.add_argument("--route-timeout", type=float, default=0.0,
                        help="closed-loop: route timeout in simulated s (default 0 = the route's own)")
    parser.add_argument("--real-time-factor", type=float, default=0.0,
                        help="closed-loop: simulated s per wall s between plans (default 0 = as fast as lock-step allows)")


def model_settings(model: str) -> tuple[str, str, int]:
    """(model_path parameter, label, block size) for the demo's model choice."""
    if model.startswith("preset:"):
        return model, f"{model} (random weights)", 32
    if model:
        path = Path(model)
        if not (path / "config.json").is_file():
            raise SystemExit(f"--model {model}: no config.json there")
        return str(path.resolve()), str(path), _block_size(path)
    found = default_checkpoint()
    if found is None:
        return "preset:tiny", "preset:tiny (random weights: no shipped checkpoint; plans will be fallbacks)", 32
    return str(found), str(found), _block_size(found)


def _block_size(path: Path) -> int:
    try:
        return int(json.loads((path / "config.json").read_text()).get("block_size", 32))
    except (OSError, ValueError):
        return 32


class Progress:
    """Listens to the driver's trajectories in this process to print live progress."""

    def __init__(self, domain_id: int) -> None:
        # in the method: rclpy and the built messages exist only in a ROS install; the module imports without
        import rclpy

        from wamdiff2_ros.msg import Trajectory

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("wamdiff2_demo_monitor", context=self.context)
        self.count = 0
        self.valid = 0
        self.node.create_subscription(Trajectory, "/wamdiff2/trajectory", self.on_plan, 10)

    def on_plan(self, msg) -> None:
        self.count += 1
        self.valid += bool(msg.valid)

    def spin(self, seconds: float) -> None:
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(self.node)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        executor.remove_node(self.node)

    def close(self) -> None:
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    for stale in ("bag", "logs", "summary.json", "bev.png"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    model_path, model_label, trained_block = model_settings(args.model)
    block_size = args.block_size or trained_block
    cameras = [c.strip() for c in args.cameras.split(",") if c.strip()]
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    closed_loop = args.mode == "closed-loop"
    env = isolated_env(int(os.environ["ROS_DOMAIN_ID"]) if closed_loop and os.environ.get("ROS_DOMAIN_ID") else None)
    group = NodeGroup(env, out / "logs")
    print(f"[demo] mode {args.mode}, model {model_label}, B={block_size}, cameras {cameras}, tasks {tasks}")
    print(f"[demo] ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}, logs in {out / 'logs'}")

    if closed_loop:  # raw images, as the benchmark feeds the model (no JPEG)
        camera_topics = [f"/cameras/{c}/image:sensor_msgs/msg/Image" for c in cameras]
    else:
        camera_topics = [f"/cameras/{c}/image/compressed:sensor_msgs/msg/CompressedImage" for c in cameras]
    topics = INPUT_TOPICS + OUTPUT_TOPICS + camera_topics
    topics += REPLAY_TOPICS if args.mode == "replay" else CLOSED_LOOP_TOPICS
    recorder = group.start("bag_recorder_node", {"output": str((out / "bag").resolve()), "storage": args.storage,
                                                 "topics": topics})
    driver_params = {
        "model_path": model_path, "cameras": cameras,
        "camera_topics": [f"/cameras/{c}/image/compressed" for c in cameras], "image_transport": "compressed",
        "tasks": tasks, "block_size": block_size, "max_rate_hz": 5.0,
    }
    if args.max_new_tokens > 0:
        driver_params["max_new_tokens"] = args.max_new_tokens
    if closed_loop:  # lock-step on sim_node's clock: the world waits for every plan
        driver_params.update({"camera_topics": [f"/cameras/{c}/image" for c in cameras], "image_transport": "raw",
                              "use_sim_time": True, "max_rate_hz": 20.0, "require_ego": True})
    driver = group.start("drive_node", driver_params, params_file="drive.yaml")
    monitor = Progress(int(env["ROS_DOMAIN_ID"]))
    started = time.monotonic()
    try:
        if args.mode == "replay":
            data = out / "data"
            if not (data / "navsim_logs" / "demo").is_dir():
                print("[demo] writing synthetic NAVSIM logs ...")
                synthesize(data, num_logs=1, num_frames=60, seed=args.seed, cameras=cameras, split="demo")
            feeder = group.start("navsim_replay_node", {
                "logs_dir": str(data / "navsim_logs" / "demo"), "sensor_blobs_dir": str(data / "sensor_blobs" / "demo"),
                "cameras": cameras, "image_transport": "compressed", "lockstep": True, "lockstep_timeout_s": 60.0,
                "wait_for_subscribers_s": 180.0,
            })
        else:
            feeder = group.start("sim_node", {
                "seed": args.seed, "cameras": cameras, "image_transport": "raw", "route_index": args.route,
                "route_seed": args.route_seed, "route_timeout_s": args.route_timeout, "lockstep": True,
                "publish_clock": True, "real_time_factor": args.real_time_factor,
                "image_width": CLOSED_LOOP_IMAGE[0], "image_height": CLOSED_LOOP_IMAGE[1], "camera_rate_hz": 2.0,
            }, params_file="sim.yaml")  # fmt: skip
            group.start("waypoint_follower_node", {"use_sim_time": True}, params_file="follower.yaml")
        deadline = started + args.seconds
        last_print = 0.0
        while time.monotonic() < deadline:
            monitor.spin(0.5)
            if not driver.running():
                print(f"[demo] drive_node exited early:\n{driver.output()[-3000:]}", file=sys.stderr)
                break
            if not feeder.running():
                print(f"[demo] {feeder.name} finished")
                break
            if time.monotonic() - last_print > 5:
                last_print = time.monotonic()
                print(f"[demo] {time.monotonic() - started:5.1f}s  plans {monitor.count} (valid {monitor.valid})",
                      flush=True)
    finally:
        monitor.close()
        codes = group.stop_all(order=["navsim_replay_node", "sim_node", "waypoint_follower_node", "drive_node",
                                      "bag_recorder_node"])
    print(f"[demo] stopped: {codes}")
    if not (out / "bag").exists():
        print(f"[demo] no bag was written; recorder log:\n{recorder.output()[-2000:]}", file=sys.stderr)
        return 1
    summary = summarize_bag(out / "bag", mode=args.mode, seed=args.seed, plot=None if closed_loop else out / "bev.png")
    if closed_loop:  # the route monitor's metrics, as `wamdiff2 eval closed-loop` reports them, and the route's BEV
        summary["closed_loop"] = route_summary(out / "bag", plot=out / "bev.png", policy=model_label)
        print(f"[demo] closed loop {headline(summary['closed_loop'])}")
    summary.update({"model": model_label, "block_size": block_size, "cameras": cameras, "tasks": tasks,
                    "wall_seconds": round(time.monotonic() - started, 1), "exit_codes": codes})
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("rationale_samples", "topics")}, indent=2))
    print(f"[demo] wrote {out / 'summary.json'}, {out / 'bev.png'} and the bag {out / 'bag'}")
    if closed_loop and "error" in summary["closed_loop"]:
        return 1
    return 0 if summary["trajectories"] > 0 else 1
