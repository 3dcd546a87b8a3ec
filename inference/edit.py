"""The one edit pipeline: a model run over the gaps between keys, at the model's own frame rate, for
Blender's operators (scene frames) and the command line (a BVH file's frames) alike, so that the same
keys give the same motion at any frame rate.

A scene (or a file) at 24 fps and a model trained at 30 fps disagree on what a frame is. Each gap is cut into
the whole number of model frames nearest its length (its keys stay where they are, so the motion is
at most half a model frame faster or slower), the context before it is sampled at that spacing, the
model fills it, and the result is sampled back onto the scene's whole frames. At equal rates this is
exactly :func:`.inbetween.fill_gaps`. Pure numpy: in Blender it runs in the worker thread.

Quaternion signs need no care here: the runtime orients them for every gap (inference/features.py).
"""

from dataclasses import replace

import numpy as np

from . import keyspline, quat
from .ends import JOIN, ends, joined
from .errors import BetwixtError
from .inbetween import (BATCH, Filling, between_keys, context, fill_gaps, fill_rounds, filled_together, gap_in,
                        on_model_floor, readable, sparse_keys)
from .modelfile import ModelError
from .motion import AXES
from .transition import key_rates

SAME_RATE = 1e-6


class Cancelled(Exception):
    """The user pressed Esc."""


def gaps_between(keys):
    """Consecutive key pairs with at least one frame between them."""
    return [(a, b) for a, b in zip(keys[:-1], keys[1:]) if b - a >= 2]


def keyed_momentum(keys, gaps, ratio):
    """Per gap ``(a, b)`` (scene frames), whether the animator keyed the motion's velocity at both its
    keys: ``keys`` (sorted scene frames) hold one on the frame before ``a`` and one on the frame after ``b``
    (within a model frame, where the scene runs faster than the model), as baked capture does; blocking
    keys leave the velocity to the curves' interpolation (see :func:`.inbetween.fill_gaps`)."""
    near = max(1.0, ratio) + 1e-6
    keys = np.asarray(keys)
    out = []
    for a, b in gaps:
        before, after = keys[keys < a], keys[keys > b]
        out.append(len(before) > 0 and a - before[-1] <= near and len(after) > 0 and after[0] - b <= near)
    return out


def model_frames(a, b, ratio):
    """How many model frames the gap from scene frame ``a`` to ``b`` spans."""
    if abs(ratio - 1.0) < SAME_RATE:
        return b - a
    return max(2, int(round((b - a) / ratio)))


def reaches(model, gaps, fps):
    """Whether ``model`` fills every one of ``gaps`` (scene frames at ``fps``): a dog's gaps over two seconds
    go from its RTN to its MANN."""
    return all(model_frames(a, b, fps / model.layout.fps) - 1 <= model.max_gap for a, b in gaps)


def check_gaps(model, gaps, ratio):
    """Refuse, before anything runs, a gap the model cannot fill."""
    if not gaps:
        raise BetwixtError("no gap to fill: select keys with at least one frame between them "
                           "(the keys before and after each gap)")
    for a, b in gaps:
        n = model_frames(a, b, ratio) - 1
        if n > model.max_gap:
            raise BetwixtError(f"the gap between keys on frames {a} and {b} is {n} model frames, more than "
                               f"model {model.name} fills ({model.max_gap}); add a key inside it")


def margins(model, ratio):
    """Scene frames needed before the first key and after the last one: a past context on each
    side, since the runtime may fill a gap from either side (see :meth:`.rtn.runtime.RTNModel.fill`)."""
    margin = int(np.ceil((model.past - 1) * ratio)) + 1
    return margin, margin


def window(model, gaps, fps):
    """``(first, last)``: the frames (at ``fps``) an edit of ``gaps`` reads, a past context's worth before
    the first key and after the last (:func:`margins`), for Blender and the command line alike: feet are
    planted on the floor found in them, so a longer read would plant them otherwise."""
    before, after = margins(model, fps / model.layout.fps)
    return gaps[0][0] - before, gaps[-1][1] + after


def sample(motion, at):
    """``motion`` at fractional frame indices ``at`` (clamped to its range): slerp and lerp."""
    at = np.clip(np.asarray(at, dtype=np.float64), 0.0, motion.n_frames - 1)
    i0 = np.minimum(np.floor(at).astype(np.int64), max(motion.n_frames - 2, 0))
    i1 = np.minimum(i0 + 1, motion.n_frames - 1)
    w = (at - i0)[:, None]
    rotations = quat.slerp(motion.rotations[i0], motion.rotations[i1], w)
    positions = motion.positions[i0] * (1.0 - w[..., None]) + motion.positions[i1] * w[..., None]
    return replace(motion, rotations=quat.unroll(rotations), positions=positions)


def fill(model, motion, first, gaps, scene_fps, progress=None, cancelled=None, momentum=None, passes=2, parting=None,
         around=None, **kwargs):
    """``motion`` (model space, one frame per scene frame from ``first``) with each gap generated, in the rounds
    of :func:`.inbetween.fill_rounds` (``passes`` as :func:`.inbetween.fill_gaps` takes it).

    ``gaps`` are (a, b) scene frames; each gap's context comes from the frames generated before it.
    ``momentum``: per gap, whether the velocity at its keys is keyed (:func:`keyed_momentum`).
    ``kwargs`` go to the model (variation, seed, blend). ``progress(done, total)`` after each batch of gaps;
    ``cancelled()`` is asked before each and raises :class:`Cancelled` when true. ``parting``, a dict where
    given, gets each gap's parting by its index (see :func:`.inbetween.fill_gaps`).

    ``around``, ``(motion, first)``: the same action read over the frames :func:`surround` gives, where the
    probes of :mod:`.keyspline` are cut: a plain fill of a gap whose keys' velocities are the animator's leans
    toward the keys' own spline as far as that errs least on them.
    """
    leaning = [] if around is None or kwargs.get("variation") else \
        keyspline.leaning(gaps, momentum, first, motion.n_frames, scene_fps)
    found = keyspline.probes(gaps, leaning, around[1], around[1] + around[0].n_frames - 1,
                             *margins(model, scene_fps / model.layout.fps)) if leaning else []
    shares = {}
    if found:
        tried = _filled(model, around[0], around[1], [p for _, p in found], scene_fps, None, cancelled, None,
                        passes, None, **kwargs)
        shares = keyspline.shares(around[0], tried, around[1], found, model.skeleton.parents)
    out = _filled(model, motion, first, gaps, scene_fps, progress, cancelled, momentum, passes, parting, **kwargs)
    if not any(shares.values()):
        return out
    rotations, positions = out.rotations.copy(), out.positions.copy()
    for i, share in shares.items():
        a, b = gaps[i][0] - first, gaps[i][1] - first
        rotations[a + 1:b], positions[a + 1:b, 0] = keyspline.leaned(
            rotations[a + 1:b], positions[a + 1:b, 0], keyspline.spline(motion, a, b), share)
    return replace(out, rotations=quat.unroll(rotations), positions=positions)


def surround(model, gaps, fps):
    """``(first, last)``: the frames (at ``fps``) that :func:`fill`'s ``around`` reads: the :func:`window` of the
    ``gaps`` and, on either side, room for a probe as long as the longest gap with its context."""
    before, after = margins(model, fps / model.layout.fps)
    first, last = window(model, gaps, fps)
    longest = max(b - a for a, b in gaps)
    return first - longest - after, last + longest + before


def _filled(model, motion, first, gaps, scene_fps, progress, cancelled, momentum, passes, parting, **kwargs):
    """:func:`fill` without the lean toward the keys' spline."""
    ratio = scene_fps / model.layout.fps

    def step(done, total):
        if progress is not None:
            progress(done, total)
        if cancelled is not None and cancelled():
            raise Cancelled()

    step(0, len(gaps))
    if abs(ratio - 1.0) < SAME_RATE:   # one pass over the motion, not a copy of it per gap
        return fill_gaps(model, motion, [(a - first, b - first) for a, b in gaps], progress=step,
                         momentum=momentum, passes=passes, parting=parting, **kwargs)
    # as fill_gaps does, in the same rounds, each reading the motion as its round began: a gap cut out alone at
    # the model's rate, a round's cuts filled together
    margin = margins(model, ratio)[1]
    rounds = fill_rounds(gaps, margin, passes)
    known = readable([(a - first, b - first) for a, b in gaps], rounds, motion.n_frames)
    generated = {f for a, b in gaps for f in range(a + 1, b)}
    total, done = sum(map(len, rounds)), 0
    rotations, positions = motion.rotations.copy(), motion.positions.copy()   # filled in place, round by round
    for r, members in enumerate(rounds):
        seen, made = replace(motion, rotations=rotations, positions=positions), []   # written as the round ends
        for batch in (members[k:k + BATCH] for k in range(0, len(members), BATCH)):
            cuts = []
            for i in batch:
                a, b = gaps[i]
                span, n = _at_model_rate(model, seen, first, a, b, ratio,
                                         *context(known[r], a - first, b - first, margin, margin)[::-1])
                at = [(model.past - 1, model.past - 1 + n)]
                beyond = (a > first and a - 1 not in generated, b + 1 not in generated)   # as fill_gaps finds them
                cuts.append((Filling(model, span, at, None if momentum is None else [momentum[i]],
                                     [_rates(model, seen, first, gaps, i, ratio)], [beyond]), n,
                             readable(at, [[0]], span.n_frames)[0]))
            made += zip(batch, cuts, filled_together(model, [(filling, 0, readable_span)
                                                             for filling, _, readable_span in cuts], kwargs))
            done += len(batch)
            step(done, total)
        for i, (filling, n, _), fitted in made:
            filling.write([fitted])
            if parting is not None and filling.parting:
                parting[i] = filling.parting[0]
            _put_back(rotations, positions, first, *gaps[i], filling.result(), n, model.past)
    return joined(replace(motion, rotations=quat.unroll(rotations), positions=positions),
                  sorted((a - first, b - first) for a, b in gaps), max(1, round(JOIN * ratio)))


def superres(model, motion, every, **kwargs):
    """Dense motion from the keys every ``every`` frames of ``motion`` (and its last frame), read alone,
    at the motion's frame rate (Decompress on the command line): the frames between them are generated.
    ``kwargs`` as :func:`fill` takes them."""
    keys = sparse_keys(motion.n_frames, every)
    if len(keys) < 2:
        raise ModelError(f"{motion.name}: a single frame holds no gap to fill")
    return fill(model, motion, 0, list(zip(keys[:-1], keys[1:])), motion.fps, **kwargs)


def variants(model, motion, first, gap, scene_fps, k, momentum=None, **kwargs):
    """``k`` motions, each ``motion`` (as in :func:`fill`) with the gap ``(a, b)`` (scene frames) generated
    by one of the ``k`` transitions that ``model.variants`` makes in one call (the RTN's noise, or a
    Motion VAE's latent), read as :func:`fill` reads a gap: its floor, at the model's frame rate; a model that
    fills gaps meets the keys as its fill does (:func:`.ends.ends`, where ``momentum`` says the velocity at
    the keys is keyed, as :func:`fill`'s per gap: a variant of no variation is the fill). ``kwargs`` go to the
    model (variation, seed, blend)."""
    a, b = gap
    ratio = scene_fps / model.layout.fps
    if abs(ratio - 1.0) < SAME_RATE:
        span, at, n = motion, (a - first, b - first), None
    else:
        span, n = _at_model_rate(model, motion, first, a, b, ratio, margins(model, ratio)[1])
        at = (model.past - 1, model.past - 1 + n)
    up = AXES.index(span.up)
    lowered, level = on_model_floor(model, span, [at])
    cut = gap_in(lowered, *at, model.past)
    rot, pos = model.variants(cut, k, **kwargs)
    if "fill" in model.SERVES and (momentum is None or momentum):   # the frames beyond the keys are the user's
        for i in range(k):
            rot[i], pos[i] = ends(cut, rot[i], pos[i], model.layout, a > first, True)
    out = []
    for i in range(k):
        rotations, positions = span.rotations.copy(), span.positions.copy()
        rotations[at[0] + 1:at[1]], positions[at[0] + 1:at[1]] = rot[i, 0], pos[i, 0]
        positions[at[0] + 1:at[1], 0, up] += level
        filled = replace(span, rotations=quat.unroll(rotations), positions=positions)
        if n is not None:
            rotations, positions = motion.rotations.copy(), motion.positions.copy()
            _put_back(rotations, positions, first, a, b, filled, n, model.past)
            filled = replace(motion, rotations=quat.unroll(rotations), positions=positions)
        out.append(filled)
    return out


def _rates(model, motion, first, gaps, i, ratio):
    """The root's velocities a model frame at the keys of the ``i``-th of ``gaps`` (scene frames) from the
    keys either side, where it runs between two other gaps (Decompress), else None: what
    :func:`.inbetween.fill_gaps` leans the root to, found here since the gap is filled alone."""
    keys = between_keys(gaps, i)
    if keys is None:
        return None
    a, b = gaps[i]
    step = (b - a) / model_frames(a, b, ratio)          # scene frames a model frame, in this gap
    return key_rates(motion.positions[:, model.layout.trajectory], np.asarray(keys) - first) * step


def _at_model_rate(model, motion, first, a, b, ratio, after, before=None):
    """``(span, n)``: the gap from scene frame ``a`` to ``b`` of ``motion`` sampled at the model's rate, in
    ``n`` model frames (:func:`model_frames`): the past context and key ``a`` (rows 0 to past - 1; where
    only ``before`` scene frames up to the key may be read, the earliest of them repeated, as the runtime
    pads a short context), the gap, key ``b`` and up to ``after`` scene frames after it (model frames: at
    most ``past``)."""
    n = model_frames(a, b, ratio)
    step = (b - a) / n
    past = model.past
    after = min(past, int(min(after, motion.n_frames - 1 - (b - first)) / step + 1e-9))   # model frames, in the motion
    times = a - first + step * np.arange(-(past - 1), n + 1 + after)   # context, gap, target, the frames after
    if before is not None:
        times = np.maximum(times, a - first - (before - 1))
    return sample(motion, times), n


def _put_back(rotations, positions, first, a, b, span, n, past):
    """The scene frames strictly between ``a`` and ``b`` of a motion's ``rotations`` and ``positions`` (from
    scene frame ``first``) sampled from the generated ``span`` (as :func:`_at_model_rate` cut it into ``n``
    model frames), in place; their quaternions' signs as the span's (unroll the motion after)."""
    step = (b - a) / n
    generated = span.frames(past - 1, past + n)                    # key a, the generated frames, key b
    inside = np.arange(a + 1, b)
    out = sample(generated, (inside - a) / step)
    rotations[inside - first], positions[inside - first] = out.rotations, out.positions
