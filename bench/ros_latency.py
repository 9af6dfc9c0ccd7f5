"""End-to-end latency and rate of drive_node over DDS, and a soak test (memory growth, drops).

Starts drive_node as its own process, publishes camera frames (stamped with the wall
clock) plus odometry from this process at a fixed rate, and measures, per published
Trajectory, latency = receive time - input stamp. The driver's resident memory is
sampled from /proc during the run. Prints a table and writes JSON.

    python bench/ros_latency.py --seconds 60 --json out/latency.json               # 1 camera, 2 Hz
    python bench/ros_latency.py --soak --seconds 600 --cameras 8 --rate 10 --json out/soak.json

Run inside the project environment (tools/ros_env.sh python bench/ros_latency.py ...).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

CAMERAS = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cameras", type=int, default=1, help="how many NAVSIM cameras (1..8)")
    parser.add_argument("--rate", type=float, default=2.0, help="frame sets per second")
    parser.add_argument("--model", default="", help="checkpoint ('' = shipped default, else preset:tiny)")
    parser.add_argument("--tasks", default="planning")
    parser.add_argument("--soak", action="store_true", help="report memory growth and drops (long runs)")
    parser.add_argument("--size", default="512x256")
    parser.add_argument("--json", default="bench_out/ros_latency.json")
    args = parser.parse_args(argv)

    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    from wamdiff2_ros.data.world import World
    from wamdiff2_ros.msg import Trajectory
    from wamdiff2_ros.ros.demo import model_settings
    from wamdiff2_ros.ros.image_conversion import rgb_to_image
    from wamdiff2_ros.ros.launching import NodeGroup, isolated_env
    from wamdiff2_ros.ros.msg_utils import fill_stamp, stamp_to_ns

    cams = list(CAMERAS[: args.cameras])
    width, height = (int(v) for v in args.size.split("x"))
    frames = World(3).render(cams, (width, height))
    model_path, model_label, block = model_settings(args.model)
    env = isolated_env()
    out_dir = Path(args.json).parent
    group = NodeGroup(env, out_dir / "ros_latency_logs")
    driver = group.start("drive_node", {
        "model_path": model_path, "cameras": cams, "camera_topics": [f"/bench/{c}" for c in cams],
        "tasks": args.tasks.split(","), "block_size": block, "max_rate_hz": 100.0, "ego_topic": "/bench/odom",
        "accel_topic": "", "scene_info_topic": "", "camera_timeout_s": 2.0,
    }, params_file="drive.yaml")
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(env["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("wamdiff2_latency_bench", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    pubs = {c: node.create_publisher(Image, f"/bench/{c}", qos_profile_sensor_data) for c in cams}
    odom_pub = node.create_publisher(Odometry, "/bench/odom", 10)
    latencies: list[float] = []
    received: list[int] = []
    diag: dict[str, str] = {}

    def on_plan(msg) -> None:
        now = time.time_ns()
        received.append(now)
        latencies.append((now - stamp_to_ns(msg.header.stamp)) / 1e6)

    def on_diag(msg) -> None:
        for status in msg.status:
            if status.name == "wamdiff2_ros: drive_node":
                diag.update({kv.key: kv.value for kv in status.values})

    from diagnostic_msgs.msg import DiagnosticArray

    node.create_subscription(Trajectory, "/wamdiff2/trajectory", on_plan, 10)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    print(f"[bench] model {model_label}; waiting for drive_node ...", flush=True)
    deadline = time.monotonic() + 300
    while diag.get("model_state") != "ready" and time.monotonic() < deadline and driver.running():
        executor.spin_once(timeout_sec=0.1)
    if diag.get("model_state") != "ready":
        print(f"[bench] drive_node not ready:\n{driver.output()[-2000:]}", file=sys.stderr)
        group.stop_all()
        return 1
    images = {c: rgb_to_image(Image, frames[c]) for c in cams}
    period = 1.0 / args.rate
    sent = 0
    rss: list[tuple[float, float]] = []
    start = time.monotonic()
    next_send = start
    last_report = start
    while time.monotonic() - start < args.seconds and driver.running():
        now = time.monotonic()
        if now >= next_send:
            stamp = time.time_ns()
            odom = Odometry()
            fill_stamp(odom.header.stamp, stamp)
            odom.pose.pose.orientation.w = 1.0
            odom.twist.twist.linear.x = 8.0
            odom_pub.publish(odom)
            for c in cams:
                fill_stamp(images[c].header.stamp, stamp)
                pubs[c].publish(images[c])
            sent += 1
            next_send += period
        if not rss or now - rss[-1][0] - start >= 5.0:
            rss.append((now - start, rss_mb(driver.proc.pid)))
        if now - last_report > 30:
            last_report = now
            print(f"[bench] {now - start:6.0f}s sent {sent} plans {len(received)} rss {rss[-1][1]:.0f} MB", flush=True)
        executor.spin_once(timeout_sec=max(0.0, min(0.01, next_send - time.monotonic())))
    executor.spin_once(timeout_sec=2.0)
    alive = driver.running()
    codes = group.stop_all()
    node.destroy_node()
    rclpy.try_shutdown(context=context)

    lat = np.asarray(latencies) if latencies else np.asarray([np.nan])
    warm = [m for t, m in rss if t >= min(60.0, args.seconds / 4)]
    growth = (np.mean(warm[-6:]) / np.mean(warm[:6]) - 1.0) * 100 if len(warm) >= 12 else float("nan")
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or ''} {__import__('os').cpu_count()} cores".strip(),
        "model": model_label, "tasks": args.tasks, "cameras": len(cams), "rate_hz": args.rate,
        "seconds": args.seconds, "frame_sets_sent": sent, "plans": len(received),
        "achieved_rate_hz": round(len(received) / args.seconds, 3),
        "latency_ms": {f"p{q}": round(float(np.nanpercentile(lat, q)), 1) for q in (50, 95, 99)},
        "dropped_sets": int(diag.get("dropped_sets", "0")), "bad_image": int(diag.get("bad_image", "0")),
        "inference_errors": int(diag.get("inference_errors", "0")),
        "driver_alive_at_end": alive, "exit_codes": codes,
        "rss_mb": {"start": round(warm[0], 1) if warm else None, "end": round(warm[-1], 1) if warm else None,
                   "growth_percent": None if np.isnan(growth) else round(float(growth), 2)},
        "rss_samples": [(round(t, 1), round(m, 1)) for t, m in rss],
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print()
    print("| cameras | rate Hz | seconds | sent | plans | achieved Hz | p50 ms | p95 ms | p99 ms | drops | RSS growth % | alive |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    lm = result["latency_ms"]
    print(f"| {len(cams)} | {args.rate} | {args.seconds:.0f} | {sent} | {len(received)} | {result['achieved_rate_hz']} | "
          f"{lm['p50']} | {lm['p95']} | {lm['p99']} | {result['dropped_sets']} | {result['rss_mb']['growth_percent']} | {alive} |")
    print(f"\nwrote {args.json}")
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
