"""Bag evaluation on bags written directly with rosbags: ground truth scores L2 = 0; damaged bags are handled."""

import json

import numpy as np
import pytest

from wamdiff2_ros.data.bags import BagWriter, find_message_definitions, read_trajectories, trajectory_message
from wamdiff2_ros.evaluation.bag_eval import evaluate_bag
from wamdiff2_ros.evaluation.scene import AgentBoxes, SceneGroundTruth

T = np.arange(1, 9) * 0.5


def make_scenes(n=40):
    scenes = {}
    for i in range(n):
        curve = 0.02 * (i % 5)
        gt = np.column_stack([6 * T, curve * T**2, np.arctan(2 * curve * T / 6)])
        agents = AgentBoxes.constant_velocity(np.array([[10.0, 6.0, 0, 4.5, 2.0, 1.5, 0.0]]), names=["vehicle"])
        scenes[f"tok{i:03d}"] = SceneGroundTruth(
            f"tok{i:03d}", gt, agents=agents, timestamp_us=1_700_000_000_000_000 + i * 500_000, ego_velocity=[6, 0]
        )
    return scenes


def write_bag(path, scenes, storage, *, with_tokens=True):
    with BagWriter(path, storage=storage) as bag:
        bag.write("/other", 0, trajectory_message(bag.typestore, np.ones((8, 2)), 0, scene_token="not-a-scene"))
        for token, scene in scenes.items():
            stamp = scene.timestamp_us * 1000
            msg = trajectory_message(
                bag.typestore, scene.trajectory, stamp, scene_token=token if with_tokens else "", block_size=8
            )
            bag.write("/wamdiff2/trajectory", stamp + 80_000_000, msg)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_ground_truth_bag_scores_zero(tmp_path, storage):
    scenes = make_scenes()
    write_bag(tmp_path / "bag", scenes, storage)
    summary, results = evaluate_bag(tmp_path / "bag", scenes, processes=1, progress=False)
    assert summary["scenes_scored"] == len(scenes) and summary["scenes_missing"] == 0
    for key in ("l2_avg", "l2_1s", "l2_2s", "l2_3s", "l2_4s", "l2_upto_avg"):
        assert summary[key] == pytest.approx(0.0, abs=1e-9)
    assert summary["collision_rate"] == 0.0
    assert summary["bag_complete"] and summary["trajectories_unmatched"] == 1
    json.dumps(summary)
    assert all(r["block_size"] == 8 for r in results)


def test_stamp_fallback_and_missing_scenes(tmp_path):
    scenes = make_scenes(10)
    recorded = {t: s for i, (t, s) in enumerate(scenes.items()) if i % 2 == 0}
    write_bag(tmp_path / "bag", recorded, "mcap", with_tokens=False)
    summary, _ = evaluate_bag(tmp_path / "bag", scenes, processes=1, progress=False)
    assert summary["matched_by_stamp"] == 5 and summary["matched_by_token"] == 0
    assert summary["scenes_scored"] == 5 and summary["scenes_missing"] == 5
    assert summary["l2_avg"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_truncated_bag_scores_what_is_readable(tmp_path, storage):
    scenes = make_scenes(400)
    write_bag(tmp_path / "bag", scenes, storage)
    data_file = next(p for p in (tmp_path / "bag").iterdir() if p.suffix in (".mcap", ".db3"))
    data = data_file.read_bytes()
    data_file.write_bytes(data[: int(len(data) * 0.6)])
    summary, _ = evaluate_bag(tmp_path / "bag", scenes, processes=1, progress=False)
    assert not summary["bag_complete"] and summary["problems"]
    assert 0 < summary["scenes_scored"] < len(scenes)
    assert summary["scenes_missing"] == len(scenes) - summary["scenes_scored"]
    assert summary["l2_avg"] == pytest.approx(0.0, abs=1e-9)


def test_garbage_and_absent_bags_are_reported(tmp_path):
    scenes = make_scenes(3)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "junk.mcap").write_bytes(b"not a bag at all")
    for bag in (tmp_path / "junk", tmp_path / "absent"):
        summary, _ = evaluate_bag(bag, scenes, processes=1, progress=False)
        assert summary["scenes_scored"] == 0 and summary["scenes_missing"] == 3 and summary["problems"]


def test_message_definitions_found_and_round_trip(tmp_path):
    assert (find_message_definitions() / "Waypoint.msg").is_file()
    write_bag(tmp_path / "bag", make_scenes(2), "sqlite3")
    records, report = read_trajectories(tmp_path / "bag", topics=["/wamdiff2/trajectory"])
    assert report.complete and len(records) == 2
    assert records[0].times_s.tolist() == pytest.approx(T.tolist())
    assert records[0].scene_token == "tok000" and records[0].block_size == 8


def test_missing_definitions_error_names_places(tmp_path, monkeypatch):
    from wamdiff2_ros.data.bags import typestore

    monkeypatch.setattr(typestore, "message_definition_dirs", lambda: [tmp_path / "nowhere"])
    with pytest.raises(typestore.BagError, match="nowhere"):
        typestore.find_message_definitions()


def test_plans_at_other_spacing_are_resampled(tmp_path):
    """A writer publishing 16 waypoints every 0.25 s on a straight line still scores L2 = 0; a 2 s plan is refused."""
    scenes = make_scenes(1)
    token, scene = next(iter(scenes.items()))
    with BagWriter(tmp_path / "bag", storage="mcap") as bag:
        fine = np.column_stack([6 * np.arange(1, 17) * 0.25, np.zeros(16), np.zeros(16)])
        bag.write("/plan", 1, trajectory_message(bag.typestore, fine, 1, interval_s=0.25, scene_token=token))
    summary, _ = evaluate_bag(tmp_path / "bag", scenes, processes=1, progress=False)
    assert summary["scenes_scored"] == 1 and summary["l2_avg"] == pytest.approx(0.0, abs=1e-9)
    with BagWriter(tmp_path / "short", storage="mcap") as bag:
        bag.write("/plan", 1, trajectory_message(bag.typestore, fine[:8], 1, interval_s=0.25, scene_token=token))
    summary, _ = evaluate_bag(tmp_path / "short", scenes, processes=1, progress=False)
    assert summary["scenes_scored"] == 0 and summary["scenes_missing"] == 1
    assert any("horizon" in p for p in summary["problems"])
