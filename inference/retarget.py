"""One skeleton's motion on another's, in numpy: joints paired by name, world orientations matched
through natural poses, the trajectory scaled by the ratio of heights.

Training a model on several data sets needs their clips on one skeleton, and the skeletons differ:
LaFAN1's and Bandai's bones all lie along X at rest (a pose nobody stands in), CMU's rest pose is a
T-pose, and their joints, bone frames and units differ. A natural pose (:func:`natural_pose`, the
data's mean pose) is a stance both skeletons do take, so it is where they are matched: each mapped
target joint ``j`` turns in the world as its source joint ``b`` does,

    G_j(t) = G_b(t) · O_j,    O_j = (G_b^nat)⁻¹ · S_j · G_j^nat,

with ``G^nat`` the world rotations of the natural poses and ``S_j`` the turn that carries the target's
natural bone directions onto the source's (:func:`calibrate`, shared with the add-on, whose rigs are
the source there). On its own skeleton a motion comes back unchanged. Target joints the source lacks
take the target's natural pose. The joints that carry the target through the world (those from its root
to its hips that have position channels: LaFAN1's ``Hips``, Bandai's ``joint_Root`` and ``Hips``)
follow their source joints' world positions times the ratio of the two skeletons' heights in their
natural poses; the other joints keep the target's bone lengths.
"""

from dataclasses import dataclass, replace

import numpy as np

from . import quat
from .anatomy import pelvis
from .errors import DataError
from .features import chain, chain_transform
from .mapping import detect
from .motion import AXES, forward_kinematics, height


def smallest_turn(a, b):
    """The quaternion of the smallest rotation taking direction ``a`` onto ``b`` (any axis when opposite)."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-9:
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        return np.concatenate([[0.0], axis / np.linalg.norm(axis)])
    return quat.normalize(np.concatenate([[1.0 + c], np.cross(a, b)]))


def best_rotation(a, b):
    """The rotations (..., 3, 3) that best carry the directions ``a`` (..., n, 3) onto ``b`` (..., n, 3) in
    the least squares (Kabsch)."""
    u, _, vt = np.linalg.svd(np.swapaxes(b, -1, -2) @ a)
    d = np.sign(np.linalg.det(u @ vt))
    return u @ (np.stack([np.ones_like(d), np.ones_like(d), d], axis=-1)[..., None] * vt)


def calibrate(skeleton, joints, rest_rot, rest_heads, poses, rest_tails=None):
    """``(O, misfit)``: ``O`` (K, 3, 3) such that ``G_j = R_b · O_j``, for the mapped joints ``joints`` (K,)
    of ``skeleton``, and the mean angle (radians) its bones turn, relative to their parents', to stand as
    the counterparts do: how far apart the two stances are, so that callers can choose a stance too.

    Their counterparts (a rig's bones, another skeleton's joints) stand with world rotations
    ``rest_rot`` (K, 3, 3) and positions ``rest_heads`` (K, 3), in the skeleton's axes and any units.
    ``poses`` are candidate local rotations (J, 4) of ``skeleton`` for that stance; the one whose bones
    need the smaller turns to point where the counterparts' do wins, and with it the bones' twists.
    ``rest_tails`` (K, 3), where the counterparts are bones with tails (a rig's): a mapped joint with no
    mapped joint below it but a joint of the skeleton (a rig without toes: the foot) is aimed by its
    bone's tail at that joint, which a foot bone points to, rather than left as turned as its parent.
    """
    slot = {int(j): k for k, j in enumerate(joints)}
    pairs = descendant_pairs(skeleton.parents, slot)
    ends = {}
    if rest_tails is not None:
        below = {j for j, _ in pairs}
        for j in slot:
            children = np.flatnonzero(skeleton.parents == j)
            if j not in below and len(children) == 1:
                ends[j] = int(children[0])
    fits = []
    for pose in poses:
        grot, heads = forward_kinematics(pose, skeleton.offsets, skeleton.parents)
        tips = {j: (heads[c], rest_tails[slot[j]]) for j, c in ends.items()}
        turns, misfit = _turns(skeleton.parents, joints, slot, pairs, heads, rest_heads, tips)
        fits.append((misfit, turns @ quat.to_matrix(grot[joints])))
    misfit, turned = min(fits, key=lambda f: f[0])
    return np.swapaxes(rest_rot, -1, -2) @ turned, misfit


def _turns(parents, joints, slot, pairs, model_heads, rig_heads, tips=None):
    """``S`` per mapped joint (see the module's docstring) and the mean angle it turns bones by,
    relative to the mapped parent's: how far the two rest poses are apart. ``tips`` {joint: (the model's
    point, the rig's)}: a further direction for a joint with no mapped descendant."""
    scale_m = max(np.linalg.norm(model_heads[c] - model_heads[j]) for j, c in pairs)
    scale_r = max(np.linalg.norm(rig_heads[slot[c]] - rig_heads[slot[j]]) for j, c in pairs)
    turns = np.empty((len(joints), 3, 3))
    angles = []
    for k, j in enumerate(joints):
        parent = _mapped_ancestor(parents, int(j), slot)
        inherited = turns[slot[parent]] if parent is not None else np.eye(3)
        dirs = [(model_heads[c] - model_heads[j], rig_heads[slot[c]] - rig_heads[k]) for jj, c in pairs if jj == j]
        if tips and int(j) in tips:
            dirs.append((tips[int(j)][0] - model_heads[j], tips[int(j)][1] - rig_heads[k]))
        dirs = [(m / np.linalg.norm(m), r / np.linalg.norm(r)) for m, r in dirs
                if np.linalg.norm(m) > 1e-6 * scale_m and np.linalg.norm(r) > 1e-6 * scale_r]
        if len(dirs) >= 2 and np.linalg.matrix_rank(np.array([m for m, _ in dirs]), tol=1e-3) >= 2:
            m, r = (np.array(v) for v in zip(*dirs))
            turns[k] = best_rotation(m, r)
        elif dirs:
            m, r = dirs[0]
            turns[k] = quat.to_matrix(smallest_turn(inherited @ m, r)) @ inherited
        else:
            turns[k] = inherited
        if parent is not None:
            relative = inherited.T @ turns[k]
            angles.append(np.arccos(np.clip((np.trace(relative) - 1.0) / 2.0, -1.0, 1.0)))
    return turns, float(np.mean(angles)) if angles else 0.0


def _mapped_ancestor(parents, j, slot):
    p = parents[j]
    while p >= 0 and int(p) not in slot:
        p = parents[p]
    return int(p) if p >= 0 else None


def descendant_pairs(parents, slot):
    """(joint, nearest mapped descendant) for every mapped joint (``slot``: {joint: index}) and each
    of its branches."""
    return [(a, int(c)) for c in slot for a in [_mapped_ancestor(parents, int(c), slot)] if a is not None]


def natural_pose(motions, step=4):
    """A stance the motions' skeleton takes (J, 4 local rotations): every joint's mean world rotation.

    Each frame (every ``step``-th) is first turned about the up axis so that the pelvis's twist about
    it is nil (q = twist · swing, the twist dropped), so walks in every direction average into one
    upright body; the joints above the pelvis (Bandai's ``joint_Root``) only carry it and stay at rest.
    """
    grot = np.concatenate([m.global_transforms()[0][::step] for m in motions])
    hips = pelvis(motions[0].skeleton)
    world = mean_facing_one_way(grot, hips, AXES.index(motions[0].up))
    parents = motions[0].skeleton.parents
    world[chain(parents, hips)[:-1]] = [1.0, 0.0, 0.0, 0.0]
    pose = world.copy()
    child = np.flatnonzero(parents >= 0)
    pose[child] = quat.mul(quat.inv(world[parents[child]]), world[child])
    return pose


def mean_facing_one_way(grot, hips, up):
    """(J, 4): the mean of world rotations ``grot`` (F, J, 4) over the frames, each frame first turned
    about the ``up`` axis (0-2) so that joint ``hips``'s twist about it is nil (q = twist · swing, the
    twist undone): turned so, a body walking any way faces one way, and its frames average into one
    stance."""
    twist = np.zeros(grot.shape[:1] + (4,))
    twist[:, [0, 1 + up]] = grot[:, hips, [0, 1 + up]]
    return quat.mean(quat.mul(quat.inv(quat.normalize(twist))[:, None], grot), axis=0)


def natural_stance(grot, hips, up, parents, offsets):
    """The stance a body in motion takes (as :func:`natural_pose`, from world rotations): world rotations
    (J, 4), the mean over the frames of ``grot`` (F, J, 4) facing one way (:func:`mean_facing_one_way`;
    ``hips``: the pelvis, ``up``: 0-2), and the joints' heads (J, 3) relative to the root's, by
    forward kinematics of those rotations over ``offsets`` (J, 3), each joint's offset in its parent's
    frame (``parents`` first), so that every bone points exactly as its rotation says."""
    world = mean_facing_one_way(grot, hips, up)
    heads = np.zeros((len(parents), 3))
    for j, p in enumerate(parents):
        if p >= 0:
            heads[j] = heads[p] + quat.rotate(world[p], offsets[j])
    return world, heads


def _chain_below(parents, j):
    """Joints in the subtree under ``j``."""
    below, out = {j}, []
    for c, p in enumerate(parents):
        if p in below:
            below.add(c)
            out.append(c)
    return out


def standing_height(skeleton, pose, up="Y"):
    """The height (units of ``skeleton``) of the pelvis and what hangs below it, posed as ``pose`` (J, 4)."""
    _, gpos = forward_kinematics(pose, skeleton.offsets, skeleton.parents)
    hips = pelvis(skeleton)
    return height(gpos[None, [hips] + _chain_below(skeleton.parents, hips)], up)


@dataclass(frozen=True, eq=False)
class Retargeting:
    """Motions of a source skeleton → motions of a target skeleton, calibrated once on natural poses."""

    source: object        # Skeleton the motions come in
    target: object        # Skeleton they go out on
    joints: np.ndarray    # (K,) mapped target joints, in order
    bones: np.ndarray     # (K,) their source joints
    offsets: np.ndarray   # (K, 4) O_j as quaternions
    natural: np.ndarray   # (J, 4) the target's natural pose: the rotations of joints the source lacks
    positional: tuple     # (target joint, source joint) pairs whose world positions are carried over
    scale: float          # target units per source unit: the ratio of standing heights

    @classmethod
    def build(cls, source, target, source_pose, target_pose, up="Y", name="source"):
        """``source_pose``/``target_pose`` (J, 4): natural poses of each (:func:`natural_pose`); ``name``
        says in errors which data set the source skeleton is."""
        found = detect(target.names, target.parents, source.names, source.parents)
        joints = np.array([target.index(j) for j in found], dtype=np.int64)
        order = np.argsort(joints)
        joints = joints[order]
        bones = np.array([source.index(b) for b in found.values()], dtype=np.int64)[order]
        hips = pelvis(target)
        if hips not in joints or len(joints) < 2:
            raise DataError(f"{name}: its joints ({', '.join(source.names[:6])}, …) do not map onto "
                            f"{target.names[hips]!r} and the limbs of the skeleton trained on; give it as "
                            "the first --data (or --skeleton), or rename its joints as LaFAN1, Bandai or Mixamo do")
        sgrot, sheads = forward_kinematics(source_pose, source.offsets, source.parents)
        rest_rot = quat.to_matrix(sgrot[bones])
        offsets = quat.from_matrix(calibrate(target, joints, rest_rot, sheads[bones], [target_pose])[0])
        carriers = [j for j in chain(target.parents, hips)   # Bandai keys every joint's translation; only these move
                    if any(c.endswith("position") for c in target.channels[j])]
        positional = tuple((int(j), int(b)) for j, b in zip(joints, bones) if j in carriers)
        scale = standing_height(target, target_pose, up) / standing_height(source, source_pose, up)
        return cls(source, target, joints, bones, offsets, np.asarray(target_pose, dtype=np.float64), positional,
                   float(scale))

    def __call__(self, motion):
        """``motion`` (of the source's hierarchy, any bone lengths) as a :class:`Motion` of the target."""
        sk = self.target
        grot, gpos = motion.global_transforms()
        frames = motion.n_frames
        wanted = quat.mul(grot[:, self.bones], self.offsets)                 # (F, K, 4) G_j
        slot = {int(j): k for k, j in enumerate(self.joints)}
        world = np.empty((frames, len(sk), 4))
        for j, p in enumerate(sk.parents):
            k = slot.get(j)
            world[:, j] = wanted[:, k] if k is not None else (
                self.natural[j] if p < 0 else quat.mul(world[:, p], self.natural[j]))
        rotations = world.copy()
        child = np.flatnonzero(sk.parents >= 0)
        rotations[:, child] = quat.mul(quat.inv(world[:, sk.parents[child]]), world[:, child])
        positions = np.repeat(sk.offsets[None], frames, axis=0)
        for j, b in self.positional:   # parents first: each placed under its already placed parent
            p = sk.parents[j]
            there = gpos[:, b] * self.scale
            if p < 0:
                positions[:, j] = there
            else:
                prot, ppos = chain_transform(rotations, positions, sk.parents, p)
                positions[:, j] = quat.rotate(quat.inv(prot), there - ppos)
        return replace(motion, skeleton=sk, rotations=quat.unroll(rotations), positions=positions)


def direction_error(source, target, retargeting):
    """Mean angle (degrees) per frame (F,) between the bones of ``source`` (a Motion) and of its
    retargeted ``target``: for every mapped target joint and its nearest mapped descendant, the world
    direction from one to the other, against the same pair's in the source (where the source's joints
    are apart: CMU's ``LowerBack`` sits on its ``Hips``)."""
    slot = {int(j): k for k, j in enumerate(retargeting.joints)}
    bone_of = dict(zip(retargeting.joints.tolist(), retargeting.bones.tolist()))
    sk = source.skeleton
    _, rest = forward_kinematics(np.tile([1.0, 0.0, 0.0, 0.0], (len(sk), 1)), sk.offsets, sk.parents)
    pairs = [(j, c) for j, c in descendant_pairs(retargeting.target.parents, slot)
             if np.linalg.norm(rest[bone_of[c]] - rest[bone_of[j]]) > 1e-3 * np.ptp(rest, axis=0).max()]
    _, tpos = target.global_transforms()
    _, spos = source.global_transforms()
    t = np.stack([tpos[:, c] - tpos[:, j] for j, c in pairs], axis=1)
    s = np.stack([spos[:, bone_of[c]] - spos[:, bone_of[j]] for j, c in pairs], axis=1)
    cos = np.sum(t * s, axis=-1) / np.maximum(np.linalg.norm(t, axis=-1) * np.linalg.norm(s, axis=-1), 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).mean(axis=1)
