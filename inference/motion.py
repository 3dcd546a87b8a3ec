"""``Skeleton`` and ``Motion``: the one in-memory motion type, and the kinematics on it.

A motion is local joint rotations (unit quaternions, ``w`` first) plus local joint translations, per
frame. Translations are kept for every joint, not just the root, because some rigs animate more than
the root's position (Bandai's files key a translation on every joint, and its ``Hips`` carry the
trajectory under a static ``joint_Root``); a joint without position channels simply repeats its rest
offset. Up axis and units are attributes, converted at the edges of the program.
"""

from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from . import quat
from .errors import BetwixtError

AXES = "XYZ"


@dataclass(frozen=True, eq=False)
class Skeleton:
    """Joint hierarchy in rest pose; ``parents[j] < j`` and the root's parent is -1.

    ``channels`` is the per-joint channel layout a BVH file declares (kept so a file writes back as
    it was read); ``end_sites`` are (joint, offset) pairs for the BVH leaf markers;
    ``rest_orientations`` holds per-joint rest rotations where a rig has them (Blender armatures).
    """

    names: tuple
    parents: np.ndarray
    offsets: np.ndarray
    channels: tuple = None
    end_sites: tuple = ()
    rest_orientations: np.ndarray = None

    def __post_init__(self):
        n = len(self.names)
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "parents", np.asarray(self.parents, dtype=np.int64))
        object.__setattr__(self, "offsets", np.asarray(self.offsets, dtype=np.float64))
        if self.channels is None:
            default = tuple(f"{a}rotation" for a in "ZYX")
            layout = [tuple(f"{a}position" for a in AXES) + default] + [default] * (n - 1)
            object.__setattr__(self, "channels", tuple(layout))
        if self.parents.shape != (n,) or self.offsets.shape != (n, 3) or len(self.channels) != n:
            raise BetwixtError(f"skeleton arrays disagree on the joint count {n}")
        if n == 0 or self.parents[0] != -1 or np.any(self.parents[1:] >= np.arange(1, n)) \
                or np.any(self.parents[1:] < 0):
            raise BetwixtError("skeleton joints must list the root first and every parent before its child")

    def __len__(self):
        return len(self.names)

    def index(self, name):
        try:
            return self.names.index(name)
        except ValueError:
            raise BetwixtError(f"the skeleton has no joint named {name!r}") from None

    def children(self, j):
        return [int(c) for c in np.flatnonzero(self.parents == j)]

    def same_hierarchy(self, other):
        return self.names == other.names and np.array_equal(self.parents, other.parents)

    def to_json(self):
        """The joints, rest offsets and End Sites as a model file keeps them (``betwixt.skeleton``)."""
        return {"names": list(self.names), "parents": [int(p) for p in self.parents], "offsets": self.offsets.tolist(),
                "end_sites": [[int(j), [float(v) for v in o]] for j, o in self.end_sites]}

    @classmethod
    def from_json(cls, data):
        """The skeleton :meth:`to_json` wrote; files written before End Sites were kept have none."""
        sites = tuple((int(j), np.asarray(o, dtype=np.float64)) for j, o in data.get("end_sites", ()))
        return cls(data["names"], data["parents"], data["offsets"], end_sites=sites)


@dataclass(frozen=True, eq=False)
class Motion:
    """Local rotations ``(frames, joints, 4)`` and local translations ``(frames, joints, 3)``."""

    skeleton: Skeleton
    rotations: np.ndarray
    positions: np.ndarray
    fps: float
    up: str = "Y"
    name: str = field(default="")

    def __post_init__(self):
        object.__setattr__(self, "rotations", np.asarray(self.rotations, dtype=np.float64))
        object.__setattr__(self, "positions", np.asarray(self.positions, dtype=np.float64))
        j = len(self.skeleton)
        f = self.rotations.shape[0]
        if self.rotations.shape != (f, j, 4) or self.positions.shape != (f, j, 3):
            raise BetwixtError(
                f"motion {self.name!r}: rotations {self.rotations.shape} and positions "
                f"{self.positions.shape} do not fit {j} joints")
        if not 0 < self.fps < np.inf:
            raise BetwixtError(f"motion {self.name!r}: frame rate must be positive, not {self.fps}")
        if self.up not in tuple(AXES):   # not a substring test: '' and 'XY' are no axis
            raise BetwixtError(f"motion {self.name!r}: up axis must be one of X, Y, Z, not {self.up!r}")

    @property
    def n_frames(self):
        return self.rotations.shape[0]

    @property
    def root_positions(self):
        return self.positions[:, 0]

    @property
    def duration(self):
        return self.n_frames / self.fps

    def frames(self, start, stop=None):
        """The frames ``start:stop`` as a motion of their own."""
        return replace(self, rotations=self.rotations[start:stop], positions=self.positions[start:stop])

    def global_transforms(self):
        """World rotations and positions of every joint, ``(frames, joints, 4)`` and ``(…, 3)``."""
        return forward_kinematics(self.rotations, self.positions, self.skeleton.parents)

    def resample(self, fps):
        """The same motion sampled at ``fps``: slerp between rotations, lerp between positions."""
        if not 0 < fps < np.inf:
            raise BetwixtError(f"cannot resample {self.name!r} to {fps} frames per second")
        n = int(np.floor((self.n_frames - 1) * fps / self.fps + 1e-9)) + 1
        t = np.arange(n) * (self.fps / fps)
        i0 = np.minimum(np.floor(t).astype(np.int64), max(self.n_frames - 2, 0))
        i1 = np.minimum(i0 + 1, self.n_frames - 1)
        a = (t - i0)[:, None]
        rotations = quat.unroll(self.rotations)
        rot = quat.slerp(rotations[i0], rotations[i1], a)
        pos = self.positions[i0] * (1.0 - a[..., None]) + self.positions[i1] * a[..., None]
        return replace(self, rotations=quat.unroll(rot), positions=pos, fps=float(fps))


@lru_cache(maxsize=64)
def depth_levels(parents):
    """The joints grouped by depth, root level first: each group's parents all lie in earlier ones.
    ``parents`` is a tuple; cached, as a fill runs forward kinematics on the same few skeletons and
    chains several times (and poses the same rig's bones, :func:`..addon.retarget.to_rig`)."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for j, p in enumerate(parents):   # parents come first
        depth[j] = 0 if p < 0 else depth[p] + 1
    return tuple(np.flatnonzero(depth == d) for d in range(int(depth.max(initial=0)) + 1))


def forward_kinematics(rotations, positions, parents):
    """Local to world: ``(..., J, 4)`` and ``(..., J, 3)`` in, world rotations and positions out.

    One batched step per depth of the hierarchy (all joints whose parents are placed), so neither
    the frame and batch axes nor the joints of one depth loop: 8 steps for LaFAN1's 22 joints. Each
    joint's arithmetic is the same as one step per joint, so the results are too. The joints are
    worked on as the first axis, where each joint's frames lie together: gathered from the joint axis
    in the middle, a level's parents are strided rows, slow to copy (docs/experiments.md).
    """
    parents = np.asarray(parents)
    lead = np.broadcast_shapes(rotations.shape[:-1], positions.shape[:-1])
    dtype = np.result_type(rotations, positions)
    if (parents < 0).all():   # roots only (a chain of one joint): each is where it is
        return (np.broadcast_to(rotations, lead + (4,)).astype(dtype),
                np.broadcast_to(positions, lead + (3,)).astype(dtype))
    rotations = np.moveaxis(np.broadcast_to(rotations, lead + (4,)), -2, 0)
    positions = np.moveaxis(np.broadcast_to(positions, lead + (3,)), -2, 0)
    grot = np.empty(rotations.shape, dtype=dtype)
    gpos = np.empty(positions.shape, dtype=dtype)
    roots, *levels = depth_levels(tuple(parents.tolist()))
    grot[roots] = rotations[roots]
    gpos[roots] = positions[roots]
    for js in levels:
        ps = parents[js]
        turn = grot[ps]
        grot[js] = quat.mul(turn, rotations[js])
        gpos[js] = quat.rotate(turn, positions[js]) + gpos[ps]
    return np.ascontiguousarray(np.moveaxis(grot, 0, -2)), np.ascontiguousarray(np.moveaxis(gpos, 0, -2))


def forward_positions(rotations, positions, parents):
    """The world positions alone of :func:`forward_kinematics`, through rotation matrices: a matrix product a
    depth where the quaternions take some thirty small operations, which on a fill's few poses (its target key
    and the frame after it) is most of the time. They differ from :func:`forward_kinematics`' in the last bits
    (1e-13 of their size): for inputs the network reads in 32 bits, not where the rotations go on."""
    parents = np.asarray(parents)
    turns = quat.to_matrix(np.moveaxis(rotations, -2, 0))             # (J, ..., 3, 3), joints first as above
    offsets = np.moveaxis(positions, -2, 0)[..., None]                 # (J, ..., 3, 1)
    gmat, gpos = np.empty(turns.shape), np.empty(offsets.shape)
    roots, *levels = depth_levels(tuple(parents.tolist()))
    gmat[roots], gpos[roots] = turns[roots], offsets[roots]
    for js in levels:
        ps = parents[js]
        turn = gmat[ps]
        gmat[js] = turn @ turns[js]
        gpos[js] = turn @ offsets[js] + gpos[ps]
    return np.ascontiguousarray(np.moveaxis(gpos[..., 0], 0, -2))


def inverse_kinematics(grot, gpos, parents):
    """World to local, the inverse of :func:`forward_kinematics`."""
    rot = grot.copy()
    pos = gpos.copy()
    child = np.flatnonzero(np.asarray(parents) >= 0)
    par = np.asarray(parents)[child]
    parent_inv = quat.inv(grot[..., par, :])
    rot[..., child, :] = quat.mul(parent_inv, grot[..., child, :])
    pos[..., child, :] = quat.rotate(parent_inv, gpos[..., child, :] - gpos[..., par, :])
    return rot, pos


def guess_up_axis(world_positions):
    """The axis along which the body is tall and its lowest joint stays level: the floor's normal.

    Per axis, the spread over time of the lowest joint (small along the up axis: feet stay on the
    floor while the horizontal minima follow the trajectory) over the body's typical extent (large
    along the up axis for a standing character). BVH's convention, Y, wins unless another axis is
    clearly better, so still or ambiguous clips keep it.
    """
    extent = np.median(np.ptp(world_positions, axis=1), axis=0)
    lowest = world_positions.min(axis=1)
    score = lowest.std(axis=0) / np.maximum(extent, 1e-12 * max(extent.max(), 1.0))
    best = int(np.argmin(score))
    return "Y" if score[1] <= 2.0 * score[best] + 1e-9 else AXES[best]   # + rounding: a still clip


def height(world_positions, up="Y"):
    """The character's standing height: the 95th percentile over frames of its vertical extent."""
    axis = AXES.index(up)
    extent = np.ptp(world_positions[..., axis], axis=-1)
    return float(np.percentile(extent, 95))
