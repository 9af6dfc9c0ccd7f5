"""Open-loop evaluation scores all three tasks: QA accuracy and pycocotools image-box mAP included."""

from __future__ import annotations

import math

import pytest


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from wamdiff2_ros.data.synth import synthesize

    out = tmp_path_factory.mktemp("syn")
    synthesize(out, num_logs=1, num_frames=14, seed=11, size=(256, 128), split="mini", progress=False)
    return out


def test_all_tasks_are_scored(synthetic):
    import torch

    from wamdiff2_ros.data.navsim import NavsimLogs
    from wamdiff2_ros.evaluation.open_loop import run_open_loop
    from wamdiff2_ros.model.loader import init_model

    torch.set_num_threads(1)
    logs = NavsimLogs(synthetic / "navsim_logs" / "mini", synthetic / "sensor_blobs" / "mini")
    vla = init_model("tiny", seed=0)
    runs, truth = run_open_loop(vla, logs, [8], tasks=("planning", "perception", "understanding"), limit=1,
                                max_new_tokens=16, processes=1, progress=False)
    summary = runs[0].summary
    assert summary["scenes_scored"] == 1
    assert summary["qa_questions"] >= 3  # lead presence / distance, light, manoeuvre, next action
    assert 0.0 <= summary["qa_exact_match"] <= 1.0 and 0.0 <= summary["qa_token_f1"] <= 1.0
    assert set(summary["qa_by_type"]) >= {"lead_presence", "next_action"}
    assert 0.0 <= summary["detection_map_coco"] <= 1.0 and not math.isnan(summary["bev_center_distance_map"])
    # a random model's 16 tokens never form a plan: the fallback is flagged
    assert summary["fallback_rate"] == 1.0
