"""sensor_msgs image <-> numpy conversions: every supported encoding, and clear refusals."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers_ros import ros_available

from wamdiff2_ros.ros.image_conversion import (
    ImageError,
    compressed_to_rgb,
    image_to_rgb,
    rgb_to_compressed,
    rgb_to_image,
)

if os.environ.get("WAMDIFF2_REQUIRE_ROS") != "1" and not ros_available():
    pytest.skip("sensor_msgs is not importable (run through `make test`)", allow_module_level=True)

from sensor_msgs.msg import CompressedImage, Image

RGB = np.random.default_rng(0).integers(0, 255, (6, 10, 3), dtype=np.uint8)


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "bgra8"])
def test_colour_encodings_round_trip(encoding):
    assert np.array_equal(image_to_rgb(rgb_to_image(Image, RGB, encoding)), RGB)


def test_mono8_becomes_grey_rgb():
    out = image_to_rgb(rgb_to_image(Image, RGB, "mono8"))
    assert out.shape == RGB.shape and np.all(out[..., 0] == out[..., 1])


def test_row_padding_in_step_is_skipped():
    msg = rgb_to_image(Image, RGB, "rgb8")
    padded = np.zeros((6, 10 * 3 + 2), np.uint8)
    padded[:, :30] = RGB.reshape(6, 30)
    msg.step, msg.data = 32, padded.tobytes()
    assert np.array_equal(image_to_rgb(msg), RGB)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"encoding": "yuv422"}, "unsupported encoding"),
        ({"step": 5}, "step"),
        ({"height": 0, "width": 0}, "empty"),
        ({"width": 100000}, "too large"),
    ],
)
def test_malformed_images_are_refused_with_reason(change, reason):
    msg = rgb_to_image(Image, RGB, "rgb8")
    for key, value in change.items():
        setattr(msg, key, value)
    with pytest.raises(ImageError, match=reason):
        image_to_rgb(msg)


def test_truncated_data_is_refused():
    msg = rgb_to_image(Image, RGB, "rgb8")
    msg.data = msg.data[:-1]
    with pytest.raises(ImageError, match="truncated"):
        image_to_rgb(msg)


def test_compressed_round_trip_and_garbage():
    big = np.kron(RGB, np.ones((8, 8, 1), np.uint8))
    out = compressed_to_rgb(rgb_to_compressed(CompressedImage, big, quality=95))
    assert out.shape == big.shape and np.abs(out.astype(int) - big).mean() < 12
    with pytest.raises(ImageError, match="decode"):
        compressed_to_rgb(CompressedImage(data=b"not a jpeg", format="jpeg"))
    with pytest.raises(ImageError, match="empty"):
        compressed_to_rgb(CompressedImage(data=b"", format="jpeg"))
