"""A Motion VAE's motion as it is given to the user: the root's track smoothed, and the feet held where
the roll-out stood them.

The floor step (:mod:`.floor`) steps the root by the feet on the floor, so the feet stand; but the
network's feet shake a few centimetres from frame to frame in the root frame, and a root stepped by them
shakes as much (the hips' velocity changed 4-5 cm a frame per frame on a path, 10x the capture's). So the
hips' track over the generated frames is smoothed (:func:`smoothed`, a Gaussian of SMOOTH seconds), and
the body moves with it; the feet the roll-out stood on (:meth:`.floor.Legs.standing`, which knows them by
their height however they shake) are then held where they stood by :mod:`..contacts`' locks and leg IK
(:func:`held`). Planting by speed alone (:func:`..contacts.plant`, which runs after this as for any
model) missed them: a shaking foot is too fast to count as standing.
"""

from dataclasses import replace

import numpy as np

from ..anatomy import legs
from ..contacts import GROUND, REACH, fade_frames, nearness, offsets, steps
from ..leg_ik import pivoted, solve_leg
from ..motion import forward_kinematics
from .floor import standing_share

SMOOTH = 0.07   # s: the spread (sigma) of the Gaussian that smooths the hips' track (2 frames at 30 fps)
STOP = 0.5      # s: after a path's end, the hips come to a stop over this long
LYING = (0.1, 0.2)   # of the body's height: hips this low over the floor lie on it, this high stand on their feet


def smoothed(track, fps, first=0):
    """``track`` (F, 3) with its frames from ``first`` on smoothed by a Gaussian of SMOOTH seconds, the
    frames before them (a continuation's context) and the last frame repeated at its ends held as they
    are: a track that joins what came before without a jump."""
    sigma = SMOOTH * fps
    reach = int(np.ceil(3 * sigma))
    if reach < 1 or len(track) - first < 2:
        return track
    kernel = np.exp(-0.5 * (np.arange(-reach, reach + 1) / sigma) ** 2)
    kernel /= kernel.sum()
    padded = np.concatenate([np.repeat(track[:1], reach, axis=0), track, np.repeat(track[-1:], reach, axis=0)])
    out = track.copy()
    for c in range(track.shape[1]):
        out[first:, c] = np.convolve(padded[:, c], kernel, mode="valid")[first:]
    return out


def held(motion, standing, first, height, boxes=None):
    """``motion`` (Y up) with its frames from ``first`` on changed in the legs' rotations alone: each foot
    joint of ``standing`` (F, K) bool (K: :class:`.floor.Legs`' feet, every leg's foot, then every toe) held
    at its mean position over each stretch it stands (cut into steps no longer than the contacts' REACH of
    ``height``), or where a frame before ``first`` has it, as it is there (a variant's first frame, next to
    its key: held at the stance's mean, such a foot stepped onto it in one frame), and down on its ground (the
    GROUND percentile of its height), fading to its own path over the contacts' fade; where a toe is held and
    its ankle is not, the ankle's target on the foot's length about the toe's (:func:`..leg_ik.pivoted`); the
    legs put there by :func:`..leg_ik.solve_leg`, the foot aimed at its toe's target. ``boxes`` (K,): a foot
    joint's ground on a box beside which the body has come down (-inf where none), which it is put back up onto
    while it stands, its leg bent."""
    found = legs(motion.skeleton)
    if not found or first >= motion.n_frames:
        return motion
    feet = [leg.foot for leg in found] + [leg.toe for leg in found if leg.toe >= 0]
    parents = motion.skeleton.parents
    grot, gpos = forward_kinematics(motion.rotations, motion.positions, parents)
    generated = np.arange(motion.n_frames) >= first
    fade = fade_frames(motion.fps)
    path = gpos[:, feet]
    stood = steps(path, standing, generated, 1, REACH * height, fade)
    target = path + offsets(path, stood, generated, fade)
    # down onto its ground while it stands (faded in and out, a swing near the floor was pulled down and slid)
    grounds = np.percentile(path[generated, :, 1], GROUND, axis=0)
    target[..., 1] -= stood * np.maximum(target[..., 1] - grounds, 0.0)
    if boxes is not None:
        target[..., 1] += stood * np.maximum(boxes - target[..., 1], 0.0)
    rows = np.flatnonzero(generated)
    rotations = motion.rotations.copy()
    toes = {leg.toe: len(found) + i for i, leg in enumerate(leg for leg in found if leg.toe >= 0)}
    for k, leg in enumerate(found):   # a held toe and a free ankle: the foot pivots on the toe
        if leg.toe in toes:
            t = toes[leg.toe]
            weight = nearness(stood[:, t], fade) * (1.0 - nearness(stood[:, k], fade))
            target[:, k] = pivoted(target[:, k], target[:, t], np.linalg.norm(motion.skeleton.offsets[leg.toe]),
                                   weight)
    for k, leg in enumerate(found):
        toe = target[rows, toes[leg.toe]] if leg.toe in toes else None
        rotations[rows] = solve_leg(rotations[rows], grot[rows], gpos[rows], parents, leg, target[rows, k], toe, 1)
    return replace(motion, rotations=rotations)


def settled(motion, standing, first, height):
    """``motion`` with its hips' track smoothed from ``first`` on (:func:`smoothed`) and its feet then
    :func:`held` where ``standing`` (F, K) says they stand; of the frames before ``first`` (a continuation's
    clip) only the few the smoothing and the locks' fades reach are read."""
    start = max(first - int(np.ceil(3 * SMOOTH * motion.fps)) - fade_frames(motion.fps) - 1, 0)
    part = motion.frames(start)
    positions = part.positions.copy()
    positions[:, 0] = smoothed(positions[:, 0], motion.fps, first - start)
    done = held(replace(part, positions=positions), standing[start:], first - start, height)
    return replace(motion, rotations=np.concatenate([motion.rotations[:start], done.rotations]),
                   positions=np.concatenate([motion.positions[:start], done.positions]))


def stood(motion, grounds, height, floors=None):
    """``motion`` (Y up) moved up or down, each frame by its hips, so that its lowest foot joint (every leg's
    foot, then every toe) stands on its ground ``grounds`` (K,), smoothed (:func:`smoothed`) and its feet
    :func:`held` where they stand (:func:`.floor.standing_share`): a variant's
    frames after the target blend (:func:`.control.onto_key`), which turns the legs and moves the hips
    toward the key without regard to the floor, and floated the feet in 42 % of the frames where the
    capture floats in 5 %. ``floors`` (K,): each foot joint's ground on the floor, where that is lower than
    ``grounds`` (a foot on a box all around the gap, the key's other foot on the floor): the body comes
    down toward it over the gap (smoothstep), so that the stepping foot can reach the floor, and the foot
    on the box is held on it, its leg bent. A body whose hips are as low as LYING is not moved down."""
    found = legs(motion.skeleton)
    if not found:
        return motion
    feet = [leg.foot for leg in found] + [leg.toe for leg in found if leg.toe >= 0]

    def heights(m):   # (F, K) of the foot joints above their grounds
        return forward_kinematics(m.rotations, m.positions, m.skeleton.parents)[1][:, feet, 1] - grounds

    raised = np.zeros(len(feet)) if floors is None else grounds - floors   # (K,) a box's height, or 0
    ramp = np.linspace(0.0, 1.0, motion.n_frames)[:, None]
    down = _smoothstep(ramp) * raised                                          # (F, K)
    positions = motion.positions.copy()
    shift = (heights(motion) + down).min(axis=1)
    # a body lying on the floor rests on its back, not its feet: it is lifted off a sunk foot but not put down
    # onto one (its hips sank 4 cm under the key's, which lies with its feet up)
    lying = np.clip(((positions[:, 0, 1] - grounds.min()) / height - LYING[0]) / (LYING[1] - LYING[0]), 0.0, 1.0)
    positions[:, 0, 1] -= np.where(shift < 0, shift, shift * _smoothstep(lying))
    positions[:, 0] = smoothed(positions[:, 0], motion.fps)
    moved = replace(motion, positions=positions)
    up = heights(moved)
    up[:, raised > 0] = np.maximum(up[:, raised > 0], 0.0)   # one the body came down beside still stands on its box
    boxes = np.where(raised > 0, grounds, -np.inf)
    return held(moved, standing_share(up) >= 0.5, 1, height, boxes)   # the first frame, next to the key, as it is


def stopped(motion, end):
    """``motion`` with its hips brought to a stop on the ground over STOP seconds from frame ``end`` (where
    its path ends), eased in, and held there after: the control keeps the character at the path's end,
    but a standing body stepped by its feet (:meth:`.floor.Legs.anchor`) shuffled about it, 10-25 cm in a
    half second, for up to 2 s. Its hips still rise and fall, and its feet are held after this (:func:`held`)."""
    frames = motion.n_frames
    if end >= frames - 1:
        return motion
    stop = min(end + max(int(round(STOP * motion.fps)), 1), frames - 1)
    ramp = np.clip((np.arange(frames) - end) / max(stop - end, 1), 0.0, 1.0)
    ease = _smoothstep(ramp)[:, None]
    positions = motion.positions.copy()
    positions[:, 0, [0, 2]] += ease * (positions[stop, 0, [0, 2]] - positions[:, 0, [0, 2]])
    return replace(motion, positions=positions)


def _smoothstep(t):
    """3t² - 2t³ of ``t`` in [0, 1]: a ramp that starts and ends at rest."""
    return t * t * (3.0 - 2.0 * t)
