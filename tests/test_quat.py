"""Quaternions against explicit rotation matrices, written out here independently of ``quat``."""

import itertools

import numpy as np
import pytest

from inference import quat
from rotations import angle_between, euler_matrix, random_quats, same_rotation

HALF_PI = np.pi / 2


@pytest.fixture
def rng():
    return np.random.default_rng(20240521)


def random_angles(rng, n):
    """Outer angles over the whole turn, the middle one within its principal range (-90°, 90°)."""
    a = rng.uniform(-np.pi, np.pi, n)
    b = rng.uniform(-HALF_PI, HALF_PI, n)
    c = rng.uniform(-np.pi, np.pi, n)
    return np.stack([a, b, c], axis=-1)


def test_there_are_six_orders():
    assert sorted(quat.ORDERS) == sorted("".join(p) for p in itertools.permutations("XYZ"))


@pytest.mark.parametrize("order", quat.ORDERS)
def test_from_euler_is_the_product_of_axis_rotations(rng, order):
    angles = rng.uniform(-2 * np.pi, 2 * np.pi, (5000, 3))
    q = quat.from_euler(angles, order)
    assert np.allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-14)
    assert np.abs(quat.to_matrix(q) - euler_matrix(angles, order)).max() < 1e-13


@pytest.mark.parametrize("order", quat.ORDERS)
def test_from_euler_single_axis_is_that_axis(order):
    """One non-zero channel rotates about the axis that channel names, whichever slot it is in."""
    for slot, axis in enumerate(order):
        angles = np.zeros(3)
        angles[slot] = 0.7
        expected = np.concatenate([[np.cos(0.35)], np.sin(0.35) * np.eye(3)["XYZ".index(axis)]])
        assert np.allclose(quat.from_euler(angles, order), expected, atol=1e-15)


@pytest.mark.parametrize("order", quat.ORDERS)
def test_to_euler_round_trip_recovers_angles(rng, order):
    angles = random_angles(rng, 20000)
    q = quat.from_euler(angles, order)
    back = quat.to_euler(q, order)
    assert np.abs(back - angles).max() < 1e-9
    assert same_rotation(quat.from_euler(back, order), q) < 1e-14


@pytest.mark.parametrize("order", quat.ORDERS)
def test_to_euler_of_any_rotation_rebuilds_it(rng, order):
    """Uniformly random rotations, some not unit length (``to_euler`` normalises first)."""
    q = random_quats(rng, 20000)
    scale = rng.uniform(0.5, 2.0, (20000, 1))
    angles = quat.to_euler(q * scale, order)
    assert np.all(np.abs(angles[:, [0, 2]]) <= np.pi + 1e-12)
    assert np.all(np.abs(angles[:, 1]) <= HALF_PI + 1e-12)
    assert same_rotation(quat.from_euler(angles, order), q) < 1e-14
    assert np.abs(euler_matrix(angles, order) - quat.to_matrix(q)).max() < 1e-14


@pytest.mark.parametrize("order", quat.ORDERS)
@pytest.mark.parametrize("middle", [HALF_PI, -HALF_PI])
def test_to_euler_near_gimbal_lock(rng, order, middle):
    """Middle angle within 1e-7 of ±90°, exactly ±90° included: the rotation must survive."""
    n = 20000
    delta = np.concatenate([[0.0, 1e-7, -1e-7, 1e-9, -1e-9, 1e-12, -1e-12, 1e-15],
                            rng.uniform(-1e-7, 1e-7, n - 8)])
    angles = random_angles(rng, n)
    angles[:, 1] = middle + delta
    q = quat.from_euler(angles, order)
    back = quat.to_euler(q, order)
    assert np.all(np.isfinite(back))
    assert same_rotation(quat.from_euler(back, order), q) < 1e-13
    assert np.abs(euler_matrix(back, order) - quat.to_matrix(q)).max() < 1e-13
    assert np.abs(back[:, 1] - middle).max() < 2e-7


@pytest.mark.parametrize("order", quat.ORDERS)
def test_to_euler_at_gimbal_lock_puts_the_turn_on_the_first_angle(rng, order):
    """Exactly ±90° in the middle (as a BVH file writes it): third angle 0, the first takes it all."""
    angles = random_angles(rng, 1000)
    angles[:, 1] = rng.choice([HALF_PI, -HALF_PI], 1000)
    q = quat.from_euler(angles, order)
    back = quat.to_euler(q, order)
    assert np.all(back[:, 2] == 0.0)
    assert np.abs(back[:, 1] - angles[:, 1]).max() < 1e-7
    assert same_rotation(quat.from_euler(back, order), q) < 1e-13


@pytest.mark.parametrize("order", quat.ORDERS)
def test_to_euler_on_special_angles(order):
    """Every combination of 0, ±45°, ±90°, ±135° and 180° on the three channels."""
    special = np.radians([0.0, 45.0, -45.0, 90.0, -90.0, 135.0, -135.0, 180.0])
    angles = np.array(list(itertools.product(special, repeat=3)))
    q = quat.from_euler(angles, order)
    back = quat.to_euler(q, order)
    assert same_rotation(quat.from_euler(back, order), q) < 1e-14


def test_to_matrix_is_a_rotation(rng):
    m = quat.to_matrix(random_quats(rng, 1000))
    assert np.abs(m @ np.swapaxes(m, -1, -2) - np.eye(3)).max() < 1e-14
    assert np.allclose(np.linalg.det(m), 1.0, atol=1e-14)


def test_mul_composes_like_matrices(rng):
    a, b = random_quats(rng, 1000), random_quats(rng, 1000)
    assert np.abs(quat.to_matrix(quat.mul(a, b)) - quat.to_matrix(a) @ quat.to_matrix(b)).max() < 1e-14
    c = random_quats(rng, 1000)
    assert np.abs(quat.mul(quat.mul(a, b), c) - quat.mul(a, quat.mul(b, c))).max() < 1e-14
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    assert np.array_equal(quat.mul(a, identity), a)
    assert np.array_equal(quat.mul(identity, a), a)


def test_rotate_is_the_matrix_times_the_vector(rng):
    q = random_quats(rng, 1000)
    v = rng.normal(size=(1000, 3)) * 50
    expected = np.einsum("nij,nj->ni", quat.to_matrix(q), v)
    assert np.abs(quat.rotate(q, v) - expected).max() < 1e-12
    assert np.allclose(np.linalg.norm(quat.rotate(q, v), axis=-1), np.linalg.norm(v, axis=-1), rtol=1e-14)
    # and q v q* written out as a quaternion product
    pure = np.concatenate([np.zeros((1000, 1)), v], axis=-1)
    sandwich = quat.mul(quat.mul(q, pure), quat.inv(q))
    assert np.abs(sandwich[:, 0]).max() < 1e-12
    assert np.abs(sandwich[:, 1:] - expected).max() < 1e-12


def test_inv_is_the_transpose(rng):
    q = random_quats(rng, 1000)
    assert np.abs(quat.to_matrix(quat.inv(q)) - np.swapaxes(quat.to_matrix(q), -1, -2)).max() < 1e-15
    assert np.abs(quat.mul(q, quat.inv(q)) - [1, 0, 0, 0]).max() < 1e-15
    assert np.abs(quat.mul(quat.inv(q), q) - [1, 0, 0, 0]).max() < 1e-15
    v = rng.normal(size=(1000, 3))
    assert np.abs(quat.rotate(quat.inv(q), quat.rotate(q, v)) - v).max() < 1e-14
    assert np.array_equal(quat.inv(quat.inv(q)), q)


def test_operations_broadcast_over_clips(rng):
    rot = random_quats(rng, 7, 5)
    one = random_quats(rng, 5)
    got = quat.mul(rot, one)
    assert got.shape == (7, 5, 4)
    assert np.allclose(got[3, 2], quat.mul(rot[3, 2], one[2]), atol=0)
    v = rng.normal(size=(5, 3))
    assert np.allclose(quat.rotate(rot, v)[6, 4], quat.rotate(rot[6, 4], v[4]), atol=0)
    assert quat.to_matrix(rot).shape == (7, 5, 3, 3)


def test_from_angle_axis_is_rodrigues(rng):
    axis = rng.normal(size=(500, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    angle = rng.uniform(-2 * np.pi, 2 * np.pi, 500)
    k = np.zeros((500, 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k -= np.swapaxes(k, -1, -2)
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    expected = np.eye(3) + s * k + (1 - c) * k @ k
    assert np.abs(quat.to_matrix(quat.from_angle_axis(angle, axis)) - expected).max() < 1e-14


def test_between_maps_one_direction_onto_the_other(rng):
    a = rng.normal(size=(1000, 3)) * rng.uniform(0.1, 10, (1000, 1))
    b = rng.normal(size=(1000, 3)) * rng.uniform(0.1, 10, (1000, 1))
    q = quat.normalize(quat.between(a, b))
    got = quat.rotate(q, a / np.linalg.norm(a, axis=-1, keepdims=True))
    assert np.abs(got - b / np.linalg.norm(b, axis=-1, keepdims=True)).max() < 1e-12
    # the shortest such rotation: its angle is the angle between the directions
    cos = np.sum(a * b, axis=-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert np.abs(angle_between(q, np.array([1.0, 0, 0, 0])) - np.arccos(np.clip(cos, -1, 1))).max() < 1e-7


def test_normalize(rng):
    q = rng.normal(size=(100, 4)) * rng.uniform(1e-3, 1e3, (100, 1))
    assert np.allclose(np.linalg.norm(quat.normalize(q), axis=-1), 1.0, atol=1e-15)
    assert np.all(np.isfinite(quat.normalize(np.zeros(4))))


def test_slerp_endpoints(rng):
    a, b = random_quats(rng, 1000), random_quats(rng, 1000)
    assert np.abs(quat.slerp(a, b, 0.0) - a).max() < 1e-14
    # at t = 1 it arrives at b's rotation, with the sign on a's side
    end = quat.slerp(a, b, 1.0)
    assert same_rotation(end, b) < 1e-14
    assert np.all(np.sum(end * a, axis=-1) >= 0)


def test_slerp_moves_at_constant_speed_along_the_shorter_arc(rng):
    a, b = random_quats(rng, 1000), random_quats(rng, 1000)
    total = angle_between(a, b)
    assert total.max() <= np.pi + 1e-12
    for t in (0.1, 0.25, 0.5, 0.9):
        mid = quat.slerp(a, b, t)
        assert np.allclose(np.linalg.norm(mid, axis=-1), 1.0, atol=1e-14)
        assert np.abs(angle_between(a, mid) - t * total).max() < 1e-7
        assert np.abs(angle_between(mid, b) - (1 - t) * total).max() < 1e-7
    # the midpoint is the half-angle rotation on the geodesic, whichever sign b was given
    assert np.abs(quat.slerp(a, b, 0.5) - quat.slerp(a, -b, 0.5)).max() < 1e-15


def test_slerp_matches_angle_axis_interpolation(rng):
    """From the identity, slerp to an angle-axis rotation is the same axis at a fraction of the angle."""
    axis = np.array([0.6, 0.0, 0.8])
    for angle in (0.3, 2.0, 3.1, 1e-8):
        end = quat.from_angle_axis(angle, axis)
        t = np.linspace(0, 1, 11)
        got = quat.slerp(np.array([1.0, 0, 0, 0]), end, t)
        assert np.abs(got - quat.from_angle_axis(t * angle, axis)).max() < 1e-12


def test_slerp_broadcasts_t(rng):
    a, b = random_quats(rng, 6, 5), random_quats(rng, 6, 5)
    t = rng.uniform(0, 1, (6, 1))
    got = quat.slerp(a, b, t)
    assert got.shape == (6, 5, 4)
    assert np.allclose(got[2, 3], quat.slerp(a[2, 3], b[2, 3], t[2, 0]), atol=1e-15)


def test_slerp_of_nearly_equal_rotations_is_finite(rng):
    a = random_quats(rng, 100)
    b = quat.normalize(a + 1e-9 * rng.normal(size=(100, 4)))
    got = quat.slerp(a, b, 0.5)
    assert np.all(np.isfinite(got))
    assert np.abs(got - a).max() < 1e-8
    assert np.abs(quat.slerp(a, a, 0.3) - a).max() < 1e-15


def test_unroll_makes_neighbours_agree_by_flipping_signs_only(rng):
    q = random_quats(rng, 300, 6)
    out = quat.unroll(q)
    assert np.all(np.sum(out[1:] * out[:-1], axis=-1) >= 0)
    ratio = out / q
    assert np.all((np.abs(ratio - 1) < 1e-15) | (np.abs(ratio + 1) < 1e-15))
    assert np.all(np.abs(ratio - ratio[..., :1]).max(axis=-1) == 0)  # one sign per quaternion
    assert np.array_equal(out[0], q[0])


def test_unroll_recovers_a_smooth_curve_from_random_signs(rng):
    t = np.linspace(0, 20, 500)[:, None]  # several whole turns: q crosses -q's hemisphere
    axis = np.array([0.3, 1.0, -0.2]) / np.linalg.norm([0.3, 1.0, -0.2])
    smooth = quat.from_angle_axis(t[:, 0] * np.array([1.0, 0.7])[:, None], axis).transpose(1, 0, 2)
    signs = rng.choice([-1.0, 1.0], size=smooth.shape[:2] + (1,))
    signs[0] = 1.0
    out = quat.unroll(smooth * signs)
    assert np.abs(out - smooth).max() < 1e-15


def test_unroll_along_another_axis(rng):
    q = random_quats(rng, 4, 50)
    assert np.array_equal(quat.unroll(q, axis=1), np.swapaxes(quat.unroll(np.swapaxes(q, 0, 1)), 0, 1))
    assert np.all(np.sum(quat.unroll(q, axis=1)[:, 1:] * quat.unroll(q, axis=1)[:, :-1], axis=-1) >= 0)
    assert quat.unroll(q[:, :1], axis=1).shape == (4, 1, 4)


def test_from_matrix_inverts_to_matrix_with_w_not_negative(rng):
    q = random_quats(rng, 20000)
    q[:4] = [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0]]   # half turns: every pivot of Shepperd's
    back = quat.from_matrix(quat.to_matrix(q))
    assert same_rotation(back, q) < 1e-14 and np.all(back[:, 0] >= 0)
