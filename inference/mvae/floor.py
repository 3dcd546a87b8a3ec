"""The floor step of a Motion VAE's roll-out: each generated pose lifted so that no foot, nor any other
joint, is under the floor.

A walk's poses drift in height (each is predicted from the last, and nothing in the pose says where the
floor is but the heights themselves), so without this step a walk sinks. After every step the lowest
foot or toe is found and the whole pose raised by how far it is under the floor, before it is fed back
to the network, so the next step starts standing on the floor too.

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
or front, as the capture's did, rather than on its sunk hips.
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
    feet: np.ndarray    # (F,) the feet's indices among those heights

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
                   np.array(ends))

    def lowest(self, pose):
        """(B,) the height of the lowest foot of raw poses ``pose`` (B, D), by the orientations or by the
        network's own positions, whichever is lower."""
        b = len(pose)
        orient = pose[:, self.orientations].reshape(b, -1, 6)[:, self.parents].astype(np.float64)
        rise = (matrices_from(orient[..., :3], orient[..., 3:])[..., 1, :] * self.offsets).sum(axis=-1)   # (B, E)
        heights = pose[:, self.heights]
        return np.minimum(heights[:, 0] + (rise @ self.sums.T).min(axis=1), heights[:, self.feet].min(axis=1))

    def lift(self, pose, floor, least=None):
        """``pose`` (B, D) raised, in place, wherever a foot (:meth:`lowest`) is under ``floor`` or another
        joint under its ``least`` height (J,) (default ``floor``): every joint's height by the deepest
        one's depth."""
        least = floor if least is None else least
        depth = np.maximum(floor - self.lowest(pose), (least - pose[:, self.heights]).max(axis=1))
        pose[:, self.heights] += np.maximum(depth, 0.0)[:, None].astype(pose.dtype)


def _chain(parents, joint):
    """The joints (other than the root) from ``joint`` up to the root: the bones its position sums."""
    chain = set()
    while joint > 0:
        chain.add(int(joint))
        joint = parents[joint]
    return chain
