"""What Blender evaluates: a rig's pose after constraints, drivers and IK, frame by frame.

A control rig's deform bones move through constraints (Rigify's ``DEF-`` bones copy ``ORG-`` and tweak
bones, which follow FK or IK chains), so their F-curves, if any, say nothing of the pose the mesh shows.
Where any mapped bone, or a bone above it, is constrained or driven, Betwixt reads the pose Blender's
depsgraph gives on each frame instead (``scene.frame_set``, then every pose bone's matrix in one bulk
read). A plain skeleton's F-curves give the same pose without evaluating the scene, much faster, and
keep being read that way (``pose_io.sample``).
"""

import bpy
import numpy as np

from ..inference import quat
from .rig import Rig, affine_inverse, matrix_to_quat, rotation_part
from .steps import drained

INSIDE = 4   # a gap's frames evaluated: every INSIDE-th


def driven(obj, rig, bones):
    """Whether any of ``bones`` (indices) or a bone above them has a constraint, a driver, or
    inherits other than Blender's defaults: then only Blender's evaluation tells their pose."""
    paths = {fc.data_path.split('"')[1] for fc in obj.animation_data.drivers
             if fc.data_path.startswith("pose.bones[")} if obj.animation_data else set()
    seen = set()
    for b in bones:
        while b >= 0 and b not in seen:
            seen.add(b)
            name = rig.names[b]
            if len(obj.pose.bones[name].constraints) or name in paths or not rig.plain[b]:
                return True
            b = rig.parents[b]
    return False


def pose_matrices(obj, frames, bones):
    """Armature-space matrices ``(len(frames), len(bones), 4, 4)`` of ``bones`` (indices) as Blender
    evaluates them on each of ``frames``; the scene's current frame is put back afterwards."""
    return drained(pose_matrices_steps(obj, frames, bones))


def pose_matrices_steps(obj, frames, bones):
    """:func:`pose_matrices` as steps (:mod:`.steps`), a share after each frame: a long action's frames
    take seconds to evaluate."""
    scene = bpy.context.scene
    current, sub = scene.frame_current, scene.frame_subframe
    pose = obj.pose.bones
    flat = np.empty(len(pose) * 16, dtype=np.float32)
    out = np.empty((len(frames), len(bones), 4, 4))
    bones = np.asarray(bones, dtype=np.int64)
    try:
        for i, frame in enumerate(frames):
            scene.frame_set(int(frame))
            pose.foreach_get("matrix", flat)
            out[i] = np.swapaxes(flat.reshape(-1, 4, 4)[bones], -1, -2)
            yield (i + 1) / len(frames)
    finally:
        scene.frame_set(current, subframe=sub)
    return out


def pose_around(obj, frames, bones, gaps):
    """Steps (:mod:`.steps`) that return :func:`pose_matrices` on the whole, consecutive ``frames``,
    evaluated outside the ``gaps`` ((a, b) key pairs) and on every INSIDE-th frame within them, blended
    between (:func:`interpolated`): the model replaces a gap's pose, and only a control's place beside its
    bone is read there, which changes slowly (an IK chain's root turns with the solution) but changes."""
    frames = np.asarray(frames)
    inside = np.zeros(len(frames), dtype=bool)
    for a, b in gaps:
        inside |= (frames > a) & (frames < b)
    inside[::INSIDE] = False
    rows = np.flatnonzero(~inside)
    return interpolated((yield from pose_matrices_steps(obj, frames[rows], bones)), rows, len(frames))


def interpolated(matrices, rows, n):
    """Affine matrices ``matrices`` (len(rows), …, 4, 4) on ``rows`` of ``n`` frames, interpolated onto every
    frame: translations and column scales linearly, rotations by normalised linear blends of
    sign-continuous quaternions (near slerp between close poses)."""
    at = np.arange(n)

    def blend(values):
        flat = values.reshape(len(rows), -1)
        return np.stack([np.interp(at, rows, col) for col in flat.T], -1).reshape((n,) + values.shape[1:])
    scale = np.linalg.norm(matrices[..., :3, :3], axis=-2)
    q = quat.unroll(matrix_to_quat(rotation_part(matrices)))
    out = np.zeros((n,) + matrices.shape[1:])
    out[..., :3, :3] = quat.to_matrix(quat.normalize(blend(q))) * blend(scale)[..., None, :]
    out[..., :3, 3] = blend(matrices[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def deform_rig(rig, mapping, parents):
    """The rig as the model's skeleton sees it, made of the mapped bones alone (its ``source``: ``rig`` and
    their indices there, in its order), each hanging from the bone of its joint's nearest mapped
    ancestor (``mapping`` {joint: bone}, ``parents`` the model's), wherever Blender parents it: constraints,
    not parenting, move a control rig's deform bones (Rigify's ``DEF-thigh.L`` hangs from ``ORG-spine``,
    not from ``DEF-spine``). Its bones are plain and free, so reading and writing through it is
    :class:`..rig.Rig`'s forward kinematics of the pose Blender shows. None where a mapped bone comes
    before its new parent in the rig's order."""
    bones = np.array(sorted(mapping.values()), dtype=np.int64)
    at = {int(b): k for k, b in enumerate(bones)}
    new = np.full(len(bones), -1, dtype=np.int64)
    for j, b in mapping.items():
        p = parents[j]
        while p >= 0 and p not in mapping:
            p = parents[p]
        if p >= 0:
            if mapping[p] >= b:
                return None
            new[at[b]] = at[mapping[p]]
    k = len(bones)
    sub = Rig(tuple(rig.names[b] for b in bones), new, rig.rest[bones], np.zeros(k, bool),
              tuple(rig.rotation_modes[b] for b in bones), np.ones(k, bool),
              None if rig.lengths is None else rig.lengths[bones], (rig, bones))
    return sub


def channels_of(rig, pose):
    """Channels (location, rotation, scale), each ``(frames, bones, …)``, that give the rigid parts of the
    armature-space matrices ``pose`` (frames, bones, 4, 4) through ``rig``'s forward kinematics."""
    rigid = pose.copy()
    rigid[..., :3, :3] = rotation_part(pose)
    above = np.broadcast_to(rig.rest, rigid.shape).copy()
    child = rig.parents >= 0
    above[:, child] = rigid[:, rig.parents[child]] @ rig.relative[child]
    basis = affine_inverse(above) @ rigid
    return basis[..., :3, 3], matrix_to_quat(rotation_part(basis)), np.ones(basis.shape[:-2] + (3,))
