"""The MANN's bones: the skeleton's joints and its End Sites, in the BVH file's depth-first order.

The reference implementation (Zhang, Starke et al. 2018) treats the dog's 21 joints and 6 End Sites as
27 bones, each End Site right after the joint it hangs from; the paws are the End Sites under
``LeftHand``, ``RightHand`` (front) and ``LeftFoot``, ``RightFoot`` (back). An End Site turns with its
joint, so its rotation is its joint's.
"""

from dataclasses import dataclass

import numpy as np

from inference import quat
from inference.errors import DataError
from inference.motion import forward_kinematics

PAWS = ("LeftHand", "RightHand", "LeftFoot", "RightFoot")   # the paws are the End Sites under these
SITE = "Site"   # an End Site's bone name: its joint's name and this


@dataclass(frozen=True, eq=False)
class Bones:
    names: tuple          # (B,) joints by name, End Sites as <joint>Site
    joints: np.ndarray    # (B,) the joint each bone is, or hangs from
    offsets: np.ndarray   # (B, 3) offset from that joint: zero for a joint, the End Site's offset
    paws: tuple           # indices of the four paws (End Sites under PAWS), in PAWS order

    def __len__(self):
        return len(self.names)

    def index(self, name):
        return self.names.index(name)


def bones_of(skeleton):
    """The bones of ``skeleton``: every joint, each followed by its End Site if it has one."""
    sites = {int(j): np.asarray(o, dtype=np.float64) for j, o in skeleton.end_sites}
    names, joints, offsets = [], [], []
    for j, name in enumerate(skeleton.names):
        names.append(name), joints.append(j), offsets.append(np.zeros(3))
        if j in sites:
            names.append(name + SITE), joints.append(j), offsets.append(sites[j])
    missing = [p for p in PAWS if p + SITE not in names]
    if missing:
        raise DataError(f"the skeleton has no End Site under {', '.join(missing)}: MANN needs the four paws "
                        f"({', '.join(PAWS)} with End Sites), as in the dog data")
    return Bones(tuple(names), np.array(joints), np.array(offsets), tuple(names.index(p + SITE) for p in PAWS))


def world(motion, bones):
    """World positions (F, B, 3) and rotations (F, B, 4) of every bone of ``motion``."""
    grot, gpos = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    rot = grot[:, bones.joints]
    return gpos[:, bones.joints] + quat.rotate(rot, bones.offsets), rot


def leg_length(skeleton, bones):
    """The back leg's length from hip joint to paw (the dog's: 44.8 cm): the scale of the labels'
    thresholds, so they hold for a skeleton in other units."""
    paw = bones.paws[2]
    j, length = int(bones.joints[paw]), float(np.linalg.norm(bones.offsets[paw]))
    hip = skeleton.index("LeftUpLeg") if "LeftUpLeg" in skeleton.names else None
    while j > 0 and j != hip:
        length += float(np.linalg.norm(skeleton.offsets[j]))
        j = int(skeleton.parents[j])
    return length
