"""The synthetic world: autopilot behaviour, closed-loop stepping, map queries, camera geometry."""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest

from wamdiff2_ros.data.camera import PinholeCamera, camera_calibration
from wamdiff2_ros.data.render import RenderBox
from wamdiff2_ros.data.road_map import RoadMap
from wamdiff2_ros.data.world import EGO_REAR_AXLE_TO_CENTER, World, WorldConfig


def _front_s(world: World) -> float:
    return world.ego.s + EGO_REAR_AXLE_TO_CENTER + 2.588


@pytest.mark.parametrize("seed", [1, 4])
def test_autopilot_stays_on_road_obeys_lights_and_never_collides(seed):
    world = World(seed, WorldConfig(route_length=500.0))
    red_crossings, stops = [], 0
    start_s = world.ego.s
    for _ in range(450):  # 45 s at 0.1 s
        before = _front_s(world)
        world.step(0.1)
        after = _front_s(world)
        for s_stop, inter, arm in world.ego.path.stops:
            if before < s_stop <= after and world.map.intersections[inter].signal_state(arm % 2, world.time_s) == "red":
                red_crossings.append((world.time_s, inter))
        stops += world.ego.speed < 0.1
        ego = world.ego_state()
        assert world.collisions() == []
        assert world.map.is_drivable(ego.x, ego.y)
        assert world.map.driving_direction_ok(ego.x, ego.y, ego.yaw)
    # yellow may be entered; red only after it turned red while already too close to stop (none expected)
    assert red_crossings == []
    assert world.ego.s - start_s > 100.0
    progress = world.route_progress()
    assert 0.0 < progress.fraction < 1.0 and abs(progress.lateral_offset) < 0.5


def test_closed_loop_with_external_pose():
    world = World(2, WorldConfig(route_length=400.0))
    path = world.ego.path.poly
    s = world.ego.s
    tokens_before = {a.track_token: (a.x, a.y) for a in world.agents()}
    t0 = world.time_s
    for _ in range(10):
        s += 4.0
        x, y, yaw = path.pose_at(s)
        world.step_with_ego(x + 0.3 * -math.sin(yaw), y + 0.3 * math.cos(yaw), yaw, 8.0, dt=0.5)
        state = world.ego_state()
        assert (state.x, state.y) == pytest.approx((x - 0.3 * math.sin(yaw), y + 0.3 * math.cos(yaw)))
        assert state.yaw == pytest.approx(yaw) and state.speed == 8.0
    assert world.time_s == pytest.approx(t0 + 5.0)
    assert world.route_progress().s == pytest.approx(s, abs=1.0)
    assert world.route_progress().lateral_offset == pytest.approx(0.3, abs=0.05)
    moved = [tok for tok, xy in tokens_before.items()
             if any(a.track_token == tok and math.hypot(a.x - xy[0], a.y - xy[1]) > 1.0 for a in world.agents())]
    assert moved  # the rest of the world kept moving
    # the autopilot can take over again
    world.release_ego()
    s_before = world.ego.s
    world.step(1.0)
    assert world.ego.s > s_before
    with pytest.raises(ValueError, match="x"):
        world.set_ego_pose(float("nan"), 0.0, 0.0, 1.0)


def test_collision_when_ego_is_put_on_an_agent():
    world = World(3)
    vehicle = next(a for a in world.agents() if a.name == "vehicle")
    # rear axle placed so that the ego's box centre coincides with the vehicle's
    x = vehicle.x - EGO_REAR_AXLE_TO_CENTER * math.cos(vehicle.yaw)
    y = vehicle.y - EGO_REAR_AXLE_TO_CENTER * math.sin(vehicle.yaw)
    world.set_ego_pose(x, y, vehicle.yaw, 0.0)
    assert vehicle.track_token in world.collisions()


def test_map_queries_and_json_round_trip():
    world = World(6)
    road_map = world.map
    lane = road_map.lanes[road_map.route[0]]
    x, y = lane.points[5]
    heading = lane.polyline.headings[5]
    assert road_map.is_drivable(x, y)
    assert road_map.lane_heading(x, y) == pytest.approx(heading, abs=0.05)
    assert road_map.driving_direction_ok(x, y, heading)
    assert not road_map.driving_direction_ok(x, y, heading + math.pi)
    far = (x + 5000.0, y)
    assert not road_map.is_drivable(*far)
    assert world.route_command() in ("left", "straight", "right")
    copy = RoadMap.from_json(json.loads(json.dumps(road_map.to_json())))
    rng = np.random.default_rng(0)
    x0, y0, x1, y1 = road_map.bounds()
    pts = rng.uniform([x0, y0], [x1, y1], size=(300, 2))
    assert np.array_equal(copy.is_drivable(pts[:, 0], pts[:, 1]), road_map.is_drivable(pts[:, 0], pts[:, 1]))
    assert copy.route == road_map.route and len(copy.intersections) == len(road_map.intersections)
    for inter, other in zip(road_map.intersections, copy.intersections, strict=True):
        assert [inter.signal_state(a, 17.3) for a in (0, 1)] == [other.signal_state(a, 17.3) for a in (0, 1)]
    lights = world.traffic_lights()
    assert lights and {tl.state for tl in lights} <= {"green", "yellow", "red"}


def test_camera_projection_matches_opencv():
    cal = camera_calibration("CAM_L0", (640, 320))
    cam = PinholeCamera.from_calibration("CAM_L0", cal, (640, 320))
    pose = (12.0, -3.0, 0.7)
    r, t = cam.world_to_camera(pose)
    rng = np.random.default_rng(1)
    pts = rng.uniform(-30, 30, size=(50, 3))
    cam_pts = pts @ r.T + t
    front = cam_pts[:, 2] > 0.5
    ours = cam.project(cam_pts[front])
    rvec, _ = cv2.Rodrigues(r)
    theirs, _ = cv2.projectPoints(pts[front], rvec, t, cal["cam_intrinsic"], cal["distortion"])
    assert np.allclose(ours, theirs.reshape(-1, 2), atol=1e-6)


def test_rendered_box_appears_where_the_calibration_projects_it():
    world = World(8, WorldConfig(vehicle_density=0.0, pedestrian_density=0.0, buildings=False))
    x, y, yaw = world.ego.path.poly.pose_at(world.ego.s)
    world.set_ego_pose(x, y, yaw, 0.0)
    size = (160, 80)
    cam = world.camera("CAM_F0", size)
    ahead = (x + 12.0 * math.cos(yaw), y + 12.0 * math.sin(yaw))
    box = RenderBox(ahead[0], ahead[1], 0.0, yaw, 1.0, 1.0, 3.0, ((250, 0, 0),) * 5)
    image = world.renderer.render(cam, (x, y, yaw), [box], {})
    r, t = cam.world_to_camera((x, y, yaw))
    u, v = cam.project(np.array([ahead[0], ahead[1], 1.5]) @ r.T + t)
    pixel = image[int(round(v)), int(round(u))].astype(int)
    assert pixel[0] > 150 and pixel[1] < 60 and pixel[2] < 60  # the red box
    empty = world.renderer.render(cam, (x, y, yaw), [], {})
    assert not np.array_equal(empty[int(round(v)), int(round(u))], image[int(round(v)), int(round(u))])
    # the ground just below the image centre, a few metres ahead, is asphalt grey
    grey = empty[int(size[1] * 0.9), size[0] // 2].astype(int)
    assert abs(grey[0] - grey[1]) < 15 and abs(grey[1] - grey[2]) < 15 and 50 < grey[0] < 130
