"""Bag-style replay on /clock: at 0.25x and through a pause, the driver (use_sim_time) stops no camera, drops nothing.

Two cameras, camera_timeout_s 1.0: at 0.25x a frame comes every 2 s of wall time and
the pause lasts 3 s, so a driver judging timeouts on wall-clock arrival would declare
both cameras stopped; on the replay's /clock neither ever is.
"""

from __future__ import annotations

import pytest
from conftest import process_output

pytestmark = [pytest.mark.ros, pytest.mark.slow]
CAMS = ("CAM_F0", "CAM_L0")


@pytest.fixture(scope="module")
def two_camera_logs(tmp_path_factory):
    from wamdiff2_ros.data.synth import synthesize

    out = tmp_path_factory.mktemp("navsim_clock")
    synthesize(out, num_logs=1, num_frames=17, seed=5, cameras=CAMS, size=(128, 64), split="mini", progress=False)
    return out


def _diag(msgs) -> list[dict[str, str]]:
    return [{kv.key: kv.value for kv in s.values} | {"_message": s.message}
            for m in msgs for s in m.status if s.name == "wamdiff2_ros: drive_node"]


def _set_paused(peer, value: bool) -> None:
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    client = peer.node.create_client(SetParameters, "/navsim_replay_node/set_parameters")
    assert peer.spin_until(lambda: client.service_is_ready(), 20), "replay node's parameter service not found"
    request = SetParameters.Request(parameters=[Parameter(
        name="paused", value=ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value))])
    future = client.call_async(request)
    assert peer.spin_until(future.done, 10) and future.result().results[0].successful


def test_slow_and_paused_replay_on_sim_time(repo, ros_env, processes, ros_peer, two_camera_logs):
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock

    from wamdiff2_ros.msg import Trajectory
    from wamdiff2_ros.ros.msg_utils import stamp_to_ns

    scenes = 5
    plans = ros_peer.listen(Trajectory, "/wamdiff2/trajectory")
    diagnostics = ros_peer.listen(DiagnosticArray, "/diagnostics")
    clock = ros_peer.listen(Clock, "/clock")
    driver = processes.python(
        ["-m", "wamdiff2_ros.ros.drive_node", "--ros-args", "-p", "use_sim_time:=true",
         "-p", "model_path:=preset:tiny", "-p", "tasks:=[planning]", "-p", "max_new_tokens:=16",
         "-p", "max_rate_hz:=2", "-p", "camera_timeout_s:=1.0", "-p", "diagnostics_rate_hz:=5.0",
         "-p", f"cameras:=[{','.join(CAMS)}]", "-p", f"camera_topics:=[{','.join('cameras/' + c + '/image' for c in CAMS)}]"],
        ros_env, cwd=repo,
    )
    assert ros_peer.spin_until(lambda: ros_peer.node.count_publishers("/wamdiff2/trajectory") > 0, 90), process_output(driver)
    logs = two_camera_logs
    replay = processes.python(
        ["-m", "wamdiff2_ros.ros.replay_node", "--ros-args", "-p", f"logs_dir:={logs / 'navsim_logs' / 'mini'}",
         "-p", f"sensor_blobs_dir:={logs / 'sensor_blobs' / 'mini'}", "-p", f"cameras:=[{','.join(CAMS)}]",
         "-p", "speed:=0.25", "-p", "publish_clock:=true", "-p", f"max_scenes:={scenes}", "-p", "start_delay_s:=2.0"],
        ros_env, cwd=repo,
    )
    ok = ros_peer.spin_until(lambda: len(plans) >= 2, 60)
    assert ok, f"{process_output(replay)}{process_output(driver)}\nlast diagnostics: {_diag(diagnostics)[-1:]}"
    _set_paused(ros_peer, True)
    held = len(plans)
    ros_peer.spin_for(1.0)
    frozen = stamp_to_ns(clock[-1].clock)
    ros_peer.spin_for(3.0)  # 3 s of wall time: three camera timeouts, were they judged on arrival
    assert stamp_to_ns(clock[-1].clock) == frozen, "/clock moved while paused"
    assert len(plans) <= held + 1, "frames were replayed while paused"
    _set_paused(ros_peer, False)
    ok = ros_peer.spin_until(lambda: len(plans) >= scenes, 60)
    assert ok, f"{len(plans)} plans\n{process_output(replay)}{process_output(driver)}\nlast diagnostics: {_diag(diagnostics)[-1:]}"
    assert replay.wait(timeout=30) == 0, process_output(replay)
    ros_peer.spin_for(0.5)
    reports = _diag(diagnostics)
    assert len(reports) > 20 and all(r.get("clock", "sim") == "sim" for r in reports)
    stopped = [r["_message"] for r in reports if "no frames" in r["_message"]]
    assert not stopped, f"a camera was declared stopped on sim time: {stopped[:3]}"
    last = reports[-1]
    for key in ("dropped_sets", "stale_frames", "out_of_order_frames"):
        assert last[key] == "0", f"{key}={last[key]}: nothing should be dropped at 0.25x"
    assert last["inferences"] == str(scenes) and len(plans) == scenes
    assert last["frame_sets_emitted"] == str(scenes) and last["frame_sets_skipped"] == "0", last
    stamps = [stamp_to_ns(c.clock) for c in clock]
    assert stamps == sorted(stamps), "/clock went backwards"
