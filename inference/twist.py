"""Limb twists read from where the limbs bend, not from how a rig happens to turn its bones.

A rig's bones point where the animator posed them, but how a thigh or an upper arm turns about its own
length (its twist) is often the rig's, not the motion's: an IK chain's solver and pole decide it, a
control rig's constraints pass it on, a calibration between rest poses that differ leaves a constant
one. The model never saw those twists, and to the network a twisted thigh is another pose: Rigify's wolf,
keyed on its IK controls, lost to Bezier until its twists were read this way (docs/experiments.md).

A hinge (a knee, an elbow, an ankle with a toe beyond it: :func:`.anatomy.hinges`) bends in one plane of
the bone above it, and the model's reference pose shows that plane. Where a limb is bent, the plane its
two bones span in the read therefore says how the upper bone is twisted, and for a knee, which bends
about one axis of both its bones, how the lower one is too: :func:`untwisted` turns each such bone about
its own length until the reference's plane lies on it, leaving every bone pointing where it did. A
straight limb says nothing, and the twist an IK solver gives changes as the limb moves, so the turn on
each frame is a mean over about SMOOTH seconds around it, weighted by how far the limb is bent, falling
back to the read's own twist where the limb stays straight.

Only a control rig's reading is turned (:func:`..addon.plan.plan_over`): on a plain rig the twist is
what the animator keyed on the bones the model reads, and a motion on its own skeleton (LaFAN1's test
subject) fills worse with its real twists replaced by the hinges' (docs/experiments.md).

Writing undoes the turns (:meth:`Twists.undone`), so that a fill meets the animator's keys with the
twist they have.
"""

from dataclasses import dataclass

import numpy as np

from . import quat
from .anatomy import hinges, legs
from .motion import forward_kinematics

SMOOTH = 0.1         # seconds: the spread (standard deviation) of the mean over time
PRIOR = 0.01         # the read's own twist, as a limb bent this much (sin squared) on every frame


@dataclass(frozen=True)
class Turn:
    """A bone whose twist a hinge's plane sets: ``joint`` turns about its length toward ``child``, the plane
    is the one ``hinge`` (upper, middle, end joints) bends in, ``normal`` (3,) that plane's normal in the
    joint's own frame as the reference pose has it."""

    joint: int
    child: int
    hinge: tuple
    normal: np.ndarray


@dataclass(frozen=True)
class Twists:
    """The turns (radians) :func:`untwisted` gave each :class:`Turn`'s bone on each frame read."""

    skeleton: object
    turns: tuple
    angles: np.ndarray      # (frames, turns)

    def undone(self, rotations, positions, rows):
        """Local ``rotations`` (F, J, 4) on the read's ``rows`` (F,) with the turns taken off again (rows past
        the read take its last frame's): the twists the rig had."""
        if not self.turns:
            return rotations
        at = np.clip(np.asarray(rows, dtype=np.int64), 0, len(self.angles) - 1)
        return _turned(rotations, positions, self.skeleton, self.turns, -self.angles[at])


def untwisted(rotations, positions, skeleton, reference, fps):
    """``(rotations, Twists)``: local ``rotations`` (F, J, 4) of ``skeleton`` (and its ``positions``), one frame
    every 1/``fps`` seconds, with the bones of every :func:`turns` turned about their own length so that
    their hinge bends in the plane the ``reference`` pose (J, 4 local rotations) bends it in (see the
    module's docstring)."""
    found = turns(skeleton, reference)
    if not found or not len(rotations):
        return rotations, Twists(skeleton, (), np.zeros((len(rotations), 0)))
    grot = forward_kinematics(rotations, positions, skeleton.parents)[0]
    offsets = skeleton.offsets
    angles = np.empty((len(rotations), len(found)))
    for i, turn in enumerate(found):
        upper, middle, end = turn.hinge
        bent = quat.cross(quat.normalize(quat.rotate(grot[:, upper], offsets[middle])),
                          quat.normalize(quat.rotate(grot[:, middle], offsets[end])))
        weight = np.sum(bent * bent, axis=-1)      # sin squared of the bend
        along = quat.normalize(quat.rotate(grot[:, turn.joint], offsets[turn.child]))
        normal = quat.rotate(grot[:, turn.joint], turn.normal)
        off = np.arctan2(np.sum(quat.cross(normal, bent) * along, axis=-1), np.sum(normal * bent, axis=-1))
        angles[:, i] = _mean_angle(off, weight, SMOOTH * fps)
    return _turned(rotations, positions, skeleton, found, angles, grot), Twists(skeleton, found, angles)


def turns(skeleton, reference):
    """The :class:`Turn` s of ``skeleton``: each hinge's upper bone (:func:`.anatomy.hinges`), and a knee's lower
    one where no ankle below it turns it (a knee bends about one axis of both its bones: a dog's shins; an
    elbow's forearm turns on its own, the hand with it), where the ``reference`` pose bends the hinge."""
    knees = {(leg.hip, leg.knee, leg.foot) for leg in legs(skeleton)}
    uppers, lowers = [], []
    for hinge in hinges(skeleton):
        upper, middle, end = hinge
        bend = np.asarray(reference[middle], dtype=np.float64)
        normal = quat.cross(skeleton.offsets[middle], quat.rotate(bend, skeleton.offsets[end]))
        size = np.linalg.norm(normal)
        if size <= 1e-3 * np.linalg.norm(skeleton.offsets[middle]) * np.linalg.norm(skeleton.offsets[end]):
            continue   # the reference holds it straight: no plane
        uppers.append(Turn(upper, middle, hinge, normal / size))
        if hinge in knees:
            lowers.append(Turn(middle, end, hinge, quat.rotate(quat.inv(bend), normal / size)))
    first = {}
    for turn in uppers + lowers:   # a shin with an ankle and toe below it is turned by the ankle, not twice
        first.setdefault(turn.joint, turn)
    return tuple(first.values())


def _mean_angle(angles, weights, spread):
    """The weighted circular mean of ``angles`` (F,) under a Gaussian of ``spread`` frames around each frame,
    against PRIOR of a nil angle."""
    reach = int(np.ceil(4 * spread))
    kernel = np.exp(-0.5 * (np.arange(-reach, reach + 1) / max(spread, 1e-9)) ** 2)

    def around(values):   # sums under the kernel centred on each frame
        return np.convolve(values, kernel)[reach:reach + len(values)]
    return np.arctan2(around(weights * np.sin(angles)),
                      around(weights * np.cos(angles)) + PRIOR * around(np.ones_like(angles)))


def _turned(rotations, positions, skeleton, found, angles, grot=None):
    """Local ``rotations`` with the bone of each of the ``found`` :class:`Turn` s turned by ``angles`` (F, turns)
    about its own length in the world (:func:`turned_in_world`); ``grot``: their world rotations, where known."""
    if grot is None:
        grot = forward_kinematics(rotations, positions, skeleton.parents)[0]
    turns = [quat.from_angle_axis(angles[:, i],
                                  quat.normalize(quat.rotate(grot[:, turn.joint], skeleton.offsets[turn.child])))
             for i, turn in enumerate(found)]
    return turned_in_world(rotations, grot, skeleton.parents, [turn.joint for turn in found], np.stack(turns, axis=1))


def turned_in_world(rotations, grot, parents, joints, turns):
    """Local ``rotations`` (F, J, 4), whose world rotations are ``grot``, with each of ``joints`` turned in the
    world by ``turns`` (F, joints, 4), every other bone keeping its world rotation (and its sign)."""
    grot = grot.copy()
    for i, j in enumerate(joints):
        grot[:, j] = quat.mul(turns[:, i], grot[:, j])
    moved = np.array(sorted(set(joints) | {int(c) for c in np.flatnonzero(np.isin(parents, joints))}))
    out = rotations.copy()
    local = quat.normalize(quat.mul(quat.inv(grot[:, parents[moved]]), grot[:, moved]))
    out[:, moved] = np.where(np.sum(local * rotations[:, moved], axis=-1, keepdims=True) < 0, -local, local)
    return out
