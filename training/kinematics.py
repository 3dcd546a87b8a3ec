"""Forward kinematics in torch, for the position term of the loss (inference/motion.py in numpy)."""

import torch


def quat_mul(a, b):
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], dim=-1)


def quat_rotate(q, v):
    u = q[..., 1:]
    t = 2.0 * torch.linalg.cross(u, v, dim=-1)
    return v + q[..., :1] * t + torch.linalg.cross(u, t, dim=-1)


def forward_kinematics(rotations, positions, parents, pinned=None):
    """World positions (..., J, 3) from local rotations (..., J, 4) and translations (..., J, 3).

    ``pinned = (joint, world)`` places that joint at the given world positions (..., 3) instead of
    at its translation: the network predicts the trajectory joint where it is, not relative to its
    parent (see inference/features.py).
    """
    grot, gpos = [], []
    for j, p in enumerate(parents):
        if pinned is not None and j == pinned[0]:
            gpos.append(pinned[1])
            grot.append(rotations[..., j, :] if p < 0 else quat_mul(grot[p], rotations[..., j, :]))
        elif p < 0:
            grot.append(rotations[..., j, :])
            gpos.append(positions[..., j, :])
        else:
            gpos.append(quat_rotate(grot[p], positions[..., j, :]) + gpos[p])
            grot.append(quat_mul(grot[p], rotations[..., j, :]))
    return torch.stack(gpos, dim=-2)
