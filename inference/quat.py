"""Quaternions as numpy arrays with ``w, x, y, z`` on the last axis.

Every function broadcasts over leading axes so that whole clips (frames, joints, 4) are handled in
one call. Rotations compose like matrices: ``mul(a, b)`` applies ``b`` first, then ``a``.
"""

import numpy as np

_AXES = {"X": 0, "Y": 1, "Z": 2}
ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def mul(a, b):
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    w = aw * bw - ax * bx - ay * by - az * bz
    out = np.empty(w.shape + (4,), w.dtype)   # filled in place: np.stack costs more than the products
    out[..., 0] = w
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def inv(q):
    """Inverse of a unit quaternion (its conjugate)."""
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q, eps=1e-12):
    # np.linalg.norm's own arithmetic for vectors, without its checks (a fill normalises a dozen small arrays)
    return q / np.maximum(np.sqrt(np.add.reduce(q * q, axis=-1, keepdims=True)), eps)


def cross(a, b):
    """``np.cross`` without its axis juggling, which dominates the cost on small arrays."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    x = ay * bz - az * by
    out = np.empty(x.shape + (3,), x.dtype)
    out[..., 0] = x
    out[..., 1] = az * bx - ax * bz
    out[..., 2] = ax * by - ay * bx
    return out


def rotate(q, v):
    """Rotate vectors ``v`` (..., 3) by unit quaternions ``q`` (..., 4)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def from_angle_axis(angle, axis):
    """Rotation by ``angle`` radians (...) about the unit ``axis`` (3,) or (..., 3)."""
    half = 0.5 * np.asarray(angle)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def from_euler(angles, order):
    """Quaternions from Euler angles in radians, applied as BVH channels are listed.

    ``order`` names the axes of ``angles[..., 0], [..., 1], [..., 2]``; the rotation is
    ``R_order[0] @ R_order[1] @ R_order[2]``, which is how BVH files and Blender read channels.
    """
    eye = np.eye(3)
    q = from_angle_axis(angles[..., 0], eye[_AXES[order[0]]])
    for k in (1, 2):
        q = mul(q, from_angle_axis(angles[..., k], eye[_AXES[order[k]]]))
    return q


def to_matrix(q):
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    d = 1 - 2 * (y * y + z * z)
    m = np.empty(d.shape + (3, 3), d.dtype)
    m[..., 0, 0], m[..., 0, 1], m[..., 0, 2] = d, 2 * (x * y - w * z), 2 * (x * z + w * y)
    m[..., 1, 0], m[..., 1, 1], m[..., 1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    m[..., 2, 0], m[..., 2, 1], m[..., 2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return m


def rotation_part(m):
    """The rotation of 4x4 or 3x3 matrices with positive, possibly unequal, column scales."""
    r = np.asarray(m)[..., :3, :3]
    return r / np.linalg.norm(r, axis=-2, keepdims=True)


def from_matrix(m):
    """Unit quaternions ``w, x, y, z`` (…, 4) of rotation matrices (…, 3, 3), with ``w >= 0``."""
    m = np.asarray(m, dtype=np.float64)
    # Shepperd: four candidate formulas, each exact where its pivot is largest
    t = np.stack([m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2],
                  m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
                  -m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
                  -m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2]], axis=-1)
    k = np.argmax(t, axis=-1)
    s = np.sqrt(np.maximum(1.0 + np.take_along_axis(t, k[..., None], -1)[..., 0], 1e-300))
    a, b, c = m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]
    d, e, f = m[..., 1, 0] + m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] + m[..., 1, 2]
    ss = s * s
    q = np.empty(m.shape[:-2] + (4,))
    for i, component in enumerate(((ss, a, b, c), (a, ss, d, e), (b, d, ss, f), (c, e, f, ss))):
        q[..., i] = np.choose(k, component)   # the case of each pivot, picked
    q = q / (2.0 * s[..., None])
    q = normalize(q)
    return np.where(q[..., :1] < 0, -q, q)


def to_euler(q, order):
    """Euler angles in radians such that ``from_euler(to_euler(q, order), order)`` is ``±q``.

    For ``R = R_i(a) R_j(b) R_k(c)`` the middle angle is read off ``R[i, k]`` and the first from
    the column through it; ``s`` is the parity of the axis permutation. Near gimbal lock that column
    is tiny and ``a`` inexact, so ``c`` is read off row ``j`` of ``R_i(-a) R``, which is row ``j`` of
    ``R_k(c)`` and has unit scale: it absorbs the error in ``a`` and the rotation stays exact. At
    gimbal lock the third angle is set to zero and the first takes the whole turn.
    """
    i, j, k = (_AXES[a] for a in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    m = to_matrix(normalize(q))
    cos_b = np.hypot(m[..., i, i], m[..., i, j])
    b = np.arctan2(s * m[..., i, k], cos_b)
    locked = cos_b < 1e-14
    a = np.where(locked,
                 np.arctan2(s * m[..., k, j], m[..., j, j]),
                 np.arctan2(-s * m[..., j, k], m[..., k, k]))
    ca, sa = np.cos(a), np.sin(a)
    c = np.where(locked, 0.0, np.arctan2(s * ca * m[..., j, i] + sa * m[..., k, i],
                                         ca * m[..., j, j] + s * sa * m[..., k, j]))
    return np.stack([a, b, c], axis=-1)


def between(a, b):
    """The shortest rotation taking direction ``a`` onto direction ``b`` (not normalised)."""
    w = np.sqrt(np.sum(a * a, axis=-1) * np.sum(b * b, axis=-1)) + np.sum(a * b, axis=-1)
    return np.concatenate([w[..., None], cross(a, b)], axis=-1)


def unroll(q, axis=0):
    """Flip signs along ``axis`` (time) so that consecutive quaternions are in one hemisphere.

    ``q`` and ``-q`` are the same rotation, but interpolation, finite differences and networks need
    neighbours to be close as 4-vectors. Frame t flips if its dot with the already-fixed frame t-1
    is negative; the cumulative product of those flips does it without a Python loop.
    """
    q = np.moveaxis(q, axis, 0)
    out = q.copy()
    out[1:] *= unroll_signs(q)[1:, ..., None]
    return np.moveaxis(out, 0, axis)


def unroll_signs(q, axis=0):
    """(…) ±1 for each quaternion of ``q`` (…, 4) along ``axis``, the first 1: what :func:`unroll` turns each by,
    for a caller that needs a few frames of the unrolled motion, not all of them."""
    q = np.moveaxis(q, axis, 0)
    signs = np.ones(q.shape[:-1])
    signs[1:] = np.cumprod(np.where(np.sum(q[1:] * q[:-1], axis=-1) < 0.0, -1.0, 1.0), axis=0)
    return np.moveaxis(signs, 0, axis)


def slerp(a, b, t):
    """Spherical interpolation from ``a`` to ``b`` along the shorter arc, ``t`` broadcasting."""
    t = np.asarray(t, dtype=float)
    dot = np.sum(a * b, axis=-1)
    b = np.where((dot < 0.0)[..., None], -b, b)
    dot = np.abs(dot)
    linear = dot > 1.0 - 1e-6
    omega = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_omega = np.where(linear, 1.0, np.sin(omega))
    wa = np.where(linear, 1.0 - t, np.sin((1.0 - t) * omega) / sin_omega)
    wb = np.where(linear, t, np.sin(t * omega) / sin_omega)
    return normalize(wa[..., None] * a + wb[..., None] * b)


def mean(q, axis=0):
    """A mean rotation of unit quaternions along ``axis``: each first taken in the hemisphere of the
    first one (q and -q are one rotation), then averaged and normalised. Good for rotations that stay
    within a quarter turn or so of one another, as a joint's do over a data set."""
    q = np.moveaxis(q, axis, 0)
    q = np.where(np.sum(q * q[:1], axis=-1, keepdims=True) < 0, -q, q)
    return normalize(q.mean(axis=0))
