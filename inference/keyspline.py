"""The keys' own spline, and how far a fill leans toward it, tried on the animator's own frames.

Where the frames next to a gap's keys are the animator's (baked capture, a keyed take), they carry the motion's
velocity at both keys, and a cubic Hermite curve through the two keys leaving and arriving at those velocities
(each joint's rotation, the root's position) is a strong guess at a short gap, stronger than Blender's automatic
handles, which reach across the gap to the other key. A model errs more on motion unlike its training data;
there the spline may err less (on another lab's capture, half-second gaps: `docs/experiments.md`, "The keys'
own spline, tried on the action's own frames"). Which is nearer on this action is measured, not assumed: gaps of
the same length are cut from its known frames near each gap (:func:`probes`), filled as the gap is, and the share
of the way from the fill to the spline that errs least on them (:func:`shares`) is how far the gap's fill
leans (:func:`leaned`). A gap with no room for a probe beside it keeps the fill, as does one over
:data:`LONGEST`.
"""

import numpy as np

from . import quat
from .motion import forward_kinematics
from .transition import hermite

SHARES = np.linspace(0.0, 1.0, 11)   # the shares of the way to the spline tried on the probes
LONGEST = 0.5   # s: longer gaps keep the fill, where the probes' choice was less sure (docs/experiments.md)


def leaning(gaps, momentum, first, n_frames, fps):
    """Indices of the ``gaps`` ((a, b) frames from ``first``, in a motion of ``n_frames`` at ``fps``) of at most
    :data:`LONGEST` whose keys' velocities are the animator's: keyed (``momentum``, per gap; None: every frame
    outside the gaps is a key), with the frame before the first key and the one after the last inside the motion
    and outside every gap."""
    inside = set()
    for a, b in gaps:
        inside.update(range(a + 1, b))
    return [i for i, (a, b) in enumerate(gaps)
            if (momentum is None or momentum[i]) and b - a <= round(LONGEST * fps) and a - 1 >= first
            and b + 1 <= first + n_frames - 1 and a - 1 not in inside and b + 1 not in inside]


def spline(motion, a, b):
    """``(rotations (n - 1, J, 4), root (n - 1, 3))``: the frames strictly between rows ``a`` and ``b`` of
    ``motion`` (``n = b - a``) on the cubic Hermite curve through the two keys, each joint's rotation (as 4-vectors,
    normalised) and the root's position leaving key ``a`` at the velocity from the row before it and arriving at
    key ``b`` at the velocity to the row after it."""
    q = quat.unroll(motion.rotations[[a - 1, a, b, b + 1]])   # the short way between the keys, as interpolation
    p = motion.positions[[a - 1, a, b, b + 1], 0]
    n = b - a
    rotations = quat.normalize(np.moveaxis(hermite(q[1], q[1] - q[0], q[2], q[3] - q[2], n), -2, 0)[1:-1])
    root = hermite(p[1], p[1] - p[0], p[2], p[3] - p[2], n)[1:-1]
    return rotations, root


def leaned(rotations, root, towards, share):
    """The fill's ``rotations`` (n - 1, J, 4) and ``root`` (n - 1, 3) ``share`` of the way to the spline
    ``towards`` (:func:`spline`'s pair): each rotation along the 4-vectors' chord (in the spline's sign), the root
    along the line between. ``share`` a number, or shares (S,) for (S, n - 1, …) of each."""
    to_rot, to_root = towards
    rotations = rotations * np.where(np.sum(rotations * to_rot, -1, keepdims=True) < 0, -1.0, 1.0)
    share = np.asarray(share, dtype=np.float64)
    turned, moved = share[..., None, None, None], share[..., None, None]
    return (quat.normalize((1.0 - turned) * rotations + turned * to_rot),
            (1.0 - moved) * root + moved * to_root)


def probes(gaps, which, lo, hi, before, after):
    """``[(i, (p, q))]``: for each of the ``gaps`` (frames) indexed by ``which``, up to two probes, the gaps of its
    length nearest it before and after it whose frames from ``before`` ahead of ``p`` to ``after`` past ``q``
    (the context a fill reads) lie within ``lo``-``hi``, outside every gap (its keys may be read) and apart
    from every probe found before."""
    inside = np.zeros(hi - lo + 1, dtype=bool)
    for a, b in gaps:
        inside[max(a + 1 - lo, 0):max(b - lo, 0)] = True
    out = []
    for i in which:
        a, b = gaps[i]
        n = b - a
        for starts in (range(a - n - after, lo + before - 1, -1), range(b + before, hi - after - n + 1)):
            for p in starts:
                span = slice(p - before - lo, p + n + after - lo + 1)
                if not inside[span].any():
                    inside[span] = True
                    out.append((i, (p, p + n)))
                    break
    return out


def shares(truth, tried, first, found, parents):
    """``{i: share}``: for each gap index of the probes ``found`` (:func:`probes`), the share of :data:`SHARES`
    whose lean (:func:`leaned`) of the probes' fills in ``tried`` (a motion from frame ``first``, the probes
    generated) toward their keys' spline (:func:`spline` of ``truth``, the same frames as the animator has them)
    puts their joints nearest ``truth``'s on average (the first such: the fill where the spline does no better)."""
    # every probe at every share and the truth beside them, frames along one axis: one pass of forward kinematics
    rotations, positions, spans = [], [], []
    for _, (p, q) in found:
        a, b = p - first, q - first
        turned, root = leaned(tried.rotations[a + 1:b], tried.positions[a + 1:b, 0], spline(truth, a, b), SHARES)
        placed = np.repeat(tried.positions[None, a + 1:b], len(SHARES), axis=0)
        placed[:, :, 0] = root
        rotations += [turned.reshape(-1, *turned.shape[2:]), truth.rotations[a + 1:b]]
        positions += [placed.reshape(-1, *placed.shape[2:]), truth.positions[a + 1:b]]
        spans.append(b - a - 1)
    _, world = forward_kinematics(np.concatenate(rotations), np.concatenate(positions), parents)
    errors, at = {}, 0
    for (i, _), n in zip(found, spans):
        got = world[at:at + len(SHARES) * n].reshape(len(SHARES), n, *world.shape[1:])
        want = world[at + len(SHARES) * n:at + (len(SHARES) + 1) * n]
        errors.setdefault(i, []).append(np.linalg.norm(got - want, axis=-1).mean(axis=(1, 2)))
        at += (len(SHARES) + 1) * n
    return {i: float(SHARES[int(np.argmin(np.mean(e, axis=0)))]) for i, e in errors.items()}
