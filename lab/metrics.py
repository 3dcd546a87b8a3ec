"""How well a quadruped motion walks and follows its path (``../shared/docs/metrics.md``): foot skating
and angular update as in Zhang et al. 2018 (Tables 2 and 3), and path deviation (Table 4). Lengths in
the motion's units (the dog's: cm)."""

import numpy as np

from inference.anatomy import leg_joints
from inference.mann.features import bones_of, root, world
from inference.polyline import nearest

SKATE_HEIGHT = 2.5   # cm: H of the skating measure; a paw this much above its ground counts half
TRAVEL_SPAN = 0.5    # s: the root's displacement over which its direction of travel is measured
STILL = 0.1          # m/s: a root slower than this over TRAVEL_SPAN travels in no direction


def paws(motion):
    """World positions (F, 4, 3) of the paws (the End Sites under the front and back feet)."""
    bones = bones_of(motion.skeleton)
    return world(motion, bones)[0][:, list(bones.paws)]


def paw_ground(paw_positions):
    """(4,) each paw's resting height: the 2nd percentile of its height over the clip."""
    return np.percentile(paw_positions[..., 1], 2, axis=0)


def foot_skating(paw_positions, ground, height=SKATE_HEIGHT):
    """(4,) mean skating of each paw over consecutive frames: its horizontal displacement (units a
    frame) times clamp(2 - 2^(h / H), 0, 1), h its height above ``ground`` (4,) over the two frames."""
    step = np.linalg.norm(np.diff(paw_positions[..., [0, 2]], axis=0), axis=-1)
    h = 0.5 * (paw_positions[1:, :, 1] + paw_positions[:-1, :, 1]) - ground
    return (step * np.clip(2 - 2 ** (h / height), 0, 1)).mean(axis=0)


def lowest_paw(paw_positions, ground):
    """Mean height (units) of the lowest paw above its ``ground`` (4,) over the frames: a gait keeps a paw
    on the floor nearly always, a motion that floats does not, and skating (which weighs only paws near
    their ground) cannot tell."""
    return float((paw_positions[..., 1] - ground).min(axis=-1).mean())


def angular_update(motion):
    """Mean angle (degrees a frame) by which the local rotations of the legs' joints turn between frames: trunk
    to paw, the front legs from the shoulder blade, the back legs from the hip
    (:func:`inference.anatomy.leg_joints`)."""
    q = motion.rotations[:, leg_joints(motion.skeleton)]
    dot = np.abs(np.sum(q[1:] * q[:-1], axis=-1))
    return float(np.degrees(2 * np.arccos(np.minimum(dot, 1.0))).mean())


def path_deviation(motion, points, track=None):
    """The root's distance to a path (polyline ``points`` (N, 2) on the ground) and its facing's angle to
    the path's direction there, each the mean over frames: (units, degrees). ``track``: the root's ground
    positions (F, 2) and facing angles (F,) where they are not MANN's root (a biped's)."""
    ground, theta = root_track(motion) if track is None else track
    which, _, distance = nearest(ground, points)
    angle = _angles(np.stack([np.sin(theta), np.cos(theta)], axis=-1), np.diff(points, axis=0)[which])
    return float(distance.mean()), float(angle.mean())


def travel_deviation(motion, points, still, track=None, span=TRAVEL_SPAN):
    """The mean angle (degrees) between the root's direction of travel and a path's (polyline ``points``
    (N, 2)) direction at its nearest point, metrics.md's angle of path deviation, where
    :func:`path_deviation`'s is the facing's (the issues'). The direction of travel is the root's
    displacement over ``span`` seconds about each frame, so that a gait's sway from side to side cancels;
    frames where that is slower than ``still`` (units a second) have none and do not count (NaN if none
    is left). ``track`` as in :func:`path_deviation`."""
    ground, _ = root_track(motion) if track is None else track
    half = max(int(round(0.5 * span * motion.fps)), 1)
    ahead = np.pad(ground, ((0, half), (0, 0)), mode="edge")[half:]
    behind = np.pad(ground, ((half, 0), (0, 0)), mode="edge")[:len(ground)]
    travel = ahead - behind
    length = np.linalg.norm(travel, axis=-1)
    moving = length > still * 2 * half / motion.fps
    if not moving.any():
        return float("nan")
    which, _, _ = nearest(ground, points)
    return float(_angles(travel, np.diff(points, axis=0)[which])[moving].mean())


def path_progress(motion, points, track=None):
    """How much of a path (polyline ``points`` (N, 2)) the root covers from its first frame to its last:
    the distance along the path between the nearest points, over the path's length (1: all of it).
    Progress counts round a closed path (a lap ending where it began is 1, not 0). ``track`` as in
    :func:`path_deviation`."""
    ground, _ = root_track(motion) if track is None else track
    which, u, _ = nearest(ground, points)
    legs = np.linalg.norm(np.diff(points, axis=0), axis=-1)
    length = legs.sum()
    along = np.concatenate([[0.0], np.cumsum(legs)])[which] + u * legs[which]
    if np.linalg.norm(points[-1] - points[0]) < 1e-6 * length:   # closed: the end is the start, a lap on
        along = np.unwrap(along, period=length)
    return float((along[-1] - along[0]) / length)


def _angles(a, b):
    """(F,) the angles (degrees) between ground vectors ``a`` and ``b`` (F, 2)."""
    cos = np.sum(a * b, axis=-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def root_track(motion):
    """The root's ground positions (F, 2) and facing angles (F,)."""
    bones = bones_of(motion.skeleton)
    ground, theta, _ = root(world(motion, bones)[0], bones, motion.fps)
    return ground, theta
