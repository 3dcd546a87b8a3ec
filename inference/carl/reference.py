"""A motion as the simulator's states: what the simulated body tracks, frame by frame.

The motion is turned Z up and scaled to metres (``body.TO_Z_UP``, ``Body.scale``) and stood on the
floor: each paw's ground (its End Site's median height while it stands, :func:`grounds`) goes to its
capsule's radius, on average over the four, so a paw on the ground touches the floor rather than
sinking into it or floating above it. Positions are MuJoCo's ``qpos`` (the root's position and world
rotation, then each ball joint's rotation from its natural pose), velocities its ``qvel`` by central
differences (``mj_differentiatePos``), and a paw is in contact where its End Site is within
``CONTACT`` of resting on the floor.
"""

from dataclasses import dataclass, replace

import numpy as np

from .. import quat
from ..motion import forward_kinematics
from .body import RADII, TO_Z_UP, mujoco

CONTACT = 0.02        # m: a paw this close to resting on the floor touches it
STANCE_SPEED = 0.15   # m/s: a paw slower than this over the floor stands on it


@dataclass(frozen=True, eq=False)
class Reference:
    """A motion's simulator states at its own frame rate."""

    name: str
    fps: float
    qpos: np.ndarray       # (F, nq)
    qvel: np.ndarray       # (F, nv)
    positions: np.ndarray  # (F, J, 3) the joints' world positions, metres, Z up, on the floor
    rotations: np.ndarray  # (F, J, 4) the joints' world rotations
    paws: np.ndarray       # (F, 4, 3) the paws' End Sites, world, in PAWS order
    contacts: np.ndarray   # (F, 4) bool
    lift: float = 0.0      # m the motion was raised to stand on the floor

    def __len__(self):
        return len(self.qpos)


def paw_radius(body):
    """(4,) the capsule radius at each paw, in PAWS order."""
    return np.array([RADII[body.skeleton.names[j]] for j in body.paws])


def grounds(paws, fps):
    """(4,) the height each paw (End Sites (F, 4, 3), Z up) stands at: its median height on the frames
    where it moves slower than STANCE_SPEED over the floor; its 2nd-percentile height where it never
    does. Lower percentiles caught a few low frames, and the reference floated above the floor."""
    speed = np.linalg.norm(np.diff(paws[..., :2], axis=0, prepend=paws[:1, :, :2]), axis=-1) * fps
    speed[0] = speed[min(1, len(speed) - 1)]
    still = speed < STANCE_SPEED
    heights = paws[..., 2]
    return np.array([np.median(heights[still[:, p], p]) if still[:, p].any() else np.percentile(heights[:, p], 2)
                     for p in range(heights.shape[1])])


def contacts(paws, radius):
    """(..., 4) bool: paws (..., 4, 3) within CONTACT of resting on the floor (heights ``radius`` (4,))."""
    return paws[..., 2] < radius + CONTACT


def slide(paws, contact, frames=None):
    """``(travel m, steps)``: how far paws (F, 4, 3) slide over the floor between consecutive frames on which
    they both touch it (``contact`` (F, 4)), and how many such paw steps there are; only between ``frames``
    (F,) bool, where given."""
    step = np.linalg.norm(np.diff(paws[..., :2], axis=0), axis=-1)
    both = contact[1:] & contact[:-1]
    if frames is not None:
        both &= (frames[1:] & frames[:-1])[:, None]
    return float(step[both].sum()), int(both.sum())


def world(body, motion):
    """World rotations (F, J, 4) and positions (F, J, 3) and the paws' End Sites (F, 4, 3) of ``motion``
    in the model's frame (Z up, metres), not yet on the floor."""
    grot, gpos = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    grot = quat.mul(TO_Z_UP, grot)
    gpos = quat.rotate(TO_Z_UP, gpos * body.scale)
    sites = dict((int(j), np.asarray(o, dtype=np.float64)) for j, o in motion.skeleton.end_sites)
    paw = body.paws
    ends = np.stack([sites[int(j)] for j in paw]) * body.scale
    return grot, gpos, gpos[:, paw] + quat.rotate(grot[:, paw], ends)


def states(body, model, motion):
    """The :class:`Reference` of ``motion`` (the body's skeleton) for the compiled ``model``."""
    mj = mujoco()
    grot, gpos, paws = world(body, motion)
    lift = np.mean(paw_radius(body) - grounds(paws, motion.fps))
    gpos[..., 2] += lift
    paws[..., 2] += lift
    local = quat.mul(quat.inv(body.natural)[None], motion.rotations)
    local[:, 0] = grot[:, 0]
    local = quat.unroll(local)
    qpos = np.zeros((motion.n_frames, model.nq))
    for j, name in enumerate(body.skeleton.names):
        adr = model.jnt_qposadr[model.joint(name).id]
        if j == 0:
            qpos[:, adr:adr + 3] = gpos[:, 0]
            adr += 3
        qpos[:, adr:adr + 4] = local[:, j]
    qvel = velocities(mj, model, qpos, motion.fps)
    return Reference(motion.name, float(motion.fps), qpos, qvel, gpos, grot, paws, contacts(paws, paw_radius(body)),
                     float(lift))


def motion_of(body, model, qpos, lift, like):
    """The motion of the body's skeleton whose simulator states are ``qpos`` (F, nq), the inverse of
    :func:`states`: ``like`` a motion of that skeleton (its bones' offsets, up axis and name), ``lift``
    what :func:`states` raised it by (``Reference.lift``). Frames at ``like``'s rate."""
    rotations = np.empty((len(qpos), len(body.skeleton), 4))
    for j, name in enumerate(body.skeleton.names):
        adr = model.jnt_qposadr[model.joint(name).id] + (3 if j == 0 else 0)
        rotations[:, j] = qpos[:, adr:adr + 4]
    rotations[:, 0] = quat.mul(quat.inv(TO_Z_UP), rotations[:, 0])
    rotations[:, 1:] = quat.mul(body.natural[None, 1:], rotations[:, 1:])
    positions = np.repeat(like.positions[:1], len(qpos), axis=0)
    positions[:, 0] = quat.rotate(quat.inv(TO_Z_UP), qpos[:, :3] - np.array([0.0, 0.0, lift])) / body.scale
    return replace(like, rotations=quat.unroll(rotations), positions=positions)


def velocities(mj, model, qpos, fps):
    """(F, nv) the velocities of positions ``qpos`` (F, nq) sampled at ``fps``: central differences,
    one-sided at the ends."""
    n = len(qpos)
    qvel = np.zeros((n, model.nv))
    if n < 2:
        return qvel
    for t in range(n):
        a, b = max(t - 1, 0), min(t + 1, n - 1)
        mj.mj_differentiatePos(model, qvel[t], (b - a) / fps, qpos[a], qpos[b])
    return qvel
