"""A skeleton's motion from its counterparts' poses, in numpy: another skeleton's joints (training brings its
data sets onto a model's skeleton) or a rig's bones (the add-on's :mod:`addon.retarget` reads the rig and
writes its channels). One :class:`Retargeting` holds the calibration, the conversion between the
counterparts' world poses and the skeleton's local motion both ways, and the scale.

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
natural poses; the other joints keep the target's bone lengths. A rig's size is measured by its bones
instead (:func:`length_ratio`), its rest pose being no natural pose of a body in motion.
"""

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from . import quat
from .anatomy import legs, pelvis
from .errors import DataError
from .features import chain
from .mapping import detect
from .motion import AXES, forward_kinematics, height


def smallest_turn(a, b):
    """The quaternion of the smallest rotation taking direction ``a`` onto ``b`` (any axis when opposite)."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-9:
        axis = quat.cross(a, np.array([1.0, 0.0, 0.0]))
        if np.linalg.norm(axis) < 1e-6:
            axis = quat.cross(a, np.array([0.0, 1.0, 0.0]))
        return np.concatenate([[0.0], axis / np.linalg.norm(axis)])
    return quat.normalize(np.concatenate([[1.0 + c], quat.cross(a, b)]))


def best_rotation(a, b):
    """The rotations (..., 3, 3) that best carry the directions ``a`` (..., n, 3) onto ``b`` (..., n, 3) in
    the least squares (Kabsch)."""
    u, _, vt = np.linalg.svd(np.swapaxes(b, -1, -2) @ a)
    d = np.sign(np.linalg.det(u @ vt))
    return u @ (np.stack([np.ones_like(d), np.ones_like(d), d], axis=-1)[..., None] * vt)


# calibrations by the bytes they are computed from: every Fill Gaps and every panel draw reads the same rig again
_CALIBRATED = {}
CALIBRATIONS_KEPT = 64


def calibrate(skeleton, joints, rest_rot, rest_heads, poses, rest_tails=None):
    """:func:`calibrated`, kept for the same rig and skeleton (read-only: a caller's change would be the next's)."""
    arrays = [skeleton.offsets, skeleton.parents, joints, rest_rot, rest_heads, *poses]
    arrays += [] if rest_tails is None else [rest_tails]
    digest = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype}{a.shape}".encode())
        digest.update(a.tobytes())
    key = (digest.digest(), rest_tails is None)
    if key not in _CALIBRATED:
        if len(_CALIBRATED) >= CALIBRATIONS_KEPT:
            _CALIBRATED.clear()
        offsets, misfit = calibrated(skeleton, joints, rest_rot, rest_heads, poses, rest_tails)
        offsets.flags.writeable = False
        _CALIBRATED[key] = offsets, misfit
    return _CALIBRATED[key]


def calibrated(skeleton, joints, rest_rot, rest_heads, poses, rest_tails=None):
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
    model_dirs = np.array([model_heads[c] - model_heads[j] for j, c in pairs]).reshape(-1, 3)
    rig_dirs = np.array([rig_heads[slot[c]] - rig_heads[slot[j]] for j, c in pairs]).reshape(-1, 3)
    model_len, rig_len = np.linalg.norm(model_dirs, axis=-1), np.linalg.norm(rig_dirs, axis=-1)
    scale_m, scale_r = model_len.max(), rig_len.max()
    below = {}
    for i, (j, _) in enumerate(pairs):
        if model_len[i] > 1e-6 * scale_m and rig_len[i] > 1e-6 * scale_r:
            below.setdefault(j, []).append((model_dirs[i] / model_len[i], rig_dirs[i] / rig_len[i]))
    turns = np.empty((len(joints), 3, 3))
    angles = []
    for k, j in enumerate(joints):
        parent = _mapped_ancestor(parents, int(j), slot)
        inherited = turns[slot[parent]] if parent is not None else np.eye(3)
        dirs = list(below.get(int(j), []))
        if tips and int(j) in tips:
            m, r = tips[int(j)][0] - model_heads[j], tips[int(j)][1] - rig_heads[k]
            if np.linalg.norm(m) > 1e-6 * scale_m and np.linalg.norm(r) > 1e-6 * scale_r:
                dirs.append((m / np.linalg.norm(m), r / np.linalg.norm(r)))
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


def length_ratio(skeleton, mapping, heads):
    """Counterpart units per unit of ``skeleton`` (``mapping``: {joint: counterpart index}), from lengths that no
    pose changes: the distances between the counterparts' ``heads`` (counterparts, 3) of the joints at both
    ends of a bone, over those bones' lengths; not from a joint below an unmapped one, whose counterpart may
    stand for a merged chain (one spine bone mapped to the chest has its head at the waist). None where the
    mapped bones have no length between them."""
    pairs = descendant_pairs(skeleton.parents, {j: k for k, j in enumerate(sorted(mapping))})
    both = [(j, c) for j, c in pairs if skeleton.parents[c] == j and
            (skeleton.parents[j] < 0 or int(skeleton.parents[j]) in mapping)]
    counterpart = sum(np.linalg.norm(heads[mapping[c]] - heads[mapping[j]]) for j, c in both)
    own = sum(np.linalg.norm(skeleton.offsets[c]) for _, c in both)
    return float(counterpart / own) if own > 0 and counterpart > 0 else None


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
    """A skeleton's joints ↔ their counterparts (another skeleton's joints, a rig's bones), calibrated once:
    the counterparts' poses as motions of ``skeleton`` (:meth:`to_local`, :meth:`to_model`, a whole source
    motion by calling it) and back (:meth:`to_world`). Each mapped joint turns in the world as its
    counterpart does, ``G_j = R_b · O_j`` (the module's docstring); joints no counterpart plays take
    ``pose``; the ``positional`` joints follow their counterparts' heads, divided by ``scale``."""

    skeleton: object            # the Skeleton motions come out on
    joints: np.ndarray          # (K,) its mapped joints, in order
    bones: np.ndarray           # (K,) their counterparts: the source skeleton's joints, or the rig's bones
    offsets: np.ndarray         # (K, 3, 3) O_j
    pose: np.ndarray            # (J, 4) local rotations of the joints no counterpart plays
    positional: tuple           # joints whose translations follow their counterparts' heads
    scale: float                # counterpart units per skeleton unit
    world: np.ndarray = field(default_factory=lambda: np.eye(4))   # (4, 4) where the counterparts' space lies
    axes: np.ndarray = field(default_factory=lambda: np.eye(3))    # (3, 3) C: the skeleton's axes in the world's
    rig: object = None          # the rig whose bones the counterparts are (addon.rig.Rig), where they are
    rig_offsets: np.ndarray = None  # (J, 3) the skeleton's joint offsets with the rig's bone lengths

    @classmethod
    def build(cls, source, target, source_pose, target_pose, up="Y", name="source"):
        """Joints of skeleton ``target`` played by those of ``source`` (paired by :func:`.mapping.detect`),
        calibrated on natural poses of each (:func:`natural_pose`), ``source_pose``/``target_pose`` (J, 4);
        the trajectory scaled by the ratio of their standing heights; ``name`` says in errors which data
        set the source skeleton is."""
        found = detect(target.names, target.parents, source.names, source.parents)
        joints = np.array([target.index(j) for j in found], dtype=np.int64)
        order = np.argsort(joints)
        joints = joints[order]
        bones = np.array([source.index(b) for b in found.values()], dtype=np.int64)[order]
        hips = pelvis(target)
        unmapped = [target.names[j] for j in (hips, *(j for leg in legs(target) for j in (leg.hip, leg.knee, leg.foot)))
                    if j not in joints]
        if unmapped or len(joints) < 2:
            raise DataError(f"{name}: its joints ({', '.join(source.names[:6])}, …) do not map onto "
                            f"{', '.join(repr(n) for n in unmapped) or 'the limbs'} of the skeleton trained on; "
                            "give it as the first --data (or --skeleton), or rename its joints as LaFAN1, "
                            "Bandai or Mixamo do")
        sgrot, sheads = forward_kinematics(source_pose, source.offsets, source.parents)
        rest_rot = quat.to_matrix(sgrot[bones])
        offsets = calibrate(target, joints, rest_rot, sheads[bones], [target_pose])[0]
        carriers = [j for j in chain(target.parents, hips)   # Bandai keys every joint's translation; only these move
                    if any(c.endswith("position") for c in target.channels[j])]
        positional = tuple(int(j) for j in joints if j in carriers)
        scale = standing_height(source, source_pose, up) / standing_height(target, target_pose, up)
        return cls(target, joints, bones, offsets, np.asarray(target_pose, dtype=np.float64), positional, float(scale))

    @property
    def mapping(self):
        return dict(zip(self.joints.tolist(), self.bones.tolist()))

    def __call__(self, motion):
        """``motion`` (of the source's hierarchy, any bone lengths) as a :class:`Motion` of the skeleton."""
        grot, gpos = motion.global_transforms()
        rotations, positions = self.to_local(quat.to_matrix(grot[:, self.bones]), gpos[:, self.bones])
        return replace(motion, skeleton=self.skeleton, rotations=rotations, positions=positions)

    def to_model(self, pose):
        """The counterparts' matrices ``pose`` (F, bones, 4, 4) in their own space (a rig's armature space,
        columns of any equal scale) → local rotations (F, J, 4) and translations (F, J, 3) of the skeleton."""
        placed = self.world @ pose[:, self.bones]
        return self.to_local(self.axes.T @ quat.rotation_part(placed), placed[..., :3, 3] @ self.axes)

    def heads(self, pose):
        """{joint: (F, 3)}: the mapped joints' counterparts' heads in ``pose`` (as :meth:`to_model` takes it), in the
        skeleton's axes and units."""
        placed = (self.world @ pose[:, self.bones])[..., :3, 3] @ self.axes / self.scale
        return {int(j): placed[:, k] for k, j in enumerate(self.joints)}

    def to_local(self, rotations, heads):
        """The counterparts' world rotations ``rotations`` (F, K, 3, 3) and heads ``heads`` (F, K, 3), in the
        skeleton's axes and the counterparts' units → local rotations (F, J, 4) (signs continuous in time)
        and translations (F, J, 3) of the skeleton."""
        sk = self.skeleton
        frames = rotations.shape[0]
        grot = np.empty((frames, len(sk), 3, 3))
        gpos = np.empty((frames, len(sk), 3))
        mapped = dict(zip(self.joints.tolist(), range(len(self.joints))))
        wanted = rotations @ self.offsets                                    # G_j for mapped joints
        heads = heads / self.scale
        local = np.empty((frames, len(sk), 3, 3))
        pos = np.empty((frames, len(sk), 3))
        for j, p in enumerate(sk.parents):
            k = mapped.get(j)
            parent_rot = grot[:, p] if p >= 0 else np.eye(3)
            grot[:, j] = wanted[:, k] if k is not None else parent_rot @ quat.to_matrix(self.pose[j])
            local[:, j] = np.swapaxes(parent_rot, -1, -2) @ grot[:, j] if p >= 0 else grot[:, j]
            if k is not None and j in self.positional:
                gpos[:, j] = heads[:, k]
                pos[:, j] = gpos[:, j] if p < 0 else (np.swapaxes(parent_rot, -1, -2)
                                                      @ (gpos[:, j] - gpos[:, p])[..., None])[..., 0]
            else:
                pos[:, j] = sk.offsets[j]
                gpos[:, j] = sk.offsets[j] if p < 0 else (parent_rot @ sk.offsets[j]) + gpos[:, p]
        return quat.unroll(quat.from_matrix(local)), pos

    def to_world(self, rotations, positions):
        """Local rotations (F, J, 4) and translations (F, J, 3) of the skeleton → the world rotations
        (F, K, 3, 3) and heads (F, K, 3) its counterparts take, in the skeleton's axes and their units."""
        grot, gpos = forward_kinematics(rotations, positions, self.skeleton.parents)
        rotations = quat.to_matrix(grot[:, self.joints]) @ np.swapaxes(self.offsets, -1, -2)
        return rotations, gpos[:, self.joints] * self.scale

    def on_rig(self, motion, lengths=None):
        """``motion`` (the skeleton's, from :meth:`to_model`) on the rig's bone lengths: forward kinematics then
        gives the rig's joint positions (in the skeleton's units and axes), so feet planted on it stay planted on
        the rig, whatever its proportions; planted on the skeleton's lengths, a shorter-legged rig's foot slides
        where the model's stands still. Joints that follow a bone's head keep their translations. ``lengths``
        (frames, J, 3): the rig's offsets frame by frame, where its chains stretch (a control rig's, as read),
        rather than its rest ones."""
        positions = motion.positions.copy()
        fixed = np.setdiff1d(np.arange(len(self.skeleton)), self.positional)
        positions[:, fixed] = self.rig_offsets[fixed] if lengths is None else lengths[:, fixed]
        return replace(motion, positions=positions)


def direction_error(source, target, retargeting):
    """Mean angle (degrees) per frame (F,) between the bones of ``source`` (a Motion) and of its
    retargeted ``target``: for every mapped target joint and its nearest mapped descendant, the world
    direction from one to the other, against the same pair's in the source (where the source's joints
    are apart: CMU's ``LowerBack`` sits on its ``Hips``)."""
    slot = {int(j): k for k, j in enumerate(retargeting.joints)}
    bone_of = retargeting.mapping
    sk = source.skeleton
    _, rest = forward_kinematics(np.tile([1.0, 0.0, 0.0, 0.0], (len(sk), 1)), sk.offsets, sk.parents)
    pairs = [(j, c) for j, c in descendant_pairs(retargeting.skeleton.parents, slot)
             if np.linalg.norm(rest[bone_of[c]] - rest[bone_of[j]]) > 1e-3 * np.ptp(rest, axis=0).max()]
    _, tpos = target.global_transforms()
    _, spos = source.global_transforms()
    t = np.stack([tpos[:, c] - tpos[:, j] for j, c in pairs], axis=1)
    s = np.stack([spos[:, bone_of[c]] - spos[:, bone_of[j]] for j, c in pairs], axis=1)
    cos = np.sum(t * s, axis=-1) / np.maximum(np.linalg.norm(t, axis=-1) * np.linalg.norm(s, axis=-1), 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).mean(axis=1)
