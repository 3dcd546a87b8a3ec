"""Two-bone leg IK: a leg's hip, knee and foot turned so that its ankle reaches a target and its foot aims at
its toe's, for planting (:mod:`.contacts`) and a Motion VAE's stance (:mod:`.mvae.stance`).

The knee bends in the plane of hip, knee and ankle, then the whole leg swings about the hip by the
smallest turn onto the target; the foot keeps its world rotation but turns so that its toe reaches the
toe's target. A person's knee bends on its hinge's side (the side its bent frames show), since a nearly
straight leg's own plane says nothing of where the knee points; a quadruped's knee and hock fold both
ways within a stride, so its legs bend in their own plane, as the model bent them. A target the leg
reaches only straight is drawn in first (:func:`reachable`): a knee's bend changes ever faster as the
leg nears straight. Where a toe is held and its ankle is not, the ankle's target is moved onto the
foot's length about the toe's (:func:`pivoted`), so the foot pivots on the held toe rather than
dragging it. Near straight a knee moves ever further for each centimetre its ankle comes nearer the hip, so the
bend a person's planted leg is asked for is blurred in time there (:func:`smoothed`). Which joints make a leg is
:func:`.anatomy.legs`'s to say.
"""

import math

import numpy as np

from . import quat

STRAIGHT, TOP = 0.97, 0.99        # of a leg's length: how far from its hip a target pulls an ankle unhindered, and
#                                   at most, eased in between
BENT = 0.9                        # of a leg's length: a leg whose ankle is nearer its hip is bent, not nearly straight
BLUR = 0.05                       # seconds: the spread of the blur of a nearly straight knee's bend (see smoothed)
HINGE = 0.2                       # a knee bent less than this (a sine: 12 degrees) bends in its hinge's plane: at
#                                   0.1, a nearly straight leg's own plane, turning from frame to frame, swung the knee
#                                   of a bend that a swing's arc asked for 30-40 cm within a frame
SWING = 4.0                       # the most the hip's swing moves the knee, in lengths of the ankle's move by it


def reachable(hip, ankle, target, offsets, leg):
    """(F, 3) ``target`` (F, 3) for the ankle, drawn toward the ``hip`` (F, 3) where it lies further from it than
    :data:`STRAIGHT` of the leg's length (``offsets`` of its knee and foot) and than the leg's own ``ankle``
    (F, 3): eased onto no further than :data:`TOP` of the length (or the leg's own ankle, where that is
    further), never stopping at once. A lock left behind as the body moves on pulls the leg straight, and the
    knee's bend changes ever faster as the leg nears straight: a target at its full length snaps the knee
    straight and back within a few frames."""
    length = np.linalg.norm(offsets[leg.knee]) + np.linalg.norm(offsets[leg.foot])
    own = np.linalg.norm(ankle - hip, axis=-1)
    bound = np.maximum(own, STRAIGHT * length)
    soft = np.maximum(np.maximum(own, TOP * length) - bound, 1e-12)
    way = target - hip
    far = np.linalg.norm(way, axis=-1)
    eased = np.where(far > bound, bound + soft * np.tanh((far - bound) / soft), far)
    return hip + way * (eased / np.maximum(far, 1e-12))[:, None]


def smoothed(hip, knee, ankle, target, fps, free):
    """(F, 3) ``target`` (F, 3) for the ankle with the knee's bend that it asks for (beside the bend of the leg's
    own ``hip``, ``knee`` and ``ankle`` (F, 3)) blurred in time over about :data:`BLUR` seconds on the ``free``
    (F,) bool frames (not those of a foot held on the floor, which stands exactly still) where the leg is
    nearly straight (from :data:`BENT` to :data:`STRAIGHT` of its length, eased) and kept between the two bends
    (a change asked for on a frame or two is lessened, one held for longer kept), the target moved along its
    line from the hip by as much as that changes the leg's reach. Near straight, the knee moves ever further
    for each centimetre its ankle comes nearer the hip, and the reach changes ever less for each degree of the
    knee: a heel strike faded onto its lock, or lifted by a swing's arc, a centimetre nearer the hip of a leg
    the network held straight swung the knee 6 cm forward and back within two frames, where a bend blurred over
    a few frames moves the ankle by millimetres."""
    thigh, shin = np.linalg.norm(knee - hip, axis=-1), np.linalg.norm(ankle - knee, axis=-1)
    way = target - hip
    far = np.linalg.norm(way, axis=-1)
    reach = np.clip(np.stack([np.linalg.norm(ankle - hip, axis=-1), far]), np.abs(thigh - shin), thigh + shin)
    bend = np.arccos(np.clip((thigh ** 2 + shin ** 2 - reach ** 2) / np.maximum(2 * thigh * shin, 1e-12), -1.0, 1.0))
    change = bend[1] - bend[0]                                                      # what the target asks, (F,)
    x = np.clip((reach.max(axis=0) / (thigh + shin) - BENT) / (STRAIGHT - BENT), 0.0, 1.0)
    sigma = BLUR * fps
    taps = np.arange(-math.ceil(3 * sigma), math.ceil(3 * sigma) + 1)
    kernel = np.exp(-0.5 * (taps / sigma) ** 2)
    padded = np.concatenate([np.repeat(change[:1], len(taps) // 2), change, np.repeat(change[-1:], len(taps) // 2)])
    blurred = np.convolve(padded, kernel / kernel.sum(), mode="valid")
    # the blur only eases the change a target asks for: never past the bend of the leg's own or of the target
    bent = np.clip(bend[1] + free * x * x * (3 - 2 * x) * (blurred - change), bend.min(axis=0), bend.max(axis=0))

    def reach_of(angle):
        return np.sqrt(np.maximum(thigh ** 2 + shin ** 2 - 2 * thigh * shin * np.cos(angle), 0.0))

    eased = far + reach_of(bent) - reach_of(bend[1])
    return hip + way * (eased / np.maximum(far, 1e-12))[:, None]


def pivoted(ankle, toe, length, weight):
    """(F, 3) the ankle's targets ``ankle`` (F, 3) moved by ``weight`` (F,) of the way onto the sphere of the
    foot's ``length`` about the toe's targets ``toe`` (F, 3). The foot only aims at its toe's target
    (:func:`solve_leg`), so a toe held on the floor while its ankle moves otherwise slides with the ankle
    (a heel lifting off a standing toe, a network's foot turning on the floor); on the sphere, the foot
    pivots about the held toe."""
    way = ankle - toe
    reach = np.linalg.norm(way, axis=-1, keepdims=True)
    on_sphere = toe + length * way / np.maximum(reach, 1e-9)
    return ankle + weight[:, None] * (on_sphere - ankle)


def solve_leg(rotations, grot, gpos, parents, leg, target, toe_target=None, up=1):
    """Local rotations (F, J, 4) with ``leg``'s hip, knee and foot turned so that its ankle reaches
    ``target`` (F, 3) (as near as the leg's length allows) and its toe points at ``toe_target``, its
    tip no lower than that target (axis ``up``);
    ``grot``, ``gpos``: the world rotations and positions of ``rotations``.

    The knee bends in the plane of hip, knee and ankle (its normal, or the knee's hinge axis seen
    from the thigh where the leg is straight), then the whole leg swings about the hip by the
    smallest turn onto the target, but never so far that the knee moves more than SWING times as far
    as the bent leg's ankle has to: the knee moves thigh / reach times as far as the ankle, so this only
    binds with the leg folded (the ankle within half a thigh of the hip: kneeling, lying), where a target
    a few centimetres off turns the hip-to-ankle line by half a turn and the knee would whip round with
    it; there the ankle goes only part of the way. The foot keeps its world rotation, turned by the
    smallest turn that aims it at the toe's target.
    """
    a, b, c = gpos[:, leg.hip], gpos[:, leg.knee], gpos[:, leg.foot]
    thigh, shin = np.linalg.norm(b - a, axis=-1), np.linalg.norm(c - b, axis=-1)
    normal = quat.cross(a - b, c - b)
    hinge = quat.rotate(quat.inv(grot[:, leg.hip]), normal).sum(axis=0)       # the knee's axis, in the thigh's frame
    hinge /= max(np.linalg.norm(hinge), 1e-12)
    hinge = quat.rotate(grot[:, leg.hip], hinge)
    reach = np.clip(np.linalg.norm(target - a, axis=-1), np.abs(thigh - shin) * 1.0001, (thigh + shin) * 0.9999)
    wanted = np.arccos(np.clip((thigh ** 2 + shin ** 2 - reach ** 2) / (2 * thigh * shin), -1.0, 1.0))
    if leg.paw:   # a quadruped's knee and hock fold both ways within a stride: the leg's own plane, as the model bent it
        normal = normal + 1e-3 * (thigh * shin)[:, None] * hinge
        normal /= np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-12)
        now = np.arccos(np.clip(np.sum((a - b) * (c - b), axis=-1) / np.maximum(thigh * shin, 1e-12), -1.0, 1.0))
        bend = quat.from_angle_axis(wanted - now, normal)
    else:
        # a person's knee bends about its leg's own plane's normal turned to the hinge's side, or about the hinge
        # where the leg is nearly straight (within HINGE, a sine), trusting its own plane as far as it shows the bend
        # asked of it (the sines' ratio): a nearly straight leg's plane says little of where the knee points, and
        # the further the knee bends about it, the further that error swings the knee (a leg bent 7 degrees, its
        # ankle lifted 20 cm by a swing's arc, swung its knee 34 cm within a frame); a knee the model straightened
        # a little past straight bends forward again, one it bent further back stays back
        sine = np.linalg.norm(normal, axis=-1) / np.maximum(thigh * shin, 1e-12)
        side = np.where(np.sum(normal * hinge, axis=-1) < 0, -1.0, 1.0)
        own = np.clip(sine / np.maximum(HINGE, np.sin(wanted)), 0.0, 1.0)
        normal = (own * side / np.maximum(sine * thigh * shin, 1e-12))[:, None] * normal + (1.0 - own)[:, None] * hinge
        normal /= np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-12)
        now = np.arctan2(np.sum(quat.cross(a - b, c - b) * normal, axis=-1), np.sum((a - b) * (c - b), axis=-1)) % (2 * np.pi)
        back = np.where(now > np.pi, own, 0.0)
        wanted = wanted + back * (2 * np.pi - 2 * wanted)
        bend = quat.from_angle_axis((wanted - now + np.pi) % (2 * np.pi) - np.pi, normal)
    bent = b + quat.rotate(bend, c - b)
    swing = quat.normalize(quat.between(bent - a, target - a))
    turn = 2.0 * np.arctan2(np.linalg.norm(swing[:, 1:], axis=-1), swing[:, 0])
    most = 2.0 * np.arcsin(np.clip(SWING * np.linalg.norm(target - bent, axis=-1) / (2.0 * thigh), 0.0, 1.0))
    swing = quat.slerp(np.array([1.0, 0.0, 0.0, 0.0]), swing, np.minimum(most / np.maximum(turn, 1e-12), 1.0))
    hip_world = quat.mul(swing, grot[:, leg.hip])
    knee_world = quat.mul(hip_world, quat.mul(quat.inv(grot[:, leg.hip]), quat.mul(bend, grot[:, leg.knee])))
    foot_world = grot[:, leg.foot]
    if toe_target is not None:   # aimed at its target, but never lower than the target's height
        ankle = a + quat.rotate(swing, bent - a)
        toe = gpos[:, leg.toe] - c
        aim = toe_target - ankle
        aim /= np.maximum(np.linalg.norm(aim, axis=-1, keepdims=True), 1e-12)
        rise = np.clip((toe_target[:, up] - ankle[:, up]) / np.linalg.norm(toe, axis=-1), -1.0, 1.0)
        level = np.delete(aim, up, axis=-1)
        spread = np.sqrt(np.maximum(1.0 - np.maximum(aim[:, up], rise) ** 2, 0.0)) / np.maximum(
            np.linalg.norm(level, axis=-1), 1e-12)
        aim = np.insert(level * spread[:, None], up, np.maximum(aim[:, up], rise), axis=-1)
        foot_world = quat.mul(quat.normalize(quat.between(toe, aim)), foot_world)
    out = rotations.copy()
    parent = grot[:, parents[leg.hip]]
    out[:, leg.hip] = quat.mul(quat.inv(parent), hip_world)
    out[:, leg.knee] = quat.mul(quat.inv(hip_world), knee_world)
    out[:, leg.foot] = quat.mul(quat.inv(knee_world), foot_world)
    joints = [leg.hip, leg.knee, leg.foot]   # the sign each had, so the motion's signs stay continuous
    flip = np.sum(out[:, joints] * rotations[:, joints], axis=-1, keepdims=True) < 0
    out[:, joints] = np.where(flip, -out[:, joints], out[:, joints])
    return out
