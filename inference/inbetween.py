"""The gaps of a motion, and filling them in order: the same for every model that fills a gap.

A model here is anything with ``past`` (the frames of context it reads before a gap), ``floor`` (the
height of the ground it learned on) and ``fill(gap, **options) -> (rotations, positions)`` for a batch
of :class:`~.transition.Gap` s.
"""

from dataclasses import replace

import numpy as np

from . import quat
from .anatomy import feet
from .ends import ends, joined
from .guard import ground
from .inplace import treadmill
from .modelfile import ModelError
from .motion import AXES, forward_kinematics
from .transition import Gap, held, key_rates, stacked, toward_spline

BATCH = 16   # gaps a network call at most: past a few it is compute-bound; Esc and progress are heard between
LONG = 64    # gaps of a chain filled in order; a longer one is cut into blocks filled side by side
BLOCK = 32   # gaps a block holds at the fewest
WARM = 2     # gaps before a block that it fills first, to start from the motion rather than its first key alone


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


def fill_rounds(gaps, most, passes=2, long=None):
    """The rounds in which ``gaps`` (sorted ``(start, end)`` key pairs) are filled: lists of gap indices,
    the gaps of a round filled in one batch, each reading only frames that are the user's or were made in
    an earlier round (:func:`readable`).

    Gaps near enough to read each other's frames (fewer than ``most`` between them: one gap's past context
    or frames after its key reach into the other) form chains, as Decompress's do, and a chain is filled
    in order, each gap reading the frames made before it (Harvey & Pal 2018, §7.4). A chain longer than
    ``long`` gaps (default :data:`LONG`) is cut into blocks of :data:`BLOCK` gaps or more, at most
    :data:`BATCH`, filled side by side: round ``k`` holds the ``k``-th gap of every block, and each block
    first fills the :data:`WARM` gaps before it (which the block before fills again later), so that its own
    first gap reads motion rather than its key alone. A gap that read less than it could, or frames filled
    again after it read them (the frames after its end key in a chain, a block's warm-up), is filled again in
    a second pass (``passes=2``), in the same rounds, reading what the first pass made, so that the motion
    runs through its keys rather than snapping onto them."""
    long = LONG if long is None else long
    chains = []
    for i in range(len(gaps)):
        if i and gaps[i][0] - gaps[i - 1][1] < most:
            chains[-1].append(i)
        else:
            chains.append([i])
    pieces = []   # (the gaps before a block that it fills first, to start from them, the block's own)
    for chain in chains:
        length = len(chain) if len(chain) <= long else max(BLOCK, -(-len(chain) // BATCH))
        cut = [chain[k:k + length] for k in range(0, len(chain), length)]
        pieces += [(cut[b - 1][-WARM:] if b else [], piece) for b, piece in enumerate(cut)]
    first = _in_rounds([warm + piece for warm, piece in pieces])
    if passes < 2:
        return first
    n_frames = max((end for _, end in gaps), default=0) + most + 1
    known, everything = readable(gaps, first, n_frames), np.ones(n_frames + 1, dtype=bool)
    last = np.full(n_frames + 1, -1)   # the round that last makes each frame
    for r, members in enumerate(first):
        for i in members:
            last[gaps[i][0] + 1:gaps[i][1]] = r
    short = set()
    for r, members in enumerate(first):   # as a gap was last filled: did it read all it could, as it ends up?
        for i in members:
            (start, end), (before, after) = gaps[i], context(known[r], *gaps[i], most, most)
            read = np.r_[start + 1 - before:start + 1, end + 1:end + 1 + after]
            if (before, after) != context(everything, start, end, most, most) or (last[read] > r).any():
                short.add(i)
            else:
                short.discard(i)
    return first + [again for again in _in_rounds([[i for i in piece if i in short] for _, piece in pieces]) if again]


def _in_rounds(sequences):
    """Round ``k`` holds the ``k``-th gap of each of ``sequences``."""
    return [[seq[k] for seq in sequences if k < len(seq)] for k in range(max(map(len, sequences), default=0))]


def readable(gaps, rounds, n_frames):
    """(rounds, n_frames + 1) bool: the frames a gap of each of ``rounds`` reads, the user's and those
    made in an earlier round (the extra last frame, past the motion, is never readable)."""
    made = np.full(n_frames + 1, len(rounds))   # the round that first makes each frame
    made[:n_frames] = -1
    for r in reversed(range(len(rounds))):
        for i in rounds[r]:
            start, end = gaps[i]
            made[start + 1:end] = r
    return made[None] < np.arange(len(rounds))[:, None]


def context(known, start, end, past, most):
    """``(before, after)``: how many frames of a gap's context it reads, given ``known`` (readable frames,
    :func:`readable`): up to ``past`` ending at key ``start`` (at least the key) and up to ``most`` after
    key ``end``, each up to the first frame it may not read."""
    back = known[max(0, start + 1 - past):start + 1][::-1]
    ahead = known[end + 1:end + 1 + most]
    return (int(np.argmin(back)) if not back.all() else len(back)), \
        (int(np.argmin(ahead)) if not ahead.all() else len(ahead))


def between_keys(gaps, i):
    """``(before, start, end, after)``: the key frames around the ``i``-th of ``gaps`` and the keys either
    side of those, where that gap runs between two others (Decompress), whose keys give the tangents of
    the spline through the keys (:func:`.transition.key_rates`); None where it does not."""
    if 0 < i < len(gaps) - 1 and gaps[i - 1][1] == gaps[i][0] and gaps[i + 1][0] == gaps[i][1]:
        return gaps[i - 1][0], *gaps[i], gaps[i + 1][1]
    return None


def fill_gaps(model, motion, gaps, progress=None, passes=2, momentum=None, rates=None, beyond=None, parting=None,
              **kwargs):
    """``motion`` with the frames strictly inside each ``(start, end)`` key pair generated, in the rounds of
    :func:`fill_rounds`: a gap's past context is taken from the frames generated before it (Harvey & Pal
    2018, §7.4), and where gaps follow one another (Decompress), a gap first filled blind to how the motion
    goes on through its end key is filled again (``passes=2``) reading the first pass's frames after it, so
    that the motion runs through the key rather than snapping onto it. The gaps of a round are filled in
    batches of :data:`BATCH`; ``progress(done, total)`` is called after each batch (it may raise to stop
    the work).

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
    ``rates``); by default, those no gap generates. A key between two gaps (Decompress's) is met without a
    kink (:func:`.ends.joined`).

    ``parting``, a dict where given, gets each gap's (by its index in ``gaps``) parting as its last fill had it
    (``RTNModel.fill_parted``; a model without views has none).
    """
    filling = Filling(model, motion, gaps, momentum, rates, beyond)
    rounds = fill_rounds(gaps, model.past, passes)
    known = readable(gaps, rounds, motion.n_frames)
    total, done = sum(map(len, rounds)), 0
    for r, members in enumerate(rounds):
        made = []   # written when the round ends: its gaps read the motion as the round began
        for batch in (members[k:k + BATCH] for k in range(0, len(members), BATCH)):
            made += filled_together(model, [(filling, i, known[r]) for i in batch], kwargs)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        filling.write(made)
    if parting is not None:
        parting.update(filling.parting)
    return joined(filling.result(), sorted(gaps))


class Filling:
    """A motion whose ``gaps`` are being filled (see :func:`fill_gaps`): lowered onto the model's floor and
    carried along the ground where it steps in place, its fills put onto their keys as they come, and the
    motion given back as it stood, with the user's frames as they were."""

    def __init__(self, model, motion, gaps, momentum=None, rates=None, beyond=None):
        self.model, self.motion, self.gaps = model, motion, gaps
        self.momentum, self.rates, self.beyond = momentum, rates, beyond
        self.parting = {}   # gap index -> its last fill's parting (RTNModel.fill_parted)
        out, self.level = on_model_floor(model, motion, gaps)
        self.shift = treadmill(motion, gaps, model.layout.height)
        if self.shift is not None:
            out.positions[:, 0] += self.shift
        self.out = replace(out, rotations=motion.rotations.copy())
        self.generated = np.zeros(motion.n_frames + 1, dtype=bool)
        for start, end in gaps:
            self.generated[start + 1:end] = True

    def cut(self, i, known):
        """The ``i``-th gap as the model reads it, with the context ``known`` (:func:`readable`) allows."""
        start, end = self.gaps[i]
        return gap_in(self.out, start, end, *context(known, start, end, self.model.past, self.model.past))

    def fitted(self, i, gap, rotations, positions, variation):
        """``(start, end, rotations, positions)``: the model's fill of the ``i``-th gap (cut as ``gap``) with the
        root leaned to the keys' spline (:func:`_leaned`) and its ends eased where the frames beyond its keys are
        the user's and keyed (:func:`.ends.ends`)."""
        model, generated, (start, end) = self.model, self.generated, self.gaps[i]
        positions = _leaned(model, self.out, self.gaps, i, gap, positions, generated, self.momentum, variation,
                            None if self.rates is None else self.rates[i])
        users = (start > 0 and not generated[start - 1], not generated[end + 1]) if self.beyond is None \
            else self.beyond[i]
        keyed = self.momentum is None or self.momentum[i]   # else the frames beyond are a curve's guess between keys
        return (start, end, *ends(gap, rotations, positions, model.layout, keyed and users[0], keyed and users[1]))

    def write(self, made):
        """The fills ``made`` (:meth:`fitted`'s) put into the motion being filled."""
        for start, end, rotations, positions in made:
            self.out.rotations[start + 1:end], self.out.positions[start + 1:end] = rotations[0], positions[0]

    def result(self):
        """The motion with every gap as filled, raised back off the model's floor and off the treadmill."""
        up = AXES.index(self.motion.up)
        positions = self.motion.positions.copy()   # the user's frames as they were, bit for bit
        for start, end in self.gaps:
            positions[start + 1:end] = self.out.positions[start + 1:end]
            positions[start + 1:end, 0, up] += self.level
            if self.shift is not None:
                positions[start + 1:end, 0] -= self.shift[start + 1:end]
        return replace(self.out, rotations=quat.unroll(self.out.rotations), positions=positions)


def filled_together(model, gaps, options):
    """:meth:`Filling.fitted`'s fills of ``gaps``, ``[(filling, gap index, readable frames), ...]`` (gaps of
    one motion or of several), in one network call for every group of one shape (length, frames before and
    after: gaps of one shape stack into one batch); each filling keeps its gaps' partings where the model
    gives them (``fill_parted``)."""
    cuts = [filling.cut(i, known) for filling, i, known in gaps]
    parted = getattr(model, "fill_parted", None)
    shape = lambda gap: (gap.length, gap.past_rotations.shape[1],                      # noqa: E731
                         0 if gap.after_rotations is None else gap.after_rotations.shape[1])
    out = [None] * len(cuts)
    for key in dict.fromkeys(map(shape, cuts)):
        group = [k for k, gap in enumerate(cuts) if shape(gap) == key]
        batch = stacked([cuts[k] for k in group])
        rotations, positions, parting = parted(batch, **options) if parted else (*model.fill(batch, **options), None)
        for row, k in enumerate(group):
            filling, i, _ = gaps[k]
            if parting is not None:
                filling.parting[i] = float(parting[row])
            out[k] = filling.fitted(i, cuts[k], rotations[row:row + 1], positions[row:row + 1],
                                    options.get("variation"))
    return out


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
