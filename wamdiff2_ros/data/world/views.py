"""What the synthetic world's cameras see: its map's renderer, fed the agents' boxes and the signal lamps.

The OpenCV renderer (:mod:`~wamdiff2_ros.data.world.render`) is imported and built on
first use, so simulating a world never needs cv2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from wamdiff2_ros.data.world.cameras import CAMERA_MOUNTS, PinholeCamera, camera_calibration
from wamdiff2_ros.data.world.looks import RenderBox
from wamdiff2_ros.data.world.map import RoadMap

if TYPE_CHECKING:
    from wamdiff2_ros.data.world.render import Renderer

__all__ = ["CameraViews"]


class CameraViews:
    """The camera images of one world: its map's renderer (built on first use) seen from the ego."""

    def __init__(self, road_map: RoadMap, ground_color_index: int, lamp_visor_deg: float = 60.0) -> None:
        self.map = road_map
        self.ground_color_index = ground_color_index
        self.lamp_visor_deg = lamp_visor_deg
        self._renderer: Renderer | None = None

    @property
    def renderer(self) -> Renderer:
        if self._renderer is None:
            # imported here: the renderer needs cv2, which simulating a world does not
            from wamdiff2_ros.data.world.render import GROUNDS, Renderer

            self._renderer = Renderer(self.map, GROUNDS[self.ground_color_index], self.lamp_visor_deg)
        return self._renderer

    def signal_states(self, time_s: float) -> dict[tuple[int, int], str]:
        """Lamp state of each signal head by (intersection, approach arm) at ``time_s``."""
        return {(inter.id, arm): inter.signal_state(arm % 2, time_s)
                for inter in self.map.intersections for arm in range(4)}

    def render(self, pose: tuple[float, float, float], boxes: list[RenderBox], time_s: float,
               cameras: Sequence[str], size: tuple[int, int],
               calibrations: dict[str, dict] | None = None) -> dict[str, np.ndarray]:
        """RGB images (H, W, 3) uint8 by camera name from the ego ``pose`` (rear axle x, y, yaw)."""
        states = self.signal_states(time_s)
        out = {}
        for name in cameras:
            if name not in CAMERA_MOUNTS:
                raise ValueError(f"unknown camera {name!r}; expected some of {', '.join(CAMERA_MOUNTS)}")
            cal = (calibrations or {}).get(name) or camera_calibration(name, size)
            cam = PinholeCamera.from_calibration(name, cal, size)
            out[name] = self.renderer.render(cam, pose, boxes, states)
        return out
