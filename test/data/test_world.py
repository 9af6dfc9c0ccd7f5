"""The synthetic world: autopilot behaviour, closed-loop stepping, map queries, camera geometry."""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest

from wamdiff2_ros.data.world import (
    EGO_REAR_AXLE_TO_CENTER,
    PinholeCamera,
    RenderBox,
    RoadMap,
    World,
    WorldConfig,
    camera_calibration,
    scripted_road_map,
)


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


# ---------------------------------------------------------------------- scenario hooks (closed-loop routes)


def _scripted_world(pieces, **config):
    road_map = scripted_road_map(np.random.default_rng(5), pieces, buildings=False)
    cfg = WorldConfig(ego_speed=(10.0, 10.0), ego_start_s=10.0, ego_initial_speed=8.0, ego_lane_traffic=False,
                      vehicle_density=0.0, pedestrian_density=0.0, buildings=False, **config)  # fmt: skip
    return World(11, cfg, road_map=road_map)


def test_scripted_map_follows_its_pieces_and_refuses_bad_ones():
    rng = np.random.default_rng(0)
    road_map = scripted_road_map(rng, [("straight", 60.0), ("intersection", "left"), ("arc", 80.0, -0.4),
                                       ("intersection", "right"), ("straight", 50.0)], heading=0.3)  # fmt: skip
    assert [i.turn for i in road_map.intersections] == ["left", "right"]
    turns = [road_map.lanes[i].turn for i in road_map.route_connectors()]
    assert turns == ["left", "right"]
    start = road_map.lanes[road_map.route[0]].polyline.headings[0]
    end = road_map.lanes[road_map.route[-1]].polyline.headings[-1]
    assert float(np.angle(np.exp(1j * (end - start)))) == pytest.approx(-0.4, abs=0.02)  # left, arc, right
    for bad in ([("intersection", "left"), ("straight", 50.0)], [("straight", 50.0), ("intersection", "uturn"),
                                                                   ("straight", 50.0)], [("hill", 3.0)]):
        with pytest.raises(ValueError):
            scripted_road_map(rng, bad)


def test_ego_start_and_lane_traffic_knobs():
    world = _scripted_world([("straight", 200.0)])
    assert world.ego.s == 10.0 and world.ego.speed == 8.0 and world.ego.desired_speed == 10.0
    assert world.agents() == []
    with pytest.raises(ValueError, match="ego_start_s"):
        World(1, WorldConfig(ego_start_s=1e6))


def test_braking_lead_stops_holds_and_drives_on_and_the_autopilot_keeps_clear():
    world = _scripted_world([("straight", 260.0)])
    token = world.add_vehicle(35.0, 8.0, 10.0)
    world.schedule_brake(token, after_s=2.0, decel=5.0, hold_s=2.0, trigger_gap=40.0)
    states, speeds = [], []
    for _ in range(150):
        world.step(0.1)
        assert world.collisions() == []
        states.append(world.brake_events()[token])
        speeds.append(next(a.speed for a in world.agents() if a.track_token == token))
    assert states[0] == "pending" and {"braking", "holding", "done"} <= set(states)
    first_brake = states.index("braking")
    assert speeds[first_brake + 3] < speeds[first_brake] - 1.0  # about 5 m/s^2
    assert min(speeds) == 0.0 and speeds[-1] > 2.0  # stood, then drove on
    with pytest.raises(ValueError, match="no vehicle"):
        world.schedule_brake("nobody", 1.0)
    with pytest.raises(ValueError, match="not on"):
        world.add_vehicle(1e4, 5.0, 5.0)


def test_crossing_pedestrian_waits_for_the_ego_crosses_and_is_yielded_to():
    world = _scripted_world([("straight", 200.0)])
    token = world.add_crossing_pedestrian(70.0, side=-1.0, speed=1.4, trigger_distance=30.0)
    start = next(a for a in world.agents() if a.track_token == token)
    assert start.speed == 0.0
    ego_speed_min, started_at = 99.0, None
    for _ in range(250):
        world.step(0.1)
        ped = next(a for a in world.agents() if a.track_token == token)
        if started_at is None and ped.speed > 0:
            started_at = world.ego.s
        ego_speed_min = min(ego_speed_min, world.ego.speed)
        assert world.collisions() == []
    assert started_at is not None and started_at > 30.0  # waited at the curb until the ego came close
    assert math.hypot(ped.x - start.x, ped.y - start.y) == pytest.approx(2 * (3.5 + 1.25), abs=0.1)  # crossed
    assert ped.speed == 0.0 and ego_speed_min < 3.0  # stands on the far side; the ego slowed down for it
    assert world.ego.s > 100.0


def test_fork_is_independent_and_reproduces_the_future():
    world = World(4, WorldConfig(route_length=400.0))
    world.step(2.0)
    fork = world.fork()
    assert fork.map is world.map and fork.ego.path is world.ego.path
    before = [(a.track_token, a.x, a.y) for a in world.agents()]
    fork.step(3.0)
    assert [(a.track_token, a.x, a.y) for a in world.agents()] == before  # the original did not move
    world.step(3.0)
    assert [(a.track_token, a.x, a.y) for a in world.agents()] == [(a.track_token, a.x, a.y) for a in fork.agents()]
    assert (world.ego.x, world.ego.y) == (fork.ego.x, fork.ego.y)


def test_traffic_respawns_per_simulated_time_not_per_call():
    calls = {}
    for dt in (0.1, 0.5):
        world = World(9, WorldConfig(route_length=400.0))
        count = [0]
        original = world._respawn

        def counting(original=original, count=count):
            count[0] += 1
            original()

        world._respawn = counting
        for _ in range(int(round(10.0 / dt))):
            world.step(dt)
        calls[dt] = count[0]
    assert calls[0.1] == calls[0.5] == 20


def test_vectorised_lane_heading_matches_the_scalar_query():
    world = World(6)
    road_map = world.map
    rng = np.random.default_rng(2)
    lane = road_map.lanes[road_map.route[0]].points
    pts = np.vstack([lane[::4] + rng.normal(0, 1.5, size=lane[::4].shape),
                     rng.uniform(*np.array(road_map.bounds()).reshape(2, 2), size=(100, 2))])  # fmt: skip
    vec = road_map.lane_heading(pts[:, 0], pts[:, 1])
    scalar = [road_map.lane_heading(float(x), float(y)) for x, y in pts]
    assert np.array_equal(np.isnan(vec), np.array([h is None for h in scalar]))
    assert np.allclose(vec[~np.isnan(vec)], [h for h in scalar if h is not None])
    assert np.isfinite(vec).sum() > 10


def _commands_and_turns(horizons: tuple[float, ...]) -> list[tuple[dict[float, str], float]]:
    """A free world whose route turns left (seed 1007) driven by the autopilot: per 0.5 s frame, the command
    under each rule and how far (m, left positive) the ego is off its current heading line 4 s later."""
    world = World(1007, WorldConfig(route_length=450.0))
    frames = []
    for i in range(60):
        if i:
            world.step(0.5)
        e = world.ego_state()
        frames.append((e.x, e.y, e.yaw, {h: world.route_command(horizon_s=h) for h in horizons}))
    out = []
    for (x, y, yaw, commands), (fx, fy, _, _) in zip(frames, frames[8:], strict=False):
        out.append((commands, -math.sin(yaw) * (fx - x) + math.cos(yaw) * (fy - y)))
    return out


def test_route_command_horizon_announces_every_turn_the_plan_makes():
    frames = _commands_and_turns((0.0, 4.0))
    turning = [c for c, lateral in frames if lateral > 3.0]
    assert len(turning) >= 4, "the route must turn left within the frames looked at"
    # the plan's 4 s reach the turn: the horizon rule says left every time ...
    assert all(c[4.0] == "left" for c in turning)
    # ... where the 20 m rule (every split before 2026-12-05) still says straight on some of them
    assert any(c[0.0] == "straight" for c in turning)
    # and it still says straight where the route is straight well beyond the plan's reach
    assert sum(c[4.0] == "straight" for c, lateral in frames if abs(lateral) < 0.5) >= 5


def test_route_command_default_is_the_config_rule_and_bad_horizons_fail():
    world = World(6, WorldConfig(command_horizon_s=4.0))
    assert world.route_command() == world.route_command(horizon_s=4.0)
    assert World(6).config.command_horizon_s == 0.0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="command horizon"):
            world.route_command(horizon_s=bad)


def test_the_lamp_visor_hides_a_cross_street_lamp_and_keeps_the_ego_s_own():
    """Stopped at a red light (the start-on-red route of seed 1, 20 s in, the ego's light green): at 60 degrees
    the cross street's near head shows its red lamp at the image's right edge; at 35 it is dark. The ego's own
    far head shows green either way."""
    from wamdiff2_ros.evaluation.closed_loop.routes import build_route, route_set

    spec = next(s for s in route_set(20, seed=1) if s.name.endswith("start_on_red"))

    def frame(visor):
        world = build_route(spec, rules={"lamp_visor_deg": visor}).world
        for _ in range(40):
            e = world.ego_state()
            world.step_with_ego(e.x, e.y, e.yaw, 0.0, 0.5)
        return world.render(("CAM_F0",), (256, 128))["CAM_F0"].astype(int)

    def lit(img, color):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        return (r > 180) & (g < 90) & (b < 90) if color == "red" else (g > 150) & (r < 100) & (b < 140)

    wide, narrow = frame(60.0), frame(35.0)
    edge = np.s_[:, 240:]
    assert lit(wide[edge], "red").sum() >= 2 and lit(narrow[edge], "red").sum() == 0
    assert lit(wide, "green").sum() >= 1 and lit(narrow, "green").sum() == lit(wide, "green").sum()
    with pytest.raises(ValueError, match="lamp_visor_deg"):
        World(1, WorldConfig(lamp_visor_deg=120.0))
