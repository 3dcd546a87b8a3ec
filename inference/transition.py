"""What every in-betweening method receives and returns, and the two classic baselines.

A method is any callable ``method(gap) -> (rotations, positions)`` that turns a batch of
:class:`Gap` s into the ``gap.length`` transition frames: local rotations ``(B, n, J, 4)`` and local
translations ``(B, n, J, 3)``. The benchmark, the command line and the Blender operators all speak
this one interface, so a learned model sits beside the baselines with nothing else to adapt.
"""

from dataclasses import dataclass, fields, replace

import numpy as np

from . import quat
from .motion import Skeleton


@dataclass(frozen=True, eq=False)
class Gap:
    """A batch of ``B`` gaps of ``length`` frames: the frames before each and the key that ends it.

    ``past_*`` hold ``P`` frames up to and including the last key before the gap; ``target_*`` the
    key right after it; ``after_*``, when known, the ``A`` frames after that key. The target is the
    only constraint, but the frames after it tell how the motion goes on through it (the benchmark's
    protocol allows them, and an animator's next keys give them), so a method may read them: the
    key's velocity, or a context to fill the gap from its far side. All arrays are local (per-joint)
    rotations and translations.
    """

    skeleton: Skeleton
    past_rotations: np.ndarray   # (B, P, J, 4)
    past_positions: np.ndarray   # (B, P, J, 3)
    target_rotations: np.ndarray  # (B, J, 4)
    target_positions: np.ndarray  # (B, J, 3)
    length: int
    after_rotations: np.ndarray | None = None  # (B, A, J, 4)
    after_positions: np.ndarray | None = None  # (B, A, J, 3)

    @property
    def batch(self):
        return self.past_rotations.shape[0]

    @property
    def after(self):
        """The frame after the target key as a ``(rotations, positions)`` pair, or None."""
        return None if self.after_rotations is None else (self.after_rotations[:, 0], self.after_positions[:, 0])

    def rows(self, index):
        """The gaps at ``index`` (indices into the batch, repeats allowed) as a batch of their own."""
        return replace(self, **{name: None if getattr(self, name) is None else getattr(self, name)[index]
                                for name in _arrays()})


def stacked(gaps):
    """Gaps of one length, context and frames after as one batch, in order (a single gap as it is: no copy
    on a fill's path)."""
    if len(gaps) == 1:
        return gaps[0]
    return replace(gaps[0], **{name: None if getattr(gaps[0], name) is None else
                               np.concatenate([getattr(g, name) for g in gaps]) for name in _arrays()})


def _arrays():
    """The names of a :class:`Gap`'s per-gap arrays."""
    return [f.name for f in fields(Gap) if f.name not in ("skeleton", "length")]


def held(gap, height, degrees=0.5, share=1e-3):
    """(B,) True where a gap is a hold: its target key within ``degrees`` of the last key's rotations on
    every joint and ``share`` of ``height`` of its translations. Two identical keys are how an animator
    makes a hold, and Blender's own curves hold still between them whatever comes before or after; a
    learned fill drifts there (it has seen few exact holds, and motion running into the first key
    carries it on), so a hold keeps the key's pose."""
    key_r, key_p = gap.past_rotations[:, -1], gap.past_positions[:, -1]
    dot = np.abs(np.sum(gap.target_rotations * key_r, axis=-1))
    turn = 2 * np.degrees(np.arccos(np.minimum(dot, 1.0))).max(axis=1)
    move = np.linalg.norm(gap.target_positions - key_p, axis=-1).max(axis=1)
    return (turn <= degrees) & (move <= share * height)


def zero_velocity(gap):
    """The last key held still until the target: the floor every method must beat."""
    shape = (gap.batch, gap.length) + gap.past_rotations.shape[2:]
    rot = np.broadcast_to(gap.past_rotations[:, -1:], shape).copy()
    pos = np.broadcast_to(gap.past_positions[:, -1:], shape[:-1] + (3,)).copy()
    return rot, pos


def interpolation(gap):
    """Linear root motion and spherical joint rotations from the last key to the target.

    The ``n`` interior points of ``n + 2`` evenly spaced steps: what a spline-free keyframe tool does.
    """
    t = np.linspace(0.0, 1.0, gap.length + 2)[1:-1]
    start_r, end_r = gap.past_rotations[:, -1], gap.target_rotations
    start_p, end_p = gap.past_positions[:, -1], gap.target_positions
    rot = quat.slerp(quat.normalize(start_r)[:, None], quat.normalize(end_r)[:, None], t[None, :, None])
    pos = start_p[:, None] + t[None, :, None, None] * (end_p - start_p)[:, None]
    return rot, pos


def hermite(start, rate0, end, rate1, n, fps=1.0):
    """(..., n + 1, D): the cubic Hermite curve a frame from ``start`` (..., D) to ``end`` over ``n``
    frames at ``fps``, leaving at ``rate0`` (..., D) per second and arriving at ``rate1``."""
    s = np.arange(n + 1)[:, None] / n
    duration = n / fps
    return ((2 * s**3 - 3 * s**2 + 1) * np.expand_dims(start, -2) + (s**3 - 2 * s**2 + s) * np.expand_dims(
        rate0 * duration, -2) + (3 * s**2 - 2 * s**3) * np.expand_dims(end, -2) + (s**3 - s**2) * np.expand_dims(
        rate1 * duration, -2))


def root_spline(gap, joint, rates=None):
    """(B, n, 3): the local translation of ``joint`` through each gap on the cubic Hermite curve from
    the last key to the target, leaving at the velocity of the last two frames before the gap and
    arriving at that of the target and the frame after it (``gap.after`` is needed): the path a spline
    through the animator's keys gives the root. ``rates`` (B, 2, 3): the two velocities (a frame) given
    instead, where the frames next to the keys are not the animator's (:func:`key_rates`)."""
    p0, p1 = gap.past_positions[:, -1, joint], gap.target_positions[:, joint]
    if rates is None:
        rates = np.stack([p0 - gap.past_positions[:, -2, joint], gap.after_positions[:, 0, joint] - p1], axis=1)
    return hermite(p0, rates[:, 0], p1, rates[:, 1], gap.length + 1)[:, 1:-1]


def key_rates(positions, keys):
    """(1, 2, 3): the velocities (a frame) at the middle two of four key frames ``keys`` of ``positions``
    (F, 3), each the slope from the key before it to the key after it: the tangents a spline through
    sparse keys (Catmull-Rom, as Bézier's automatic handles) gives them."""
    before, start, end, after = keys
    return np.stack([(positions[end] - positions[before]) / (end - before),
                     (positions[after] - positions[start]) / (after - start)])[None]


def toward_spline(gap, positions, joint, up, share, rates=None):
    """``positions`` (B, n, J, 3), a fill of ``gap``, with ``joint``'s ground path ``share`` of the way
    to :func:`root_spline` (with ``rates``; its height along ``up``, 0-2, stays the fill's)."""
    ground = [a for a in range(3) if a != up]
    out = positions.copy()
    out[:, :, joint, ground] += share * (root_spline(gap, joint, rates)[:, :, ground] - positions[:, :, joint, ground])
    return out


BASELINES = {"zero_velocity": zero_velocity, "interpolation": interpolation}
