"""Blender's pose maths in numpy: bone channels to armature-space matrices, and back.

A pose bone's matrix in armature space is ``M = M_parent · inv(B_parent) · B · basis``, where ``B`` is
the bone's rest matrix (``bone.matrix_local``) and ``basis = T(location) · R(rotation) · S(scale)``;
a connected bone ignores its location. That is what Blender evaluates for bones that inherit
rotation (the default; ``Rig.plain`` marks them, and bones that do not are refused where they matter)
and carry no scale (inherited scale other than Blender's default is not modelled). Matrices are
``(..., 4, 4)`` acting on column vectors, as in ``mathutils``; rotations are quaternions ``w, x, y, z``
as everywhere in Betwixt.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..inference import quat
from ..inference.errors import BetwixtError

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@dataclass(frozen=True, eq=False)
class Rig:
    """An armature's bones in rest pose: names, parents (parents first), rest matrices (armature space)."""

    names: tuple
    parents: np.ndarray          # (bones,), -1 for a root
    rest: np.ndarray             # (bones, 4, 4) bone.matrix_local
    connected: np.ndarray        # (bones,) bool: location has no effect
    rotation_modes: tuple        # 'QUATERNION', 'AXIS_ANGLE' or an Euler order per bone
    plain: np.ndarray = None     # (bones,) bool: inherits rotation and has local location (Blender's default)
    lengths: np.ndarray = None   # (bones,) bone lengths, head to tail, in armature units, where read
    # (Rig, indices): the armature's own bones these stand for, where this is the deform skeleton read through
    # Blender's evaluation (evaluated.deform_rig)
    source: tuple = None

    def __post_init__(self):
        parents = np.asarray(self.parents, dtype=np.int64)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "rest", np.asarray(self.rest, dtype=np.float64))
        object.__setattr__(self, "connected", np.asarray(self.connected, dtype=bool))
        plain = np.ones(len(parents), dtype=bool) if self.plain is None else np.asarray(self.plain, dtype=bool)
        object.__setattr__(self, "plain", plain)
        if np.any(parents >= np.arange(len(parents))):
            raise BetwixtError("rig bones must list every parent before its children")

    def __len__(self):
        return len(self.names)

    @cached_property
    def relative(self):
        """``inv(B_parent) · B`` per bone: the rest matrix relative to the parent's."""
        rel = self.rest.copy()
        child = self.parents >= 0
        rel[child] = affine_inverse(self.rest[self.parents[child]]) @ self.rest[child]
        return rel

    def pose(self, location, rotation, scale):
        """Armature-space pose matrices ``(frames, bones, 4, 4)`` from channels ``(frames, bones, 3|4|3)``."""
        basis = compose(np.where(self.connected[:, None], 0.0, location), rotation, scale)
        rel = self.relative
        out = np.empty(basis.shape)
        for b, p in enumerate(self.parents):
            out[:, b] = (rel[b] @ basis[:, b]) if p < 0 else out[:, p] @ rel[b] @ basis[:, b]
        return out


def affine_inverse(m):
    """Inverses of affine 4x4 matrices ``(…, 4, 4)`` (last row 0, 0, 0, 1), in closed form.

    Not ``np.linalg.inv``: LAPACK solves each tiny matrix through the BLAS thread pool, and while the
    model's threads keep the cores busy that costs tens of milliseconds a call. Here the 3x3 inverse
    is its adjugate over its determinant, whose columns are cross products of its rows.
    """
    m = np.asarray(m, dtype=np.float64)
    a = m[..., :3, :3]
    adjugate = quat.cross(a[..., [1, 2, 0], :], a[..., [2, 0, 1], :])   # row i: row i+1 × row i+2
    det = np.sum(a[..., 0, :] * adjugate[..., 0, :], axis=-1)
    inv = np.swapaxes(adjugate, -1, -2) / det[..., None, None]
    out = np.zeros(m.shape)
    out[..., :3, :3] = inv
    out[..., :3, 3] = -(inv @ m[..., :3, 3, None])[..., 0]
    out[..., 3, 3] = 1.0
    return out


def compose(location, rotation, scale):
    """``T · R · S`` as 4x4 matrices from locations (…, 3), quaternions (…, 4) and scales (…, 3)."""
    m = np.zeros(location.shape[:-1] + (4, 4))
    m[..., :3, :3] = quat.to_matrix(quat.normalize(rotation)) * scale[..., None, :]
    m[..., :3, 3] = location
    m[..., 3, 3] = 1.0
    return m


rotation_part = quat.rotation_part  # (…, 4, 4) or (…, 3, 3) -> (…, 3, 3)
matrix_to_quat = quat.from_matrix   # (…, 3, 3) -> (…, 4), w >= 0


def euler_to_quat(angles, order):
    """Blender's Euler angles (x, y, z in radians; ``order`` 'XYZ' turns about X first) as quaternions."""
    axes = order[::-1]   # Blender's XYZ is the matrix Rz · Ry · Rx
    return quat.from_euler(np.stack([angles[..., "XYZ".index(a)] for a in axes], -1), axes)


def quat_to_euler(q, order):
    """Blender Euler angles (x, y, z) of quaternions, one of the two solutions (see :func:`unwrap_euler`)."""
    axes = order[::-1]
    a = quat.to_euler(q, axes)
    out = np.empty(a.shape)
    for k, axis in enumerate(axes):
        out[..., "XYZ".index(axis)] = a[..., k]
    return out


def unwrap_euler(angles, order, previous):
    """Euler angles ``(frames, …, 3)`` made continuous from ``previous`` (…, 3), as Blender keys them.

    Each rotation has two Euler solutions, ``(a, b, c)`` and ``(a + π, π − b, c + π)`` in the order the
    axes are applied, each up to whole turns per axis; the one nearest the frame before wins.
    """
    axes = order[::-1]
    first, middle, last = ("XYZ".index(a) for a in axes)
    out = np.empty(angles.shape)
    prev = np.asarray(previous, dtype=np.float64)
    for f in range(angles.shape[0]):
        a = angles[f]
        other = a.copy()
        other[..., first] += np.pi
        other[..., middle] = np.pi - a[..., middle]
        other[..., last] += np.pi
        best = None
        for cand in (a, other):
            cand = cand + 2.0 * np.pi * np.round((prev - cand) / (2.0 * np.pi))
            dist = np.sum((cand - prev) ** 2, axis=-1, keepdims=True)
            best = (cand, dist) if best is None else (np.where(dist < best[1], cand, best[0]),
                                                      np.minimum(dist, best[1]))
        out[f] = prev = best[0]
    return out


def channels_to_quat(values, mode):
    """Rotation channel values (…, 3 or 4) of one rotation mode as quaternions."""
    if mode == "QUATERNION":
        return quat.normalize(values)
    if mode == "AXIS_ANGLE":
        axis = values[..., 1:]
        norm = np.linalg.norm(axis, axis=-1, keepdims=True)
        axis = np.where(norm > 1e-12, axis / np.maximum(norm, 1e-12), [0.0, 1.0, 0.0])
        return quat.from_angle_axis(values[..., 0], axis)
    return euler_to_quat(values, mode)


def quat_to_channels(q, mode, previous):
    """Quaternions ``(frames, …, 4)`` as continuous channel values of ``mode``, following ``previous``
    (the channel values ``(…, 3|4)`` on the frame before)."""
    if mode == "QUATERNION":
        q = np.where(np.sum(q[:1] * previous, -1, keepdims=True) < 0, -q, q)
        return quat.unroll(q)
    if mode == "AXIS_ANGLE":
        q = quat.unroll(np.where(q[:1, ..., :1] < 0, -q, q))
        angle = 2.0 * np.arctan2(np.linalg.norm(q[..., 1:], axis=-1), q[..., 0])
        norm = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
        axis = np.where(norm > 1e-12, q[..., 1:] / np.maximum(norm, 1e-12), previous[..., 1:])
        return np.concatenate([angle[..., None], axis], axis=-1)
    return unwrap_euler(quat_to_euler(q, mode), mode, previous)


def channel_count(mode):
    return 4 if mode in ("QUATERNION", "AXIS_ANGLE") else 3


def channel_path(mode):
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
