"""Sampling-based control of a Motion VAE (Ling et al. 2020, §4.2): many roll-outs of random latent
sequences, and the ones that best do what is asked kept.

Following a path (:func:`along`): every COMMIT frames, FOLLOWERS roll-outs of HORIZON frames from
where the character is; the one whose root keeps nearest the path's timed positions and the path
itself, upright, facing its direction, its feet on the floor, over them gives the next COMMIT frames
(receding horizon). Its latents are the plan: the next choice is among the plan moved on, REFINED - 1
nudges of it and fresh draws (:func:`drawn`), so a plan that keeps to the path is refined rather than drawn
again from nothing.

Variants to a key: from the frames before a gap, :func:`candidates` roll-outs run to the key's frame
(one onnxruntime call a frame for all of them, the floor step included). Every STEER frames, those that
can no longer reach the key in the time left go on as copies of those nearer it (:func:`steered`), so
that the draws are spent where the key can be reached. At the key's frame each is scored by how far its
last pose is from the key (:func:`misses`: the root on the floor, its facing, the joints in the root
frame); K are kept among the best, each the one farthest from those kept before (:func:`diverse`,
greedy farthest-point), and the target blend (:mod:`..rtn.blends`) closes what they still miss over the
last frames (:func:`onto_key`).
"""

import numpy as np

from .. import quat
from ..polyline import nearest
from ..rtn.blends import target_blend, target_ramp
from .features import fields, root_path

CANDIDATES = 64         # roll-outs per variant asked for
MOST_CANDIDATES = 1024  # roll-outs of one gap (more variants share them)
POOL = 8                # variants are chosen among the best POOL per variant asked for
FACING = 0.25           # of the body's height: the score of a facing one radian off the key's
STEER = 4               # frames between two resamplings of the roll-outs
TURN = 1.5              # radians a second: how fast it may still turn to the key's facing
PACE = 1.0              # body heights a second: how fast a roll-out may still go to reach the key's root
FOLLOWERS = 128         # roll-outs a path, each time the next frames along it are chosen
HORIZON = 30            # frames each is rolled out to be judged against the path
BEHIND = 1.0            # s of the path before where its timing has got to that a roll-out may be nearest
UPRIGHT = (0.45, 0.72)  # of the body's height: the hips of a walk or a run along a path (LaFAN1's: 0.55)
COMMIT = 5              # frames of the best one kept before choosing again
REFINED = 64            # of the roll-outs, those that refine the plan chosen before
OVER = 0.5              # s: how much a roll-out's root going faster than its path counts (as a distance)
NUDGE = 1.0             # how far (in the prior's spreads) a refinement's latents stray from the plan's
FLOATING = 2.0          # how much a roll-out's lowest foot above the floor counts (as that much distance, twice)
SKID = 1.0              # s: how much a roll-out's standing feet's speed over the ground counts (as a distance)


def candidates(k):
    """How many roll-outs one gap's ``k`` variants are chosen from."""
    return min(CANDIDATES * k, max(MOST_CANDIDATES, k))


def steered(rolled, start, key, left, fps, height):
    """Indices (C,) that resample C roll-outs ``rolled`` (C, t, D) ``left`` frames before the key: those
    beyond reach of the key (their root farther from its root than PACE covers in the time left, their
    facing further from its facing than TURN turns: centimetres beyond, FACING of the height a radian),
    the farthest first, are replaced by copies of the nearest half, which then go on with their own
    draws of z. ``start`` and ``key`` as in :func:`misses`."""
    origins, turned = root_path(rolled, start[0], start[1], fps)
    distance = np.linalg.norm((origins[:, -1] - key[0])[:, [0, 2]], axis=-1) - PACE * height * left / fps
    facing = np.abs(np.angle(np.exp(1j * (turned[:, -1] - key[1])))) - TURN * left / fps
    beyond = np.maximum(distance, 0) + FACING * height * np.maximum(facing, 0)
    order = np.argsort(beyond, kind="stable")
    worse = order[len(order) // 2:][::-1]
    worse = worse[beyond[worse] > 0]
    index = np.arange(len(rolled))
    index[worse] = order[:len(worse)]
    return index


def misses(rolled, start, key, fps, height):
    """(C,) how far the last of C roll-outs' poses ``rolled`` (C, T, D) is from the ``key``: the root's
    distance on the floor, FACING of ``height`` a radian of facing, and the joints' mean distance in the
    root frame. ``start`` is the root before the first pose, ``(origin (3,), facing angle)``; ``key``
    ``(origin, facing angle, joint positions (J, 3) in its root frame)``."""
    origins, turned = root_path(rolled, start[0], start[1], fps)
    positions = rolled[:, -1, slice(*fields(len(key[2]))["positions"])].reshape(len(rolled), -1, 3)
    facing = np.abs(np.angle(np.exp(1j * (turned[:, -1] - key[1]))))
    return (np.linalg.norm((origins[:, -1] - key[0])[:, [0, 2]], axis=-1) + FACING * height * facing
            + np.linalg.norm(positions - key[2], axis=-1).mean(axis=-1))


def diverse(score, rolled, start, fps, k):
    """The indices (k,) of ``k`` of C roll-outs ``rolled`` (C, T, D) with misses ``score`` (C,): the best,
    then among the best POOL * k, each the one farthest (the root's path and the joints in the root frame,
    mean distance over the frames) from the nearest of those chosen before."""
    pool = np.argsort(score, kind="stable")[:POOL * k]
    origins = root_path(rolled[pool], start[0], start[1], fps)[0]
    part = slice(*fields((rolled.shape[-1] - 3) // 12)["positions"])
    joints = rolled[pool][..., part].reshape(len(pool), rolled.shape[1], -1, 3)

    def distance(i):   # (len(pool),) from the pool's i-th
        return (np.linalg.norm(origins - origins[i], axis=-1).mean(axis=-1)
                + np.linalg.norm(joints - joints[i], axis=-1).mean(axis=(-2, -1)))

    chosen, nearest = [0], distance(0)
    for _ in range(1, k):
        chosen.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, distance(chosen[-1]))
    return pool[chosen]


def onto_key(rotations, hips, key_rotations, key_hips, blend=None):
    """Local rotations (K, T, J, 4) and the hips' positions (K, T, 3) of K roll-outs whose last frame is
    the key's, pulled onto the key (``key_rotations`` (J, 4), ``key_hips`` (3,)) by the target blend over
    ``blend`` frames (default: all T): the same, their last frame the key."""
    k, t, j = rotations.shape[:3]
    frames = np.concatenate([hips, rotations.reshape(k, t, 4 * j)], axis=-1)
    key = np.broadcast_to(np.concatenate([key_hips, key_rotations.reshape(-1)]), (k, 3 + 4 * j))
    frames = target_blend(frames, key, target_ramp(t, t if blend is None else blend))
    return quat.normalize(frames[..., 3:].reshape(k, t, j, 4)), frames[..., :3]


def drawn(rng, plan, shape):
    """The latents (B, C, T, L) of ``shape`` for C roll-outs of T frames from each of B characters along
    their paths: N(0, I) from ``rng``, but for the first REFINED of the C, which are each character's
    ``plan`` (B, T, L), the latents of the roll-out chosen COMMIT frames before, moved on by COMMIT frames
    (the frames it newly reaches drawn afresh) and, but for the first of them, nudged by NUDGE times
    N(0, I). So the plan chosen before is among the choices, as it stands and refined, and a choice is
    never worse than going on with it (a roll-out is determined by its latents)."""
    z = rng.standard_normal(shape, dtype=np.float32)
    if plan is not None:
        kept, refined = shape[2] - COMMIT, min(REFINED, shape[1])
        nudge = NUDGE * (np.arange(refined) > 0)[None, :, None, None]
        z[:, :refined, :kept] = plan[:, None, COMMIT:] + nudge * z[:, :refined, :kept]
    return z


def along(rolled, start, line, timed, facing, fps, height, speed=None, lowest=None, skid=None):
    """(C,) how far C roll-outs ``rolled`` (C, T, D) from the root ``start`` ``(origin (3,), facing angle)``
    stray from a path: their root's mean distance to where the path's timing has got to, ``line[timed]``
    (``line`` (N, 2) the path's positions as (x, z), ``timed`` (T,) indices into it), plus its mean
    distance to ``line`` itself, plus the hips' mean distance outside UPRIGHT of ``height``, plus FACING
    of ``height`` a radian of their facing's mean angle to the path's ``facing`` angles (T,) there.
    Judged by the timing alone, a character behind it (from a standing start) was drawn across a curve
    toward where it had got to: the circle's first quarter cut by a chord. The hips: a path asks for a
    walk or a run, and the roll-outs that keep nearest it otherwise now and then hop (the hips to 1.9 m)
    or go down to a crouch. Every frame's facing counts, not the last alone: judged at the horizon only, a
    roll-out facing sideways all along and turning back at its end scored as well as one keeping to the
    path's direction. ``speed`` (T,): the path's own speed (units a second) there, which the root's going
    faster than counts OVER seconds of it: where the path has ended (speed 0) a roll-out that stops scores
    better than one that circles its end point, which kept the character walking after every path.
    ``lowest`` (C, T): each roll-out's lowest foot above the floor, of which FLOATING times the mean counts:
    the floor step stands that foot on the floor unless the pose's orientations put a foot far below it
    (:data:`.floor.SUNK`), and on such poses (a hop, a kick at a sharp corner) the body the user sees
    floats. ``skid`` (C, T): how fast each roll-out's standing feet move over the ground (:meth:`.floor.Legs.skid`),
    of which SKID seconds of the mean count: at a star's corners the roll-outs nearest the path turned on feet
    they stood on, which slid where a person steps round."""
    origins, turned = root_path(rolled, start[0], start[1], fps)
    ground = origins[..., [0, 2]]
    off = np.abs(np.angle(np.exp(1j * (turned[:, 1:] - facing))))
    on_path = nearest(ground.reshape(-1, 2), line)[2].reshape(ground.shape[:-1])
    hips = rolled[..., fields((rolled.shape[-1] - 3) // 12)["positions"][0] + 1]
    outside = np.maximum(UPRIGHT[0] * height - hips, 0) + np.maximum(hips - UPRIGHT[1] * height, 0)
    score = ((np.linalg.norm(ground - line[timed], axis=-1) + on_path + outside).mean(axis=-1)
             + FACING * height * off.mean(axis=-1))
    if speed is not None:
        before = np.broadcast_to(np.asarray(start[0])[[0, 2]], ground[:, :1].shape)
        pace = np.linalg.norm(np.diff(ground, axis=-2, prepend=before), axis=-1) * fps   # (C, T)
        score += OVER * np.maximum(pace - speed, 0.0).mean(axis=-1)
    if lowest is not None:
        score += FLOATING * np.maximum(lowest, 0.0).mean(axis=-1)
    if skid is not None:
        score += SKID * skid.mean(axis=-1)
    return score
