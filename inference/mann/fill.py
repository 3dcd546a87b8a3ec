"""Quadruped gap filling with the MANN controller: the ground trajectory planned between two keys, and
the controller's frames put onto the keys.

The controller (:class:`.runtime.MANNModel`) walks wherever a path leads; between two keys the path is
a cubic Hermite curve of the root's ground position and of its facing angle, timed to the gap, leaving
the key before it with the root's velocity there and arriving at the key after it with the velocity it
has there (from the frames after that key where the gap has them; the mean velocity over the gap where
it has none), and then going on at that velocity, so that the controller, which reads a second ahead,
does not slow down for the end of the path. A key where the dog sits, lies, stands up or jumps asks
for that action over the half of the gap nearer it; between two keys where it sits, lies or stands on
its hind legs alike, the fill is the keys' interpolation (a pose held in place, which the controller,
stepping a floor-bound skeleton, only roughens). The controller walks on a floor at height 0, so
the frames are lowered from the floor under the keys and raised back onto it; the RTN's start and
target blends (:mod:`..rtn.blends`) then put them onto the keys.
"""

import numpy as np

from .. import quat
from ..motion import Motion
from ..rtn.blends import start_blend, start_ramp, target_blend, target_ramp
from ..transition import hermite
from .actions import ACTIONS, labels
from .features import root, world
from .path import Path

SPEED_DECIDES = ("move", "idle")   # actions a path's speed decides
RESTING = ("sit", "lie", "stand")  # poses held in place: the controller holds the root in them, and between
                                   # two keys of one the keys' interpolation beats its steps
SMOOTH = 0.2   # s: the root's velocity at a key is its mean over this much (a gait sways the hips)


def plan(gap, bones, fps, beyond, known):
    """``(paths, floors, resting)``: one :class:`~.path.Path` per gap of the batch ``gap`` at ``fps``, a
    point and a facing angle a frame from the key before the gap (frame 0) to the key after it (frame
    ``gap.length + 1``), then ``beyond`` frames more going on at the root's velocity on that key; the
    floor's height under each of the two keys (B, 2), the lowest any paw is in the frames given around
    it; and whether both keys hold the same RESTING pose (B,), where the fill is the keys' interpolation.

    The path's action is each key's (:mod:`.actions`) over the half of the gap nearer it where that is
    a resting one or a jump among ``known`` (the model's actions); moving or idling is left to the
    path's speed, as along any path."""
    n = gap.length + 1
    paths, floors, resting = [], [], []
    for b in range(gap.batch):
        before = _key(gap.skeleton, gap.past_rotations[b], gap.past_positions[b], bones, fps, -1)
        ahead = [gap.target_rotations[b, None]], [gap.target_positions[b, None]]
        if gap.after_rotations is not None:
            ahead = ahead[0] + [gap.after_rotations[b]], ahead[1] + [gap.after_positions[b]]
        after = _key(gap.skeleton, np.concatenate(ahead[0]), np.concatenate(ahead[1]), bones, fps, 0)
        start, end = before["at"], after["at"]
        end[2] += 2 * np.pi * np.round((start[2] - end[2]) / (2 * np.pi))     # facing: the nearer way round
        rate0 = before["rate"] if before["rate"] is not None else np.zeros(3)
        rate1 = after["rate"] if after["rate"] is not None else (end - start) * fps / n
        curve = hermite(start, rate0, end, rate1, n, fps)
        on = end + np.arange(1, beyond + 1)[:, None] / fps * np.concatenate([rate1[:2], [0.0]])
        track = np.concatenate([curve, on])
        named = [a if a in known and a not in SPEED_DECIDES else None for a in (before["action"], after["action"])]
        actions = tuple(named[0] if k <= n // 2 else named[1] for k in range(len(track)))
        paths.append(Path(np.arange(len(track)) / fps, track[:, :2], actions if any(actions) else None, track[:, 2],
                          source="the gap's plan"))
        floors.append((before["floor"], after["floor"]))
        resting.append(before["action"] == after["action"] in RESTING)
    return paths, np.array(floors), np.array(resting)


def onto_keys(rotations, hips, gap, floors, blend=None):
    """The in-between frames of every gap, from the controller's frames after the key before it: local
    rotations (B, n + 1, J, 4) and the hips' positions (B, n + 1, 3) over a floor at height 0, the last
    in the place of the key after the gap. The hips are raised onto the keys' ``floors`` (B, 2), linearly
    between them; the first frames continue the key before the gap (the start blend) and the last
    frame's miss of the key after it is spread back over the last ``blend`` frames (the target blend,
    :mod:`..rtn.blends`; None: over the whole gap, a drift spread thin rather than closed fast); the
    other joints keep the last key's translations. Returns local rotations (B, n, J, 4), signs
    continuous with the key before, and translations (B, n, J, 3)."""
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


def _key(skeleton, rotations, positions, bones, fps, at):
    """The key at frame ``at`` (0 or -1) of frames of local rotations (F, J, 4) and translations (F, J, 3)
    that start or end with it: ``at``, its root's ground position and facing angle (3,); ``rate``, their
    mean rate of change over the SMOOTH seconds next to it (3,) (None for a single frame); ``floor``,
    the lowest height any paw reaches in the frames; and its ``action`` by name."""
    motion = Motion(skeleton, rotations, positions, fps)
    pos = world(motion, bones)[0]
    ground, theta, _ = root(pos, bones, fps)
    track = np.concatenate([ground, theta[:, None]], axis=1)
    k = min(len(track) - 1, max(int(round(SMOOTH * fps)), 1))
    other = at + k if at == 0 else at - k
    return {"at": track[at].copy(), "rate": (track[max(at, other)] - track[min(at, other)]) * fps / k if k else None,
            "floor": float(pos[:, list(bones.paws), 1].min()), "action": ACTIONS[labels(motion, bones)[at]]}
