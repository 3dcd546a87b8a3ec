"""In-place cycles: motion whose root stays where it is while the legs step, as games export walks and
runs (the engine moves the character). The models learned motion that travels; shown legs that step on
the spot, they stand still. So such motion is carried along the ground at the speed its feet slide back
(a treadmill's), filled there, and put back on the spot.

Keys a second apart (Decompress) leave no consecutive frames to see a foot slide in but the clip's held
ends; a stride takes about as long. There the pace is read from the poses at the keys instead: the longest
step the feet stand apart at any key, along the way the hips face, taken CADENCE times a second, as people
walk.
"""

import numpy as np

from .anatomy import feet, legs
from .mirror import unsided
from .motion import AXES, forward_kinematics

STILL = 0.2      # the root's ground speed under this share of its feet's: the motion is in place
STRIDING = 0.2   # body heights a second the lowest foot must slide back at for a stride (a slow walk's 0.3)
CADENCE = 2.0    # steps a second: a person's walk, about two


def treadmill(motion, gaps, height):
    """(frames, 3) the ground offset of each frame that carries in-place ``motion`` along at the speed its
    lowest foot slides back in the second either side of the ``gaps`` (the keys and their context), or where
    those frames show no stride, at the pace the poses at three keys or more tell (:func:`_keyed_pace`); None
    where the motion travels on its own, stands, or has no feet: add it to the root before filling, take it
    off what is generated. ``height``: the body's height in ``motion``'s units."""
    joints = feet(motion.skeleton.names)
    frames = np.arange(motion.n_frames)
    given = np.zeros(motion.n_frames, dtype=bool)
    for start, end in gaps:                     # the second either side of each gap: its context
        given |= (frames >= start - motion.fps) & (frames <= end + motion.fps)
    for start, end in gaps:
        given[start + 1:end] = False
    steps = np.flatnonzero(given[1:] & given[:-1])          # consecutive given frames: step t -> t + 1
    if not joints:
        return None
    keys = np.unique([f for gap in gaps for f in gap])
    if len(steps) < 2:
        return _keyed_pace(motion, keys, height)
    up = AXES.index(motion.up)
    ground = [a for a in range(3) if a != up]
    rows = np.unique(np.r_[steps, steps + 1])
    world = forward_kinematics(motion.rotations[rows], motion.positions[rows], motion.skeleton.parents)[1]
    at = {int(r): k for k, r in enumerate(rows)}
    now, then = [at[int(s)] for s in steps], [at[int(s) + 1] for s in steps]
    lowest = np.argmin(world[now][:, joints, up], axis=1)
    foot = world[:, joints][:, :, ground]
    slide = foot[then, lowest] - foot[now, lowest]                    # (steps, 2) the standing foot's slide
    root = world[then, 0][:, ground] - world[now, 0][:, ground]
    fps = motion.fps
    pace = np.linalg.norm(slide.mean(axis=0)) * fps
    if pace < STRIDING * height:   # no stride in the frames in a row (a clip's held ends): the keys may show one
        return _keyed_pace(motion, keys, height)
    if np.linalg.norm(root.mean(axis=0)) * fps > STILL * pace:
        return None
    out = np.zeros((motion.n_frames, 3))
    out[:, ground] = -slide.mean(axis=0) * np.arange(motion.n_frames)[:, None]
    return out


def _keyed_pace(motion, keys, height):
    """:func:`treadmill`'s offsets from the poses on the ``keys`` (frames) alone: carried along the way the hips
    face (left hip to right hip, turned a quarter about the up axis), at CADENCE times the longest step the
    feet stand apart along it at a key and its neighbours, both taken between the keys as they turn and
    change; None where the same foot leads at every key (a stance, however wide, is no stride) or the root
    travels more than STILL of that pace from key to key (a dance that steps about)."""
    pair = {unsided(motion.skeleton.names[leg.hip])[0]: leg for leg in legs(motion.skeleton)}
    if len(keys) < 3 or set(pair) != {"L", "R"}:   # one gap's two keys: too few poses to tell a pace
        return None
    up = AXES.index(motion.up)
    ground = [a for a in range(3) if a != up]
    world = forward_kinematics(motion.rotations[keys], motion.positions[keys], motion.skeleton.parents)[1]
    facing = np.cross(world[:, pair["L"].hip] - world[:, pair["R"].hip], np.eye(3)[up])[:, ground]
    ahead = np.sum((world[:, pair["L"].foot] - world[:, pair["R"].foot])[:, ground] * facing, axis=-1)
    ahead /= np.maximum(np.linalg.norm(facing, axis=-1), 1e-9)   # how far the left foot is ahead of the right
    if not (ahead.max() > STRIDING * height / CADENCE and ahead.min() < -STRIDING * height / CADENCE):
        return None   # the same foot ahead at every key: a stance, not steps
    apart = np.abs(ahead)
    step = np.array([apart[max(k - 1, 0):k + 2].max() for k in range(len(keys))])
    frames = np.arange(motion.n_frames)
    pace = np.interp(frames, keys, step * CADENCE)
    angle = np.interp(frames, keys, np.unwrap(np.arctan2(facing[:, 1], facing[:, 0])))
    travel = np.linalg.norm(np.diff(world[:, 0, ground], axis=0), axis=-1).sum() * motion.fps / (keys[-1] - keys[0])
    if pace.mean() < STRIDING * height or travel > STILL * pace.mean():
        return None
    out = np.zeros((motion.n_frames, 3))
    velocity = np.stack([np.cos(angle), np.sin(angle)], -1) * pace[:, None]
    out[1:, ground] = np.cumsum(velocity[:-1], axis=0) / motion.fps
    return out
