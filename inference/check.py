"""The last look at a result before anything is written: a result that is not a number, strays out of
reach of what was asked, moves a bone faster than any body does, or leaves an Euler channel wound up
or jumping is refused with one line naming the frames (and joints) and what to try.

:mod:`.guard` warns of frames that may be poor; this refuses frames that are broken: a network that
diverged (MANN along a path it never saw), foot planting that spread a NaN, a channel wound up by
Blender's Euler compatibility. Its limits are generous on purpose, several times what any capture
does, so that a result it refuses is one no animator would keep. Numpy only: Blender's add-on calls it
too, on the motion and on the Euler channels it is about to key.
"""

import numpy as np

from .errors import BetwixtError
from .motion import AXES, forward_kinematics

FASTEST = 40.0   # body heights a second a joint may move (LaFAN1's fastest joint 8.3; the dog capture's 24,
                 # in its back leg's lengths, the height its model measures by)
ROOT = 15.0      # body heights a second the root may cover on its way to a key (the dog capture's root: 13)
REACH = 2.0      # body heights the root may stray from the line between two keys, beyond what ROOT covers in half
                 # the gap
PATH_REACH = 8.0  # body heights the root may stray from a path's line (or rise or sink from where it started)
WOUND = 4 * np.pi   # radians an Euler channel of a joint under the root may reach: two turns either way
JUMP = np.pi        # radians an Euler channel may change between two frames: more is a flip, a spin when keyed


class ResultError(BetwixtError):
    """A result refused before it was written: the one line says where and what to try."""


def check_result(motion, height, up="Y", generated=None, gaps=(), path=None, euler=None, frame=None,
                 units_per_metre=None, fix="try again with other settings"):
    """Refuse ``motion`` (a :class:`~.motion.Motion`) with a :class:`ResultError` unless it is finite
    everywhere, and, on its ``generated`` frames (a bool mask (F,); None: all), its root within reach
    of what was asked and its joints no faster than FASTEST body heights a second (or twice the fastest
    of the frames given, where that is faster); ``euler`` (F, J, 3) radians, the channels the caller
    writes, must be unwound and continuous.

    ``height``: the body's height in the motion's units (a model's ``layout.height``); ``up``: its up
    axis. What was asked: ``gaps``, ``(start, end)`` key frames of the motion (the root of each frame
    between them within reach of the line between the keys' roots), and ``path``, ground points (N, 2)
    on the two axes other than ``up`` in XYZ order (the root within PATH_REACH of their line, and no
    further above or below where it started). ``frame`` maps the motion's frames to the user's (scene
    frames); ``units_per_metre``, where known, gives distances and speeds in metres; ``fix`` is what the
    message tells the user to try."""
    frame = frame or (lambda f: f)
    n = motion.n_frames
    generated = np.ones(n, dtype=bool) if generated is None else np.asarray(generated, dtype=bool)
    names = motion.skeleton.names
    checks = (lambda: _not_finite(motion), lambda: _strays(motion, height, up, generated, gaps, path),
              lambda: _too_fast(motion, height, generated), lambda: _wound(euler))
    for failed in (check() for check in checks):   # in turn: a NaN is not measured for speed
        if failed is not None:
            what, flagged, value = failed
            raise ResultError(_line(what, flagged, value, names, frame, units_per_metre, fix))


def _not_finite(motion):
    bad = ~np.isfinite(motion.rotations).all(axis=-1) | ~np.isfinite(motion.positions).all(axis=-1)
    return ("nan", bad, None) if bad.any() else None


def _strays(motion, height, up, generated, gaps, path):
    """("reach", flagged (F, J) on the root, distance (F,)) where the root strays, or None."""
    root = motion.positions[:, 0]
    distance = np.zeros(motion.n_frames)
    allowed = np.full(motion.n_frames, np.inf)
    for start, end in gaps:
        inside = slice(start + 1, end)
        distance[inside] = _to_segment(root[inside], root[start], root[end])
        allowed[inside] = (REACH + ROOT * (end - start) / motion.fps / 2) * height
    if path is not None:
        u = AXES.index(up)
        ground = np.delete(root, u, axis=-1)
        off = np.maximum(_to_path(ground, np.asarray(path, dtype=np.float64), PATH_REACH * height),
                         np.abs(root[:, u] - root[0, u]))
        distance, allowed = np.maximum(distance, off), np.minimum(allowed, PATH_REACH * height)
    flagged = generated & (distance > allowed)
    if not flagged.any():
        return None
    mask = np.zeros((motion.n_frames, len(motion.skeleton)), dtype=bool)
    mask[:, 0] = flagged
    return "reach", mask, distance


def _too_fast(motion, height, generated):
    """("fast", flagged (F, J), speed (F, J)) where a joint moves faster than the limit, or None."""
    if motion.n_frames < 2:
        return None
    world = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    speed = np.zeros(world.shape[:2])
    speed[1:] = np.linalg.norm(np.diff(world, axis=0), axis=-1) * motion.fps   # frame f from f - 1
    made = generated.copy()
    made[1:] |= generated[:-1]      # the step out of a generated frame is the model's too
    given = speed[1:][~made[1:]]
    limit = max(FASTEST * height, 2 * given.max(initial=0.0))
    flagged = made[:, None] & (speed > limit)
    return ("fast", flagged, speed) if flagged.any() else None


def _wound(euler):
    """("wound" or "jump", flagged (F, J), values) of Euler channels (F, J, 3), or None."""
    if euler is None:
        return None
    euler = np.asarray(euler, dtype=np.float64)
    wound = np.abs(euler[:, 1:]).max(axis=-1)
    if (wound > WOUND).any():
        mask = np.zeros(euler.shape[:2], dtype=bool)
        mask[:, 1:] = wound > WOUND
        values = np.zeros(euler.shape[:2])
        values[:, 1:] = wound
        return "wound", mask, values
    jump = np.zeros(euler.shape[:2])
    jump[1:] = np.abs(np.diff(euler, axis=0)).max(axis=-1)
    return ("jump", jump > JUMP, jump) if (jump > JUMP).any() else None


def _to_segment(points, a, b):
    """(N,) distances of ``points`` (N, 3) from the segment from ``a`` to ``b``."""
    ab = b - a
    t = np.clip(np.sum((points - a) * ab, axis=-1) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=-1)


def _to_path(points, path, reach):
    """(N,) distances of ``points`` (N, 2) from the line through ``path`` (M, 2): exact to within an
    eighth of ``reach`` where it is nearer than ``reach``. The line is resampled every eighth of ``reach``
    along it and its segments binned on a grid 1.25 ``reach`` wide, so that each point is measured against
    the segments that start in its cell and the eight around it, all that can come within ``reach`` of
    it: 20 minutes of frames along a path of 100,000 points take a second, not minutes. A point with none
    there is measured against them all, a few hundred such points at most (the rest between them)."""
    spacing, size = reach / 8, 1.25 * reach
    along = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=-1))])
    steps = np.append(np.arange(0.0, along[-1], spacing), along[-1])
    line = np.stack([np.interp(steps, along, path[:, k]) for k in range(2)], axis=-1)
    if len(line) < 2:
        return np.linalg.norm(points - line[0], axis=-1)
    a, b = line[:-1], line[1:]
    bins = {}
    for i, cell in enumerate(map(tuple, np.floor(a / size).astype(np.int64))):
        bins.setdefault(cell, []).append(i)
    cells = np.floor(points / size).astype(np.int64)
    unique, inverse = np.unique(cells, axis=0, return_inverse=True)
    out = np.full(len(points), np.inf)
    for k, (x, z) in enumerate(unique):
        near = [i for dx in (-1, 0, 1) for dz in (-1, 0, 1) for i in bins.get((x + dx, z + dz), ())]
        if near:
            mine = np.flatnonzero(inverse.reshape(-1) == k)
            out[mine] = _to_segments(points[mine], a[near], b[near])
    far = np.flatnonzero(np.isinf(out))
    if len(far):
        some = far[::-(-len(far) // 256)]
        out[some] = _to_segments(points[some], a, b)
        out[far] = np.interp(far, some, out[some])
    return out


def _to_segments(points, a, b):
    """(N,) distances of ``points`` (N, 2) from the nearest of the segments from ``a`` to ``b`` (S, 2)."""
    ab = b - a
    t = np.clip(np.sum((points[:, None] - a) * ab, axis=-1) / np.maximum(np.sum(ab * ab, axis=-1), 1e-12), 0.0, 1.0)
    return np.linalg.norm(points[:, None] - (a + t[..., None] * ab), axis=-1).min(axis=1)


def _line(what, flagged, values, names, frame, units_per_metre, fix):
    """The one line of a refusal: what failed, at which frames and joints (the worst run first)."""
    rows = np.flatnonzero(flagged.any(axis=1))
    runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)
    first, last = int(runs[0][0]), int(runs[0][-1])
    frames = f"frames {frame(first)}-{frame(last)}" if last > first else f"frame {frame(first)}"
    joints = [names[j] for j in np.flatnonzero(flagged[first:last + 1].any(axis=0))]
    who = ", ".join(joints[:3]) + (f" and {len(joints) - 3} more" if len(joints) > 3 else "")
    more = f" (and {len(runs) - 1} more runs of frames)" if len(runs) > 1 else ""
    scale, unit = (units_per_metre, "m") if units_per_metre else (1.0, "units")
    if what == "nan":
        said = f"{who} not a number (NaN or infinite) at {frames}{more}"
    elif what == "reach":
        worst = float(values[first:last + 1].max()) / scale
        said = f"the root strays {worst:.3g} {unit} from what was asked (the keys or the path) at {frames}{more}"
    elif what == "fast":
        j = int(np.argmax(values[first:last + 1].max(axis=0) * flagged[first:last + 1].any(axis=0)))
        worst = float(values[first:last + 1, j].max()) / scale
        said = f"{names[j]} moves {worst:.3g} {unit}/s at {frames}{more}, faster than any body does"
    elif what == "wound":
        said = (f"{who}: an Euler channel winds to {float(values[first:last + 1].max()) / (2 * np.pi):.1f} "
                f"turns at {frames}{more}")
    else:
        said = (f"{who}: an Euler channel jumps {np.degrees(float(values[first:last + 1].max())):.0f} degrees "
                f"at {frames}{more}")
    return f"the result is broken ({said}); nothing was written: {fix}"
