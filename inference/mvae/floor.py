"""The floor step of a Motion VAE's roll-out: each generated pose lifted so that no foot is under the floor.

A walk's poses drift in height (each is predicted from the last, and nothing in the pose says where the
floor is but the heights themselves), so without this step a walk sinks. After every step the lowest
foot or toe is found and the whole pose raised by how far it is under the floor, before it is fed back
to the network, so the next step starts standing on the floor too.

A foot's height comes from the pose as :func:`.features.motion_of` keys it: the hips' height plus the
leg's bones (the skeleton's rest offsets) turned by their parents' orientations (the pose's forward and
up vectors in the root frame, whose origin is on the floor), not from the network's own joint
positions, which need not agree with its orientations. The feet are the legs' foot and toe joints as
:func:`..contacts.legs` finds them.
"""

from dataclasses import dataclass

import numpy as np

from ..contacts import legs
from .features import fields, matrices_from


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
                   slice(*part["orientations"]), slice(part["positions"][0] + 1, part["positions"][1], 3))

    def lowest(self, pose):
        """(B,) the height of the lowest foot of raw poses ``pose`` (B, D)."""
        b = len(pose)
        orient = pose[:, self.orientations].reshape(b, -1, 6)[:, self.parents].astype(np.float64)
        rise = (matrices_from(orient[..., :3], orient[..., 3:])[..., 1, :] * self.offsets).sum(axis=-1)   # (B, E)
        return pose[:, self.heights.start] + (rise @ self.sums.T).min(axis=1)

    def lift(self, pose, floor):
        """``pose`` (B, D) raised, in place, wherever a foot is under ``floor``: every joint's height by
        the lowest foot's depth."""
        lift = np.maximum(floor - self.lowest(pose), 0.0)
        pose[:, self.heights] += lift[:, None].astype(pose.dtype)


def _chain(parents, joint):
    """The joints (other than the root) from ``joint`` up to the root: the bones its position sums."""
    chain = set()
    while joint > 0:
        chain.add(int(joint))
        joint = parents[joint]
    return chain
