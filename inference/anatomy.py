"""What a skeleton's joints are in a body: feet, toes, hands, the pelvis, a quadruped's paws, the legs foot IK bends.

Everything that treats a part of the body apart (planting, the guard, retargeting, the benches, the
dog's simulated body, the add-on's choice of model) asks here, so one rule holds everywhere. The rules
read joint names and the hierarchy only, since the skeletons Betwixt meets (LaFAN1, Bandai, CMU,
Mixamo, Rigify, the dog's) name their joints after a person's and share no other convention:

- a *foot* is any joint named as a foot, toe, ankle or ball (case-insensitive); a *toe* one named as a
  toe or ball; a *hand* one named as a hand;
- a skeleton with a tail is a *quadruped*: the dog's joint names are a person's and a tail, so its
  joints named as hands are its front feet;
- the *pelvis* is the first joint with two or more children (the hips, where legs and spine part):
  where a body's heading is read, whatever joints carry it above (Bandai's ``joint_Root``);
- a *leg* ends in a sided foot joint (not a toe) whose parent (knee) and grandparent (hip) lie below the
  root, with the toe below it where it has one; a quadruped's hands end its front legs (forearm and
  upper arm are knee and hip; the shoulder blade above them is no part of the IK), and a quadruped's
  leg without a toe stands on its *paw*, the End Site below its foot;
- a leg's *joints* run from its foot up to the joint below where it leaves the body (the nearest
  joint above it with two or more children): a dog's shoulder blade is one, its hips not;
- a limb's *hinges* are its knee and, where a toe lies beyond it, its ankle, and a person's elbow (a
  quadruped's elbow is its front knee): each bends in one plane of the bone above it;
- :data:`PAWS`: the dog data's four paw joints, front first, the order MANN's features and the
  simulated dog keep them in.
"""

import re
from dataclasses import dataclass

import numpy as np

from .mirror import unsided

FEET = re.compile(r"foot|toe|ankle|ball", re.IGNORECASE)
TOES = re.compile(r"toe|ball", re.IGNORECASE)
HANDS = re.compile(r"hand", re.IGNORECASE)
TAIL = re.compile(r"tail", re.IGNORECASE)
PAWS = ("LeftHand", "RightHand", "LeftFoot", "RightFoot")   # the paws are the End Sites under these


@dataclass(frozen=True)
class Leg:
    """Joint indices of one leg: ``toe`` is -1 where the skeleton has none; ``paw`` is then the offset
    (3,) of the End Site below ``foot`` that stands on the ground, () where there is none (or a toe)."""

    hip: int
    knee: int
    foot: int
    toe: int
    paw: tuple = ()


def is_quadruped(skeleton):
    """Whether ``skeleton`` has a tail: the dog's names are a person's and a tail."""
    return any(TAIL.search(n) for n in skeleton.names)


def feet(names):
    """Indices of the joints named as feet, toes or ankles."""
    return [j for j, name in enumerate(names) if FEET.search(name)]


def hands(names):
    """Indices of the joints named as hands (a quadruped's front feet)."""
    return [j for j, name in enumerate(names) if HANDS.search(name)]


def pelvis(skeleton):
    """The first joint with two or more children (the hips): where a body's heading is read."""
    counts = np.bincount(skeleton.parents[1:], minlength=len(skeleton))
    branching = np.flatnonzero(counts >= 2)
    return int(branching[0]) if len(branching) else 0


def legs(skeleton):
    """The :class:`Leg` of ``skeleton``, in joint order, by the module's rules; () where it has none."""
    names, parents = skeleton.names, skeleton.parents
    quadruped = is_quadruped(skeleton)
    sites = {int(j): tuple(float(v) for v in offset) for j, offset in skeleton.end_sites}
    out = []
    for j, name in enumerate(names):
        if not (FEET.search(name) or quadruped and HANDS.search(name)) or TOES.search(name) or not unsided(name)[0]:
            continue
        knee = int(parents[j])
        hip = int(parents[knee]) if knee > 0 else -1
        if hip <= 0:
            continue
        toes = [c for c in skeleton.children(j) if TOES.search(names[c])]
        paw = sites.get(j, ()) if quadruped and not toes else ()
        out.append(Leg(hip, knee, j, toes[0] if toes else -1, paw))
    return tuple(out)


def leg_joints(skeleton):
    """Indices (ascending) of every joint of the legs: from each leg's toe or foot up to the joint below the
    nearest one with two or more children, where the leg leaves the body."""
    counts = np.bincount(skeleton.parents[1:], minlength=len(skeleton))
    out = set()
    for leg in legs(skeleton):
        j = leg.foot
        while j > 0 and counts[j] < 2:
            out.add(j)
            j = int(skeleton.parents[j])
        if leg.toe >= 0:
            out.add(leg.toe)
    return sorted(out)


def stance_joints(skeleton):
    """Indices of the joints a person stands on: every leg's toe, then every leg's foot (LaFAN1's LeftToe,
    RightToe, LeftFoot, RightFoot: the four foot joints of ``../shared/docs/metrics.md``)."""
    found = legs(skeleton)
    return [leg.toe for leg in found if leg.toe >= 0] + [leg.foot for leg in found]


def hinges(skeleton):
    """``(upper, hinge, end)`` joint triples of every hinge by the module's rules: a leg's hip, knee and foot
    and, where it has a toe, its knee, foot and toe; a person's upper arm, forearm and hand."""
    out = []
    for leg in legs(skeleton):
        out.append((leg.hip, leg.knee, leg.foot))
        if leg.toe >= 0:
            out.append((leg.knee, leg.foot, leg.toe))
    if not is_quadruped(skeleton):
        for hand in hands(skeleton.names):
            forearm = int(skeleton.parents[hand])
            arm = int(skeleton.parents[forearm]) if forearm > 0 else -1
            if arm > 0 and unsided(skeleton.names[hand])[0]:
                out.append((arm, forearm, hand))
    return tuple(out)
