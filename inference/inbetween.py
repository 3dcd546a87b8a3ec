"""The gaps of a motion, and filling them in order: the same for every model that fills a gap.

A model here is anything with ``past`` (the frames of context it reads before a gap), ``floor`` (the
height of the ground it learned on) and ``fill(gap, **options) -> (rotations, positions)`` for a batch
of :class:`~.transition.Gap` s.
"""

from dataclasses import replace

import numpy as np

from . import quat
from .anatomy import feet
from .ends import ends
from .guard import ground
from .inplace import treadmill
from .modelfile import ModelError
from .motion import AXES, forward_kinematics
from .transition import Gap, held, key_rates, toward_spline


def check_keys(motion, start, end):
    """Refuse key frames ``start`` and ``end`` that are not two frames of ``motion`` with one between."""
    if not 0 <= start < end < motion.n_frames:
        raise ModelError(f"{motion.name}: the keys {start}:{end} are not two frames of its "
                         f"{motion.n_frames} (0 to {motion.n_frames - 1}) in order")
    if end - start < 2:
        raise ModelError(f"{motion.name}: no frame lies strictly between keys {start} and {end}")


def gap_in(motion, start, end, past, after=None):
    """The gap of ``motion`` strictly between key frames ``start`` and ``end``, as a batch of one,
    with up to ``after`` frames after ``end`` (default ``past``) where the motion has them."""
    check_keys(motion, start, end)
    first = max(0, start + 1 - past)
    r, p = motion.rotations, motion.positions
    last = min(motion.n_frames, end + 1 + (past if after is None else after))
    after = (r[None, end + 1:last], p[None, end + 1:last]) if last > end + 1 else (None, None)
    return Gap(motion.skeleton, r[None, first:start + 1], p[None, first:start + 1], r[None, end], p[None, end],
               end - start - 1, *after)


def frames_after(gaps, most):
    """Per ``(start, end)`` gap, how many frames after its end key are the user's, up to ``most``:
    those before the first that one of ``gaps`` generates, as where gaps follow one another
    (superres, Blender's Decompress: none), since a frame about to be replaced says nothing of the
    motion through the key."""
    generated = {f for start, end in gaps for f in range(start + 1, end)}
    return [next((k for k in range(most) if end + 1 + k in generated), most) for _, end in gaps]


def fill_order(gaps, most, passes=2):
    """``(gap index, frames after its end key to read)`` in the order gaps are filled: every gap,
    reading the user's frames after its key (:func:`frames_after`, up to ``most``); then, with
    ``passes=2``, again each gap that had fewer, reading ``most`` frames of the first pass."""
    known = frames_after(gaps, most)
    again = [(i, most) for i, after in enumerate(known) if after < most] if passes > 1 else []
    return list(enumerate(known)) + again


def between_keys(gaps, i):
    """``(before, start, end, after)``: the key frames around the ``i``-th of ``gaps`` and the keys either
    side of those, where that gap runs between two others (Decompress), whose keys give the tangents of
    the spline through the keys (:func:`.transition.key_rates`); None where it does not."""
    if 0 < i < len(gaps) - 1 and gaps[i - 1][1] == gaps[i][0] and gaps[i + 1][0] == gaps[i][1]:
        return gaps[i - 1][0], *gaps[i], gaps[i + 1][1]
    return None


def fill_gaps(model, motion, gaps, progress=None, passes=2, momentum=None, rates=None, beyond=None, **kwargs):
    """``motion`` with the frames strictly inside each ``(start, end)`` key pair generated, in order,
    each gap's past context taken from the frames generated before it (Harvey & Pal 2018, §7.4).

    A gap reads the frames after its end key that are the user's (:func:`frames_after`). Where gaps
    follow one another (Decompress), none are: the first pass fills each gap blind to how the motion
    goes on through its end key, and a second pass (``passes=2``) fills those gaps again, reading
    the first pass's frames after the key, so that the motion runs through the key rather than
    snapping onto it. ``progress(done, total)`` is called after each gap filled (it may raise to
    stop the work).

    Where the frames on both sides of a gap's keys are the user's (Fill Gaps, not Decompress's
    generated ones), a plain fill's root path on the ground (not a hold's) leans ``model.spline`` of the
    way to the spline through the keys' velocities (:func:`.transition.toward_spline`): the momentum the
    animator's motion carries into and out of the gap, which a model can lose on motion unlike its
    training data. ``momentum``: per gap, whether those velocities are keyed at all (keys on the frames
    next to both keys, not a curve's interpolation between sparse blocking keys, where the spline only
    adds the interpolation's guess); None: every frame outside the gaps is a key, as in a BVH file.
    Between gaps (Decompress) the root leans ``model.key_spline`` of the way to the spline through the
    keys alone, as Bézier's automatic handles would have it (:func:`_leaned`). ``rates``: per gap, the
    root's velocities (1, 2, 3) a frame at its keys from the keys either side (:func:`.transition.key_rates`),
    given where those keys lie outside ``motion`` (a gap cut out alone at the model's frame rate,
    addon/transitions.py), or None; by default they come from the ``gaps`` either side.

    The model reads the motion standing on the floor it learned on (``model.floor``): the floor of
    ``motion`` is found from its feet (:func:`floor`), so a rig standing higher or lower (an armature
    object raised, a capture whose floor is elsewhere) gets the same fill, moved with it. In-place
    motion (a game's walk cycle: the legs step, the root stays) is carried along the ground as its feet
    slide back while the model fills it, and put back in place (:func:`.inplace.treadmill`).

    Each fill's steps in pose and velocity at its keys are eased out, its standing feet kept where they stand
    (:func:`.ends.ends`), at a key whose frame beyond it is the user's: a generated one (Decompress) is only
    the model's guess at the key's velocity, and easing toward it took the fill further from the capture
    (experiments.md, "In-betweening's ends"), and keyed (``momentum``). ``beyond``: per gap, whether the frames
    beyond its two keys are the user's, given where they lie outside ``motion`` (a gap cut out alone, as
    ``rates``); by default, those no gap generates.
    """
    up = AXES.index(motion.up)
    out, level = on_model_floor(model, motion, gaps)
    shift = treadmill(motion, gaps, model.layout.height)
    if shift is not None:
        out.positions[:, 0] += shift
    out = replace(out, rotations=motion.rotations.copy())
    order = fill_order(gaps, model.past, passes)
    generated = np.zeros(motion.n_frames + 1, dtype=bool)
    for start, end in gaps:
        generated[start + 1:end] = True
    for done, (i, after) in enumerate(order, 1):
        start, end = gaps[i]
        gap = gap_in(out, start, end, model.past, after)
        rot, pos = model.fill(gap, **kwargs)
        pos = _leaned(model, out, gaps, i, gap, pos, generated, momentum, kwargs.get("variation"),
                      None if rates is None else rates[i])
        known = (start > 0 and not generated[start - 1], not generated[end + 1]) if beyond is None else beyond[i]
        keyed = momentum is None or momentum[i]   # else the frames beyond are a curve's guess between keys
        rot, pos = ends(gap, rot, pos, model.layout, keyed and known[0], keyed and known[1])
        out.rotations[start + 1:end], out.positions[start + 1:end] = rot[0], pos[0]
        if progress is not None:
            progress(done, len(order))
    positions = motion.positions.copy()   # the user's frames as they were, bit for bit
    for start, end in gaps:
        positions[start + 1:end] = out.positions[start + 1:end]
        positions[start + 1:end, 0, up] += level
        if shift is not None:
            positions[start + 1:end, 0] -= shift[start + 1:end]
    return replace(out, rotations=quat.unroll(out.rotations), positions=positions)


def _leaned(model, motion, gaps, i, gap, positions, generated, momentum, variation, rates=None):
    """The fill ``positions`` of the ``i``-th of ``gaps`` with the root's ground path leaned to a spline
    through the keys (:func:`.transition.toward_spline`), as :func:`fill_gaps` says: ``model.key_spline``
    of the way where the gap runs between other gaps (Decompress) or its key ``rates`` are given, the
    spline's tangents then from the keys either side (:func:`.transition.key_rates`); ``model.spline``
    where the frames on both sides of its keys are the user's and carry their velocity; unchanged for
    variants and holds."""
    start, end = gaps[i]
    joint, up = model.layout.trajectory, model.layout.up
    if variation or held(gap, model.layout.height)[0]:
        return positions
    keys = between_keys(gaps, i)
    if rates is None and keys is not None:
        rates = key_rates(motion.positions[:, joint], keys)
    if model.key_spline and rates is not None:
        return toward_spline(gap, positions, joint, up, model.key_spline, rates)
    if model.spline and gap.after is not None and start > 0 and (momentum is None or momentum[i]) \
            and not (generated[start - 1] or generated[end + 1]):
        return toward_spline(gap, positions, joint, up, model.spline)
    return positions


def on_model_floor(model, motion, gaps):
    """``(motion, level)``: ``motion`` lowered by ``level``, how far its floor (:func:`floor`, outside the
    ``gaps``) is above the one ``model`` learned on (``model.floor``), so that the model reads it standing
    where it learned to; what the model generates is raised by ``level`` again."""
    level = floor(motion, gaps, motion.up) - model.floor
    positions = motion.positions.copy()
    positions[:, 0, AXES.index(motion.up)] -= level
    return replace(motion, positions=positions), level


def floor(motion, gaps, up="Y"):
    """The height of the floor under ``motion``: the lowest its feet (:func:`.anatomy.feet`) reach in the
    frames outside the ``(start, end)`` gaps (keys and context), or 0 for a skeleton without feet."""
    joints = feet(motion.skeleton.names)
    given = np.ones(motion.n_frames, dtype=bool)
    for start, end in gaps:
        given[start + 1:end] = False
    if not joints or not given.any():
        return 0.0
    world = forward_kinematics(motion.rotations[given], motion.positions[given], motion.skeleton.parents)[1]
    return float(ground(world, slice(None), joints, up).min())


def data_floor(motions):
    """The floor a model trained on ``motions`` stands on: the median over the clips of :func:`floor`
    (where a clip's feet are lowest), as a fill finds a rig's."""
    return float(np.median([floor(m, [], m.up) for m in motions]))


def sparse_keys(n_frames, every):
    """The key frames Decompress keeps of ``n_frames``: every ``every`` frames, and the last frame."""
    if every < 2:
        raise ModelError(f"keys every {every} frames leave nothing to fill; use 2 or more")
    keys = list(range(0, n_frames, every))
    if n_frames - 1 - keys[-1] >= 2:   # a last frame right after a key has nothing to fill
        keys.append(n_frames - 1)
    return keys
