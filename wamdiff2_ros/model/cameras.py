"""NAVSIM camera selection for multi-camera prompts: which cameras, in which order, at what pixel budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

NAVSIM_CAMERAS: tuple[str, ...] = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")
DEFAULT_CAMERAS: tuple[str, ...] = ("CAM_F0",)


def validate_cameras(cameras: Sequence[str] | str | None) -> tuple[str, ...]:
    """A checked, duplicate-free tuple of NAVSIM camera names (None -> front camera only).

    A comma-separated string is accepted (``"CAM_F0,CAM_L0"``); ``"all"`` means all eight.
    """
    if cameras is None:
        return DEFAULT_CAMERAS
    if isinstance(cameras, str):
        if cameras.strip().lower() == "all":
            return NAVSIM_CAMERAS
        cameras = [c.strip() for c in cameras.split(",") if c.strip()]
    names = tuple(cameras)
    if not names:
        raise ValueError("at least one camera must be selected")
    unknown = [c for c in names if c not in NAVSIM_CAMERAS]
    if unknown:
        raise ValueError(f"unknown camera(s) {', '.join(map(repr, unknown))}; NAVSIM cameras are {', '.join(NAVSIM_CAMERAS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"camera list has duplicates: {', '.join(names)}")
    return names


def select_camera_images(images: Mapping[str, np.ndarray], cameras: Sequence[str] | str | None = None) -> list[np.ndarray]:
    """The images of ``cameras`` (default front only), in that order; a missing camera is an error."""
    names = validate_cameras(cameras)
    missing = [c for c in names if c not in images]
    if missing:
        raise ValueError(f"no image for camera(s) {', '.join(missing)} (have {', '.join(sorted(images)) or 'none'})")
    return [images[c] for c in names]


def per_camera_pixels(total_pixels: int, num_cameras: int) -> int:
    """Split a total resolution budget evenly over the cameras (pixels per image)."""
    if num_cameras < 1:
        raise ValueError("num_cameras must be >= 1")
    if total_pixels < num_cameras:
        raise ValueError(f"total pixel budget {total_pixels} is too small for {num_cameras} cameras")
    return total_pixels // num_cameras
