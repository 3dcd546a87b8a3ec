"""A fill's ends: the steps in pose and velocity at a gap's two keys eased out, the standing feet kept.

A learned fill meets its keys with a kink: on LaFAN1's 30-frame gaps its joints accelerate 1.7x as fast
within three frames of a key as the capture does there (docs/experiments.md, "In-betweening's ends"). Easing
each joint's local rotation against the key's motion (:func:`.inertialize.eased`) smooths the kink, but the
hips' and legs' offsets, fading each on its own, carry a standing foot along the floor: its contact is lost
and skating rises. So the contacts are found on the fill before the ease, and each leg whose foot (ankle,
paw or toe) stands there is put back on that foot after it by the leg IK (:func:`.leg_ik.solve_leg`), fading
in and out with the contact as a planted foot's lock does (:func:`.contacts.nearness`).

Where one fill's end key starts the next fill (Decompress's keys), both sides are the model's and neither
velocity is the user's to ease toward; there the frames next to the key are made the smoothest that leave the
key and the frames further out where they are (:func:`joined`).
"""

from dataclasses import replace

import numpy as np

from . import quat
from .anatomy import legs
from .contacts import FADE, GROUND, contacts, fade_frames, nearness, standing
from .guard import ground
from .inertialize import eased
from .leg_ik import reachable, solve_leg
from .motion import AXES, forward_kinematics
from .transition import held

EASE = 10   # model frames: the shortest ease within 1.5x of the capture's acceleration at the keys (experiments.md)
JOIN = 5    # model frames either side of a key between two fills made smooth (experiments.md, "Decompress's keys")


def ends(gap, rotations, positions, layout, first=True, last=True, ease=EASE):
    """``(rotations, positions)``: the fill ``rotations`` (B, n, J, 4), ``positions`` (B, n, J, 3) of the batch
    ``gap`` (a :class:`.transition.Gap`) eased over ``ease`` frames at its ``first`` key against the key and
    the frame before it, where the gap has one, and at its ``last`` against the key and the frame after it,
    where the gap has one; then the legs whose feet stand on the fill put back on them (``layout``: the
    model's up axis, body height, fps). A hold (:func:`.transition.held`) and a gap shorter than two eases
    are left as the model made them: an ease shorter than 10 frames sharpens the kink it eases, and two
    overlapping ones in a 15-frame gap pulled the fill 5% further from the capture (experiments.md)."""
    before = None
    if first and gap.past_rotations.shape[1] > 1:
        before = (gap.past_rotations[:, -2:], gap.past_positions[:, -2:])
    after = None
    if last and gap.after_rotations is not None and gap.after_rotations.shape[1] > 0:
        after = (np.concatenate([gap.target_rotations[:, None], gap.after_rotations[:, :1]], axis=1),
                 np.concatenate([gap.target_positions[:, None], gap.after_positions[:, :1]], axis=1))
    if before is None and after is None:
        return rotations, positions
    hold = held(gap, layout.height)[:, None, None, None]   # two identical keys hold still, whatever runs into them
    if rotations.shape[1] < 2 * ease or hold.all():
        return rotations, positions
    rot, pos = eased(rotations, positions, before, after, ease)
    found = legs(gap.skeleton)
    if found:
        rot = _on_their_feet(gap, rotations, positions, rot, pos, found, layout)
    return np.where(hold, rotations, rot), np.where(hold, positions, pos)


def _on_their_feet(gap, rotations, positions, rot, pos, found, layout):
    """(B, n, J, 4) the eased fill's rotations ``rot`` (positions ``pos``) with each leg of ``found`` whose foot
    stands in the fill as the model made it (``rotations``, ``positions``) turned so that the foot stays where
    it stood there, by how near a frame is to that contact (:func:`.contacts.nearness`)."""
    skeleton, parents, up = gap.skeleton, gap.skeleton.parents, layout.up
    past, n = gap.past_rotations.shape[1], rotations.shape[1]
    sides = [gap.past_rotations, rotations, gap.target_rotations[:, None]], \
        [gap.past_positions, positions, gap.target_positions[:, None]]
    if gap.after_rotations is not None:
        sides[0].append(gap.after_rotations)
        sides[1].append(gap.after_positions)
    grot, gpos = forward_kinematics(np.concatenate(sides[0], axis=1), np.concatenate(sides[1], axis=1), parents)
    egrot, egpos = forward_kinematics(rot, pos, parents)                       # the eased fill, (B, n, J, ·)
    given = np.ones(grot.shape[1], dtype=bool)
    given[past:past + n] = False
    fill = slice(past, past + n)
    fade = fade_frames(layout.fps, FADE)
    toes = [leg.toe for leg in found if leg.toe >= 0]
    out = rot.copy()
    for b in range(rot.shape[0]):
        below, stands, paws, height = standing(skeleton, found, grot[b], gpos[b], layout.height)
        stood = contacts(stands, ground(stands, given, slice(None), AXES[up], GROUND), up, height, layout.fps, paws)
        if toes:   # a toe standing under a lifted heel holds its foot too
            tiptoe = contacts(gpos[b][:, toes], ground(gpos[b], given, toes, AXES[up], GROUND), up, height, layout.fps)
        eased_below, eased_stands = standing(skeleton, found, egrot[b], egpos[b], layout.height)[:2]
        for k, leg in enumerate(found):
            on = stood[:, k] | (tiptoe[:, toes.index(leg.toe)] if leg.toe >= 0 else False)
            weight = nearness(on, fade)[fill]
            rows = np.flatnonzero(weight > 0)
            if not len(rows):
                continue
            w = weight[rows, None]
            point = eased_stands[rows, k] + w * (stands[fill][rows, k] - eased_stands[rows, k])
            g, p = egrot[b, rows], egpos[b, rows]
            ankle = reachable(p[:, leg.hip], p[:, leg.foot], point - eased_below[rows, k], skeleton.offsets, leg)
            toe = None if leg.toe < 0 else p[:, leg.toe] + w * (gpos[b][fill][rows, leg.toe] - p[:, leg.toe])
            out[b, rows] = solve_leg(out[b, rows], g, p, parents, leg, ankle, toe, up)
    return out


def joined(motion, gaps, reach=JOIN):
    """``motion`` with each key that ends one of ``gaps`` (sorted ``(start, end)`` key pairs) and starts the
    next met without a kink: the generated frames within ``reach`` frames of it on either side (at most half
    of each gap, so two keys' frames never meet) replaced by those of least squared acceleration, per channel
    (every joint's quaternion, its signs made continuous in time, and position), with the key and the two
    frames beyond them held. A fill starts where the frames before its key carry it and its network's own
    velocity takes over a frame later, and it ends onto the key's velocity as the next fill guessed it: a
    jolt through the whole body on the frames either side of the key, twice the capture's acceleration
    there on Decompress, which this takes below the capture's while moving the frames less than it brings
    them nearer the capture (experiments.md, "Decompress's keys"). Keys beside the user's frames are
    :func:`ends`'s. The kink is the model's, a frame of its own either side of the key, so ``reach`` counts
    the model's frames (a scene at another rate converts it); at a person's 30 fps and a dog's 60 alike, five
    of them took the keys' acceleration below the capture's and the fill nearer it."""
    frames = motion.n_frames
    windows = []
    for (start, key), (same, end) in zip(gaps[:-1], gaps[1:]):
        if key != same:
            continue
        before, after = min(reach, (key - start - 1) // 2), min(reach, (end - key - 1) // 2)
        rows = np.arange(max(key - before - 2, 0), min(key + after + 3, frames))
        free = np.flatnonzero((rows >= key - before) & (rows <= key + after) & (rows != key))
        if len(free) and len(rows) >= 3:
            windows.append((rows, free))
    if not windows:
        return motion
    # only the windows' rows, as a whole motion's channels would be: the rotations' signs continuous from the
    # first frame (quat.unroll's), each row its joints' quaternions then positions
    read = np.unique(np.concatenate([rows for rows, _ in windows]))
    q = motion.rotations
    x = np.concatenate([(q[read] * quat.unroll_signs(q)[read][..., None]).reshape(len(read), -1),
                        motion.positions[read].reshape(len(read), -1)], axis=1)
    changed = np.zeros(len(read), dtype=bool)
    moves = {}   # a window's shape -> the matrix that takes its frames to the free ones' moves
    for rows, free in windows:
        at = np.searchsorted(read, rows)
        shape = (len(rows), *free)
        if shape not in moves:
            second = np.diff(np.eye(len(rows)), 2, axis=0)                 # (rows - 2, rows): accelerations
            moves[shape] = np.linalg.pinv(second[:, free]) @ second
        x[at[free]] -= moves[shape] @ x[at]
        changed[at[free]] = True
    joints, made = q.shape[1], read[changed]
    rotations = q.copy()
    rotations[made] = quat.normalize(x[changed, :4 * joints].reshape(-1, joints, 4))
    positions = motion.positions.copy()
    positions[made] = x[changed, 4 * joints:].reshape(-1, *positions.shape[1:])
    return replace(motion, rotations=rotations, positions=positions)
