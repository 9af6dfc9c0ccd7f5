"""Road users of the synthetic world: the ego's size, what callers read about agents, the simulated movers.

The public records (:class:`AgentBox`, :class:`EgoState`, :class:`TrafficLight`,
:class:`RouteProgress`) are what :class:`~wamdiff2_ros.data.world.World` answers; the
movers (:class:`Vehicle`, :class:`Pedestrian`, :class:`Ego`) are its state. Agent
positions are box centres, the ego pose is its rear axle (as in NAVSIM).
"""

from __future__ import annotations

from dataclasses import dataclass

from wamdiff2_ros.data.polyline import Polyline
from wamdiff2_ros.data.world.lanes import LanePath

__all__ = [
    "EGO_LENGTH",
    "EGO_WIDTH",
    "EGO_HEIGHT",
    "EGO_REAR_AXLE_TO_CENTER",
    "AgentBox",
    "EgoState",
    "TrafficLight",
    "RouteProgress",
    "BrakeEvent",
    "Vehicle",
    "Pedestrian",
    "Ego",
]

# nuPlan's ego (Chrysler Pacifica)
EGO_LENGTH = 5.176
EGO_WIDTH = 2.297
EGO_HEIGHT = 1.777
EGO_REAR_AXLE_TO_CENTER = 1.461


@dataclass
class AgentBox:
    """A box of another road user in the global frame (centre, size, yaw, velocity)."""

    track_token: str
    name: str  # NAVSIM class: "vehicle" or "pedestrian"
    x: float
    y: float
    z: float
    length: float
    width: float
    height: float
    yaw: float
    vx: float
    vy: float
    speed: float


@dataclass
class EgoState:
    """Ego rear-axle pose, velocity/acceleration in the ego frame, route progress and time."""

    x: float
    y: float
    yaw: float
    speed: float
    vx: float
    vy: float
    ax: float
    ay: float
    yaw_rate: float
    time_s: float
    route_s: float


@dataclass
class TrafficLight:
    """State of the signal controlling one lane connector."""

    lane_connector_id: int
    intersection: int
    approach_arm: int
    state: str  # green / yellow / red
    on_route: bool

    @property
    def is_red(self) -> bool:
        return self.state == "red"


@dataclass
class RouteProgress:
    s: float  # metres along the route lane from its start
    length: float
    fraction: float
    lateral_offset: float  # metres, left +
    heading_error: float  # radians


@dataclass
class BrakeEvent:
    """A scripted hard stop: once ``time >= after_s`` and the ego is within ``trigger_gap`` m,
    decelerate at ``decel`` to a standstill, hold ``hold_s`` seconds, then drive on."""

    after_s: float
    decel: float
    hold_s: float
    trigger_gap: float
    state: str = "pending"  # pending / braking / holding / done
    hold_until: float = 0.0
    started_at: float | None = None


@dataclass
class Vehicle:
    """A vehicle driving a lane sequence: arc length ``s`` of its box centre, speed, size and colour."""

    token: str
    path: LanePath
    s: float
    speed: float
    desired_speed: float
    length: float
    width: float
    height: float
    color: tuple[int, int, int]
    front_offset: float  # reference point -> front bumper along the path
    accel: float = 0.0
    done: bool = False
    brake: BrakeEvent | None = None

    @property
    def rear_offset(self) -> float:
        """Reference point -> rear bumper along the path."""
        return self.length / 2


@dataclass
class Pedestrian:
    """A pedestrian walking to and fro along a sidewalk (or once across the road)."""

    token: str
    path: Polyline
    s: float
    speed: float
    direction: float
    height: float
    color: tuple[int, int, int]
    pause: float = 0.0
    crossing: bool = False  # walks once across the road (path = curb to curb), then stays
    trigger: tuple[float, float, float] | None = None  # (x, y, distance): starts when the ego is this close


@dataclass
class Ego:
    """The ego: rear-axle arc length ``s`` on its route, pose, and whether a caller drives it (``external``)."""

    path: LanePath
    s: float
    speed: float
    desired_speed: float
    accel: float = 0.0
    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    ay: float = 0.0
    yaw_rate: float = 0.0
    external: bool = False
    wander_phase: float = 0.0
    wander_period: float = 10.0

    @property
    def length(self) -> float:
        return EGO_LENGTH

    @property
    def front_offset(self) -> float:
        """Rear axle -> front bumper along the path."""
        return EGO_REAR_AXLE_TO_CENTER + EGO_LENGTH / 2

    @property
    def rear_offset(self) -> float:
        """Rear axle -> rear bumper along the path."""
        return EGO_LENGTH / 2 - EGO_REAR_AXLE_TO_CENTER
