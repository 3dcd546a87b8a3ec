"""What the tracking policy reads: the simulated body and the reference frames ahead, both seen from
the simulated root's heading frame (its position on the floor, turned to face its yaw), so the policy
is blind to where on the floor the dog stands and which way it faces.

The root's height comes first; then every joint's position (3), every joint's rotation as two columns
of its matrix (6), every joint's linear and angular velocity (3 + 3); then, for each reference frame
of ``AHEAD``, every joint's position (3), then every joint's rotation (6), in the same frame.
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


def yaw(rotation):
    """The yaw (radians) of a root rotation (4,): the heading of the root's own X axis on the floor (the
    dog's hips' X points back, toward the tail, and stays within about 50 degrees of level in its walks,
    trots and canters: a steady yaw)."""
    x = quat.rotate(rotation, np.array([1.0, 0.0, 0.0]))
    return np.arctan2(x[1], x[0])


def observe(pose, ahead):
    """(size(J),) float32: ``pose`` the simulated joints' world positions, rotations, linear and angular
    velocities ((J, 3), (J, 4), (J, 3), (J, 3): ``Simulation.pose``), ``ahead`` the reference's world
    positions and rotations ((A, J, 3), (A, J, 4)) at the frames ``AHEAD``. Rotations are the first two
    columns of their matrices, continuous where quaternions are not."""
    pos, rot, lin, ang = pose
    ref_pos, ref_rot = ahead
    theta = yaw(rot[0])
    c, s = np.cos(theta), np.sin(theta)
    turn = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])       # world into the heading frame
    origin = np.array([pos[0, 0], pos[0, 1], 0.0])
    matrices = turn @ quat.to_matrix(np.concatenate([rot, ref_rot.reshape(-1, 4)]))
    vectors = np.concatenate([pos - origin, lin, ang, ref_pos.reshape(-1, 3) - origin]) @ turn.T
    j = len(pos)
    columns = matrices[..., :2].reshape(len(matrices), 6)
    return np.concatenate([pos[:1, 2], vectors[:j].ravel(), columns[:j].ravel(), vectors[j:2 * j].ravel(),
                           vectors[2 * j:3 * j].ravel(), vectors[3 * j:].ravel(), columns[j:].ravel()]).astype(np.float32)
