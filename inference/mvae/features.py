"""The Motion VAE's pose (Ling, Zinno, Cheng, van de Panne 2020), one definition for training
(``training/mvae/data.py``) and the runtime (:mod:`.runtime`), and its inverse.

Everything is measured in a *root* frame on the floor: its origin is the root joint (the hips) projected
to the floor (y = 0), its +Z the facing, +Y up. The facing is the horizontal direction at right angles
to the hips' left-to-right line (the root's sided children, LaFAN1's ``LeftUpLeg`` and ``RightUpLeg``):
it turns with the pelvis and never points at the floor. A facing angle theta is the direction
(sin theta, cos theta) in x, z.

The pose of frame t (D = 3 + 12 J values, 267 for LaFAN1's 22 joints):

- the root's velocity from t - 1 to t in t - 1's root frame: dx, dz (units/s) and dtheta (radians/s
  about +Y, positive turning +Z towards +X);
- every joint's position in t's root frame (J, 3);
- every joint's velocity (world displacement from t - 1, times fps) in t's root frame (J, 3);
- every joint's orientation in t's root frame as forward and up vectors (its rotation applied to its
  local +Z and +Y) (J, 6).

A sequence of poses goes back to a :class:`~..motion.Motion` (:func:`motion_of`) by integrating the
root from a start on the floor, rebuilding every joint's world rotation from its forward and up
vectors, turning those as little as it takes for the bones to point at the pose's joint positions
(:mod:`..aim`: a network's orientations and positions need not agree, and its positions are where its
feet stand), and placing the hips where the pose puts them; the other joints keep their rest offsets.
The rotations (local through the parents) and the hips are what is keyed; the velocities are what the
network learns from, as in the paper.
"""

import numpy as np

from .. import quat
from ..aim import aimed, skeleton_bones
from ..errors import DataError
from ..mirror import mirror_map, unsided
from ..motion import Motion, forward_kinematics, inverse_kinematics

UP = np.array([0.0, 1.0, 0.0])
FORWARD = np.array([0.0, 0.0, 1.0])
ROOT, POSITION, VELOCITY, ORIENTATION = 3, 3, 3, 6   # values per field: the root's, and per joint


def fields(joints):
    """{field: [start, stop]} of a pose of ``joints`` joints."""
    a = ROOT
    b = a + POSITION * joints
    c = b + VELOCITY * joints
    return {"root": [0, a], "positions": [a, b], "velocities": [b, c], "orientations": [c, c + ORIENTATION * joints]}


def size(joints):
    return fields(joints)["orientations"][1]


def hips_pair(skeleton):
    """``(left, right)``: the root's first pair of sided children, whose line sets the facing."""
    partner = mirror_map(skeleton.names)
    for j in skeleton.children(0):
        if partner[j] != j and unsided(skeleton.names[j])[0] == "L":
            return j, int(partner[j])
    raise DataError(f"the root {skeleton.names[0]!r} has no left and right children (such as LeftUpLeg and "
                    "RightUpLeg) to tell which way the character faces; the Motion VAE needs a biped skeleton")


def layout(skeleton, fps):
    """The pose's layout as plain values (the model file's ``betwixt.layout``)."""
    left, right = hips_pair(skeleton)
    return {"fps": float(fps), "up": "Y", "joints": list(skeleton.names), "size": size(len(skeleton)),
            "fields": fields(len(skeleton)), "facing": [skeleton.names[left], skeleton.names[right]],
            "root": {"origin": f"{skeleton.names[0]} projected to the floor (y = 0)",
                     "facing": f"+Z: horizontal, at right angles to {skeleton.names[right]} -> "
                               f"{skeleton.names[left]}", "axes": "+Y up, +X = Y x Z"},
            "units": "root dx, dz in units/s and dtheta in radians/s (about +Y, +Z towards +X) in the previous "
                     "frame's root frame; joint positions and velocities (units, units/s) and orientations "
                     "(forward = the joint's local +Z, up = its local +Y) in this frame's root frame"}


def yaw(theta):
    """Rotations (..., 4) by ``theta`` (...) about +Y: a root frame facing theta to the world."""
    return quat.from_angle_axis(theta, UP)


def root_of(world_positions, pair):
    """The root of every frame of world joint positions (F, J, 3): its origin on the floor (F, 3) and its
    facing angle (F,), unwrapped so that it is continuous."""
    left, right = pair
    across = world_positions[:, left] - world_positions[:, right]
    facing = np.cross(across, UP)
    theta = np.unwrap(np.arctan2(facing[:, 0], facing[:, 2]))
    origin = world_positions[:, 0] * np.array([1.0, 0.0, 1.0])
    return origin, theta


def poses(motion, pair=None):
    """``(poses, origin, theta)``: the poses (F - 1, D) of frames 1..F-1 of ``motion`` (Y up), and every
    frame's root origin (F, 3) and facing angle (F,), from which :func:`motion_of` starts."""
    if motion.up != "Y":
        raise DataError(f"{motion.name}: the Motion VAE's poses are Y up, this motion is {motion.up} up")
    if motion.n_frames < 2:
        raise DataError(f"{motion.name}: a pose needs the frame before it; the motion has {motion.n_frames} frame")
    pair = hips_pair(motion.skeleton) if pair is None else pair
    grot, gpos = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    origin, theta = root_of(gpos, pair)
    facing = quat.inv(yaw(theta))[:, None]                         # (F, 1, 4): world to root frame
    n = motion.n_frames - 1
    root = np.empty((n, ROOT))
    step = quat.rotate(facing[:-1, 0], origin[1:] - origin[:-1])
    root[:, 0], root[:, 1], root[:, 2] = step[:, 0], step[:, 2], np.diff(theta)
    local = quat.mul(facing, grot)[1:]
    pose = np.concatenate([root * motion.fps,
                           quat.rotate(facing, gpos - origin[:, None])[1:].reshape(n, -1),
                           quat.rotate(facing[1:], np.diff(gpos, axis=0) * motion.fps).reshape(n, -1),
                           np.concatenate([quat.rotate(local, FORWARD), quat.rotate(local, UP)], -1).reshape(n, -1)],
                          axis=1)
    return pose, origin, theta


def rotations_from(forward, up):
    """Unit quaternions (..., 4) of the rotations that take +Z to ``forward`` and +Y, as near as
    orthogonality allows, to ``up`` (..., 3 each; not necessarily unit or orthogonal)."""
    return quat.from_matrix(matrices_from(forward, up))


def matrices_from(forward, up):
    """The rotation matrices (..., 3, 3) of :func:`rotations_from`: columns the rotated +X, +Y, +Z."""
    z = forward / np.maximum(np.linalg.norm(forward, axis=-1, keepdims=True), 1e-9)
    x = np.cross(up, z)
    x /= np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9)
    return np.stack([x, np.cross(z, x), z], axis=-1)


def root_path(pose, origin, theta, fps):
    """The root of poses (..., F, D) that follow a frame whose root stood at ``origin`` (..., 3) facing
    ``theta`` (...), integrated frame by frame: each frame's origin (..., F, 3) and facing angle (...,
    F + 1; the start's first)."""
    dx, dz, dtheta = (pose[..., k] / fps for k in range(3))
    theta = np.broadcast_to(np.asarray(theta, dtype=np.float64)[..., None], dtheta.shape[:-1] + (1,))
    turned = np.concatenate([theta, theta + np.cumsum(dtheta, axis=-1)], axis=-1)
    step = quat.rotate(yaw(turned[..., :-1]), np.stack([dx, np.zeros_like(dx), dz], axis=-1))
    return np.asarray(origin)[..., None, :] + np.cumsum(step, axis=-2), turned


def motion_of(pose, origin, theta, skeleton, fps, name=""):
    """The motion of poses (F, D) that follow a frame whose root stood at ``origin`` (3,) facing ``theta``:
    the root integrated frame by frame, the joints' rotations from their forward and up vectors aimed at
    their positions, the hips placed by the pose, the other joints at ``skeleton``'s rest offsets."""
    f, j = len(pose), len(skeleton)
    part = fields(j)
    origins, turned = root_path(pose, origin, theta, fps)
    facing = yaw(turned[1:])[:, None]
    orient = pose[:, slice(*part["orientations"])].reshape(f, j, 6)
    world = quat.mul(facing, rotations_from(orient[..., :3], orient[..., 3:]))
    targets = quat.rotate(facing, pose[:, slice(*part["positions"])].reshape(f, j, 3)) + origins[:, None]
    hips = targets[:, 0]
    world = aimed(world, targets, hips, skeleton_bones(skeleton))
    rotations, _ = inverse_kinematics(world, np.zeros((f, j, 3)), skeleton.parents)
    positions = np.repeat(skeleton.offsets[None], f, axis=0)
    positions[:, 0] = hips
    return Motion(skeleton, quat.unroll(rotations), positions, fps, name=name)
