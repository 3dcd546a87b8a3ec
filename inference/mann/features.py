"""MANN's features: the bones, the root and the trajectory samples, one definition for training
(``training/mann/data.py``) and the runtime (:mod:`.runtime`).

The reference implementation (Zhang, Starke et al. 2018) treats the dog's 21 joints and 6 End Sites as
27 bones, each End Site right after the joint it hangs from; the paws are the End Sites under
``LeftHand``, ``RightHand`` (front) and ``LeftFoot``, ``RightFoot`` (back). An End Site turns with its
joint, so its rotation is its joint's.

Everything is measured in a *root* frame on the floor: its origin is the hips projected to the floor
(y = 0), its +Z the facing (the horizontal direction from ``Hips`` to ``Neck``, steadier than the hips'
own axes, which point at the floor when the dog sits), +Y up and +X = Y x Z. A facing angle theta is
the direction (sin theta, cos theta) in x, z. The trajectory holds twelve samples of the root from one
second before to one second after a frame (the reference's: six past samples every 1/6 s, the frame
itself, five future ones every 0.2 s). Where the fields of x and y lie is in ``training/mann/data.py``.
"""

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import quat
from ..anatomy import PAWS
from ..errors import DataError
from ..motion import forward_kinematics

SITE = "Site"   # an End Site's bone name: its joint's name and this

SAMPLES = tuple([-1 + i / 6 for i in range(6)] + [0.0] + [i / 5 for i in range(1, 6)])   # seconds
CURRENT = 6          # the sample of the frame itself
SPEED_HORIZON = 1.0  # s: the desired speed is the root's path over this, in five legs
SAMPLE_FIELDS = {"position": (0, 2), "direction": (2, 4), "velocity": (4, 6), "speed": (6, 7), "actions": (7, 13)}
OUT_SAMPLE_FIELDS = {"position": (0, 2), "direction": (2, 4), "velocity": (4, 6)}
BONE_FIELDS = {"position": (0, 3), "forward": (3, 6), "up": (6, 9), "velocity": (9, 12)}
ROOT_FIELDS = {"dx": (0, 1), "dz": (1, 2), "dtheta": (2, 3)}
SAMPLE_DIM, OUT_SAMPLE_DIM, BONE_DIM = 13, 6, 12
FORWARD, UP = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0])   # a bone's local axes that it reports
SOFTEN = 0.25        # s: action one-hots are averaged over this, so that an action fades in and out


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


def sample_frames(fps):
    """The trajectory samples' offsets in frames at ``fps`` (the dog's 60: -60, -50, ..., 0, 12, ..., 60)."""
    return np.array([int(round(s * fps)) for s in SAMPLES])


def turn(theta, v):
    """Horizontal vectors (..., 2) as (x, z), or (..., 3), turned by -theta about +Y: into a root frame
    facing theta (the facing is (sin theta, cos theta) in x, z)."""
    c, s = np.cos(theta)[..., None], np.sin(theta)[..., None]
    x, z = v[..., :1], v[..., -1:]
    turned = [c * x - s * z, s * x + c * z]
    return np.concatenate([turned[0], v[..., 1:2], turned[1]] if v.shape[-1] == 3 else turned, axis=-1)


def root(pos, bones, fps):
    """The root of every frame of bone positions ``pos`` (F, B, 3): its position on the floor (F, 2) as
    (x, z), its facing angle (F,) (continuous: the facing is (sin, cos) of it) and its horizontal
    velocity (F, 2), backwards as the reference's (the first frame takes the second's)."""
    hips, neck = pos[:, bones.index("Hips")], pos[:, bones.index("Neck")]
    ground = hips[:, [0, 2]]
    facing = (neck - hips)[:, [0, 2]]
    theta = np.unwrap(np.arctan2(facing[:, 0], facing[:, 1]))
    velocity = np.diff(ground, axis=0, prepend=ground[:1]) * fps
    velocity[0] = velocity[1] if len(ground) > 1 else 0.0
    return ground, theta, velocity


def reflected(values, pad, point=False):
    """(F + 2 pad, ...) ``values`` extended at both ends by reflection in the end frames; ``point``
    reflects the values too (positions: the motion goes on with the same velocity)."""
    n = len(values)
    i = np.arange(-pad, n + pad)
    mirror = np.clip(np.where(i < 0, -i, np.where(i > n - 1, 2 * (n - 1) - i, i)), 0, n - 1)
    out = values[mirror]
    if point:
        end = np.where(i < 0, 0, n - 1)
        outside = (i < 0) | (i > n - 1)
        out[outside] = 2 * values[end[outside]] - out[outside]
    return out


def speed_ahead(ground, fps):
    """(F,) the desired speed of every frame of a ground track (F, 2): its length over the next
    SPEED_HORIZON seconds, measured in five legs as the reference does, per second; the frames with
    less than that ahead take the last whole one's."""
    leg = int(round(SPEED_HORIZON * fps / 5))
    if len(ground) <= 5 * leg:
        raise DataError(f"a ground track of {len(ground)} frames is shorter than the desired speed's horizon")
    path = np.linalg.norm(ground[leg:] - ground[:-leg], axis=-1)     # each leg's length, from each frame
    speed = sum(path[k * leg:len(path) - (4 - k) * leg] for k in range(5)) / SPEED_HORIZON
    return np.pad(speed, (0, len(ground) - len(speed)), mode="edge")


def trajectory(ground, theta, velocity, actions, fps):
    """(F, 12, 13): every frame's trajectory samples in its root frame (see the module's docstring), from
    the root's ground positions (F, 2), facing (F,), velocity (F, 2) and action values (F, A). Samples
    before the first frame or after the last are the root's point reflection there (the reference's rule:
    the root keeps its velocity through the ends)."""
    n = len(ground)
    offsets = sample_frames(fps)
    pad = int(np.abs(offsets).max()) + 5 * int(round(SPEED_HORIZON * fps / 5))   # the last sample's speed reads on
    g, th = reflected(ground, pad, point=True), reflected(theta, pad)
    v, act = reflected(velocity, pad), reflected(actions, pad)
    speed = speed_ahead(g, fps)
    at = pad + np.arange(n)[:, None] + offsets                          # (F, 12) into the padded arrays
    facing = theta[:, None]
    return np.concatenate([turn(facing, g[at] - ground[:, None]),
                           turn(facing, np.stack([np.sin(th[at]), np.cos(th[at])], axis=-1)),
                           turn(facing, v[at]), speed[at][..., None], act[at]], axis=-1)


def pose(pos, rot, ground, theta, fps):
    """(F, B, 12): every frame's bones (positions ``pos`` (F, B, 3), rotations ``rot`` (F, B, 4)) in the
    previous frame's root frame (the first frame's in its own): position, forward, up, velocity
    (backwards; the first frame takes the second's)."""
    n = len(pos)
    before = np.maximum(np.arange(n) - 1, 0)
    origin = np.stack([ground[before, 0], np.zeros(n), ground[before, 1]], axis=-1)
    velocity = np.diff(pos, axis=0, prepend=pos[:1]) * fps
    velocity[0] = velocity[1] if n > 1 else 0.0
    facing = theta[before, None]
    return np.concatenate([turn(facing, pos - origin[:, None]), turn(facing, quat.rotate(rot, FORWARD)),
                           turn(facing, quat.rotate(rot, UP)), turn(facing, velocity)], axis=-1)


def rolling(x, width, reduce):
    """``reduce`` over a centred window of ``width`` frames (edges repeat)."""
    half = max(int(width) // 2, 0)
    return reduce(sliding_window_view(np.pad(x, (half, half), mode="edge"), 2 * half + 1), axis=-1)


def one_hot(label, fps, count, soften=SOFTEN):
    """Action values (F, count) of action indices ``label`` (F,): one-hots averaged over ``soften``
    seconds, so that an action fades in and out over a quarter of a second, rather than switching."""
    hot = np.eye(count, dtype=np.float32)[label]
    width = int(round(soften * fps)) | 1
    return np.stack([rolling(hot[:, a], width, np.mean) for a in range(count)], axis=1)
