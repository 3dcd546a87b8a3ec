"""What the tracking policy reads: the simulated body and the reference frames ahead, both seen from
the simulated root's heading frame (its position on the floor, turned to face its yaw), so the policy
is blind to where on the floor the dog stands and which way it faces.

Per joint, the body gives its position (3), its rotation as two columns of its matrix (6), its linear
and angular velocities (3 + 3); the root's height comes first. Each reference frame of ``AHEAD`` gives
each joint's position (3) and rotation (6) in the same frame.
"""

import numpy as np

from .. import quat

AHEAD = (1, 2)   # the reference frames (policy steps ahead) the policy sees


def state_size(joints):
    """The length of the body's own part of the observation (it comes first), ``joints`` joints."""
    return 1 + 15 * joints


def size(joints):
    """The observation's length for a body of ``joints`` joints: the body's, then the reference's."""
    return state_size(joints) + 9 * joints * len(AHEAD)


def heading(rotation):
    """The yaw-only rotation (4,) of a root rotation (4,): the turn about Z that takes +X to the
    horizontal direction of the root's own X axis (the dog's hips' X points back, toward the tail, and
    stays within about 50 degrees of level in its walks, trots and canters: a steady yaw)."""
    x = quat.rotate(rotation, np.array([1.0, 0.0, 0.0]))
    yaw = np.arctan2(x[1], x[0])
    return quat.from_angle_axis(yaw, np.array([0.0, 0.0, 1.0]))


def two_columns(q):
    """(..., 6) the first two columns of the rotation matrices of ``q`` (..., 4): continuous, unlike q."""
    return quat.to_matrix(q)[..., :, :2].reshape(q.shape[:-1] + (6,))


def observe(pose, ahead):
    """(size(J),) float32: ``pose`` the simulated joints' world positions, rotations, linear and angular
    velocities ((J, 3), (J, 4), (J, 3), (J, 3): ``Simulation.pose``), ``ahead`` the reference's world
    positions and rotations ((A, J, 3), (A, J, 4)) at the frames ``AHEAD``."""
    pos, rot, lin, ang = pose
    face = quat.inv(heading(rot[0]))
    origin = np.array([pos[0, 0], pos[0, 1], 0.0])
    ref_pos, ref_rot = ahead
    parts = [pos[:1, 2],
             quat.rotate(face, pos - origin).ravel(), two_columns(quat.mul(face, rot)).ravel(),
             quat.rotate(face, lin).ravel(), quat.rotate(face, ang).ravel(),
             quat.rotate(face, ref_pos - origin).ravel(), two_columns(quat.mul(face, ref_rot)).ravel()]
    return np.concatenate(parts).astype(np.float32)
