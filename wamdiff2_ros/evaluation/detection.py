"""Perception metrics: COCO mAP of image boxes (pycocotools' COCOeval) and BEV centre-distance mAP of 3-D boxes.

The image metric builds COCO ground-truth and detection structures in memory and runs
the real ``COCOeval`` (AP over IoU 0.50:0.95, AP50, AP75). The BEV metric is the
nuScenes detection AP: greedy matching by ego-plane centre distance at thresholds of
0.5, 1, 2 and 4 m, 101-point interpolated precision, precision and recall below 0.1
cut off; mAP averages classes and thresholds.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BEV_THRESHOLDS_M = (0.5, 1.0, 2.0, 4.0)


@dataclass
class ImageBox:
    """An image box ``(x1, y1, x2, y2)`` in pixels of ``image_id`` with a label and a score."""

    image_id: str
    label: str
    bbox: tuple[float, float, float, float]
    score: float = 1.0


def coco_map(ground_truth: Sequence[ImageBox], detections: Sequence[ImageBox]) -> dict[str, float]:
    """``map`` (IoU .50:.95), ``map_50``, ``map_75`` from pycocotools; NaN-free (-1 -> 0 when nothing to score)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    labels = sorted({b.label for b in ground_truth} | {b.label for b in detections})
    cat_ids = {label: i + 1 for i, label in enumerate(labels)}
    images = sorted({b.image_id for b in ground_truth} | {b.image_id for b in detections})
    img_ids = {name: i + 1 for i, name in enumerate(images)}

    def xywh(b: ImageBox) -> list[float]:
        x1, y1, x2, y2 = (float(v) for v in b.bbox)
        if x2 < x1 or y2 < y1:
            raise ValueError(f"image box {b.bbox} of {b.image_id} has x2 < x1 or y2 < y1")
        return [x1, y1, x2 - x1, y2 - y1]

    annotations = []
    for i, b in enumerate(ground_truth):
        box = xywh(b)
        annotations.append(
            {"id": i + 1, "image_id": img_ids[b.image_id], "category_id": cat_ids[b.label], "bbox": box,
             "area": box[2] * box[3], "iscrowd": 0}
        )  # fmt: skip
    if not annotations:
        return {"map": 0.0, "map_50": 0.0, "map_75": 0.0}
    gt = COCO()
    gt.dataset = {
        "images": [{"id": i} for i in img_ids.values()],
        "categories": [{"id": c, "name": n} for n, c in cat_ids.items()],
        "annotations": annotations,
    }
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        if not detections:
            return {"map": 0.0, "map_50": 0.0, "map_75": 0.0}
        dt = gt.loadRes(
            [{"image_id": img_ids[b.image_id], "category_id": cat_ids[b.label], "bbox": xywh(b), "score": float(b.score)}
             for b in detections]
        )  # fmt: skip
        evaluator = COCOeval(gt, dt, iouType="bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    stats = [max(float(s), 0.0) for s in evaluator.stats[:3]]
    return {"map": stats[0], "map_50": stats[1], "map_75": stats[2]}


@dataclass
class BevBox:
    """A 3-D box reduced to what centre-distance AP needs."""

    sample_id: str
    label: str
    x: float
    y: float
    score: float = 1.0


def _average_precision(tp: np.ndarray, num_gt: int, min_recall: float = 0.1, min_precision: float = 0.1) -> float:
    if num_gt == 0 or len(tp) == 0:
        return 0.0
    tp_cum = np.cumsum(tp)
    fp_cum = np.cumsum(1 - tp)
    precision = tp_cum / np.maximum(tp_cum + fp_cum, 1)
    recall = tp_cum / num_gt
    grid = np.linspace(0, 1, 101)
    # precision envelope, sampled at the recall grid (nuScenes style)
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    sampled = np.zeros_like(grid)
    idx = np.searchsorted(recall, grid, side="left")
    ok = idx < len(recall)
    sampled[ok] = envelope[idx[ok]]
    sampled = sampled[int(round(100 * min_recall)) + 1 :]
    sampled = np.clip(sampled - min_precision, 0, None) / (1 - min_precision)
    return float(sampled.mean())


def bev_center_distance_map(
    ground_truth: Sequence[BevBox], detections: Sequence[BevBox], thresholds: Sequence[float] = BEV_THRESHOLDS_M
) -> dict[str, object]:
    """nuScenes-style AP per class and threshold and their mean (``map``)."""
    labels = sorted({b.label for b in ground_truth})
    per_class: dict[str, dict[str, float]] = {}
    for label in labels:
        gts = [b for b in ground_truth if b.label == label]
        dets = sorted((b for b in detections if b.label == label), key=lambda b: -b.score)
        by_sample: dict[str, list[int]] = {}
        for i, g in enumerate(gts):
            by_sample.setdefault(g.sample_id, []).append(i)
        per_class[label] = {}
        for threshold in thresholds:
            taken: set[int] = set()
            tp = np.zeros(len(dets))
            for k, d in enumerate(dets):
                best, best_dist = None, float("inf")
                for i in by_sample.get(d.sample_id, []):
                    if i in taken:
                        continue
                    dist = float(np.hypot(gts[i].x - d.x, gts[i].y - d.y))
                    if dist < best_dist:
                        best, best_dist = i, dist
                if best is not None and best_dist <= threshold:
                    taken.add(best)
                    tp[k] = 1
            per_class[label][f"ap_{threshold:g}m"] = _average_precision(tp, len(gts))
    values = [v for c in per_class.values() for v in c.values()]
    return {"map": float(np.mean(values)) if values else 0.0, "per_class": per_class}
