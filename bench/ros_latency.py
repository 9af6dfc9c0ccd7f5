"""Planning-first latency of drive_node through real nodes over DDS, per task, model and camera count.

For every cell of {planning only, all three tasks} x {1, 8 cameras} x {AR checkpoint,
B=32 student} it starts drive_node as its own process (config/drive.yaml: torch_threads
1, the task rates given here), publishes camera frames (stamped with the wall clock) plus
odometry from this process at ``--input-rate`` (10 Hz), and measures for each output
latency = receive time - frame stamp: the plan's p50/p95/p99 and the achieved planning
rate, and the perception and rationale latencies. The first ``--warmup`` seconds of each
cell are left out. Prints a table and writes JSON (with the machine and its load).

``--soak`` runs one cell (``--soak-cell``, default all tasks, 1 camera, the student) for
``--soak-seconds`` (120) and compares the plan's latency over the first and the last
30 s (no growth: the last p95 within 20 % of the first), with the driver's resident memory.

    tools/ros_env.sh python bench/ros_latency.py --seconds 30 --json bench_out/ros_latency.json
    tools/ros_env.sh python bench/ros_latency.py --cells all:1:b32 --seconds 10          # one cell
    tools/ros_env.sh python bench/ros_latency.py --soak --json bench_out/ros_soak.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

CAMERAS = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")
REPO = Path(__file__).resolve().parents[1]
MODELS = {"ar": REPO / "checkpoints" / "wamdiff2-tiny-ar", "b32": REPO / "checkpoints" / "wamdiff2-tiny-b32"}
THRESHOLDS: dict[str, float] = {}  # MODEL -> confidence threshold given with --model NAME=DIR@T (else the checkpoint's)
TASK_SETS = {"planning": ["planning"], "all": ["planning", "perception", "understanding"]}
OUTPUTS = {"trajectory": "planning", "detections": "perception", "rationale": "understanding"}


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "n": 0}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": round(float(np.percentile(arr, q)), 1) for q in (50, 95, 99)} | {"n": len(values)}


def parse_cell(text: str) -> tuple[str, int, str]:
    tasks, cams, model = text.split(":")
    if tasks not in TASK_SETS or model not in MODELS or int(cams) not in range(1, 9):
        raise SystemExit(f"cell {text!r}: want TASKS:CAMERAS:MODEL with TASKS in {list(TASK_SETS)}, "
                         f"CAMERAS 1..8, MODEL in {list(MODELS)}")
    return tasks, int(cams), model


class Bench:
    """One rclpy context in this process: publishes inputs, records every output with its receive time."""

    def __init__(self, env: dict[str, str], transport: str = "raw") -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import CompressedImage, Image

        from wamdiff2_ros.msg import DetectionArray, Rationale, Trajectory

        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=int(env["ROS_DOMAIN_ID"]))
        self.node = rclpy.create_node("wamdiff2_latency_bench", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.transport = transport  # raw sensor_msgs/Image or JPEG sensor_msgs/CompressedImage, for the whole run
        image_type = CompressedImage if transport == "compressed" else Image
        self.image_pubs = {c: self.node.create_publisher(image_type, f"/bench/{c}", qos_profile_sensor_data)
                           for c in CAMERAS}
        self.odom_pub = self.node.create_publisher(Odometry, "/bench/odom", 10)
        # (recv ns, stamp ns, a flagged fallback rather than the model's answer: plans only)
        self.received: dict[str, list[tuple[int, int, bool]]] = {t: [] for t in OUTPUTS.values()}
        self.diag: dict[str, str] = {}
        for topic, msg_type in (("trajectory", Trajectory), ("detections", DetectionArray), ("rationale", Rationale)):
            self.node.create_subscription(msg_type, f"/wamdiff2/{topic}", lambda m, t=OUTPUTS[topic]: self.on_output(t, m), 50)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.on_diag, 10)

    def on_output(self, task: str, msg) -> None:
        from wamdiff2_ros.ros.msg_utils import stamp_to_ns

        fell_back = task == "planning" and not msg.valid
        self.received[task].append((time.time_ns(), stamp_to_ns(msg.header.stamp), fell_back))

    def on_diag(self, msg) -> None:
        for status in msg.status:
            if status.name == "wamdiff2_ros: drive_node":
                self.diag = {kv.key: kv.value for kv in status.values}

    def reset(self) -> None:
        self.received = {t: [] for t in OUTPUTS.values()}
        self.diag = {}

    def wait_ready(self, driver, timeout: float = 300.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.diag.get("model_state") != "ready" and time.monotonic() < deadline and driver.running():
            self.executor.spin_once(timeout_sec=0.1)
        return self.diag.get("model_state") == "ready"

    def feed(self, cams: list[str], images: dict, seconds: float, rate: float, driver, rss: list) -> int:
        from nav_msgs.msg import Odometry

        from wamdiff2_ros.ros.msg_utils import fill_stamp

        sent, start = 0, time.monotonic()
        next_send, last_report = start, start
        while time.monotonic() - start < seconds and driver.running():
            now = time.monotonic()
            if now >= next_send:
                stamp = time.time_ns()
                odom = Odometry()
                fill_stamp(odom.header.stamp, stamp)
                odom.pose.pose.orientation.w = 1.0
                odom.twist.twist.linear.x = 8.0
                self.odom_pub.publish(odom)
                for c in cams:
                    fill_stamp(images[c].header.stamp, stamp)
                    self.image_pubs[c].publish(images[c])
                sent += 1
                next_send += 1.0 / rate
            if not rss or now - rss[-1][0] >= 5.0:
                rss.append((now, rss_mb(driver.proc.pid)))
            if now - last_report > 30:
                last_report = now
                print(f"[bench]   {now - start:5.0f}s sent {sent} plans {len(self.received['planning'])}", flush=True)
            self.executor.spin_once(timeout_sec=max(0.0, min(0.005, next_send - time.monotonic())))
        return sent

    def close(self) -> None:
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def run_cell(bench: Bench, env, args, tasks: str, n_cams: int, model: str, seconds: float) -> dict:
    from sensor_msgs.msg import CompressedImage, Image

    from wamdiff2_ros.data.world import World
    from wamdiff2_ros.ros.demo import model_settings
    from wamdiff2_ros.ros.image_conversion import rgb_to_compressed, rgb_to_image
    from wamdiff2_ros.ros.launching import NodeGroup

    cams = list(CAMERAS[:n_cams])
    width, height = (int(v) for v in args.size.split("x"))
    frames = World(3).render(cams, (width, height))
    if bench.transport == "compressed":  # encoded once: the bench times the node, not its own JPEG encoder
        images = {c: rgb_to_compressed(CompressedImage, frames[c]) for c in cams}
    else:
        images = {c: rgb_to_image(Image, frames[c]) for c in cams}
    model_path, model_label, block = model_settings(str(MODELS[model]))
    name = f"{tasks}:{n_cams}:{model}"
    group = NodeGroup(env, Path(args.json).parent / "ros_latency_logs" / name.replace(":", "_"))
    params = {
        "model_path": model_path, "cameras": cams, "camera_topics": [f"/bench/{c}" for c in cams],
        "tasks": TASK_SETS[tasks], "block_size": block, "ego_topic": "/bench/odom", "accel_topic": "",
        "scene_info_topic": "", "camera_timeout_s": 2.0, "planning_rate_hz": args.planning_rate,
        "perception_rate_hz": args.perception_rate, "understanding_rate_hz": args.understanding_rate,
        "image_transport": bench.transport,
    }
    if args.vision_tokens:
        params["vision_tokens_per_camera"] = args.vision_tokens
    if model in THRESHOLDS:
        params["confidence_threshold"] = THRESHOLDS[model]
    bench.reset()
    driver = group.start("drive_node", params, params_file="drive.yaml")
    print(f"[bench] {name}: {model_label} B={block}, {n_cams} camera(s), tasks {TASK_SETS[tasks]}, "
          f"{seconds:.0f} s ...", flush=True)
    if not bench.wait_ready(driver):
        print(f"[bench] drive_node not ready:\n{driver.output()[-2000:]}", file=sys.stderr)
        group.stop_all()
        return {"cell": name, "error": "drive_node not ready"}
    rss: list[tuple[float, float]] = []
    start_ns = time.time_ns()
    sent = bench.feed(cams, images, seconds, args.input_rate, driver, rss)
    end_ns = time.time_ns()
    for _ in range(20):
        bench.executor.spin_once(timeout_sec=0.05)
    alive = driver.running()
    diag = dict(bench.diag)
    codes = group.stop_all()
    warm_ns = start_ns + int(args.warmup * 1e9)
    cell: dict = {"cell": name, "tasks": TASK_SETS[tasks], "cameras": n_cams, "image_transport": bench.transport,
                  "model": model, "model_path": model_label,
                  "block_size": block, "seconds": seconds, "frame_sets_sent": sent, "input_rate_hz": args.input_rate,
                  "rates_hz": {"planning": args.planning_rate, "perception": args.perception_rate,
                               "understanding": args.understanding_rate}, "per_task": {}}
    for task, rows in bench.received.items():
        if task not in TASK_SETS[tasks]:
            continue
        kept = [(recv, stamp, fell) for recv, stamp, fell in rows if warm_ns <= stamp and recv <= end_ns]
        cell["per_task"][task] = {
            "outputs": len(kept), "latency_ms": percentiles([(r - s) / 1e6 for r, s, _ in kept]),
            "fallbacks": sum(fell for *_, fell in kept),
            "achieved_rate_hz": round(len(kept) / ((end_ns - warm_ns) / 1e9), 2),
            "latency_series": [(round((r - start_ns) / 1e9, 2), round((r - s) / 1e6, 1)) for r, s, _ in rows],
        }
    # where the plan's latency goes, from drive_node's own diagnostics (medians over its last 200 plans): the
    # node's stages, and what is left of the bench's end-to-end median for DDS, (de)serialisation and sync
    stages = {stage: float(diag[f"stage_ms_p50/planning/{stage}"]) for stage in ("wait", "prepare", "decode", "publish")
              if f"stage_ms_p50/planning/{stage}" in diag}
    plan_p50 = cell["per_task"].get("planning", {}).get("latency_ms", {}).get("p50")
    if stages and plan_p50 is not None and "latency_ms_p50/planning" in diag:
        stages["transport"] = round(plan_p50 - float(diag["latency_ms_p50/planning"]), 1)
    cell["plan_stages_ms_p50"] = stages
    cell |= {"confidence_threshold": float(diag["confidence_threshold"]) if "confidence_threshold" in diag else None,
             "frame_sets_emitted": int(diag.get("frame_sets_emitted", "0")),
             "frame_sets_skipped": int(diag.get("frame_sets_skipped", "0")),
             "dropped_sets": int(diag.get("dropped_sets", "0")), "inference_errors": int(diag.get("inference_errors", "0")),
             "driver_alive_at_end": alive, "exit_codes": codes,
             "rss_mb": [(round(t - rss[0][0], 1), round(m, 1)) for t, m in rss] if rss else []}
    return cell


def soak_check(cell: dict, warmup_s: float, window_s: float = 30.0) -> dict:
    """Plan latency over the first (after ``warmup_s``) vs the last ``window_s`` and resident memory growth."""
    series = [(t, ms) for t, ms in cell["per_task"].get("planning", {}).get("latency_series", []) if t >= warmup_s]
    if not series:
        return {"ok": False, "reason": "no plans"}
    end = series[-1][0]
    first = [ms for t, ms in series if t <= series[0][0] + window_s]
    last = [ms for t, ms in series if t >= end - window_s]
    p_first, p_last = percentiles(first), percentiles(last)
    rss = [m for _, m in cell["rss_mb"]]
    growth = round((rss[-1] / rss[1] - 1) * 100, 2) if len(rss) > 2 else None
    ok = p_first["p95"] is not None and p_last["p95"] is not None and p_last["p95"] <= 1.2 * p_first["p95"]
    return {"first_window": p_first, "last_window": p_last, "window_s": window_s, "rss_growth_percent": growth,
            "no_latency_growth": bool(ok)}


def table(cells: list[dict]) -> str:
    lines = ["| cell (tasks:cams:model) | B | threshold | plans | fallback plans | plan Hz | plan p50 | p95 | p99 ms "
             "| perception p50/p95 ms | rationale p50/p95 ms | drops | alive |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        if "error" in c:
            lines.append(f"| {c['cell']} | error: {c['error']} |")
            continue
        pt = c["per_task"]
        plan = pt.get("planning", {"outputs": 0, "achieved_rate_hz": 0, "latency_ms": percentiles([])})
        lm = plan["latency_ms"]
        pair = {task: f"{pt[task]['latency_ms']['p50']}/{pt[task]['latency_ms']['p95']} (n={pt[task]['latency_ms']['n']})"
                if task in pt else "-" for task in ("perception", "understanding")}
        threshold = "-" if c.get("confidence_threshold") is None or c["block_size"] == 1 else f"{c['confidence_threshold']:g}"
        lines.append(f"| {c['cell']} | {c['block_size']} | {threshold} | {plan['outputs']} | {plan.get('fallbacks', 0)} | "
                     f"{plan['achieved_rate_hz']} | "
                     f"{lm['p50']} | {lm['p95']} | {lm['p99']} | {pair['perception']} | {pair['understanding']} | "
                     f"{c['dropped_sets']} | {c['driver_alive_at_end']} |")
    stage_names = ("transport", "wait", "prepare", "decode", "publish")
    lines += ["", "Where the plan's latency goes (ms, medians; transport = the bench's end-to-end p50 minus the node's "
              "own, i.e. DDS, deserialisation and camera sync):", "",
              "| cell | " + " | ".join(stage_names) + " |", "|---|" + "---|" * len(stage_names)]
    for c in cells:
        st = c.get("plan_stages_ms_p50") or {}
        if st:
            lines.append(f"| {c['cell']} | " + " | ".join(str(st.get(n, "-")) for n in stage_names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds of input per cell")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds at the start of a cell left out")
    parser.add_argument("--cells", default="", help="comma-separated TASKS:CAMERAS:MODEL (default: all eight), "
                        "e.g. all:1:b32,planning:8:ar")
    parser.add_argument("--input-rate", "--rate", type=float, default=10.0, help="camera frame sets per second")
    parser.add_argument("--planning-rate", type=float, default=10.0)
    parser.add_argument("--perception-rate", type=float, default=1.0)
    parser.add_argument("--understanding-rate", type=float, default=0.5)
    parser.add_argument("--vision-tokens", type=int, default=0, help="vision_tokens_per_camera (0 = model default)")
    parser.add_argument("--size", default="512x256", help="camera image size WxH")
    parser.add_argument("--image-transport", choices=("raw", "compressed"), default="raw",
                        help="camera messages: raw sensor_msgs/Image or JPEG CompressedImage (drive_node's "
                             "image_transport); raw 8-camera sets are about 3 MB, best effort over DDS")
    parser.add_argument("--soak", action="store_true", help="one long cell: latency first vs last 30 s, memory")
    parser.add_argument("--soak-seconds", type=float, default=120.0)
    parser.add_argument("--soak-cell", default="all:1:b32")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=DIR[@THRESHOLD]",
                        help="another checkpoint for the cells' MODEL field (repeatable), e.g. cand=runs/x; @THRESHOLD "
                             "decodes it at that confidence threshold instead of the checkpoint's own")
    parser.add_argument("--json", default="bench_out/ros_latency.json")
    args = parser.parse_args(argv)
    from wamdiff2_ros.model.checkpoints import is_threshold

    for spec in args.model:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path or ":" in name or "," in name:
            parser.error(f"--model wants NAME=DIR[@THRESHOLD] (NAME without ':' or ','), got {spec!r}")
        path, at, threshold = path.rpartition("@") if "@" in path else (path, "", "")
        if at:
            try:
                THRESHOLDS[name] = float(threshold)
            except ValueError:
                THRESHOLDS[name] = -1.0  # refused below, with the same message
            if not is_threshold(THRESHOLDS[name]):
                parser.error(f"--model {spec!r}: THRESHOLD must be a number in [0, 1]")
        MODELS[name] = Path(path).resolve()

    from wamdiff2_ros.ros.launching import isolated_env

    if args.soak:
        cells = [(*parse_cell(args.soak_cell), args.soak_seconds)]
    elif args.cells:
        cells = [(*parse_cell(c), args.seconds) for c in args.cells.split(",")]
    else:
        cells = [(t, n, m, args.seconds) for m in MODELS for t in TASK_SETS for n in (1, 8)]
    missing = sorted({m for _, _, m, _ in cells if not (MODELS[m] / "config.json").is_file()})
    if missing:
        raise SystemExit(f"checkpoints missing: {[str(MODELS[m]) for m in missing]}")
    env = isolated_env()
    load_start = os.getloadavg()
    bench = Bench(env, args.image_transport)
    results = []
    try:
        for tasks, n_cams, model, seconds in cells:
            results.append(run_cell(bench, env, args, tasks, n_cams, model, seconds))
    finally:
        bench.close()
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        "load_average_1_5_15": {"start": [round(v, 2) for v in load_start],
                                "end": [round(v, 2) for v in os.getloadavg()]},
        "command": " ".join(["bench/ros_latency.py", *(argv if argv is not None else sys.argv[1:])]),
        "cells": results,
    }
    if args.soak and results and "error" not in results[0]:
        result["soak"] = soak_check(results[0], args.warmup)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print()
    print(f"{result['date']}, {result['machine']}, load {result['load_average_1_5_15']}")
    print(table(results))
    if "soak" in result:
        s = result["soak"]
        print(f"\nsoak: plan latency first 30 s {s.get('first_window')} vs last 30 s {s.get('last_window')}; "
              f"RSS growth {s.get('rss_growth_percent')} %; no growth: {s.get('no_latency_growth')}")
    print(f"\nwrote {args.json}")
    ok = all(c.get("driver_alive_at_end") for c in results)
    return 0 if ok and result.get("soak", {}).get("no_latency_growth", True) else 1


if __name__ == "__main__":
    sys.exit(main())
