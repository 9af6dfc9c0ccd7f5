"""data.camera_subsets: each scene's samples see a random non-empty subset of the cameras (an 8-camera lineage that
answers for any cameras a vehicle has); the default keeps every camera and the samples as before."""

from __future__ import annotations

import random

import pytest

from wamdiff2_ros.data.synth import synthesize
from wamdiff2_ros.data.tokenized import DataConfig, build_samples, scene_cameras
from wamdiff2_ros.model.prompts import CAMERAS
from wamdiff2_ros.training.config import TrainConfig


def test_random_subsets_are_non_empty_ordered_varied_and_seeded():
    draws = [scene_cameras(CAMERAS, "random", rng) for rng in [random.Random(0)] for _ in range(200)]
    assert all(d and list(d) == [c for c in CAMERAS if c in d] for d in draws)  # non-empty, NAVSIM order
    assert {len(d) for d in draws} == set(range(1, 9))  # one camera to all eight
    again = [scene_cameras(CAMERAS, "random", rng) for rng in [random.Random(0)] for _ in range(200)]
    assert draws == again
    assert scene_cameras(CAMERAS, "", random.Random(0)) == tuple(CAMERAS)
    assert scene_cameras(("CAM_F0",), "random", random.Random(0)) == ("CAM_F0",)
    assert any("CAM_F0" not in d for d in draws)
    front = [scene_cameras(CAMERAS, "keep_first", rng) for rng in [random.Random(0)] for _ in range(200)]
    assert all(d[0] == "CAM_F0" and list(d) == [c for c in CAMERAS if c in d] for d in front)
    assert {len(d) for d in front} == set(range(1, 9))  # the front camera alone up to all eight
    with pytest.raises(ValueError, match="camera_subsets"):
        scene_cameras(CAMERAS, "some", random.Random(0))


def test_samples_see_their_scene_subset_and_the_default_is_unchanged(tmp_path):
    cams = ("CAM_F0", "CAM_L0", "CAM_R0", "CAM_B0")
    synthesize(tmp_path, num_logs=1, num_frames=20, seed=3, cameras=cams, size=(64, 32), progress=False)
    base = DataConfig(logs_dir=str(tmp_path), cameras=list(cams), tasks=["planning", "understanding"], seed=1)
    every = build_samples(base)
    assert all(len(s.images) == len(cams) for s in every)
    subsets = build_samples(DataConfig(**{**base.__dict__, "camera_subsets": "random"}))
    assert [s.sample_id for s in subsets] == [s.sample_id for s in every]  # same samples, the QA choice unchanged
    counts = {len(s.images) for s in subsets}
    assert len(counts) > 1 and counts <= set(range(1, len(cams) + 1))
    by_scene: dict[str, set[int]] = {}
    for s in subsets:
        by_scene.setdefault(s.sample_id.split("_qa_")[0].removesuffix("_planning"), set()).add(len(s.images))
    assert all(len(n) == 1 for n in by_scene.values())  # one subset per scene, shared by its tasks


def test_config_checks_cameras_and_mode():
    cfg = TrainConfig(output_dir="out")
    cfg.data.logs_dir = "x"
    cfg.data.cameras = list(CAMERAS)
    cfg.data.camera_subsets = "random"
    cfg.validate()
    for field, bad in (("camera_subsets", "all"), ("cameras", ["CAM_X9"]), ("cameras", [])):
        cfg.data.camera_subsets, cfg.data.cameras = "random", list(CAMERAS)
        setattr(cfg.data, field, bad)
        with pytest.raises(ValueError, match=field):
            cfg.validate()
