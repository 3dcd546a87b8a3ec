"""How a transition becomes network features and back: one definition for training and runtime.

A gap is seen from its last key: the whole pose is moved so that the trajectory joint (the hips, say)
stands over the origin and faces +X on the last past frame, which makes the model blind to where and
which way the character stands. A frame's features are then the trajectory joint's world position (in
heights) and every joint's local rotation; the target adds the world velocity of every joint on the
target frame, when the frame after the target is known, with a flag that says whether it is.

The trajectory is a world position rather than a local translation because data sets disagree on
which joint carries it: most of Bandai's clips move ``Hips`` under a still ``joint_Root``, a few
move ``joint_Root`` instead. In the world both are the same motion.
"""

from dataclasses import asdict, dataclass

import numpy as np

from . import quat
from .errors import BetwixtError
from .motion import AXES, forward_kinematics, forward_positions


@dataclass(frozen=True)
class Layout:
    """What a model assumes about its skeleton, stored in the model file's metadata."""

    joints: int
    trajectory: int        # the joint whose translation carries the character through the world
    facing_axis: int       # local axis (0, 1, 2 for X, Y, Z) of that joint that stays horizontal
    up: int                # world up axis (0, 1, 2)
    height: float          # length unit of position features
    fps: float

    @property
    def frame_dim(self):
        return 3 + 4 * self.joints

    @property
    def target_dim(self):
        return self.frame_dim + 3 * self.joints + 1

    def to_json(self):
        return asdict(self)


def chain(parents, joint):
    """The joints from the root down to ``joint``."""
    out = [joint]
    while parents[out[-1]] >= 0:
        out.append(parents[out[-1]])
    return out[::-1]


def chain_transform(rotations, positions, parents, joint):
    """World rotation and position of ``joint`` (…, 4) and (…, 3), from its chain alone."""
    c = chain(parents, joint)
    grot, gpos = forward_kinematics(rotations[..., c, :], positions[..., c, :], np.arange(len(c)) - 1)
    return grot[..., -1, :], gpos[..., -1, :]


def choose_layout(rotations, positions, parents, translated, fps, up="Y"):
    """A layout for a data set: ``rotations`` (F, J, 4), ``positions`` (F, J, 3) of its clips.

    The trajectory joint is the joint nearest the root, among those with translation channels, that
    travels over the ground about as far as any (LaFAN1's root; Bandai's ``Hips``, not its mostly
    still ``joint_Root`` and not a hand that also swings). Its facing axis is the local axis whose
    world direction stays most horizontal, so that heading is well defined on every frame.
    """
    u = AXES.index(up)
    ground = [a for a in range(3) if a != u]
    grot, gpos = forward_kinematics(rotations, positions, parents)
    travel = np.array([np.abs(np.diff(gpos[:, j][:, ground], axis=0)).sum() for j in translated])
    depth = [len(chain(parents, j)) for j in translated]
    far = [(d, j) for d, j, t in zip(depth, translated, travel) if t >= 0.5 * travel.max()]
    trajectory = int(min(far)[1]) if len(translated) else 0
    tilt = [np.abs(quat.rotate(grot[:, trajectory], np.eye(3)[a])[:, u]).mean() for a in range(3)]
    extent = np.percentile(np.ptp(gpos[..., u], axis=-1), 95)
    return Layout(joints=rotations.shape[1], trajectory=trajectory, facing_axis=int(np.argmin(tilt)), up=u,
                  height=float(extent), fps=float(fps))


def canonical_frame(rotations, positions, parents, layout):
    """``(turn, origin)`` taking each pose ``(B, J, …)`` to stand at the origin facing +X."""
    grot, gpos = chain_transform(rotations, positions, parents, layout.trajectory)
    heading = quat.rotate(grot, np.eye(3)[layout.facing_axis])
    heading[:, layout.up] = 0.0
    norm = np.linalg.norm(heading, axis=-1, keepdims=True)
    if np.any(norm < 1e-6):
        raise BetwixtError("the character's facing is undefined on the last key (its trajectory joint "
                           "points straight up); add a key where it is upright")
    forward = np.zeros(3)
    forward[[a for a in range(3) if a != layout.up][0]] = 1.0
    turn = quat.inv(quat.normalize(quat.between(forward, heading / norm)))
    origin = gpos.copy()
    origin[:, layout.up] = 0.0
    return turn, origin


def move(rotations, positions, turn, origin):
    """Apply the rigid motion ``x → turn (x − origin)`` to whole poses ``(B, T, J, …)`` (at the root)."""
    rotations = rotations.copy()
    positions = positions.copy()
    rotations[..., 0, :] = quat.mul(turn[:, None], rotations[..., 0, :])
    positions[..., 0, :] = quat.rotate(turn[:, None], positions[..., 0, :] - origin[:, None])
    return rotations, positions


def unmove(rotations, positions, turn, origin):
    """The inverse of :func:`move`."""
    back = quat.inv(turn)
    rotations = rotations.copy()
    positions = positions.copy()
    rotations[..., 0, :] = quat.mul(back[:, None], rotations[..., 0, :])
    positions[..., 0, :] = quat.rotate(back[:, None], positions[..., 0, :]) + origin[:, None]
    return rotations, positions


def orient(past, target, after=None):
    """Quaternion signs as the network sees them: ``q`` and ``-q`` are one rotation, not one input.

    The past frames (B, P, J, 4) are made continuous with ``w >= 0`` on the last key; the target key
    (B, J, 4) takes the hemisphere nearest that key, as along any motion that turns a joint less than
    half a turn across the gap, and the frame after it the target's. The frames inside a gap, which
    would tell the true sign, are the ones being generated, so this is all that can be known.
    """
    past = quat.unroll(past, axis=1)
    past = np.where(past[:, -1:, :, :1] < 0, -past, past)
    target = np.where(np.sum(target * past[:, -1], axis=-1, keepdims=True) < 0, -target, target)
    if after is not None:
        after = np.where(np.sum(after * target, axis=-1, keepdims=True) < 0, -after, after)
    return past, target, after


def frame_features(rotations, positions, parents, layout, world=None):
    """(…, J, 4) rotations and (…, J, 3) translations → (…, frame_dim) raw features; ``world`` (…, 3), the
    trajectory joint's world position where the caller has it already."""
    lead = rotations.shape[:-2]
    if world is None:
        _, world = chain_transform(rotations, positions, parents, layout.trajectory)
    return np.concatenate([world / layout.height, rotations.reshape(lead + (-1,))], axis=-1)


def decode_features(features, positions, parents, layout):
    """Raw features → local rotations (…, J, 4) and translations (…, J, 3).

    Translations other than the trajectory joint's come from ``positions`` (the last key's); the
    trajectory joint's local translation is whatever puts it at the predicted world position under
    its (predicted) ancestors.
    """
    lead = features.shape[:-1]
    world = features[..., :3] * layout.height
    rotations = quat.normalize(features[..., 3:].reshape(lead + (layout.joints, 4)))
    positions = np.broadcast_to(positions, lead + positions.shape[-2:]).copy()
    parent = parents[layout.trajectory]
    if parent < 0:
        positions[..., layout.trajectory, :] = world
    else:
        prot, ppos = chain_transform(rotations, positions, parents, parent)
        positions[..., layout.trajectory, :] = quat.rotate(quat.inv(prot), world - ppos)
    return rotations, positions


def target_features(rotations, positions, parents, layout, after=None):
    """The raw target vector: the target frame's features, every joint's world velocity, a flag.

    ``rotations``/``positions`` (B, J, …) are the target key; ``after`` is the frame after it as a
    ``(rotations, positions)`` pair, or None when the target is the last key.
    """
    b = rotations.shape[0]
    velocity = np.zeros((b, 3 * layout.joints))
    known = np.zeros((b, 1))
    here = None
    if after is not None:
        world = forward_positions(np.stack([rotations, after[0]]), np.stack([positions, after[1]]), parents)
        velocity = ((world[1] - world[0]) * (layout.fps / layout.height)).reshape(b, -1)
        known[:] = 1.0
        here = world[0, :, layout.trajectory]
    return np.concatenate([frame_features(rotations, positions, parents, layout, here), velocity, known], axis=-1)
