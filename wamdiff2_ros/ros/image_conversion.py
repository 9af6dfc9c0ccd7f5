"""sensor_msgs/Image and CompressedImage <-> numpy RGB, validated; cv_bridge optional.

cv_bridge exists only inside a ROS 2 distribution. The conversions here are plain
numpy (OpenCV for compressed images) so the node runs without it, and every failure
is an :class:`ImageError` with a reason instead of an exception from deep inside.
Where cv_bridge imports, it is used for encodings this module does not know.
"""

from __future__ import annotations

import numpy as np

try:  # pragma: no cover - only inside a ROS 2 distribution
    from cv_bridge import CvBridge  # type: ignore[import-not-found]
except Exception:  # any failure means "not available"
    CvBridge = None

# encoding -> (channels, channel order to reach RGB)
ENCODINGS: dict[str, tuple[int, tuple[int, ...] | None]] = {
    "rgb8": (3, None),
    "bgr8": (3, (2, 1, 0)),
    "rgba8": (4, (0, 1, 2)),
    "bgra8": (4, (2, 1, 0)),
    "mono8": (1, None),
}
MAX_SIDE = 8192


class ImageError(ValueError):
    """An image message that cannot be turned into an RGB array; str() is the reason."""


def image_to_rgb(msg) -> np.ndarray:
    """Decode a sensor_msgs/Image into an (H, W, 3) uint8 RGB array or raise ImageError."""
    encoding = str(msg.encoding).lower()
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    if height == 0 or width == 0:
        raise ImageError(f"empty image ({width}x{height})")
    if height > MAX_SIDE or width > MAX_SIDE:
        raise ImageError(f"image too large ({width}x{height}, limit {MAX_SIDE})")
    if encoding not in ENCODINGS:
        if CvBridge is not None:
            try:
                return CvBridge().imgmsg_to_cv2(msg, desired_encoding="rgb8")
            except Exception as exc:
                raise ImageError(f"cv_bridge could not convert encoding {msg.encoding!r}: {exc}") from None
        raise ImageError(f"unsupported encoding {msg.encoding!r} (supported: {', '.join(ENCODINGS)})")
    channels, order = ENCODINGS[encoding]
    if step < width * channels:
        raise ImageError(f"step {step} is smaller than width*channels = {width * channels} for {encoding}")
    data = bytes(msg.data) if not isinstance(msg.data, (bytes, bytearray)) else msg.data
    if len(data) < step * height:
        raise ImageError(f"truncated data: {len(data)} bytes, expected step*height = {step * height}")
    rows = np.frombuffer(data, dtype=np.uint8, count=step * height).reshape(height, step)
    pixels = rows[:, : width * channels].reshape(height, width, channels)
    if channels == 1:
        return np.repeat(pixels, 3, axis=2)
    if order is None:
        return np.ascontiguousarray(pixels)
    return np.ascontiguousarray(pixels[:, :, list(order)])


def compressed_to_rgb(msg) -> np.ndarray:
    """Decode a sensor_msgs/CompressedImage (jpeg/png) into RGB or raise ImageError."""
    import cv2

    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    if data.size == 0:
        raise ImageError("empty compressed image")
    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ImageError(f"could not decode compressed image (format {msg.format!r}, {data.size} bytes)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def rgb_to_image(msg_type, rgb: np.ndarray, encoding: str = "rgb8"):
    """Build a sensor_msgs/Image of ``msg_type`` from an (H, W, 3) RGB array."""
    rgb = np.asarray(rgb, dtype=np.uint8)
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[:, :, ::-1]
    elif encoding == "bgra8":
        pixels = np.concatenate([rgb[:, :, ::-1], np.full(rgb.shape[:2] + (1,), 255, np.uint8)], axis=2)
    elif encoding == "mono8":
        pixels = rgb.mean(axis=2, keepdims=True).astype(np.uint8)
    else:
        raise ValueError(f"cannot encode {encoding!r}")
    pixels = np.ascontiguousarray(pixels)
    msg = msg_type()
    msg.height, msg.width = int(pixels.shape[0]), int(pixels.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = int(pixels.shape[1] * pixels.shape[2])
    msg.data = pixels.tobytes()
    return msg


def rgb_to_compressed(msg_type, rgb: np.ndarray, quality: int = 90):
    """Build a sensor_msgs/CompressedImage (jpeg) of ``msg_type`` from RGB."""
    import cv2

    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(rgb[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("jpeg encoding failed")
    msg = msg_type()
    msg.format = "rgb8; jpeg compressed bgr8"
    msg.data = buf.tobytes()
    return msg
