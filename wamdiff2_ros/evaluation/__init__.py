"""Evaluation: planning, QA and detection metrics, bag scoring, reports and plots.

Public API (imported lazily, so ``import wamdiff2_ros.evaluation`` stays light)::

    from wamdiff2_ros.evaluation import (
        SceneGroundTruth, AgentBoxes, DrivingMap,          # what plans are scored against
        l2_metrics, collision_metrics, pdm_terms,          # per-plan metrics
        score_scene, score_scenes, aggregate,              # many scenes, in parallel
        evaluate_bag, ground_truth_from_logs, write_report,
        coco_map, bev_center_distance_map,                 # perception
        exact_match, token_f1, load_lingoqa, load_drivebench, score_items,  # understanding
    )
"""

from __future__ import annotations

from wamdiff2_ros._lazy import lazy_exports

_EXPORTS = {
    "SceneGroundTruth": "scene", "AgentBoxes": "scene", "DrivingMap": "scene",
    "l2_metrics": "planning", "collision_metrics": "planning", "l2_errors": "planning",
    "pdm_terms": "pdm",
    "score_scene": "scoring", "score_scenes": "scoring", "aggregate": "scoring",
    "evaluate_bag": "bag_eval", "match_trajectories": "bag_eval",
    "ground_truth_from_logs": "groundtruth", "scene_ground_truth": "groundtruth",
    "write_report": "report",
    "coco_map": "detection", "bev_center_distance_map": "detection", "ImageBox": "detection", "BevBox": "detection",
    "exact_match": "qa", "token_f1": "qa", "normalize_answer": "qa", "load_lingoqa": "qa",
    "load_drivebench": "qa", "score_items": "qa", "QAItem": "qa",
    "run_open_loop": "open_loop", "write_submission": "open_loop",
}  # fmt: skip

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
