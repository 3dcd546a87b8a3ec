"""How a transition becomes network features and back: one definition for training and runtime.

A gap is seen from its last key: the whole pose is moved so that the trajectory joint stands over the
origin and faces +X on the last past frame, which makes the model blind to where and which way the
character stands. A frame's features are then the trajectory joint's translation (in heights) and
every joint's local rotation; the target adds the world velocity of every joint on the target frame,
when the frame after the target is known, with a flag that says whether it is.
"""

from dataclasses import asdict, dataclass

import numpy as np

from . import quat
from .errors import BetwixtError
from .motion import AXES, forward_kinematics


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


def choose_layout(rotations, positions, parents, translated, fps, up="Y"):
    """A layout for a data set: ``rotations`` (F, J, 4), ``positions`` (F, J, 3) of its clips.

    The trajectory joint is the animated joint that travels furthest over the ground (LaFAN1's root,
    Bandai's ``Hips`` under a static ``joint_Root``); its facing axis is the local axis whose world
    direction stays most horizontal, so that heading is well defined on every frame.
    """
    u = AXES.index(up)
    grot, gpos = forward_kinematics(rotations, positions, parents)
    ground = [a for a in range(3) if a != u]
    travel = [np.abs(np.diff(gpos[:, j][:, ground], axis=0)).sum() for j in translated]
    trajectory = int(translated[int(np.argmax(travel))]) if len(translated) else 0
    tilt = [np.abs(quat.rotate(grot[:, trajectory], np.eye(3)[a])[:, u]).mean() for a in range(3)]
    extent = np.percentile(np.ptp(gpos[..., u], axis=-1), 95)
    return Layout(joints=rotations.shape[1], trajectory=trajectory, facing_axis=int(np.argmin(tilt)), up=u,
                  height=float(extent), fps=float(fps))


def canonical_frame(rotations, positions, parents, layout):
    """``(turn, origin)`` taking each pose ``(B, J, …)`` to stand at the origin facing +X."""
    chain = [layout.trajectory]
    while parents[chain[-1]] >= 0:
        chain.append(parents[chain[-1]])
    chain = chain[::-1]    # root first: world transform of the trajectory joint along its chain alone
    grot, gpos = forward_kinematics(rotations[:, chain], positions[:, chain], np.arange(len(chain)) - 1)
    heading = quat.rotate(grot[:, -1], np.eye(3)[layout.facing_axis])
    heading[:, layout.up] = 0.0
    norm = np.linalg.norm(heading, axis=-1, keepdims=True)
    if np.any(norm < 1e-6):
        raise BetwixtError("the character's facing is undefined on the last key (its trajectory joint "
                           "points straight up); add a key where it is upright")
    forward = np.zeros(3)
    forward[[a for a in range(3) if a != layout.up][0]] = 1.0
    turn = quat.inv(quat.normalize(quat.between(forward, heading / norm)))
    origin = gpos[:, -1].copy()
    origin[:, layout.up] = 0.0
    return turn, origin


def move(rotations, positions, turn, origin):
    """Apply the rigid motion ``x → turn (x − origin)`` to whole poses ``(B, T, J, …)``."""
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


def frame_features(rotations, positions, layout):
    """(…, J, 4) rotations and (…, J, 3) translations → (…, frame_dim) raw features."""
    lead = rotations.shape[:-2]
    return np.concatenate([positions[..., layout.trajectory, :] / layout.height,
                           rotations.reshape(lead + (-1,))], axis=-1)


def split_features(features, layout):
    """Raw features → (trajectory translation (…, 3), unit rotations (…, J, 4))."""
    lead = features.shape[:-1]
    translation = features[..., :3] * layout.height
    rotations = quat.normalize(features[..., 3:].reshape(lead + (layout.joints, 4)))
    return translation, rotations


def target_features(rotations, positions, parents, layout, after=None):
    """The raw target vector: the target frame's features, every joint's world velocity, a flag.

    ``rotations``/``positions`` (B, J, …) are the target key; ``after`` is the frame after it as a
    ``(rotations, positions)`` pair, or None when the target is the last key.
    """
    b = rotations.shape[0]
    velocity = np.zeros((b, 3 * layout.joints))
    known = np.zeros((b, 1))
    if after is not None:
        _, world = forward_kinematics(np.stack([rotations, after[0]]), np.stack([positions, after[1]]), parents)
        velocity = ((world[1] - world[0]) * (layout.fps / layout.height)).reshape(b, -1)
        known[:] = 1.0
    return np.concatenate([frame_features(rotations, positions, layout), velocity, known], axis=-1)
