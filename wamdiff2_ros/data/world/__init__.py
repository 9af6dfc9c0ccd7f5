"""Synthetic driving world: road map, traffic simulation, how agents look, cameras and renderer.

Modules, by job:

    map          RoadMap: roads, lanes, intersections with signals, drivable area, JSON
    map_builder  random and scripted road maps
    lanes        LanePath: a lane sequence as one path (stop lines, connectors, curves)
    agents       ego size, agent records (AgentBox, EgoState, ...), the simulated movers
    config       WorldConfig
    driver       driver model: IDM, stop lines, right of way, corridor look-ahead
    population   traffic and pedestrians at the start, respawns, scripted actors
    traffic      World: the simulation (stepping, closed loop, queries)
    looks        vehicle sizes and colours, the boxes that draw agents
    views        camera images of a world (the renderer, built on first use)
    cameras      the car's NAVSIM camera rig (pinhole models, calibration)
    render       OpenCV rasteriser (the only module that needs cv2)

Names below load their module on first use, so importing the package stays light.
"""

from __future__ import annotations

from wamdiff2_ros._lazy import lazy_exports

_EXPORTS = {
    # map
    "LANE_WIDTH": "map",
    "SIDEWALK_WIDTH": "map",
    "STOP_LINE_SETBACK": "map",
    "MAP_FORMAT": "map",
    "RoadMap": "map",
    "generate_road_map": "map_builder",
    "scripted_road_map": "map_builder",
    # traffic
    "EGO_LENGTH": "agents",
    "EGO_WIDTH": "agents",
    "EGO_HEIGHT": "agents",
    "EGO_REAR_AXLE_TO_CENTER": "agents",
    "AgentBox": "agents",
    "EgoState": "agents",
    "TrafficLight": "agents",
    "RouteProgress": "agents",
    "LanePath": "lanes",
    "WorldConfig": "config",
    "World": "traffic",
    # looks, cameras, render
    "RenderBox": "looks",
    "CAMERA_MOUNTS": "cameras",
    "LIDAR2EGO_ROTATION": "cameras",
    "LIDAR2EGO_TRANSLATION": "cameras",
    "PinholeCamera": "cameras",
    "camera_calibration": "cameras",
    "parse_size": "cameras",
    "Renderer": "render",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
