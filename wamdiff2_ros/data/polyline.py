"""Polylines with arc length: interpolation, projection and resampling of lane centrelines."""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np

__all__ = ["Polyline", "arc_points", "straight_points", "offset_points", "concat_points"]


class Polyline:
    """An open 2-D polyline with cumulative arc length ``s`` and per-point heading."""

    def __init__(self, points: np.ndarray) -> None:
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if len(pts) >= 2:
            keep = np.ones(len(pts), dtype=bool)
            # drop near-duplicate points (joints of lanes): they would make headings and curvature explode
            keep[1:] = np.linalg.norm(np.diff(pts, axis=0), axis=1) > 0.05
            if not keep[-1] and keep.sum() >= 2:
                keep[np.nonzero(keep)[0][-1]] = False
                keep[-1] = True
            pts = pts[keep]
        if len(pts) < 2:
            raise ValueError("a polyline needs at least two distinct points")
        self.points = pts
        seg = np.diff(pts, axis=0)
        self.seg_len = np.linalg.norm(seg, axis=1)
        self.s = np.concatenate([[0.0], np.cumsum(self.seg_len)])
        seg_heading = np.arctan2(seg[:, 1], seg[:, 0])
        self.seg_heading = seg_heading
        heading = np.concatenate([seg_heading, seg_heading[-1:]])
        self.headings_unwrapped = np.unwrap(heading)
        self.headings = heading
        # plain-Python copies for the fast scalar path
        self._s_list = self.s.tolist()
        self._xs = pts[:, 0].tolist()
        self._ys = pts[:, 1].tolist()
        self._seg_len_list = self.seg_len.tolist()
        self._seg_heading_list = seg_heading.tolist()

    @property
    def length(self) -> float:
        return float(self.s[-1])

    def interpolate(self, s: np.ndarray | float) -> np.ndarray:
        """Poses (..., 3) x, y, heading at arc length(s) ``s`` (clamped to the ends)."""
        s_arr = np.clip(np.asarray(s, dtype=np.float64), 0.0, self.length)
        idx = np.clip(np.searchsorted(self.s, s_arr, side="right") - 1, 0, len(self.seg_len) - 1)
        t = (s_arr - self.s[idx]) / self.seg_len[idx]
        p0 = self.points[idx]
        p1 = self.points[idx + 1]
        xy = p0 + (p1 - p0) * t[..., None]
        h = self.seg_heading[idx]
        return np.concatenate([xy, h[..., None]], axis=-1)

    def pose_at(self, s: float) -> tuple[float, float, float]:
        """(x, y, heading) at one arc length (clamped): the fast scalar form of :meth:`interpolate`."""
        s_list = self._s_list
        s = min(max(float(s), 0.0), s_list[-1])
        i = min(max(bisect_right(s_list, s) - 1, 0), len(self._seg_len_list) - 1)
        t = (s - s_list[i]) / self._seg_len_list[i]
        x0, y0 = self._xs[i], self._ys[i]
        return x0 + (self._xs[i + 1] - x0) * t, y0 + (self._ys[i + 1] - y0) * t, self._seg_heading_list[i]

    def simplified(self, max_step: float = 20.0, tolerance: float = 0.05) -> np.ndarray:
        """Fewer points: drop points while the chord stays within ``tolerance`` m of the curve."""
        pts = self.points
        keep = [0]
        i = 0
        n = len(pts)
        while i < n - 1:
            j = i + 1
            while j + 1 < n and self.s[j + 1] - self.s[i] <= max_step:
                a, b = pts[i], pts[j + 1]
                ab = b - a
                rel = pts[i + 1 : j + 1] - a
                dev = np.abs(ab[0] * rel[:, 1] - ab[1] * rel[:, 0]) / max(np.linalg.norm(ab), 1e-9)
                if dev.max() > tolerance:
                    break
                j += 1
            keep.append(j)
            i = j
        return pts[keep]

    def project(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nearest arc length, signed lateral offset (left +) and distance for points (..., 2)."""
        q = np.asarray(xy, dtype=np.float64)
        flat = q.reshape(-1, 2)
        a = self.points[:-1]
        d = self.points[1:] - a
        rel = flat[:, None, :] - a[None, :, :]
        t = np.clip((rel * d[None]).sum(-1) / (self.seg_len[None] ** 2), 0.0, 1.0)
        proj = a[None] + t[..., None] * d[None]
        dist = np.linalg.norm(flat[:, None, :] - proj, axis=-1)
        best = np.argmin(dist, axis=1)
        rows = np.arange(len(flat))
        s = self.s[best] + t[rows, best] * self.seg_len[best]
        dvec = d[best]
        cross = dvec[:, 0] * rel[rows, best, 1] - dvec[:, 1] * rel[rows, best, 0]
        lateral = np.sign(cross) * dist[rows, best]
        shape = q.shape[:-1]
        return s.reshape(shape), lateral.reshape(shape), dist[rows, best].reshape(shape)

    def resample(self, step: float) -> np.ndarray:
        """Points about ``step`` apart, both ends kept."""
        n = max(1, int(math.ceil(self.length / step)))
        return self.interpolate(np.linspace(0.0, self.length, n + 1))[:, :2]


def straight_points(start: np.ndarray, heading: float, length: float, step: float = 1.0) -> np.ndarray:
    """Points of a straight from ``start`` along ``heading``."""
    n = max(1, int(math.ceil(length / step)))
    t = np.linspace(0.0, length, n + 1)
    return np.asarray(start, dtype=np.float64) + t[:, None] * np.array([math.cos(heading), math.sin(heading)])


def arc_points(start: np.ndarray, heading: float, radius: float, angle: float, step: float = 1.0) -> np.ndarray:
    """Points of a circular arc starting at ``start`` tangent to ``heading``; ``angle`` > 0 turns left."""
    side = 1.0 if angle > 0 else -1.0
    normal = np.array([-math.sin(heading), math.cos(heading)]) * side
    center = np.asarray(start, dtype=np.float64) + radius * normal
    n = max(2, int(math.ceil(abs(angle) * radius / step)))
    phi0 = math.atan2(start[1] - center[1], start[0] - center[0])
    phi = phi0 + np.linspace(0.0, angle, n + 1)
    return center + radius * np.stack([np.cos(phi), np.sin(phi)], axis=1)


def offset_points(points: np.ndarray, offset: float) -> np.ndarray:
    """Points shifted sideways by ``offset`` (left +) using per-point tangent headings."""
    pts = np.asarray(points, dtype=np.float64)
    tangent = np.gradient(pts, axis=0)
    heading = np.arctan2(tangent[:, 1], tangent[:, 0])
    normal = np.stack([-np.sin(heading), np.cos(heading)], axis=1)
    return pts + offset * normal


def concat_points(parts: list[np.ndarray]) -> np.ndarray:
    """Point runs joined end to start, the shared point of two runs that meet kept once."""
    out = [parts[0]]
    for p in parts[1:]:
        if np.linalg.norm(out[-1][-1] - p[0]) < 1e-6:
            p = p[1:]
        out.append(p)
    return np.concatenate(out)
