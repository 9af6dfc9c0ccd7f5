"""Sim time: an image or odometry that beats the first /clock is recorded at its stamp, not at 0.

Under ``use_sim_time`` the node's ROS clock reads 0 until the first /clock message. An input
arriving before it used to be recorded as received at t=0, so once /clock ran the next
diagnostics saw the camera silent since the epoch ("no frames from ['CAM_F0']") and the ego
state "missing". test_sim_time.py hits that race only by chance; this test forces the order:
the drive node is built in-process (random tiny model, no task decoding), its image and
odometry callbacks are called before any /clock exists, then /clock is published at
T + 0.2 s and the verdicts are checked. The converse (an arrival at 0) is checked too,
so the test fails on the old behaviour.
"""

from __future__ import annotations

import pytest
from helpers_ros import stamped_image, stamped_odometry

pytestmark = pytest.mark.ros

T_NS = 100 * 1_000_000_000  # the sim time of the first image and odometry
STEP_NS = 200_000_000  # /clock then reads T + 0.2 s: far inside the 1 s camera timeout
CAMERA = "CAM_F0"


@pytest.fixture
def sim_drive(ros_env):
    """A DriveNode on sim time in its own rclpy context (no /clock yet), an executor, and a /clock publisher."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from wamdiff2_ros.ros.drive_node import DriveNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    overrides = [
        Parameter("use_sim_time", Parameter.Type.BOOL, True),
        Parameter("model_path", Parameter.Type.STRING, "preset:tiny"),
        Parameter("tasks", Parameter.Type.STRING_ARRAY, ["planning"]),
        Parameter("planning_rate_hz", Parameter.Type.DOUBLE, 0.0),  # no decoding: only inputs and diagnostics
        Parameter("max_new_tokens", Parameter.Type.INTEGER, 16),
        Parameter("camera_timeout_s", Parameter.Type.DOUBLE, 1.0),
        Parameter("ego_timeout_s", Parameter.Type.DOUBLE, 1.0),
        Parameter("diagnostics_rate_hz", Parameter.Type.DOUBLE, 0.1),
        Parameter("torch_threads", Parameter.Type.INTEGER, 1),
    ]
    node = rclpy.create_node("drive_node", context=context, parameter_overrides=overrides)
    clock_node = rclpy.create_node("wamdiff2_test_clock", context=context)
    clock_pub = clock_node.create_publisher(Clock, "/clock", 10)
    executor = SingleThreadedExecutor(context=context)
    drive = None
    try:
        drive = DriveNode(node)
        executor.add_node(node)
        executor.add_node(clock_node)
        yield drive, executor, clock_pub
    finally:
        if drive is not None:
            drive.shutdown()
        executor.shutdown()
        clock_node.destroy_node()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _advance_clock(drive, executor, clock_pub, to_ns: int, timeout: float = 10.0) -> bool:
    """Publish /clock at ``to_ns`` and spin until the node's clock reads it (republished: discovery may lag)."""
    import time

    from rosgraph_msgs.msg import Clock

    from wamdiff2_ros.ros.msg_utils import fill_stamp

    msg = Clock()
    fill_stamp(msg.clock, to_ns)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        clock_pub.publish(msg)
        executor.spin_once(timeout_sec=0.05)
        if drive.node.get_clock().now().nanoseconds == to_ns:
            return True
    return False


def _diagnostics(drive) -> tuple[int, str, dict[str, str]]:
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

    with drive.stats_lock:
        status = drive._diagnostic_status(DiagnosticStatus, KeyValue)
    return status.level, status.message, {kv.key: kv.value for kv in status.values}


def test_input_before_first_clock_is_recorded_at_its_stamp(sim_drive):
    from diagnostic_msgs.msg import DiagnosticStatus

    from wamdiff2_ros.ros.sync import FrameSynchronizer

    drive, executor, clock_pub = sim_drive
    assert drive.node.get_parameter("use_sim_time").value is True
    assert drive.node.get_clock().now().nanoseconds == 0, "precondition: no /clock received yet"

    # the race, forced: the image and odometry callbacks run before any /clock
    drive.on_image(CAMERA, stamped_image(T_NS), compressed=False)
    drive.on_odometry(stamped_odometry(T_NS, speed=5.0))
    assert drive.counts["bad_image"] == 0, drive.last_error
    assert drive.node.get_clock().now().nanoseconds == 0, "a /clock arrived during the callbacks"
    # (a) arrivals recorded at the message stamp T, not at the clock's 0
    assert list(drive.arrivals[CAMERA]) == [T_NS]
    assert drive.sync.last_seen_ns[CAMERA] == T_NS and drive.sync.started_ns == T_NS
    assert drive.ego_received_ns == T_NS
    # no clock yet: nothing can have timed out
    level, message, values = _diagnostics(drive)
    assert (level, message) == (DiagnosticStatus.OK, "driving"), values

    # /clock starts, a little after the stamp
    now = T_NS + STEP_NS
    assert _advance_clock(drive, executor, clock_pub, now), "the node's clock never followed /clock"
    assert drive.now_ns() == now and drive.now_ns(stamp_ns=1) == now, "with a clock, now_ns ignores the stamp"
    # (b) the camera is not stopped, the ego state is fresh
    timeout = drive.sync.camera_timeout_ns
    assert timeout == 1_000_000_000 and now - T_NS < timeout
    assert drive.sync.stopped(now) == []
    level, message, values = _diagnostics(drive)
    assert (level, message) == (DiagnosticStatus.OK, "driving"), f"{message}: {values}"
    assert values["clock"] == "sim" and values["ego_state"] == "ok", values

    # converse: had the arrival been recorded at 0 (the old behaviour), the same clock and timeout
    # declare the camera stopped; so the assertions above test the fix
    old = FrameSynchronizer(cameras=[CAMERA], slop_ns=drive.sync.slop_ns, camera_timeout_ns=timeout,
                            stale_ns=drive.sync.stale_ns)
    old.add(CAMERA, T_NS, None, now_ns=0)
    assert old.last_seen_ns[CAMERA] == 0 and old.stopped(now) == [CAMERA]
    # and the node's diagnostics, fed an arrival at 0, give the false verdict the fix removed
    with drive.stats_lock:
        drive.sync.last_seen_ns[CAMERA] = 0
        drive.sync.started_ns = 0
        drive.ego_received_ns = 0
    level, message, values = _diagnostics(drive)
    assert level == DiagnosticStatus.ERROR and message == f"no frames from {[CAMERA]}", f"{message}: {values}"
    assert values["ego_state"] == "missing", values
