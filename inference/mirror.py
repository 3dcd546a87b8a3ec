"""Left/right mirror images of motions: twice the data for free, and a test of a model's symmetry.

Mirroring reflects the world through a vertical plane, ``p -> M p``, and swaps each left joint with
its right partner. A joint's world rotation ``R`` becomes ``M R L`` on its partner: ``M`` alone would
make a reflection, not a rotation, and ``L`` is the reflection that carries the joint's own frame
onto its partner's. A BVH rest pose has every joint frame equal to the world frame, so where the rest
pose is symmetric one ``L`` serves the whole skeleton: the axis across which partner offsets mirror
(Z for LaFAN1 and the dog, whose left hips sit at +Z; X for CMU). Bandai's files were exported with
joint orients, so its rest pose is not symmetric (the pelvis is lateral in Y, the chest in Z, and
the arms and legs flip all three axes), and the dog's capture turns its shoulders and head half way
round their bones relative to the rest pose. So ``L`` is found per joint, as the flip of one axis
or of all three (the two ways Maya and Blender mirror a joint frame): from the bones where they
tell, and where they cannot (a twist along a bone moves no joint) from how the joints turn.

Locally that is ``r -> L_parent r L_joint`` for rotations, ``M r L_root`` for the root, and
``t -> L_parent t`` for translations, with ``M`` as the root's ``L_parent``. Two reflections make a
half turn or nothing (``-L`` is a rotation and ``L r L' = (-L) r (-L')``), so each step multiplies by
constant quaternions: signs along a clip stay continuous, and mirroring twice gives back the same
rotations (as ``-q`` where a chain flips all three axes below a joint that flips one).
"""

import re
from dataclasses import replace

import numpy as np

from . import quat
from .errors import BetwixtError
from .motion import AXES, Motion

# The reflections a joint frame may need, as diagonals of L: flip X, Y or Z, or all three.
REFLECTIONS = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [-1.0, -1.0, -1.0]])

_SEP = r" ._:|\-"
# Left/Right as a word: capitalised after a non-letter or inside camel case, any case after a non-letter.
_WORD = re.compile(r"(?:(?<=[a-z0-9])|(?<![A-Za-z]))(Left|Right)(?![a-z])"
                   r"|(?<![A-Za-z])(left|right|LEFT|RIGHT)(?![a-z])")
# A side letter alone between separators or at an end: hand.L, upperarm_l, L_hand, thigh.R.001.
_LETTER = re.compile(rf"(?:^|(?<=[{_SEP}]))([LRlr])(?=$|[{_SEP}])")
# CMU's capital before a capital: LHipJoint, LThumb. Weak evidence: LODGroup would match too.
_CAPITAL = re.compile(rf"(?:^|(?<=[{_SEP}]))([LR])(?=[A-Z])")
_SWAP = {"Left": "Right", "Right": "Left", "left": "right", "right": "left", "LEFT": "RIGHT",
         "RIGHT": "LEFT", "L": "R", "R": "L", "l": "r", "r": "l"}


def _sides(name):
    """``(side, partner's name, strong)`` for each side marker in ``name``, strongest scheme first."""
    out = []
    for pattern, strong in ((_WORD, True), (_LETTER, True), (_CAPITAL, False)):
        for match in reversed(list(pattern.finditer(name))):
            side = match.group(match.lastindex)
            start, end = match.span(match.lastindex)
            out.append((side[0].upper(), name[:start] + _SWAP[side] + name[end:], strong))
    return out


def unsided(name):
    """``(side, name without its side marker)``: ``('L', 'Arm')`` for ``LeftArm``, ``('', name)`` if none."""
    for side, other, _ in _sides(name):
        i = next((k for k, (a, b) in enumerate(zip(name, other)) if a != b), min(len(name), len(other)))
        for marker in sorted(_SWAP, key=len, reverse=True):
            swapped = _SWAP[marker]
            if name.startswith(marker, i) and other.startswith(swapped, i) \
                    and name[i + len(marker):] == other[i + len(swapped):]:
                return side, name[:i] + name[i + len(marker):]
    return "", name


def mirror_map(names):
    """Index of each joint's left/right partner; a centre joint is its own partner.

    A name pairs with the first of its side-swapped spellings that is also a joint. A joint marked
    as sided (Left/Right as a word, or a lone L/R between separators or at an end) whose partner is
    missing is an error: mirroring it onto itself would be silently wrong. CMU's ``LHipJoint`` style
    is weaker evidence, so an unpaired capital L/R only counts when another name pairs that way.
    """
    names = list(names)
    index = {n: i for i, n in enumerate(names)}
    partner = np.arange(len(names))
    unpaired = []
    weak_pairs = False
    for i, name in enumerate(names):
        sides = _sides(name)
        found = next(((index[other], strong) for _, other, strong in sides
                      if other in index and other != name), None)
        if found is not None:
            partner[i] = found[0]
            weak_pairs |= not found[1]
        elif sides:
            unpaired.append((name, sides))
    for name, sides in unpaired:
        if sides[0][2] or weak_pairs:
            side = "left" if sides[0][0] == "L" else "right"
            raise BetwixtError(
                f"joint {name!r} is a {side} joint but the skeleton has no partner for it (looked for "
                f"{', '.join(repr(other) for _, other, _ in sides)}); rename it or add its partner "
                "before mirroring")
    bad = np.flatnonzero(partner[partner] != np.arange(len(names)))
    if len(bad):
        i = int(bad[0])
        raise BetwixtError(f"joint {names[i]!r} pairs with {names[partner[i]]!r}, which pairs with "
                           f"{names[partner[partner[i]]]!r}; left/right names must pair one to one")
    return partner


def _check_hierarchy(skeleton, partner):
    parents = skeleton.parents
    for j in range(1, len(skeleton)):
        if parents[partner[j]] != partner[parents[j]]:
            names = skeleton.names
            raise BetwixtError(
                f"joints {names[j]!r} and {names[partner[j]]!r} are partners but their parents "
                f"{names[parents[j]]!r} and {names[parents[partner[j]]]!r} are not; the skeleton is "
                "not left/right symmetric, so it cannot be mirrored")


def world_reflection(up, axis=None):
    """The diagonal of ``M``, the flip of world ``axis``: by default X, or Y for an X-up motion."""
    axis = next(a for a in AXES if a != up) if axis is None else str(axis).upper()
    if axis not in AXES or axis == up:
        raise BetwixtError(f"cannot mirror across axis {axis!r}: it must be X, Y or Z and not the "
                           f"up axis {up}")
    signs = np.ones(3)
    signs[AXES.index(axis)] = -1.0
    return signs


def _half_turns(signs):
    """Quaternions of the rotations ``-L`` for reflections ``L = diag(signs)``: a half turn or none."""
    proper = -np.asarray(signs, dtype=np.float64)
    none = np.all(proper > 0, axis=-1, keepdims=True)
    return np.concatenate([none, ~none & (proper > 0)], axis=-1).astype(np.float64)


def _bone_misfit(skeleton, partner, moving):
    """``(joints, 4)``: how far each of :data:`REFLECTIONS` misses carrying bones onto partners'.

    For each joint, its children's offsets (and End Sites) reflected against their partners', in
    squared length relative to the bones'; NaN where bones say nothing: no children, children on the
    joint (CMU's zero-length ``LHipJoint``), or a child that moves (Bandai's ``Hips`` under
    ``joint_Root``: a trajectory, whose offset is only where the take began).
    """
    pairs = [[] for _ in range(len(skeleton))]
    for c in range(1, len(skeleton)):
        if not (moving[c] or moving[partner[c]]):
            pairs[skeleton.parents[c]].append((skeleton.offsets[c], skeleton.offsets[partner[c]]))
    ends = {}
    for j, offset in skeleton.end_sites:
        ends.setdefault(j, []).append(np.asarray(offset, dtype=np.float64))
    for j, mine in ends.items():
        theirs = ends.get(int(partner[j]), [])
        if len(theirs) == len(mine):
            pairs[j].extend(zip(mine, theirs))
    longest = np.linalg.norm(skeleton.offsets[1:], axis=-1).max(initial=0.0)
    misfit = np.full((len(skeleton), len(REFLECTIONS)), np.nan)
    for j, bones in enumerate(pairs):
        if not bones:
            continue
        a, b = (np.array(v) for v in zip(*bones))
        size = 0.5 * np.sum(a * a + b * b)
        if size > (1e-9 * longest) ** 2:
            misfit[j] = np.sum((a * REFLECTIONS[:, None] - b) ** 2, axis=(1, 2)) / size
    return misfit


def _turn_misfit(moments, j, s, parent_reflection, reflection):
    """How unlike joint ``s``'s rotations joint ``j``'s become when mirrored with these reflections.

    One minus the mean over all pairs of frames of ``cos²(angle / 2)`` between the two: all pairs,
    not frame by frame, since a stride puts the left leg forward while the right is back. Through
    the quaternions' 4x4 second moments ``moments`` it costs nothing per frame.
    """
    turns = _half_turns(REFLECTIONS[[parent_reflection, reflection]])
    linear = quat.mul(quat.mul(turns[0], np.eye(4)), turns[1]).T  # q -> turns[0] q turns[1]
    return float(1.0 - np.sum(linear @ moments[j] @ linear.T * moments[s]))


def local_reflections(motions, axis=None):
    """``(joints, 3)``: the diagonal of each joint's ``L``, a row of :data:`REFLECTIONS`.

    The bones decide first: reflections within 4x of the best misfit (or 1e-6, a thousandth of the
    length) stay in. Where several do, a joint keeps its parent's reflection (a chain keeps its
    convention; the root's parent is the world, so it keeps ``M``) unless the motion clearly says
    otherwise: another reflection makes the mirrored joint turn like its partner with under half the
    misfit (the dog's shoulders and head). Where the parent's is out (Bandai's limbs leaving its
    trunk) the motion's best wins. This is a property of the capture, not of one clip: a short or
    lopsided clip (a wagging tail, a one-armed punch) can be fooled, so give ``motions`` as every clip
    of a data set and pass the result to :func:`mirror` for each. The choice is symmetric under
    mirroring, so a mirrored clip gets the same reflections back.
    """
    motions = [motions] if isinstance(motions, Motion) else list(motions)
    if not motions:
        raise BetwixtError("local_reflections needs at least one motion")
    sk = motions[0].skeleton
    for m in motions[1:]:
        if not m.skeleton.same_hierarchy(sk) or m.up != motions[0].up:
            raise BetwixtError(f"motion {m.name!r} is on another skeleton or up axis than "
                               f"{motions[0].name!r}; reflections are found for one skeleton at a time")
    partner = mirror_map(sk.names)
    _check_hierarchy(sk, partner)
    longest = np.linalg.norm(sk.offsets[1:], axis=-1).max(initial=0.0)
    moving = np.zeros(len(sk), dtype=bool)
    moments = np.zeros((len(sk), 4, 4))
    frames = sum(m.n_frames for m in motions)
    for m in motions:
        if m.n_frames:
            moving |= np.ptp(m.positions, axis=0).max(axis=-1) > 1e-4 * longest
            moments += np.einsum("fji,fjk->jik", m.rotations, m.rotations) / frames
    misfit = _bone_misfit(sk, partner, moving)
    world = int(np.argmin(world_reflection(motions[0].up, axis)))
    chosen = np.zeros(len(sk), dtype=np.int64)
    for j, p in enumerate(sk.parents):
        if partner[j] < j:
            chosen[j] = chosen[partner[j]]
            continue
        fit = misfit[j]
        ok = range(len(REFLECTIONS)) if np.isnan(fit[0]) else np.flatnonzero(fit <= 4 * fit.min() + 1e-6)
        ok = [int(k) for k in ok]
        kept = world if p < 0 else chosen[p]
        if len(ok) == 1:
            chosen[j] = ok[0]
        elif p < 0 or not frames:
            chosen[j] = kept if kept in ok else ok[0]
        else:
            turn = {k: _turn_misfit(moments, j, partner[j], chosen[p], k) for k in ok}
            best = min(turn, key=turn.get)
            chosen[j] = kept if kept in ok and turn[best] >= 0.5 * turn[kept] else best
    return REFLECTIONS[chosen]


def mirror(motion, axis=None, reflections=None):
    """The left/right mirror image of ``motion``, partners swapped, on the same skeleton.

    ``axis`` names the world axis flipped (:func:`world_reflection`); another horizontal axis gives
    the same motion turned half way round the up axis. ``reflections`` are the joints' ``L``, by
    default :func:`local_reflections` of this motion alone.

    Animated translations (the root's; every joint's in Bandai's files) are reflected. A joint
    without position channels keeps its skeleton offset, so the motion stays on the skeleton it came
    from, with the mirrored rotations. Real skeletons are not exactly symmetric: a bone and its
    partner's differ by up to 0.0005 cm in LaFAN1, 0.15 cm in the dog data, 0.3 units (1% of the
    height) in CMU's 01_01. World positions are the mirror of the original's up to that asymmetry
    summed along each chain (up to 4e-6, 0.4% and 2% of the height there), and exactly for a
    symmetric skeleton.
    """
    sk = motion.skeleton
    partner = mirror_map(sk.names)
    world = world_reflection(motion.up, axis)
    if reflections is None:
        local = local_reflections(motion, axis)
    else:
        local = np.asarray(reflections, dtype=np.float64)
        if local.shape != (len(sk), 3) or not np.all((local[:, None] == REFLECTIONS).all(-1).any(-1)) \
                or not np.array_equal(local[partner], local):
            raise BetwixtError(f"motion {motion.name!r}: reflections must be local_reflections() of its "
                               f"skeleton, {len(sk)} rows")
    rotations, positions = reflect(motion.rotations, motion.positions, reflection(sk.parents, partner, world, local))
    still = np.array([not any(c.endswith("position") for c in chans) for chans in sk.channels])
    positions[:, still] = sk.offsets[still]
    return replace(motion, rotations=rotations, positions=positions)


def reflection(parents, partner, world, reflections):
    """What :func:`reflect` takes, for a skeleton's ``parents``, its :func:`mirror_map` ``partner``, the
    :func:`world_reflection` and the joints' :func:`local_reflections`: computed once where many frames are
    mirrored a few at a time (the runtime's fills). A joint's rotation ``q`` mirrors to ``h q k``, ``h`` and
    ``k`` half turns about an axis (or none): a quaternion with one component of 1, so that each component of
    the product is one of ``q``'s, its sign perhaps turned. Those (which of the partner's components, and
    the sign) are found here once, by the product itself, so that :func:`reflect` is a gather."""
    above = np.where((np.asarray(parents) < 0)[:, None], world, reflections[np.maximum(parents, 0)])
    before, after, partner = _half_turns(above), _half_turns(reflections), np.asarray(partner)
    basis = np.eye(4)[:, None]                                                  # (4 components, 1, 4)
    product = quat.mul(quat.mul(before, basis), after)[:, partner]             # (4 components, J, 4): one of ±1
    component = np.abs(product).argmax(axis=0)                                 # (J, 4)
    sign = np.take_along_axis(product, component[None], axis=0)[0]
    return partner[:, None] * 4 + component, sign, above[partner], partner


def reflect(rotations, positions, reflection):
    """Local rotations (..., J, 4) and translations (..., J, 3) mirrored by a :func:`reflection`:
    :func:`mirror`'s arithmetic on bare arrays. Applied twice it gives the arrays back (rotations
    possibly as ``-q``)."""
    source, sign, scale, partner = reflection
    flat = rotations.reshape(rotations.shape[:-2] + (-1,))
    return flat[..., source] * sign, positions[..., partner, :] * scale
