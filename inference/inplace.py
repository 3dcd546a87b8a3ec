"""In-place cycles: motion whose root stays where it is while the legs step, as games export walks and
runs (the engine moves the character). The models learned motion that travels; shown legs that step on
the spot, they stand still. So such motion is carried along the ground at the speed its feet slide back
(a treadmill's), filled there, and put back on the spot.
"""

import numpy as np

from .anatomy import feet
from .motion import AXES, forward_kinematics

STILL = 0.2      # the root's ground speed under this share of its feet's: the motion is in place
STRIDING = 0.2   # body heights a second the lowest foot must slide back at for a stride (a slow walk's 0.3)


def treadmill(motion, gaps, height):
    """(frames, 3) the ground offset of each frame that carries in-place ``motion`` along at the speed its
    lowest foot slides back in the second either side of the ``gaps`` (the keys and their context), or None where
    the motion travels on its own, stands, or has no feet: add it to the root before filling, take it off
    what is generated. ``height``: the body's height in ``motion``'s units."""
    joints = feet(motion.skeleton.names)
    frames = np.arange(motion.n_frames)
    given = np.zeros(motion.n_frames, dtype=bool)
    for start, end in gaps:                     # the second either side of each gap: its context
        given |= (frames >= start - motion.fps) & (frames <= end + motion.fps)
    for start, end in gaps:
        given[start + 1:end] = False
    steps = np.flatnonzero(given[1:] & given[:-1])          # consecutive given frames: step t -> t + 1
    if not joints or len(steps) < 2:
        return None
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
    if pace < STRIDING * height or np.linalg.norm(root.mean(axis=0)) * fps > STILL * pace:
        return None
    out = np.zeros((motion.n_frames, 3))
    out[:, ground] = -slide.mean(axis=0) * np.arange(motion.n_frames)[:, None]
    return out
