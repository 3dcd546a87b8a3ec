"""A control rig's bones read along the chords they span, where the rig has more bones than the model.

Rigify's neck is three bones where the dog's skeleton (and LaFAN1's, below the head) has one, and its limbs are
split in two; the model's joint is read from the first of them, whose own direction leaves the model's bone
pointing away from the next joint's head as the chain bends (Rigify's wolf's neck: docs/experiments.md).
:func:`aimed` swings each such joint, as little as it takes, onto the chord from its head to its
mapped child's head, where the model's bone points (the calibration matched them on the rest poses); writing
undoes the swings (:meth:`Chords.undone`), so the rig's own bones meet the keys around the fill.
"""

from dataclasses import dataclass

import numpy as np

from . import quat
from .motion import forward_kinematics
from .twist import turned_in_world


@dataclass(frozen=True)
class Chords:
    """The swings (F, joints, 4) :func:`aimed` gave ``joints`` on each frame read."""

    skeleton: object
    joints: tuple
    swings: np.ndarray

    def undone(self, rotations, positions, rows):
        """Local ``rotations`` (F, J, 4) on the read's ``rows`` (F,) with the swings taken off again (rows past the
        read take its last frame's)."""
        if not self.joints:
            return rotations
        at = np.clip(np.asarray(rows, dtype=np.int64), 0, len(self.swings) - 1)
        grot = forward_kinematics(rotations, positions, self.skeleton.parents)[0]
        return turned_in_world(rotations, grot, self.skeleton.parents, list(self.joints), quat.inv(self.swings[at]))


def aimed(rotations, positions, skeleton, pairs, heads):
    """``(rotations, Chords)``: local ``rotations`` (F, J, 4) of ``skeleton`` with each joint of ``pairs`` ((joint,
    child) model joints) swung so that its bone points from its head to its child's, ``heads`` {joint: (F, 3)}, in
    the skeleton's space."""
    if not pairs or not len(rotations):
        return rotations, Chords(skeleton, (), np.zeros((len(rotations), 0, 4)))
    grot = forward_kinematics(rotations, positions, skeleton.parents)[0]
    swings = np.stack([quat.normalize(quat.between(quat.rotate(grot[:, j], skeleton.offsets[c]), heads[c] - heads[j]))
                       for j, c in pairs], axis=1)
    joints = [j for j, _ in pairs]
    return turned_in_world(rotations, grot, skeleton.parents, joints, swings), Chords(skeleton, tuple(joints), swings)
