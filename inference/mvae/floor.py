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
positions"). The feet are the legs' foot and toe joints as :func:`..anatomy.legs` finds them.

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

from ..anatomy import legs
from .features import fields

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
        """The legs of ``skeleton``, or None where :func:`..anatomy.legs` finds none."""
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
        rise = (_up_row(orient[..., :3], orient[..., 3:]) * self.offsets).sum(axis=-1)   # (B, E)
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

    def skid(self, pose, floor):
        """(B,) how fast the feet of raw poses ``pose`` (B, D) move over the ground where they stand on ``floor``
        (units a second): each foot joint's horizontal speed as much as it stands (:meth:`stands`), their mean."""
        start = self.velocities.start + 3 * self.feet
        speed = np.hypot(pose[:, start], pose[:, start + 2])
        return (self.stands(pose, floor) * speed).mean(axis=1)

    def anchor(self, previous, pose, floor, fps):
        """``pose`` (B, D), which follows raw poses ``previous`` (B, D), with the root's step, in place, what
        keeps its feet on ``floor`` where they stood in ``previous``: each foot joint counts as much as it
        stands (STANDS, by its height in ``pose``), the network's own step as much as the most standing one
        does not; every joint's velocity moved with the root."""
        turn = pose[:, 2] / fps
        cos, sin = np.cos(turn)[:, None], np.sin(turn)[:, None]
        x0, z0 = self.positions.start + 3 * self.feet, self.positions.start + 3 * self.feet + 2
        # the feet now in the previous root frame (turned by the root's turn), and the step that keeps each still
        keep_x = previous[:, x0] - pose[:, x0] * cos - pose[:, z0] * sin                 # (B, F)
        keep_z = previous[:, z0] + pose[:, x0] * sin - pose[:, z0] * cos
        weight = self.stands(pose, floor)
        share = weight.max(axis=1)                                                        # (B,)
        total = np.maximum(weight.sum(axis=1), 1e-9)
        dx = share * ((weight * keep_x).sum(axis=1) / total - pose[:, 0] / fps)           # in the previous frame
        dz = share * ((weight * keep_z).sum(axis=1) / total - pose[:, 1] / fps)
        pose[:, 0] += dx * fps
        pose[:, 1] += dz * fps
        # every joint's world displacement changes by it: in this frame's root frame, turned back
        velocities = self.velocities
        pose[:, velocities.start:velocities.stop:3] += ((dx * cos[:, 0] - dz * sin[:, 0]) * fps)[:, None]
        pose[:, velocities.start + 2:velocities.stop:3] += ((dx * sin[:, 0] + dz * cos[:, 0]) * fps)[:, None]


def standing_share(heights):
    """(..., F) how much each of F foot joints stands, 0 to 1, from their ``heights`` (..., F) above their
    grounds: fully up to STANDS[0], not at all from STANDS[1], nor where it is NEARER higher than the
    lowest (a swing passing by)."""
    return (np.clip(1.0 - (heights - heights.min(axis=-1, keepdims=True)) / NEARER, 0.0, 1.0)
            * np.clip((STANDS[1] - heights) / (STANDS[1] - STANDS[0]), 0.0, 1.0))


def _up_row(forward, up):
    """(..., 3) the height (y) row of :func:`.features.matrices_from` (..., 3, 3) of ``forward`` and ``up``
    (..., 3 each): each bone's rise per unit of its rest offset, written out component by component, as
    the floor step runs it for every roll-out on every frame."""
    f = forward / np.maximum(np.linalg.norm(forward, axis=-1, keepdims=True), 1e-9)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    ux, uy, uz = up[..., 0], up[..., 1], up[..., 2]
    x = np.stack([uy * fz - uz * fy, uz * fx - ux * fz, ux * fy - uy * fx], axis=-1)
    x /= np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9)
    return np.stack([x[..., 1], fz * x[..., 0] - fx * x[..., 2], fy], axis=-1)


def _chain(parents, joint):
    """The joints (other than the root) from ``joint`` up to the root: the bones its position sums."""
    chain = set()
    while joint > 0:
        chain.add(int(joint))
        joint = parents[joint]
    return chain
