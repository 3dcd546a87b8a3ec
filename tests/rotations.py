"""Helpers the rotation tests share: random unit quaternions and sign-blind comparisons."""

import numpy as np

from inference import quat


def random_quats(rng, *shape):
    return quat.normalize(rng.normal(size=shape + (4,)))


def same_rotation(p, q):
    """Largest |p - (±q)| with the sign of each ``q`` chosen to match ``p``."""
    sign = np.where(np.sum(p * q, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    return np.abs(p - sign * q).max()


def angle_between(p, q):
    """The angle of the rotation taking ``q`` to ``p`` (0..pi)."""
    return 2 * np.arccos(np.clip(np.abs(np.sum(p * q, axis=-1)), 0.0, 1.0))


def axis_matrix(axis, angle):
    """The right-handed rotation by ``angle`` (...) about one coordinate axis, as (..., 3, 3)."""
    c, s = np.cos(angle), np.sin(angle)
    o, i = np.zeros_like(angle), np.ones_like(angle)
    rows = {
        "X": [[i, o, o], [o, c, -s], [o, s, c]],
        "Y": [[c, o, s], [o, i, o], [-s, o, c]],
        "Z": [[c, -s, o], [s, c, o], [o, o, i]],
    }[axis]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def euler_matrix(angles, order):
    """``R_order[0] @ R_order[1] @ R_order[2]`` (radians): channels applied as a BVH file lists them."""
    return (axis_matrix(order[0], angles[..., 0]) @ axis_matrix(order[1], angles[..., 1])
            @ axis_matrix(order[2], angles[..., 2]))
