"""Random transitions for training an RTN, cut from clips (:mod:`..clips`) and turned into features.

Windows played backwards (``--reverse``) teach the network to fill a gap from its far side as well:
the runtime can then fill each gap both ways, from the frames before it and from those after it, and
average. Windows with other bone proportions (``--proportions``) show it bodies the capture did not
have: the network reads local rotations and the trajectory joint's height, so longer legs under the
same rotations are hips carried higher, and the loss's forward kinematics measures the scaled bones.
"""

import numpy as np

from inference import quat
from inference.errors import DataError
from inference.features import canonical_frame, chain, choose_layout, frame_features, move, orient, target_features
from inference.mapping import describe
from inference.motion import forward_kinematics
from lab.dataset import Selection
from ..clips import clips


class Transitions:
    """Samples batches of (past, target, truth) windows from clips of one skeleton."""

    def __init__(self, data, part="train", chosen=Selection(), mirrored=True, past=10, layout=None, speeds=(1.0,),
                 reverse=0.0, proportions=0.0, shares=None):
        self.parents = data.skeleton.parents
        self.past, self.part, self.reverse, self.proportions = past, part, reverse, proportions
        cut = clips(data, part, chosen, mirrored, speeds, context=past)
        self.files, self.reflections = cut.files, cut.reflections
        self.origins, self.shares = np.array(cut.origins), shares
        self.names = [c.name for c in cut.motions]
        rotations = [quat.unroll(c.rotations).astype(np.float32) for c in cut.motions]
        positions = [c.positions.astype(np.float32) for c in cut.motions]
        self.lengths = np.array([len(r) for r in rotations])
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])
        self.rotations = np.concatenate(rotations)
        self.positions = np.concatenate(positions)
        self.layout = layout or choose_layout(self.rotations[::4], self.positions[::4], self.parents,
                                              data.translated, data.fps)
        self.groups = proportion_groups(data.skeleton, self.layout.trajectory)

    def draw(self, batch, width, rng):
        """``(clip, index)``: the clips (B,) of ``batch`` random windows of ``width`` frames and their
        frames' rows (B, width), read backwards with probability ``reverse``."""
        room = np.maximum(self.lengths - width + 1, 0)
        if room.sum() == 0:
            raise DataError(f"no clip is long enough for a transition of {width - self.past - 2} frames; "
                            "lower --max-gap")
        clip = rng.choice(len(room), size=batch, p=self._chances(room))
        start = self.starts[clip] + (rng.random(batch) * room[clip]).astype(np.int64)
        backwards = rng.random(batch) < self.reverse if self.reverse else np.zeros(batch, dtype=bool)
        return clip, start[:, None] + np.where(backwards[:, None], width - 1 - np.arange(width), np.arange(width))

    def _chances(self, room):
        """Each clip's chance of a window: in proportion to the windows it holds, or with ``shares``
        (one weight per data set) each data set's windows drawn that often in all, so that a small
        data set joined to a large one (Bandai's 170 short clips beside LaFAN1's hours) is not lost in it."""
        chances = room.astype(np.float64)
        if self.shares is not None:
            for k, share in enumerate(self.shares):
                mine = self.origins == k
                total = chances[mine].sum()
                chances[mine] *= share / total if total else 0.0
        return chances / chances.sum()

    def proportioned(self, positions, rng):
        """Translations (B, W, J, 3) with each window's legs, arms and torso scaled by its own random
        factors in [1 - p, 1 + p], ``p`` = ``proportions``; the trajectory joint's (and its ancestors')
        with the legs', which hold the hips up."""
        factors = 1.0 + self.proportions * rng.uniform(-1.0, 1.0, (len(positions), len(GROUPS)))
        return positions * factors[:, None, self.groups, None]

    def sample(self, batch, n, rng, keep_after=0.8):
        """A batch of transitions of ``n`` frames as float32 numpy arrays (raw, unnormalised features).

        ``past`` (B, P, frame_dim); ``target`` (B, target_dim); ``truth`` (B, n + 1, frame_dim) the
        missing frames and the target; ``world`` (B, n + 1, J, 3) their world positions in heights;
        ``base`` (B, J, 3) the translations of the last past frame, which the network does not
        predict for joints other than the trajectory joint; ``after`` (B, frame_dim) the frame after
        the target, for the runtime's end blend, and ``after_known`` (B,) 1 where the target's
        features carry its velocity (``keep_after``), 0 where they were dropped. A window is read
        backwards with probability ``reverse``: its target then lies before its past.
        """
        _, index = self.draw(batch, self.past + n + 2, rng)
        rot = self.rotations[index].astype(np.float64)
        pos = self.positions[index].astype(np.float64)
        if self.proportions:
            pos = self.proportioned(pos, rng)
        p = self.past
        turn, origin = canonical_frame(rot[:, p - 1], pos[:, p - 1], self.parents, self.layout)
        rot, pos = move(rot, pos, turn, origin)
        rot = rot * np.where(rot[:, p - 1:p, :, :1] < 0, -1.0, 1.0)   # w >= 0 on the last key, continuous
        if self.part == "train":
            # the target in the sign the motion reaches it by, which says which way a joint turns:
            # the network's straight line to it (RTN._cell) then never cuts through the zero
            # quaternion, and it learns the sign as a direction, which the runtime's keys take the
            # short way (``orient``), as interpolation does
            target_rot, after_rot = rot[:, p + n], rot[:, p + n + 1]
        else:   # as the runtime sees keys
            _, target_rot, after_rot = orient(rot[:, :p], rot[:, p + n], rot[:, p + n + 1])
        lay = self.layout
        frames = frame_features(rot, pos, self.parents, lay)
        target = target_features(target_rot, pos[:, p + n], self.parents, lay, after=(after_rot, pos[:, p + n + 1]))
        dropped = rng.random(batch) > keep_after
        target[dropped, lay.frame_dim:] = 0.0
        _, world = forward_kinematics(rot[:, p:p + n + 1], pos[:, p:p + n + 1], self.parents)
        return {
            "past": frames[:, :p].astype(np.float32),
            "target": target.astype(np.float32),
            "truth": frames[:, p:p + n + 1].astype(np.float32),
            "world": (world / lay.height).astype(np.float32),
            "base": (pos[:, p - 1] / lay.height).astype(np.float32),
            "after": frame_features(after_rot, pos[:, p + n + 1], self.parents, lay).astype(np.float32),
            "after_known": (~dropped).astype(np.float32),
        }


GROUPS = ("legs", "arms", "torso")
_PARTS = {"thigh": 0, "shin": 0, "foot": 0, "toe": 0, "shoulder": 1, "upperarm": 1, "forearm": 1, "hand": 1}


def proportion_groups(skeleton, trajectory):
    """(J,) the group (an index into GROUPS) whose factor scales each joint's translation: a joint's
    offset is the bone from its parent, so it goes with the parent's part (a thigh bone is the offset
    of the knee); the trajectory joint and its ancestors go with the legs; the rest is torso. Both
    sides share a factor: bodies are near symmetric, and the capture's rotations are of one."""
    groups = np.full(len(skeleton), 2, dtype=np.int64)
    for j, p in enumerate(skeleton.parents):
        if p >= 0:
            groups[j] = _PARTS.get(describe(skeleton.names[p])[1], 2)
    groups[chain(skeleton.parents, trajectory)] = 0
    return groups
