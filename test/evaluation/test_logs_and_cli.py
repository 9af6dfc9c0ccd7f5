"""Ground truth from NAVSIM-format logs, the `wamdiff2 bag eval` command, and reports."""

import json

import numpy as np
import pytest

from wamdiff2_ros.data import navsim
from wamdiff2_ros.data.bags import BagWriter, trajectory_message
from wamdiff2_ros.evaluation.groundtruth import ground_truth_from_logs

from .navsim_fixture import write_log


@pytest.fixture()
def logs_dir(tmp_path):
    write_log(tmp_path / "navsim_logs" / "mini")
    return tmp_path / "navsim_logs" / "mini"


def test_ground_truth_from_logs(logs_dir):
    logs = navsim.NavsimLogs(logs_dir)
    truth = ground_truth_from_logs(logs)
    assert len(truth) == len(logs) > 0
    scene = next(iter(truth.values()))
    expected = np.column_stack([5.0 * 0.5 * np.arange(1, 9), np.zeros(8), np.zeros(8)])
    assert np.allclose(scene.trajectory, expected, atol=1e-6)
    agents = scene.agents
    assert agents.names == ["vehicle", "vehicle"] and agents.valid.all()
    parked = agents.boxes[:, agents.track_ids.index("parked"), :2]
    assert np.allclose(parked, parked[0], atol=1e-6)  # a parked car stays put in the current frame
    follower = agents.boxes[:, agents.track_ids.index("follower"), :2]
    assert np.allclose(follower[:, 0], 8.0 + 2.5 * np.arange(9), atol=1e-6)  # moves with the ego
    assert scene.driving_command == "straight"


def test_bag_eval_command(tmp_path, logs_dir):
    from wamdiff2_ros.cli import main

    logs = navsim.NavsimLogs(logs_dir)
    truth = ground_truth_from_logs(logs)
    bag = tmp_path / "drive_bag"
    with BagWriter(bag, storage="mcap") as writer:
        for token, scene in truth.items():
            stamp = scene.timestamp_us * 1000
            writer.write("/wamdiff2/trajectory", stamp, trajectory_message(writer.typestore, scene.trajectory, stamp,
                                                                          scene_token=token))  # fmt: skip
    out = tmp_path / "eval.json"
    report = tmp_path / "report"
    code = main(["bag", "eval", "--bag", str(bag), "--logs", str(logs_dir), "--json", str(out),
                 "--report", str(report), "--processes", "1"])  # fmt: skip
    assert code == 0
    summary = json.loads(out.read_text())
    assert summary["scenes_scored"] == len(truth) and summary["scenes_missing"] == 0
    for key in ("l2_avg", "l2_1s", "l2_2s", "l2_3s", "l2_4s"):
        assert summary[key] == pytest.approx(0.0, abs=1e-6)
    assert summary["collision_rate"] == 0.0
    text = (report / "report.md").read_text()
    assert "L2 against horizon" in text and (report / "l2_horizon.png").stat().st_size > 1000
    assert (report / "bev_00.png").is_file()


def test_bag_eval_command_errors(tmp_path, logs_dir, capsys):
    from wamdiff2_ros.cli import main

    code = main(["bag", "eval", "--bag", str(tmp_path / "nope"), "--logs", str(tmp_path / "no_logs"),
                 "--json", str(tmp_path / "x.json")])  # fmt: skip
    assert code == 2 and "cannot read logs" in capsys.readouterr().err
    code = main(["bag", "eval", "--bag", str(tmp_path / "nope"), "--logs", str(logs_dir),
                 "--json", str(tmp_path / "x.json"), "--processes", "1"])  # fmt: skip
    assert code == 1
    summary = json.loads((tmp_path / "x.json").read_text())
    assert summary["scenes_scored"] == 0 and any("does not exist" in p for p in summary["problems"])


def test_open_loop_command_end_to_end(tmp_path):
    """Tiny random model on two scenes: runs, scores (fallbacks flagged), writes JSON, report and submission."""
    import pickle

    import torch

    from wamdiff2_ros.cli import main

    torch.set_num_threads(1)
    assert main(["model", "init", "--preset", "tiny", "--out", str(tmp_path / "model")]) == 0
    write_log(tmp_path / "logs", sensor_blobs=tmp_path / "blobs", frames=13)
    out = tmp_path / "eval.json"
    code = main(["eval", "open-loop", "--model", str(tmp_path / "model"), "--logs", str(tmp_path / "logs"),
                 "--sensor-blobs", str(tmp_path / "blobs"), "--block-size", "4", "--limit", "1",
                 "--max-new-tokens", "16", "--json", str(out), "--report", str(tmp_path / "report"),
                 "--submission", str(tmp_path / "sub.pkl"), "--processes", "1"])  # fmt: skip
    assert code == 0
    summary = json.loads(out.read_text())
    assert summary["scenes_scored"] == 1 and summary["block_size"] == 4
    assert 0.0 <= summary["fallback_rate"] <= 1.0 and summary["l2_avg"] >= 0.0
    assert summary["generated_tokens"] > 0
    with open(tmp_path / "sub.pkl", "rb") as f:
        submission = pickle.load(f)
    assert list(submission) == ["log_a_003"] and submission["log_a_003"].shape == (8, 3)
    assert "B=4" in (tmp_path / "report" / "report.md").read_text()
