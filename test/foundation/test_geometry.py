"""The shared geometry ground floor: angle wrapping, yaw <-> quaternion, box corners and overlap, footprints."""

from __future__ import annotations

import math
import subprocess
import sys
import types

import numpy as np
import pytest

from wamdiff2_ros.geometry import (
    PACIFICA,
    WRAP_METHODS,
    box_corners,
    convex_overlap,
    ego_centers,
    ego_corners,
    footprint_corners,
    quaternion_from_yaw,
    wrap_angle,
    yaw_from_quaternion,
)
from wamdiff2_ros.ros.waypoint_follower_node import yaw_from_quaternion as yaw_from_ros_quaternion

PI = math.pi

# --------------------------------------------------------------------------- angles


@pytest.mark.parametrize(("method", "at_pi", "at_minus_pi"), [
    ("remainder", PI, -PI),
    ("atan2", PI, -PI),
    ("math", PI, -PI),
    ("modulo", -PI, -PI),  # half-open [-pi, pi)
])
def test_wrap_angle_at_plus_minus_pi(method, at_pi, at_minus_pi):
    assert float(wrap_angle(PI, method=method)) == at_pi
    assert float(wrap_angle(-PI, method=method)) == at_minus_pi


@pytest.mark.parametrize("method", WRAP_METHODS)
def test_wrap_angle_multiples_and_offsets(method):
    for k in range(-6, 7):
        assert float(wrap_angle(2 * PI * k, method=method)) == pytest.approx(0.0, abs=1e-12)
        assert float(wrap_angle(0.3 + 2 * PI * k, method=method)) == pytest.approx(0.3, abs=1e-12)
        assert float(wrap_angle(-2.9 + 2 * PI * k, method=method)) == pytest.approx(-2.9, abs=1e-12)
    for k in (-5, -3, 3, 5):  # odd multiples of pi land on the boundary
        assert abs(float(wrap_angle(PI * k, method=method))) == pytest.approx(PI, abs=1e-12)


@pytest.mark.parametrize("method", WRAP_METHODS)
def test_wrap_angle_vectorised_range(method):
    angles = np.random.default_rng(3).uniform(-50.0, 50.0, (40, 5))
    wrapped = wrap_angle(angles, method=method)
    assert wrapped.shape == angles.shape
    assert np.all(wrapped >= -PI) and np.all(wrapped <= PI)
    if method == "modulo":
        assert np.all(wrapped < PI)
    assert np.allclose(np.cos(wrapped), np.cos(angles)) and np.allclose(np.sin(wrapped), np.sin(angles))


def test_wrap_angle_remainder_is_exact_like_math_remainder():
    values = [0.215, -0.215, 1e-300, 0.001, 3.0, 7.5, -12.25, 1e6 + 0.1, 3 * PI, -3 * PI, 5 * PI, -5 * PI, 7 * PI]
    for v in values:
        got = wrap_angle(v)
        assert isinstance(got, float)
        want = math.remainder(v, 2 * PI)
        assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), v
    assert float(wrap_angle(0.215)) == 0.215  # in range: untouched, so 2-decimal text cannot flip
    np.testing.assert_array_equal(wrap_angle(np.array(values)), [math.remainder(v, 2 * PI) for v in values])


def test_wrap_angle_math_is_libm_atan2_bit_for_bit():
    values = np.random.default_rng(5).uniform(-20.0, 20.0, 2000)
    want = [math.atan2(math.sin(v), math.cos(v)) for v in values.tolist()]
    np.testing.assert_array_equal(wrap_angle(values, method="math"), want)
    assert all(float(wrap_angle(v, method="math")) == w for v, w in zip(values.tolist()[:50], want, strict=False))


def test_wrap_angle_refuses_infinity_and_unknown_methods():
    with pytest.raises(ValueError):
        wrap_angle(math.inf)
    with pytest.raises(ValueError):
        wrap_angle(np.array([0.0, -math.inf]))
    with pytest.raises(ValueError, match="unknown wrap method"):
        wrap_angle(0.0, method="degrees")
    assert math.isnan(wrap_angle(math.nan))


# --------------------------------------------------------------------------- quaternions


def test_yaw_quaternion_round_trip():
    for yaw in np.linspace(-PI + 1e-9, PI, 73):
        q = quaternion_from_yaw(float(yaw))
        assert q.shape == (4,) and np.linalg.norm(q) == pytest.approx(1.0)
        assert yaw_from_quaternion(q) == pytest.approx(yaw, abs=1e-12)
    q = quaternion_from_yaw(PI / 2)  # (w, x, y, z)
    np.testing.assert_allclose(q, [math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)])
    assert yaw_from_quaternion([0.0, 0.0, 0.0, 1.0]) == pytest.approx(PI)
    assert yaw_from_quaternion(quaternion_from_yaw(2 * PI + 0.4)) == pytest.approx(0.4)


def test_yaw_ignores_roll():
    yaw, roll = 1.1, 0.35  # q = q_z(yaw) * q_x(roll)
    cy, sy, cr, sr = math.cos(yaw / 2), math.sin(yaw / 2), math.cos(roll / 2), math.sin(roll / 2)
    assert yaw_from_quaternion((cy * cr, cy * sr, sy * sr, sy * cr)) == pytest.approx(yaw)


def test_ros_adapter_reads_geometry_msgs_fields():
    w, x, y, z = quaternion_from_yaw(-2.5)
    msg = types.SimpleNamespace(x=float(x), y=float(y), z=float(z), w=float(w))
    assert yaw_from_ros_quaternion(msg) == yaw_from_quaternion((w, x, y, z)) == pytest.approx(-2.5)


# --------------------------------------------------------------------------- oriented boxes


def _box(x, y, length, width, yaw=0.0):
    return box_corners(x, y, length, width, yaw)


def test_box_corners_order_and_values():
    corners = box_corners(1.0, 2.0, 4.0, 2.0, PI / 2)  # facing +y: front-left is at -x
    np.testing.assert_allclose(corners, [[0.0, 4.0], [0.0, 0.0], [2.0, 0.0], [2.0, 4.0]], atol=1e-12)
    batch = box_corners(np.zeros(3), np.zeros(3), 2.0, 1.0, np.array([0.0, 0.1, 0.2]))
    assert batch.shape == (3, 4, 2)


def test_overlap_true_false_and_touching():
    a = _box(0.0, 0.0, 4.0, 2.0)
    assert convex_overlap(a, _box(1.0, 0.5, 4.0, 2.0))
    assert not convex_overlap(a, _box(5.0, 0.0, 4.0, 2.0))
    assert not convex_overlap(a, _box(0.0, 2.5, 4.0, 2.0))
    assert convex_overlap(a, _box(4.0, 0.0, 4.0, 2.0))  # shared edge
    assert convex_overlap(a, _box(4.0, 2.0, 4.0, 2.0))  # shared corner only
    assert convex_overlap(a, _box(0.0, 0.0, 1.0, 0.5))  # one inside the other


def test_overlap_tolerance():
    a = _box(0.0, 0.0, 4.0, 2.0)
    near = _box(4.0 + 1e-12, 0.0, 4.0, 2.0)
    assert convex_overlap(a, near)  # within the default eps
    assert not convex_overlap(a, near, eps=0.0)
    assert not convex_overlap(a, _box(4.0 + 1e-6, 0.0, 4.0, 2.0))


def test_overlap_of_rotated_boxes():
    square = _box(0.0, 0.0, 2.0, 2.0)
    # a diamond whose bounding box overlaps the square but whose sides do not: only its own axes separate them
    diamond = _box(2.3, 2.3, 2.0, 2.0, PI / 4)
    assert not convex_overlap(square, diamond)
    assert convex_overlap(square, _box(1.6, 1.6, 2.0, 2.0, PI / 4))  # corner pokes in
    # a long thin bar at 30 deg crossing the square's corner region
    assert convex_overlap(square, _box(2.5, 1.2, 6.0, 0.2, PI / 6))
    assert not convex_overlap(square, _box(3.5, -1.5, 6.0, 0.2, PI / 2 + 0.01))


def test_overlap_broadcasts_and_takes_segments():
    ego = _box(0.0, 0.0, 4.0, 2.0)
    others = np.stack([_box(1.0, 0.0, 2.0, 2.0), _box(10.0, 0.0, 2.0, 2.0), _box(2.5, 0.0, 1.0, 1.0)])
    np.testing.assert_array_equal(convex_overlap(ego[None], others), [True, False, True])
    bumper = ego[[0, 3]]  # front-left, front-right
    assert convex_overlap(bumper, _box(2.5, 0.0, 1.0, 1.0))
    assert not convex_overlap(bumper, _box(-1.0, 0.0, 1.0, 1.0))


# --------------------------------------------------------------------------- vehicle footprints


def test_footprint_corners_of_known_poses():
    half_w = PACIFICA.width / 2
    corners = ego_corners(np.array([10.0, -5.0, 0.0]))
    want = [[10.0 + 4.049, -5.0 + half_w], [10.0 - 1.127, -5.0 + half_w],
            [10.0 - 1.127, -5.0 - half_w], [10.0 + 4.049, -5.0 - half_w]]
    np.testing.assert_allclose(corners, want, atol=1e-12)
    corners = ego_corners(np.array([0.0, 0.0, PI / 2]))  # facing +y
    np.testing.assert_allclose(corners, [[-half_w, 4.049], [-half_w, -1.127], [half_w, -1.127], [half_w, 4.049]],
                               atol=1e-12)
    np.testing.assert_allclose(ego_centers(np.array([0.0, 0.0, PI / 2])), [0.0, PACIFICA.rear_axle_to_center],
                               atol=1e-12)


def test_footprint_corners_match_ego_corners_and_vectorise():
    poses = np.random.default_rng(5).uniform(-20.0, 20.0, (6, 3))
    got = footprint_corners(poses[:, 0], poses[:, 1], poses[:, 2], PACIFICA.length, PACIFICA.width,
                            PACIFICA.rear_axle_to_center)
    assert got.shape == (6, 4, 2)
    np.testing.assert_array_equal(got, ego_corners(poses))
    np.testing.assert_allclose(got.mean(axis=1), ego_centers(poses), atol=1e-12)
    centred = footprint_corners(1.0, 2.0, 0.3, 4.0, 2.0, 0.0)
    np.testing.assert_array_equal(centred, box_corners(1.0, 2.0, 4.0, 2.0, 0.3))


# --------------------------------------------------------------------------- ground floor stays light


def test_geometry_imports_numpy_only_and_no_project_module():
    probe = (
        "import sys, wamdiff2_ros; before = set(sys.modules); import wamdiff2_ros.geometry; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'numpy'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['wamdiff2_ros.geometry']"
