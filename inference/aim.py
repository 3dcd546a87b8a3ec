"""Bones aimed at a network's joint positions: the motion a pose-predicting network means.

MANN and the Motion VAE predict every joint's position and its orientation (forward and up vectors),
and the two need not agree: built from the orientations alone through the skeleton, a foot lands
several centimetres from where the network put it, and slides where the network's own foot stands
still. Their reference runtimes draw the predicted positions; a rig can only be keyed with rotations,
so here each joint's predicted orientation is turned, root first, as little as it takes for its bones
to point at the children's predicted positions (at the skeleton's own bone lengths): a joint with one
bone below it is swung onto it and keeps its twist; one with several (the hips, the chest) gets the
rotation that best fits them all (Kabsch), its predicted orientation weighing in lightly so that
children nearly in a line do not leave it free to spin.
"""

import numpy as np

from . import quat
from .retarget import best_rotation

PRIOR = 0.01  # the predicted orientation's weight in a several-bone fit, against one bone's


def aimed(world_rotations, targets, root, bones):
    """World rotations (..., J, 4), turned from ``world_rotations`` so that the bones point at ``targets``.

    ``targets`` (..., T, 3): predicted world positions; ``root`` (..., 3): the root joint's world position;
    ``bones``: per joint, a list of ``(offset (3,), target index, child joint or -1)`` for the bones that
    hang from it (a child joint at its rest offset, or an End Site). Joints come parents first, as in
    a :class:`~.motion.Skeleton`."""
    rotations = np.array(world_rotations, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    placed = {0: np.asarray(root, dtype=np.float64)}
    for j, hanging in enumerate(bones):
        if not hanging:
            continue
        offsets = np.array([offset for offset, _, _ in hanging])                  # (C, 3)
        wanted = targets[..., [t for _, t, _ in hanging], :] - placed[j][..., None, :]   # (..., C, 3)
        wanted *= (np.linalg.norm(offsets, axis=-1) / np.maximum(np.linalg.norm(wanted, axis=-1), 1e-9))[..., None]
        if len(hanging) == 1:
            swing = quat.between(quat.rotate(rotations[..., j, :], offsets[0]), wanted[..., 0, :])
            size = np.linalg.norm(swing, axis=-1, keepdims=True)
            # a bone half a turn from its target has no one shortest swing: it is left as it is
            swing = np.where(size <= 1e-9, [1.0, 0.0, 0.0, 0.0], swing / np.maximum(size, 1e-12))
            rotations[..., j, :] = quat.mul(swing, rotations[..., j, :])
        else:
            rotations[..., j, :] = _fitted(offsets, wanted, rotations[..., j, :])
        for offset, _, child in hanging:
            if child >= 0:
                placed[child] = placed[j] + quat.rotate(rotations[..., j, :], offset)
    return rotations


def skeleton_bones(skeleton, joints=None, sites=None):
    """:func:`aimed`'s ``bones`` of ``skeleton``: ``joints`` (J,) the target index of each joint (default:
    the joint's own), ``sites`` ({joint: target index}) the End Sites that have predicted positions too."""
    index = np.arange(len(skeleton)) if joints is None else np.asarray(joints)
    bones = [[] for _ in skeleton.names]
    for c in range(1, len(skeleton)):
        bones[skeleton.parents[c]].append((skeleton.offsets[c], int(index[c]), c))
    for j, offset in skeleton.end_sites:
        if sites and j in sites:
            bones[j].append((np.asarray(offset, dtype=np.float64), sites[j], -1))
    return bones


def _fitted(offsets, wanted, prior):
    """The rotations (..., 4) that best take ``offsets`` (C, 3) onto ``wanted`` (..., C, 3) in the least
    squares (:func:`.retarget.best_rotation`), with the rotations ``prior`` (..., 4) as PRIOR of one more
    bone on each axis."""
    weight = np.sqrt(PRIOR * np.mean(np.sum(offsets * offsets, axis=-1)))
    a = np.concatenate([offsets, weight * np.eye(3)])
    b = np.concatenate([wanted, weight * np.swapaxes(quat.to_matrix(prior), -1, -2)], axis=-2)
    finite = np.isfinite(b).all(axis=(-1, -2))
    fitted = quat.from_matrix(best_rotation(a, np.where(finite[..., None, None], b, a)))
    return np.where(finite[..., None], fitted, np.nan)   # a walk that blew up stays NaN
