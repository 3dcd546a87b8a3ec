"""The floor step of a Motion VAE's roll-out: each generated pose stood on the floor, and its standing foot
kept where it stands.

A walk's poses drift in height (each is predicted from the last, and nothing in the pose says where the
floor is but the heights themselves), so without this step a walk sinks; lifted only, it floated, the
lowest foot 5-8 cm up on half the frames of a path (docs/experiments.md, "The Motion VAE on the floor").
After every step the lowest foot or toe is found and the whole pose moved up or down by how far it is
from the floor (:meth:`Legs.ground`), before it is fed back to the network, so the next step starts
standing on the floor too.

A foot's height is taken two ways, and the lower counts: from the network's own joint positions, which
the motion's bones are aimed at (:func:`.features.motion_of`, :mod:`..aim`), so that no foot the user sees
is under the floor; and from the pose's orientations (the hips' height plus the leg's bones, the
skeleton's rest offsets, turned by their parents' forward and up vectors); the two need not agree. By
the positions alone the walks blew up more often (docs/experiments.md, "Bones aimed at the network's
positions"). The feet are the legs' foot and toe joints as :func:`..contacts.legs` finds them.

The other joints count by the network's positions: a walk that lies down (LaFAN1's falls and crawls) rests
on its hips, hands and head, and with the feet alone watched they sank through the floor. Each of them
is held at the least height the training data gave it, where that is above the floor: a joint inside
the body (the hips, the spine, the head) never touches the floor, and a body lying down rests on its back
or front, as the capture's did, rather than on its sunk hips. Such a body is never pulled down onto its
feet: a joint held up holds the whole pose up.

Then the root's step is taken from the feet on the floor (:meth:`Legs.anchor`): the network moves the
root and the feet each its own way, and a foot that should stand slid along the floor several
centimetres a frame, which no planting after the model can hide (a lock that far from the leg's reach
drags). The root moves instead by what keeps the standing feet where they stood, so the body walks on
its legs: a roll-out that glides without stepping goes nowhere, and the control (:mod:`.control`) picks
one that steps.
"""

from dataclasses import dataclass

import numpy as np

from ..contacts import legs
from .features import fields, matrices_from

SUNK = 10.0           # units (LaFAN1's cm): how far under the floor a foot may go by the orientations
STANDS = (2.0, 6.0)   # units (LaFAN1's cm) above the floor: a foot joint lower stands fully, higher not at all
NEARER = 2.0          # units: a foot joint this much higher than the lowest does not stand: a swing passing by,
                      # or one of two feet gliding on the floor, which anchored together both slid


@dataclass(frozen=True)
class Legs:
    """The bones from the root down to every foot and toe joint: ``parents`` (E,) the joint whose
    orientation turns each bone, ``offsets`` (E, 3) its rest offset, ``sums`` (F, E) which bones each of
    the F feet's heights adds up; and where the pose holds orientations and positions."""

    parents: np.ndarray
    offsets: np.ndarray
    sums: np.ndarray
    orientations: slice
    heights: slice      # every joint's height (y) in the positions field; the hips' first
    feet: np.ndarray    # (F,) the feet's indices among those heights
    positions: slice    # every joint's position field
    velocities: slice   # and velocity field

    @classmethod
    def of(cls, skeleton):
        """The legs of ``skeleton``, or None where :func:`..contacts.legs` finds none."""
        found = legs(skeleton)
        if not found:
            return None
        ends = [leg.foot for leg in found] + [leg.toe for leg in found if leg.toe >= 0]
        chains = [_chain(skeleton.parents, end) for end in ends]
        bones = sorted(set().union(*chains))
        part = fields(len(skeleton))
        return cls(skeleton.parents[bones], skeleton.offsets[bones],
                   np.array([[b in chain for b in bones] for chain in chains], dtype=np.float64),
                   slice(*part["orientations"]), slice(part["positions"][0] + 1, part["positions"][1], 3),
                   np.array(ends), slice(*part["positions"]), slice(*part["velocities"]))

    def lowest(self, pose):
        """(B,) the height of the lowest foot of raw poses ``pose`` (B, D), by the orientations or by the
        network's own positions, whichever is lower."""
        return np.minimum(*self.lowest_each(pose))

    def lowest_each(self, pose):
        """The heights (B,) of the lowest foot of raw poses ``pose`` (B, D) by the orientations, and by the
        network's own positions."""
        b = len(pose)
        orient = pose[:, self.orientations].reshape(b, -1, 6)[:, self.parents].astype(np.float64)
        rise = (matrices_from(orient[..., :3], orient[..., 3:])[..., 1, :] * self.offsets).sum(axis=-1)   # (B, E)
        heights = pose[:, self.heights]
        return heights[:, 0] + (rise @ self.sums.T).min(axis=1), heights[:, self.feet].min(axis=1)

    def ground(self, pose, floor, least=None):
        """``pose`` (B, D) moved up or down, in place, so that its lowest foot by its positions stands on
        ``floor``, but no foot by its orientations is more than SUNK under it nor any joint under its
        ``least`` height (J,) (default ``floor``): every joint's height by the same amount. The positions
        are what the user sees (the bones are aimed at them); the orientations put the feet 4 cm lower
        on a median frame of a path, and stood on those, the feet the user sees floated."""
        least = floor if least is None else least
        by_orientations, by_positions = self.lowest_each(pose)
        shift = np.maximum(np.maximum(floor - by_positions, floor - SUNK - by_orientations),
                           (least - pose[:, self.heights]).max(axis=1))
        pose[:, self.heights] += shift[:, None].astype(pose.dtype)

    def stands(self, pose, floor):
        """(..., F) how much each foot joint of raw poses ``pose`` (..., D) stands on ``floor`` (or each on its
        own ground, (F,)), 0 to 1 (:func:`standing_share`)."""
        return standing_share(pose[..., self.heights][..., self.feet] - floor)

    def anchor(self, previous, pose, floor, fps):
        """``pose`` (B, D), which follows raw poses ``previous`` (B, D), with the root's step, in place, what
        keeps its feet on ``floor`` where they stood in ``previous``: each foot joint counts as much as it
        stands (STANDS, by its height in ``pose``), the network's own step as much as the most standing one
        does not; every joint's velocity moved with the root."""
        b = len(pose)
        turn = pose[:, 2].astype(np.float64) / fps
        cos, sin = np.cos(turn)[:, None], np.sin(turn)[:, None]
        now = pose[:, self.positions].reshape(b, -1, 3)[:, self.feet].astype(np.float64)
        before = previous[:, self.positions].reshape(b, -1, 3)[:, self.feet]
        # the foot now in the previous root frame (turned by the root's turn), and the step that keeps it still
        x, z = now[..., 0] * cos + now[..., 2] * sin, -now[..., 0] * sin + now[..., 2] * cos
        keep = np.stack([before[..., 0] - x, before[..., 2] - z], axis=-1)           # (B, F, 2)
        weight = self.stands(pose, floor)
        share = weight.max(axis=1, keepdims=True)                                     # (B, 1)
        kept = (weight[..., None] * keep).sum(axis=1) / np.maximum(weight.sum(axis=1, keepdims=True), 1e-9)
        step = pose[:, :2].astype(np.float64) / fps
        moved = share * (kept - step)                                                 # (B, 2), the previous frame
        pose[:, :2] += (moved * fps).astype(pose.dtype)
        # every joint's world displacement changes by it: in this frame's root frame, turned back
        dx, dz = moved[:, :1] * cos - moved[:, 1:] * sin, moved[:, :1] * sin + moved[:, 1:] * cos
        velocities = pose[:, self.velocities].reshape(b, -1, 3)
        velocities[..., 0] += (dx * fps).astype(pose.dtype)
        velocities[..., 2] += (dz * fps).astype(pose.dtype)
        pose[:, self.velocities] = velocities.reshape(b, -1)

def standing_share(heights):
    """(..., F) how much each of F foot joints stands, 0 to 1, from their ``heights`` (..., F) above their
    grounds: fully up to STANDS[0], not at all from STANDS[1], nor where it is NEARER higher than the
    lowest (a swing passing by)."""
    return (np.clip(1.0 - (heights - heights.min(axis=-1, keepdims=True)) / NEARER, 0.0, 1.0)
            * np.clip((STANDS[1] - heights) / (STANDS[1] - STANDS[0]), 0.0, 1.0))


def _chain(parents, joint):
    """The joints (other than the root) from ``joint`` up to the root: the bones its position sums."""
    chain = set()
    while joint > 0:
        chain.add(int(joint))
        joint = parents[joint]
    return chain
