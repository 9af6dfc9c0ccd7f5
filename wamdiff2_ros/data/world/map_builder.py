"""Building synthetic road maps: a random route with side roads, or a route scripted piece by piece.

:func:`generate_road_map` draws a route of straights, curves and signalised
intersections (and redraws it until no two unconnected pieces come too close);
:func:`scripted_road_map` lays out given pieces, for closed-loop evaluation routes.
Both add the intersections' side roads, all lanes and connectors, signal timing and,
optionally, buildings beside the road; every draw comes from the ``rng`` given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from wamdiff2_ros.data.polyline import Polyline, arc_points, concat_points, offset_points, straight_points
from wamdiff2_ros.data.world.map import (
    ARM_LENGTH,
    INTERSECTION_HALF_SIZE,
    LANE_WIDTH,
    SIDEWALK_WIDTH,
    TURNS,
    Building,
    Intersection,
    Lane,
    Road,
    RoadMap,
)
from wamdiff2_ros.geometry import box_corners, wrap_angle

__all__ = ["generate_road_map", "scripted_road_map"]


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


def _left_normal(angle: float) -> np.ndarray:
    return np.array([-math.sin(angle), math.cos(angle)])


@dataclass
class _Cursor:
    pos: np.ndarray
    heading: float


def _route_pieces(rng: np.random.Generator, start: _Cursor, min_length: float, h0: float,
                  intersection_prob: float) -> tuple[list[np.ndarray], list[tuple[np.ndarray, float, str]]]:
    """Road centrelines and intersections (centre, entry heading, turn) of one route."""
    cur = _Cursor(start.pos.copy(), start.heading)
    roads: list[np.ndarray] = []
    inters: list[tuple[np.ndarray, float, str]] = []
    current = [straight_points(cur.pos, cur.heading, float(rng.uniform(45.0, 70.0)))]
    cur.pos = current[-1][-1].copy()
    total = 0.0
    since_intersection = float(np.linalg.norm(current[-1][-1] - current[-1][0]))
    while True:
        total_now = total + since_intersection
        if total_now >= min_length and since_intersection > 30.0:
            tail = straight_points(cur.pos, cur.heading, 40.0)
            current.append(tail)
            roads.append(concat_points(current))
            break
        rel = float(wrap_angle(cur.heading - h0, method="atan2"))
        choice = rng.random()
        if since_intersection >= 30.0 and choice < intersection_prob:
            allowed = ["straight"]
            if rel + math.pi / 2 <= math.pi / 2 + 1e-6:
                allowed.append("left")
            if rel - math.pi / 2 >= -math.pi / 2 - 1e-6:
                allowed.append("right")
            turn = str(rng.choice(allowed))
            roads.append(concat_points(current))
            total += since_intersection
            center = cur.pos + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            inters.append((center.copy(), cur.heading, turn))
            delta = {"left": math.pi / 2, "straight": 0.0, "right": -math.pi / 2}[turn]
            cur.heading = float(wrap_angle(cur.heading + delta, method="atan2"))
            cur.pos = center + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            first = straight_points(cur.pos, cur.heading, float(rng.uniform(35.0, 60.0)))
            current = [first]
            cur.pos = first[-1].copy()
            since_intersection = float(np.linalg.norm(first[-1] - first[0]))
        elif choice < intersection_prob + 0.3:
            radius = float(rng.uniform(50.0, 160.0))
            angle = float(rng.uniform(math.radians(15), math.radians(45))) * (1 if rng.random() < 0.5 else -1)
            if abs(rel + angle) > math.pi / 2:
                angle = -angle
            piece = arc_points(cur.pos, cur.heading, radius, angle)
            current.append(piece)
            cur.pos = piece[-1].copy()
            cur.heading = float(wrap_angle(cur.heading + angle, method="atan2"))
            since_intersection += abs(angle) * radius
        else:
            length = float(rng.uniform(25.0, 70.0))
            piece = straight_points(cur.pos, cur.heading, length)
            current.append(piece)
            cur.pos = piece[-1].copy()
            since_intersection += length
    return roads, inters


def _lane_points(center: np.ndarray, direction: int) -> np.ndarray:
    """Right-hand lane of a road centreline: +1 along the points, -1 against them."""
    if direction > 0:
        return offset_points(center, -LANE_WIDTH / 2)
    return offset_points(center, LANE_WIDTH / 2)[::-1].copy()


def _connector_points(inter: Intersection, arm_in: int, arm_out: int) -> tuple[np.ndarray, str]:
    h = inter.half_size
    a_in = inter.arm_heading(arm_in)
    a_out = inter.arm_heading(arm_out)
    heading_in = a_in + math.pi
    p0 = inter.center + h * _unit(a_in) + (LANE_WIDTH / 2) * _left_normal(a_in)
    p1 = inter.center + h * _unit(a_out) - (LANE_WIDTH / 2) * _left_normal(a_out)
    delta = float(wrap_angle(a_out - heading_in, method="atan2"))
    if abs(delta) < 0.1:
        return straight_points(p0, heading_in, float(np.linalg.norm(p1 - p0)), step=1.0), "straight"
    if delta > 0:
        pts = arc_points(p0, heading_in, h + LANE_WIDTH / 2, math.pi / 2, step=0.5)
        turn = "left"
    else:
        pts = arc_points(p0, heading_in, h - LANE_WIDTH / 2, -math.pi / 2, step=0.5)
        turn = "right"
    pts[-1] = p1
    return pts, turn


def _min_distance(a: np.ndarray, b: np.ndarray) -> float:
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=-1)
    return float(d.min())


def generate_road_map(rng: np.random.Generator, min_route_length: float = 400.0, origin: tuple[float, float] = (0.0, 0.0),
                      heading: float = 0.0, intersection_prob: float = 0.4, buildings: bool = True,
                      name: str = "synthetic") -> RoadMap:
    """A random route of at least ``min_route_length`` metres with side roads, lanes and signals."""
    for _attempt in range(50):
        road_pts, inter_specs = _route_pieces(
            rng, _Cursor(np.array(origin, dtype=np.float64), heading), min_route_length, heading, intersection_prob
        )
        road_map = _assemble(rng, road_pts, inter_specs, name)
        if _self_overlap_free(road_map):
            break
    if buildings:
        road_map.buildings = _place_buildings(rng, road_map)
    return road_map


def scripted_road_map(rng: np.random.Generator, pieces: list[tuple], origin: tuple[float, float] = (0.0, 0.0),
                      heading: float = 0.0, buildings: bool = True, name: str = "scripted") -> RoadMap:
    """A route made of ``pieces`` in order: ``("straight", length)``, ``("arc", radius, angle_rad)`` (left +)
    or ``("intersection", "left" | "straight" | "right")``; it must start and end with road, not an
    intersection. Side roads, lanes and signals as in :func:`generate_road_map` (signal timing drawn
    from ``rng``; callers may set ``green_s`` / ``offset_s`` afterwards)."""
    if not pieces or pieces[0][0] == "intersection" or pieces[-1][0] == "intersection":
        raise ValueError("a scripted route must start and end with a straight or an arc")
    cur = _Cursor(np.array(origin, dtype=np.float64), float(heading))
    roads: list[np.ndarray] = []
    inters: list[tuple[np.ndarray, float, str]] = []
    current: list[np.ndarray] = []
    for piece in pieces:
        kind = piece[0]
        if kind == "straight":
            if not piece[1] > 0:
                raise ValueError(f"straight length must be > 0, got {piece[1]}")
            part = straight_points(cur.pos, cur.heading, float(piece[1]))
            delta = 0.0
        elif kind == "arc":
            radius, angle = float(piece[1]), float(piece[2])
            if radius < 10.0 or not 0.0 < abs(angle) <= math.pi:
                raise ValueError(f"arc needs radius >= 10 m and 0 < |angle| <= pi, got {radius}, {angle}")
            part = arc_points(cur.pos, cur.heading, radius, angle)
            delta = angle
        elif kind == "intersection":
            turn = piece[1]
            if turn not in TURNS:
                raise ValueError(f"intersection turn must be one of {TURNS}, got {turn!r}")
            if not current:
                raise ValueError("two intersections need a road between them")
            roads.append(concat_points(current))
            current = []
            center = cur.pos + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            inters.append((center.copy(), cur.heading, turn))
            cur.heading = float(wrap_angle(cur.heading + {"left": math.pi / 2, "straight": 0.0,
                                                          "right": -math.pi / 2}[turn], method="atan2"))
            cur.pos = center + INTERSECTION_HALF_SIZE * _unit(cur.heading)
            continue
        else:
            raise ValueError(f"unknown route piece {piece!r}")
        current.append(part)
        cur.pos = part[-1].copy()
        cur.heading = float(wrap_angle(cur.heading + delta, method="atan2"))
    roads.append(concat_points(current))
    road_map = _assemble(rng, roads, inters, name)
    if buildings:
        road_map.buildings = _place_buildings(rng, road_map)
    return road_map


def _assemble(rng: np.random.Generator, road_pts: list[np.ndarray], inter_specs: list[tuple[np.ndarray, float, str]],
              name: str) -> RoadMap:
    roads: list[Road] = []
    lanes: list[Lane] = []
    inters: list[Intersection] = []
    next_id = [1]

    def new_id() -> int:
        next_id[0] += 1
        return next_id[0] - 1

    forward: list[Lane] = []
    backward: list[Lane] = []
    for i, pts in enumerate(road_pts):
        roads.append(Road(i, pts, LANE_WIDTH, "route"))
        f = Lane(new_id(), _lane_points(pts, +1), road=i, intersection=i if i < len(inter_specs) else -1,
                 approach_arm=2 if i < len(inter_specs) else -1)
        b = Lane(new_id(), _lane_points(pts, -1), road=i, intersection=i - 1 if i > 0 else -1)
        forward.append(f)
        backward.append(b)
        lanes += [f, b]
    route = [forward[0].id]
    for k, (center, heading_in, turn) in enumerate(inter_specs):
        inter = Intersection(
            id=k, center=center, heading=heading_in, turn=turn,
            green_s=(float(rng.uniform(9.0, 15.0)), float(rng.uniform(7.0, 12.0))),
            offset_s=float(rng.uniform(0.0, 40.0)),
        )
        inters.append(inter)
        if k + 1 < len(backward):
            backward[k + 1].approach_arm = inter.exit_arm
        arm_in: dict[int, Lane] = {2: forward[k]}
        arm_out: dict[int, Lane] = {2: backward[k], inter.exit_arm: forward[k + 1]}
        arm_in[inter.exit_arm] = backward[k + 1]
        for arm in range(4):
            if arm in (2, inter.exit_arm):
                continue
            a = inter.arm_heading(arm)
            start = inter.center + inter.half_size * _unit(a)
            center_pts = straight_points(start, a, ARM_LENGTH, step=1.0)
            road_id = len(roads)
            roads.append(Road(road_id, center_pts, LANE_WIDTH, "arm"))
            out_lane = Lane(new_id(), _lane_points(center_pts, +1), road=road_id)
            in_lane = Lane(new_id(), _lane_points(center_pts, -1), road=road_id, intersection=k, approach_arm=arm)
            arm_in[arm] = in_lane
            arm_out[arm] = out_lane
            lanes += [out_lane, in_lane]
        for a_in, lane_in in arm_in.items():
            for a_out, lane_out in arm_out.items():
                if a_in == a_out:
                    continue
                pts, turn_name = _connector_points(inter, a_in, a_out)
                conn = Lane(new_id(), pts, [lane_out.id], "connector", -1, k, a_in, turn_name)
                lanes.append(conn)
                lane_in.successors.append(conn.id)
                if a_in == 2 and a_out == inter.exit_arm:
                    route += [conn.id, lane_out.id]
    return RoadMap(roads, lanes, inters, route, name=name)


def _self_overlap_free(road_map: RoadMap) -> bool:
    """No two unconnected road pieces come closer than two road widths."""
    pieces = [r.points[::3] for r in road_map.roads]
    owner = [r.id for r in road_map.roads]
    clearance = 4 * LANE_WIDTH + 2 * SIDEWALK_WIDTH
    for i in range(len(pieces)):
        for j in range(i + 1, len(pieces)):
            if _min_distance(pieces[i], pieces[j]) < clearance:
                # pieces meeting at an intersection touch by construction
                ends_i = road_map.roads[owner[i]].points[[0, -1]]
                ends_j = road_map.roads[owner[j]].points[[0, -1]]
                if _min_distance(ends_i, ends_j) < 3 * INTERSECTION_HALF_SIZE:
                    # connected through a box: check the far parts only
                    far_i = pieces[i][_far_mask(pieces[i], ends_i)]
                    far_j = pieces[j][_far_mask(pieces[j], ends_j)]
                    if len(far_i) and len(far_j) and _min_distance(far_i, far_j) < clearance:
                        return False
                    continue
                return False
    return True


def _far_mask(points: np.ndarray, ends: np.ndarray) -> np.ndarray:
    d = np.linalg.norm(points[:, None, :] - ends[None], axis=-1).min(axis=1)
    return d > 4 * INTERSECTION_HALF_SIZE


_BUILDING_COLORS = (
    (176, 160, 140), (150, 140, 130), (190, 180, 165), (160, 110, 90), (120, 120, 125),
    (200, 190, 170), (140, 150, 160), (170, 130, 100), (110, 100, 95), (185, 175, 185),
)


def _place_buildings(rng: np.random.Generator, road_map: RoadMap) -> list[Building]:
    clearance = LANE_WIDTH + SIDEWALK_WIDTH + 1.5
    candidates = []
    for road in road_map.roads:
        poly = Polyline(road.points)
        for side in (1.0, -1.0):
            s = float(rng.uniform(0.0, 8.0))
            while s < poly.length:
                width = float(rng.uniform(8.0, 22.0))
                depth = float(rng.uniform(8.0, 18.0))
                setback = float(rng.uniform(2.0, 9.0))
                height = float(rng.uniform(5.0, 28.0))
                color = _BUILDING_COLORS[int(rng.integers(len(_BUILDING_COLORS)))]
                x, y, h = poly.pose_at(s + width / 2)
                dist = LANE_WIDTH + SIDEWALK_WIDTH + setback + depth / 2
                cx = x - side * dist * math.sin(h)
                cy = y + side * dist * math.cos(h)
                candidates.append(Building(float(cx), float(cy), float(h), width, depth, height, color))
                s += width + float(rng.uniform(2.0, 12.0))
    if not candidates:
        return []
    tests = []
    for b in candidates:
        corners = box_corners(b.x, b.y, b.length, b.width, b.yaw)
        tests.append(np.concatenate([corners, [[b.x, b.y]], (corners + np.array([[b.x, b.y]])) / 2]))
    pts = np.concatenate(tests)
    on_road = road_map.is_drivable(pts[:, 0], pts[:, 1], margin=-clearance).reshape(len(candidates), -1).any(axis=1)
    out: list[Building] = []
    for b, blocked in zip(candidates, on_road, strict=True):
        if blocked:
            continue
        if all(math.hypot(b.x - o.x, b.y - o.y) > (max(b.length, b.width) + max(o.length, o.width)) / 2 for o in out):
            out.append(b)
    return out
