"""Inertialization (Bollo 2018): a generated stretch of motion joined to the frames either side of it with
the steps in pose and velocity at its joins eased out, for the transition library's joins
(:mod:`.library`) and a gap's keys (:mod:`.ends`) alike.
"""

import numpy as np

from . import quat


def eased(rotations, positions, before, after, ease):
    """Transitions ``rotations`` (..., n, J, 4) and ``positions`` (..., n, J, 3) with the steps in pose and
    velocity at both joins eased out. The RTN's start blend puts the first
    generated frame where the source's velocity carries it and the network's own velocity takes over on the
    next, a kink each joint's acceleration shows (the end blend likewise before the target). So at each
    join, per joint (rotation vectors of local rotations, and translations), the first generated frame's
    miss ``e`` of where the clip's velocity
    carries it and the next step's miss ``d`` of that velocity are added back as the offset
    ``(e + d s) (1 - (s - 1) / (ease - 1))^3`` (held at ``e`` on the first frame), ``s`` frames from it:
    across the join the motion goes on as the clip's, and the offset fades to nothing, with its velocity and
    acceleration, ``ease`` frames in (at most the transition's length), so the keys are met as before.
    ``before``: the source's frames before and at its leave frame, ``after``: the target's at its enter
    frame and after it, each ``(rotations (..., 2, J, 4), positions (..., 2, J, 3))``, or None: that join
    is left as it is (no frame beyond the key tells its velocity)."""
    n = rotations.shape[-3]
    if n < 2 or ease < 1:
        return rotations, positions
    ease = min(ease, n)
    s = np.arange(n, dtype=np.float64)
    hold = np.clip(1 - (s - 1) / max(ease - 1, 1), 0, 1) ** 3                             # (n,): 1, 1, ..., 0
    sides = []
    if before is not None:
        sides.append((before, 0, 1, slice(None)))
    if after is not None:   # the target's side seen from the key
        sides.append(((after[0][..., ::-1, :, :], after[1][..., ::-1, :, :]), n - 1, n - 2, slice(None, None, -1)))
    for (r0, p0), first, second, order in sides:
        step = _log(quat.mul(r0[..., 1, :, :], quat.inv(r0[..., 0, :, :])))                 # (..., J, 3)
        carried = quat.mul(_exp(step), r0[..., 1, :, :])
        miss_r = _log(quat.mul(carried, quat.inv(rotations[..., first, :, :])))
        turn_r = step - _log(quat.mul(rotations[..., second, :, :], quat.inv(rotations[..., first, :, :])))
        miss_p = 2 * p0[..., 1, :, :] - p0[..., 0, :, :] - positions[..., first, :, :]
        turn_p = (p0[..., 1, :, :] - p0[..., 0, :, :]) - (positions[..., second, :, :] - positions[..., first, :, :])
        weight, slope = hold[order][:, None, None], (s * hold)[order][:, None, None]
        offset = miss_r[..., None, :, :] * weight + turn_r[..., None, :, :] * slope
        rotations = quat.mul(_exp(offset), rotations)
        positions = positions + miss_p[..., None, :, :] * weight + turn_p[..., None, :, :] * slope
    return rotations, positions


def _log(q):
    """(..., 3) rotation vectors of unit quaternions ``q`` (..., 4), the shorter way round."""
    q = np.where(q[..., :1] < 0, -q, q)
    sine = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2 * np.arctan2(sine, q[..., :1])
    return q[..., 1:] * np.where(sine > 1e-12, angle / np.maximum(sine, 1e-12), 2.0)


def _exp(v):
    """(..., 4) unit quaternions of rotation vectors ``v`` (..., 3)."""
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    axis = v / np.maximum(angle, 1e-12)
    return np.concatenate([np.cos(0.5 * angle), np.sin(0.5 * angle) * axis], axis=-1)
