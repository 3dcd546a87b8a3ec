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
