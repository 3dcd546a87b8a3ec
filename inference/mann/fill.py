"""Quadruped gap filling with the MANN controller: the ground trajectory planned between two keys, and
the controller's frames put onto the key after the gap.

The controller (:class:`.runtime.MANNModel`) walks wherever a path leads; between two keys the path is
a cubic Hermite curve of the root's ground position and of its facing angle, timed to the gap, leaving
the key before it with the root's velocity there and arriving at the key after it with the velocity it
has there (from the frames after that key where the gap has them; the mean velocity over the gap where
it has none), and then going on at that velocity, so that the controller, which reads a second ahead,
does not slow down for the end of the path. Its last frame, in the key's place, misses the key by what
the controller drifted: the target blend (:mod:`..rtn.blends`) closes that miss over the last frames.
"""

import numpy as np

from .. import quat
from ..motion import Motion
from ..rtn.blends import start_blend, start_ramp, target_blend, target_ramp
from .actions import ACTIONS, labels
from .features import root, world
from .path import Path

SPEED_DECIDES = ("move", "idle")   # actions a path's speed decides
SMOOTH = 0.2   # s: the root's velocity at a key is its mean over this much (a gait sways the hips)


def plan(gap, bones, fps, beyond, known):
    """``(paths, floors)``: one :class:`~.path.Path` per gap of the batch ``gap`` at ``fps``, a point and a
    facing angle a frame from the key before the gap (frame 0) to the key after it (frame
    ``gap.length + 1``), then ``beyond`` frames more going on at the root's velocity on that key; and the
    floor's height under each of the two keys (B, 2), the lowest any paw is in the frames given around
    it (the controller walks on a floor at height 0: a dog on a box stands on a higher one).

    The path's action is each key's (:mod:`.actions`) over the half of the gap nearer it where that is
    a resting one or a jump among ``known`` (the model's actions); moving or idling is left to the
    path's speed, as along any path."""
    n = gap.length + 1
    duration = n / fps
    s = np.arange(n + 1)[:, None] / n
    basis = np.concatenate([2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, 3 * s**2 - 2 * s**3, s**3 - s**2], axis=1)
    paths, floors = [], []
    for b in range(gap.batch):
        ground, theta, floor, action = _track(gap.skeleton, gap.past_rotations[b], gap.past_positions[b], bones, fps)
        ahead = [gap.target_rotations[b, None]], [gap.target_positions[b, None]]
        if gap.after_rotations is not None:
            ahead = ahead[0] + [gap.after_rotations[b]], ahead[1] + [gap.after_positions[b]]
        ground_after, theta_after, floor_after, action_after = _track(gap.skeleton, np.concatenate(ahead[0]),
                                                                      np.concatenate(ahead[1]), bones, fps)
        theta_after += 2 * np.pi * np.round((theta[-1] - theta_after[0]) / (2 * np.pi))   # the nearer way round
        start = np.concatenate([ground[-1], theta[-1:]])
        end = np.concatenate([ground_after[0], theta_after[:1]])
        rate0 = -_rate(np.concatenate([ground, theta[:, None]], axis=1)[::-1], fps)   # backwards from the key
        rate1 = (_rate(np.concatenate([ground_after, theta_after[:, None]], axis=1), fps) if len(ground_after) > 1
                 else (end - start) / duration)
        curve = basis @ np.stack([start, rate0 * duration, end, rate1 * duration])
        on = end + np.arange(1, beyond + 1)[:, None] / fps * np.concatenate([rate1[:2], [0.0]])
        track = np.concatenate([curve, on])
        named = [a if a in known and a not in SPEED_DECIDES else None for a in (action[-1], action_after[0])]
        actions = tuple(named[0] if k <= n // 2 else named[1] for k in range(len(track)))
        paths.append(Path(np.arange(len(track)) / fps, track[:, :2], actions if any(actions) else None, track[:, 2],
                          source="the gap's plan"))
        floors.append((floor, floor_after))
    return paths, np.array(floors)


def onto_keys(rotations, hips, gap, floors, blend=None):
    """The in-between frames of every gap, from the controller's frames after the key before it: local
    rotations (B, n + 1, J, 4) and the hips' positions (B, n + 1, 3) over a floor at height 0, the last
    in the place of the key after the gap. The hips are raised onto the keys' ``floors`` (B, 2), linearly
    between them; the first frames continue the key before the gap (the start blend) and the last
    frame's miss of the key after it is spread back over the last ``blend`` frames (the target blend,
    :mod:`..rtn.blends`; None: over the whole gap, which drifts less than a short blend snaps); the other joints keep the last key's translations. Returns local rotations
    (B, n, J, 4), signs continuous with the key before, and translations (B, n, J, 3)."""
    b, steps, j = rotations.shape[:3]
    hips = hips.copy()
    hips[..., 1] += floors[:, :1] + np.arange(1, steps + 1) / steps * (floors[:, 1:] - floors[:, :1])
    past = quat.unroll(gap.past_rotations[:, -2:], axis=1)
    rotations = quat.unroll(np.concatenate([past, rotations], axis=1), axis=1)[:, past.shape[1]:]
    frames = np.concatenate([hips, rotations.reshape(b, steps, 4 * j)], axis=-1)
    before = np.concatenate([gap.past_positions[:, -2:, 0], past.reshape(b, -1, 4 * j)], axis=-1)
    key = np.concatenate([gap.target_positions[:, 0], gap.target_rotations.reshape(b, 4 * j)], axis=-1)
    frames = start_blend(frames, before, start_ramp(steps))
    frames = target_blend(frames, key, target_ramp(steps, steps if blend is None else blend))[:, :-1]
    positions = np.repeat(gap.past_positions[:, -1:], steps - 1, axis=1)
    positions[:, :, 0] = frames[..., :3]
    return quat.normalize(frames[..., 3:].reshape(b, steps - 1, j, 4)), positions


def _track(skeleton, rotations, positions, bones, fps):
    """The root's ground positions (F, 2) and facing angles (F,) of local rotations (F, J, 4) and
    translations (F, J, 3), the lowest height any paw reaches, and the action names (F,)."""
    motion = Motion(skeleton, rotations, positions, fps)
    pos = world(motion, bones)[0]
    ground, theta, _ = root(pos, bones, fps)
    return ground, theta, float(pos[:, list(bones.paws), 1].min()), [ACTIONS[k] for k in labels(motion, bones)]


def _rate(values, fps):
    """The mean rate of change (D,) of ``values`` (F, D) over their first SMOOTH seconds (zero for a
    single frame)."""
    k = min(len(values) - 1, max(int(round(SMOOTH * fps)), 1))
    return (values[k] - values[0]) * fps / k if k else np.zeros(values.shape[1])
