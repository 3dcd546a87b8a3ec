"""The nearest point of a polyline on the ground: how far a root is from the path it follows, for the
Motion VAE's path control (:mod:`.mvae.control`) and the lab's path measures alike."""

import numpy as np


def nearest(ground, points):
    """For ground positions (F, 2) and a polyline ``points`` (N, 2): the segment (F,) holding each
    one's nearest point, where along it (F,) from 0 to 1, and the distance to it (F,)."""
    a, b = points[:-1], points[1:]
    seg = b - a
    length = np.maximum(np.sum(seg * seg, axis=-1), 1e-12)
    u = np.clip(np.einsum("fsc,sc->fs", ground[:, None] - a, seg) / length, 0, 1)      # (F, S)
    distance = np.linalg.norm(ground[:, None] - (a + u[..., None] * seg), axis=-1)
    which = np.argmin(np.where(length > 1e-12, distance, np.inf), axis=1)
    rows = np.arange(len(ground))
    return which, u[rows, which], distance[rows, which]
