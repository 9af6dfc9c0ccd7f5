"""OpenCV rasteriser for the synthetic world: ground layers and boxes through a pinhole camera.

Everything is a flat polygon: the ground (grass, sidewalks, asphalt, lane markings,
crosswalks, stop lines) is drawn in layer order, then the faces of all boxes
(buildings, vehicles, pedestrians, signal poles and heads) far to near (painter's
algorithm) with back faces culled. Polygons are clipped against the near plane in
camera space and projected with the camera's K, so what is drawn is exactly what the
log's calibration says the camera sees. Signal lamps are discs on the heads' faces.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from wamdiff2_ros.data.polyline import Polyline, offset_points
from wamdiff2_ros.data.world.cameras import PinholeCamera
from wamdiff2_ros.data.world.looks import RenderBox
from wamdiff2_ros.data.world.map import LANE_WIDTH, SIDEWALK_WIDTH, STOP_LINE_SETBACK, RoadMap

__all__ = ["GROUNDS", "Renderer", "box_corners"]

NEAR = 0.25
FAR = 220.0
SKY_TOP = np.array([110.0, 150.0, 205.0])
SKY_HORIZON = np.array([200.0, 214.0, 228.0])
FOG = np.array([190.0, 200.0, 210.0])
ASPHALT = (78, 80, 84)
INTERSECTION_ASPHALT = (84, 85, 88)
SIDEWALK = (160, 158, 150)
WHITE = (225, 225, 220)
YELLOW = (220, 180, 40)
GROUNDS = ((96, 118, 70), (112, 124, 84), (128, 120, 100), (104, 112, 92))
LAMP_COLORS = {"red": (255, 40, 30), "yellow": (255, 200, 0), "green": (40, 230, 90)}
LAMP_OFF = (45, 45, 45)

# box corner order: bottom 0-3 (counter-clockwise seen from above), top 4-7
_UNIT_CORNERS = np.array(
    [[1, 1, 0], [-1, 1, 0], [-1, -1, 0], [1, -1, 0], [1, 1, 1], [-1, 1, 1], [-1, -1, 1], [1, -1, 1]], dtype=np.float64
) * np.array([0.5, 0.5, 1.0])
# faces (outward normal by right-hand order): top, front(+x), back(-x), left(+y), right(-y)
_FACES = np.array([[4, 5, 6, 7], [0, 4, 7, 3], [2, 6, 5, 1], [1, 5, 4, 0], [3, 7, 6, 2]])
_FACE_SHADE = np.array([1.08, 0.92, 0.72, 0.82, 0.66])


def box_corners(boxes: list[RenderBox]) -> np.ndarray:
    """World corners (B, 8, 3) of boxes."""
    if not boxes:
        return np.zeros((0, 8, 3))
    arr = np.array([[b.x, b.y, b.z, b.yaw, b.length, b.width, b.height] for b in boxes])
    local = _UNIT_CORNERS[None] * arr[:, None, 4:7]
    c, s = np.cos(arr[:, 3])[:, None], np.sin(arr[:, 3])[:, None]
    out = np.empty_like(local)
    out[..., 0] = arr[:, 0:1] + c * local[..., 0] - s * local[..., 1]
    out[..., 1] = arr[:, 1:2] + s * local[..., 0] + c * local[..., 1]
    out[..., 2] = arr[:, 2:3] + local[..., 2]
    return out


def _quad_strip(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Quads (N-1, 4, 2) between two polylines of equal length."""
    return np.stack([left[:-1], left[1:], right[1:], right[:-1]], axis=1)


def _clip_near(poly: np.ndarray) -> np.ndarray:
    """Sutherland-Hodgman clip of a camera-space polygon (K, 3) against z >= NEAR."""
    out = []
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        a_in, b_in = a[2] >= NEAR, b[2] >= NEAR
        if a_in:
            out.append(a)
        if a_in != b_in:
            t = (NEAR - a[2]) / (b[2] - a[2])
            out.append(a + t * (b - a))
    return np.array(out) if out else np.zeros((0, 3))


class Renderer:
    """Draws a :class:`RoadMap` plus dynamic boxes from any :class:`PinholeCamera`."""

    def __init__(self, road_map: RoadMap, ground_color: tuple[int, int, int] | None = None,
                 lamp_visor_deg: float = 60.0) -> None:
        self.road_map = road_map
        self.ground_color = ground_color or GROUNDS[0]
        self._visor_cos = math.cos(math.radians(lamp_visor_deg))
        self._layers = self._ground_layers()
        self._static_boxes = self._building_boxes()
        self._static_corners = box_corners(self._static_boxes)
        self._background: dict[tuple[int, int, int], np.ndarray] = {}

    # ------------------------------------------------------------------ static geometry

    def _ground_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Layers of ground quads: (quads (Q, 4, 2), colours (Q, 3)), drawn in order."""
        rm = self.road_map
        sidewalks, asphalt, markings_w, markings_y = [], [], [], []
        hw = LANE_WIDTH
        for road in rm.roads:
            pts = Polyline(road.points).simplified(max_step=25.0, tolerance=0.04)
            left = offset_points(pts, hw)
            right = offset_points(pts, -hw)
            asphalt.append(_quad_strip(left, right))
            for side in (1.0, -1.0):
                inner = offset_points(pts, side * hw)
                outer = offset_points(pts, side * (hw + SIDEWALK_WIDTH))
                sidewalks.append(_quad_strip(outer, inner))
                edge_a = offset_points(pts, side * (hw - 0.25))
                edge_b = offset_points(pts, side * (hw - 0.4))
                markings_w.append(_quad_strip(edge_a, edge_b))
            # dashed centre line: 3 m dash, 6 m gap
            poly = Polyline(road.points)
            starts = np.arange(4.0, poly.length - 4.0, 9.0)
            for s0 in starts:
                seg = poly.interpolate(np.array([s0, s0 + 3.0]))[:, :2]
                markings_y.append(_quad_strip(offset_points(seg, 0.08), offset_points(seg, -0.08)))
        boxes, crosswalks, stop_lines = [], [], []
        for inter in rm.intersections:
            h = inter.half_size
            c = inter.center
            u = np.array([math.cos(inter.heading), math.sin(inter.heading)])
            n = np.array([-u[1], u[0]])
            corners = np.array([c + h * (sx * u + sy * n) for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1))])
            boxes.append(corners[None])
            for arm in range(4):
                a = inter.arm_heading(arm)
                ua = np.array([math.cos(a), math.sin(a)])
                na = np.array([-ua[1], ua[0]])
                # zebra stripes across the arm, just outside the box
                for off in np.arange(-hw + 0.5, hw - 0.2, 1.1):
                    p0 = c + (h + 0.4) * ua + off * na
                    p1 = c + (h + 3.0) * ua + off * na
                    crosswalks.append(np.array([[p0, p1, p1 + 0.55 * na, p0 + 0.55 * na]]))
                # stop line across the inbound lane (left of the outward direction)
                d0, d1 = h + STOP_LINE_SETBACK - 0.1, h + STOP_LINE_SETBACK + 0.4
                q0, q1 = 0.1 * na, (hw - 0.3) * na
                stop_lines.append(np.array([[c + d0 * ua + q0, c + d1 * ua + q0, c + d1 * ua + q1, c + d0 * ua + q1]]))
        layers = []
        for quads, color in (
            (sidewalks, SIDEWALK),
            (asphalt, ASPHALT),
            (boxes, INTERSECTION_ASPHALT),
            (markings_w + crosswalks + stop_lines, WHITE),
            (markings_y, YELLOW),
        ):
            q = np.concatenate(quads) if quads else np.zeros((0, 4, 2))
            layers.append((q, np.tile(np.array(color, dtype=np.float64), (len(q), 1))))
        return layers

    def _building_boxes(self) -> list[RenderBox]:
        out = []
        for b in self.road_map.buildings:
            base = np.array(b.color, dtype=np.float64)
            roof = tuple(int(v) for v in base * 0.75)
            wall = tuple(int(v) for v in base)
            out.append(RenderBox(b.x, b.y, 0.0, b.yaw, b.length, b.width, b.height, (roof, wall, wall, wall, wall)))
        return out

    def signal_boxes(self, states: dict[tuple[int, int], str]) -> list[RenderBox]:
        """Poles and heads of every signal; ``states`` maps (intersection, approach arm) -> state."""
        out = []
        pole_color = ((70, 70, 72),) * 5
        head_color = ((30, 30, 30),) * 5
        hw = LANE_WIDTH
        for inter in self.road_map.intersections:
            for arm in range(4):
                heading_in = inter.arm_heading(arm) + math.pi
                u = np.array([math.cos(heading_in), math.sin(heading_in)])
                n = np.array([-u[1], u[0]])
                pos = inter.center + (inter.half_size + 1.0) * u - (hw + 1.0) * n
                out.append(RenderBox(pos[0], pos[1], 0.0, heading_in, 0.25, 0.25, 5.4, pole_color))
                # head faces approaching traffic: its +x face points against heading_in
                state = states.get((inter.id, arm), "red")
                out.append(RenderBox(pos[0] - 0.3 * u[0], pos[1] - 0.3 * u[1], 4.1, heading_in + math.pi,
                                     0.35, 0.45, 1.2, head_color, lamp=state))
        return out

    # ------------------------------------------------------------------ drawing

    def background(self, camera: PinholeCamera) -> np.ndarray:
        key = (camera.width, camera.height, int(round(camera.K[1, 2])))
        if key not in self._background:
            h, w = camera.height, camera.width
            horizon = int(round(camera.K[1, 2]))
            img = np.empty((h, w, 3), dtype=np.uint8)
            rows = np.clip(np.arange(h) / max(horizon, 1), 0.0, 1.0)[:, None]
            sky = SKY_TOP[None] * (1 - rows) + SKY_HORIZON[None] * rows
            img[:] = sky[:, None, :].astype(np.uint8)
            far_ground = 0.35 * np.array(self.ground_color) + 0.65 * FOG
            img[max(horizon, 0):] = far_ground.astype(np.uint8)
            self._background[key] = img
        return self._background[key].copy()

    def render(self, camera: PinholeCamera, ego_pose: tuple[float, float, float], boxes: list[RenderBox],
               signal_states: dict[tuple[int, int], str] | None = None) -> np.ndarray:
        """RGB image (H, W, 3) uint8 seen by ``camera`` on the ego at ``ego_pose`` (x, y, yaw)."""
        img = self.background(camera)
        r, t = camera.world_to_camera(ego_pose)
        ex, ey, _ = ego_pose
        # ground plane around the ego
        g = 600.0
        ground = np.array([[[ex - g, ey - g], [ex + g, ey - g], [ex + g, ey + g], [ex - g, ey + g]]])
        self._draw_flat(img, camera, r, t, ground, np.array([self.ground_color], dtype=np.float64), fog=False)
        for quads, colors in self._layers:
            if len(quads):
                near = np.abs(quads[:, 0, 0] - ex) + np.abs(quads[:, 0, 1] - ey) < FAR * 1.2
                self._draw_flat(img, camera, r, t, quads[near], colors[near])
        all_boxes = self._static_boxes + self.signal_boxes(signal_states or {}) + boxes
        corners = np.concatenate([self._static_corners, box_corners(all_boxes[len(self._static_boxes):])])
        self._draw_boxes(img, camera, r, t, all_boxes, corners)
        return img

    def _frustum_outside(self, cam: PinholeCamera, pts: np.ndarray) -> np.ndarray:
        """(..., 4 or 8) points in camera space -> mask of polygons entirely outside one frustum plane."""
        fx, fy, cx, cy = cam.K[0, 0], cam.K[1, 1], cam.K[0, 2], cam.K[1, 2]
        x, y, z = pts[..., 0], pts[..., 1], pts[..., 2]
        planes = (
            z < NEAR,
            z > FAR,
            fx * x + cx * z < 0,
            fx * x - (cam.width - cx) * z > 0,
            fy * y + cy * z < 0,
            fy * y - (cam.height - cy) * z > 0,
        )
        out = np.zeros(pts.shape[:-2], dtype=bool)
        for plane in planes:
            out |= plane.all(axis=-1)
        return out

    def _fog(self, color: np.ndarray, depth: np.ndarray) -> np.ndarray:
        k = 1.0 - np.exp(-np.maximum(depth, 0.0) / 260.0)
        return color * (1 - k[:, None]) + FOG[None] * k[:, None]

    def _fill_all(self, img: np.ndarray, cam: PinholeCamera, polys: np.ndarray, colors: list) -> None:
        """Fill camera-space polygons (N, K, 3) in order; only those crossing the near plane are clipped."""
        if not len(polys):
            return
        crossing = polys[..., 2].min(axis=1) < NEAR
        z = np.where(crossing[:, None], 1.0, polys[..., 2])
        uv = polys[..., :2] / z[..., None] * np.array([cam.K[0, 0], cam.K[1, 1]]) + np.array([cam.K[0, 2], cam.K[1, 2]])
        pix = np.round(np.clip(uv, -1e5, 1e5) * 4).astype(np.int32)
        fill = cv2.fillConvexPoly
        for i in range(len(polys)):
            if crossing[i]:
                clipped = _clip_near(polys[i])
                if len(clipped) < 3:
                    continue
                p = np.round(np.clip(cam.project(clipped), -1e5, 1e5) * 4).astype(np.int32)
                fill(img, p, colors[i], cv2.LINE_8, 2)
            else:
                fill(img, pix[i], colors[i], cv2.LINE_8, 2)

    def _draw_flat(self, img: np.ndarray, cam: PinholeCamera, r: np.ndarray, t: np.ndarray, quads: np.ndarray,
                   colors: np.ndarray, fog: bool = True) -> None:
        if not len(quads):
            return
        pts = np.concatenate([quads, np.zeros(quads.shape[:-1] + (1,))], axis=-1)
        cam_pts = pts @ r.T + t
        keep = ~self._frustum_outside(cam, cam_pts)
        cam_pts = cam_pts[keep]
        cols = colors[keep]
        if not len(cam_pts):
            return
        if fog:
            cols = self._fog(cols, cam_pts[..., 2].mean(axis=1))
        self._fill_all(img, cam, cam_pts, [tuple(c) for c in np.clip(cols, 0, 255).astype(int).tolist()])

    def _draw_boxes(self, img: np.ndarray, cam: PinholeCamera, r: np.ndarray, t: np.ndarray, boxes: list[RenderBox],
                    corners: np.ndarray) -> None:
        if not boxes:
            return
        cam_corners = corners @ r.T + t  # (B, 8, 3)
        visible = ~self._frustum_outside(cam, cam_corners)
        idx = np.nonzero(visible)[0]
        if not len(idx):
            return
        faces = cam_corners[idx][:, _FACES]  # (b, 5, 4, 3)
        centers = faces.mean(axis=2)
        normals = np.cross(faces[:, :, 1] - faces[:, :, 0], faces[:, :, 2] - faces[:, :, 0])
        facing = (normals * centers).sum(-1) < 0
        draw = facing & ~self._frustum_outside(cam, faces)
        depth = np.linalg.norm(centers, axis=-1)
        bi, fi = np.nonzero(draw)
        order = np.argsort(-depth[bi, fi], kind="stable")
        bi, fi = bi[order], fi[order]
        if not len(bi):
            return
        base = np.array([boxes[idx[b]].colors[f] for b, f in zip(bi, fi, strict=True)], dtype=np.float64)
        base *= _FACE_SHADE[fi][:, None]
        cols = np.clip(self._fog(base, depth[bi, fi]), 0, 255).astype(int).tolist()
        polys = faces[bi, fi]
        lamp_faces = [k for k in range(len(bi)) if fi[k] == 1 and boxes[idx[bi[k]]].lamp]
        if not lamp_faces:
            self._fill_all(img, cam, polys, [tuple(c) for c in cols])
            return
        # signal heads: lamps go on top of their face, so draw in runs between lamp faces
        start = 0
        for k in lamp_faces + [len(bi)]:
            end = min(k + 1, len(bi))
            self._fill_all(img, cam, polys[start:end], [tuple(c) for c in cols[start:end]])
            if k < len(bi):
                self._draw_lamps(img, cam, polys[k], boxes[idx[bi[k]]].lamp)
            start = end

    def _draw_lamps(self, img: np.ndarray, cam: PinholeCamera, face: np.ndarray, state: str) -> None:
        # lamps sit under visors: visible only within lamp_visor_deg of the head's facing direction
        normal = np.cross(face[1] - face[0], face[2] - face[0])
        center = face.mean(axis=0)
        if -float(normal @ center) < self._visor_cos * float(np.linalg.norm(normal) * np.linalg.norm(center)):
            return
        lower = _FACES[1] < 4
        bottom = face[lower].mean(axis=0)
        top = face[~lower].mean(axis=0)
        for k, lamp in enumerate(("green", "yellow", "red")):
            center = bottom + (top - bottom) * (0.2 + 0.3 * k)
            if center[2] < NEAR:
                continue
            uv = cam.project(center)
            radius = 0.13 * cam.K[0, 0] / center[2]
            color = LAMP_COLORS[lamp] if lamp == state else LAMP_OFF
            if -50 < uv[0] < cam.width + 50 and -50 < uv[1] < cam.height + 50:
                cv2.circle(img, (int(round(uv[0] * 4)), int(round(uv[1] * 4))), max(1, int(round(radius * 4))),
                           color, -1, lineType=cv2.LINE_AA, shift=2)
