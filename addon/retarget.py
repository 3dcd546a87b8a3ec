"""A rig read for retargeting: its rest orientations, rest pose, units and axes, calibrated into the one
:class:`..inference.retarget.Retargeting` (which converts its poses to the model's motion and back), and
the model's motion written back as the rig's channels (:func:`to_rig`).

The model's skeleton is a BVH skeleton: at rest every joint frame is the world frame (Y-up, the
model's units). A rig's bones have their own rest frames (any roll, any tail direction), its own
rest pose (a T-pose, an A-pose, a bent knee), its own size and Blender's Z-up world. Betwixt moves
each mapped bone so that its *world* rotation changes as its model joint's does:

    G_j(t) = Cᵀ · R_b(t) · O_b

with ``R_b`` the bone's world rotation, ``C`` the model-to-Blender axis change, and ``O_b`` a
constant found once, from the rest poses: ``O_b = (Cᵀ R_b^rest)⁻¹ · S_j · G_j^ref``, where the model
stands in a reference pose (its own rest pose, or a natural pose from the model's metadata, whichever
is nearer the rig's rest pose) with world rotations ``G^ref``. ``S_j`` turns that pose into the rig's
rest pose: it carries the directions from joint ``j`` to its nearest mapped descendants onto the same
directions in the rig (one direction: the smallest turn from the parent's ``S``; several: the best
rigid fit). Where the poses agree ``S`` is the identity and the rig moves exactly as the model; where
they differ, every bone still points where the model's bone points, so joint positions follow the
model up to the rig's own bone lengths. A bone's roll about its own direction is not observable from
rest positions, so between very different poses (a BVH "all bones along X" rest pose and a T-pose) a
limb may keep a constant twist about its own axis; a natural reference pose removes it. A rest pose
nobody stands in (Bandai's and LaFAN1's BVH rest poses lay every bone along X) says little about how
the rig's bones sit in a body, so where the rig's rest pose is no stance (its legs do not hang down)
and it is animated, its natural stance (its action's frames, each turned to face one way, averaged:
:func:`..inference.retarget.natural_stance`) is tried against the model's natural pose too, and the
stance pair that needs the smaller turns wins: a rig of the model's own skeleton stands at rest exactly
as the model does and keeps the rest poses; a Bandai rig gets its natural stance, as training's
retargeting does. A rest pose that stands (CMU's T-pose) is a better stance to match than the mean of
whatever the action does (CMU 01_01 jumps). That calibration
(:func:`..inference.retarget.calibrate`) is shared with training, which brings other data sets'
skeletons onto a model's the same way.

Joints the rig lacks (toes, spine bones) take the reference pose's local rotations: a toe left at
the rest pose's identity is a pose the model never saw, and it poisons the whole fill.

Translations: the trajectory joint (and the model's root) follow the mapped bone's head, scaled by
``scale``, the rig's size over the model's (:func:`..inference.retarget.length_ratio`: summed lengths of
bones mapped at both ends whose upper joint's parent is mapped too). Other joints keep the model's rest
offsets: the models move the trajectory joint only.
"""

import numpy as np

from ..inference import quat
from ..inference.anatomy import legs, pelvis
from ..inference.errors import BetwixtError
from ..inference.motion import depth_levels
from ..inference.retarget import Retargeting, calibrate, length_ratio, natural_stance
from .rig import affine_inverse, compose, matrix_to_quat, rotation_part

# From a model's up axis to Blender's Z-up: what Blender's BVH importer does (forward -Z, up Y).
AXIS_CHANGE = {1: np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]), 2: np.eye(3),
               0: np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])}


SAME_STANCE = np.radians(1.0)   # a rest-pose misfit below this: the rig stands at rest as the model does


def _stands(skeleton, mapping, heads, up):
    """Whether the rig's rest pose is a stance (a T- or A-pose): its mapped legs hang down, hip to foot
    within 45 degrees of the model's ``-up`` in the rig's heads (bones, 3) in model axes. A rig without
    mapped legs is taken to stand."""
    down = [heads[mapping[leg.foot]] - heads[mapping[leg.hip]] for leg in legs(skeleton)
            if leg.hip in mapping and leg.foot in mapping]
    down = [d[up] / np.linalg.norm(d) for d in down if np.linalg.norm(d) > 0]
    return not down or float(np.mean(down)) < -np.cos(np.radians(45))


def _natural(rig, posed, axes, rest_rot, heads, hips, up):
    """The rig's natural stance (:func:`..inference.retarget.natural_stance`) in model axes: world
    rotations (bones, 4) and heads (bones, 3), from its world pose matrices ``posed`` (F, bones, 4, 4) and
    its rest rotations ``rest_rot`` (bones, 3, 3) and ``heads`` (bones, 3) in model axes; ``hips``: the
    pelvis bone."""
    parents = rig.parents
    rel = np.zeros((len(parents), 3))   # each bone's head in its parent's rest frame
    child = np.flatnonzero(parents >= 0)
    rel[child] = np.einsum("bji,bj->bi", rest_rot[parents[child]], heads[child] - heads[parents[child]])
    return natural_stance(matrix_to_quat(axes.T @ rotation_part(posed)), hips, up, parents, rel)


def rig_offsets(skeleton, rig, mapping, offsets, joints, rest_rot, heads, pose):
    """(J, 3) the offsets of the model's ``skeleton`` with the rig's bone lengths: each joint mapped, below a
    mapped ancestor whose bone is an ancestor of its own, gets the offset that puts it where the rig's bone
    head is, in the ancestor's model frame (``O_pᵀ (Cᵀ R_p^rest)ᵀ (h_j - h_p)``, with ``heads`` in model units:
    a child's head turns with its ancestor's bone from rest). The model's joints between the two, which the
    rig lacks (CMU's ``LHipJoint`` between ``Hips`` and ``LeftUpLeg``), get no length, and their turns in
    ``pose`` (the local rotations unmapped joints take) are taken back out of the child's offset: kept, they
    hung the rig's legs from the model's hip joints, a hand below its own, and planted feet floated. The
    others keep the model's."""
    k_of = {int(j): k for k, j in enumerate(joints)}
    out = skeleton.offsets.copy()
    for j in mapping:
        between, p = [], int(skeleton.parents[j])
        while p >= 0 and p not in mapping:
            between.append(p)
            p = int(skeleton.parents[p])
        if p < 0 or not _descends(rig.parents, mapping[j], mapping[p]):
            continue
        turn = np.eye(3)
        for u in reversed(between):                 # from the ancestor's child down to the joint's parent
            turn = turn @ quat.to_matrix(pose[u])
        out[j] = turn.T @ offsets[k_of[p]].T @ rest_rot[mapping[p]].T @ (heads[mapping[j]] - heads[mapping[p]])
        out[between] = 0.0
    return out


def _descends(parents, bone, ancestor):
    """Whether rig ``bone`` hangs below ``ancestor``."""
    while bone >= 0:
        bone = parents[bone]
        if bone == ancestor:
            return True
    return False


class MappingError(BetwixtError):
    """A bone mapping that cannot drive the model."""


def rig_retargeting(skeleton, rig, mapping, world, up=1, trajectory=0, reference=None, moving=None):
    """The :class:`..inference.retarget.Retargeting` of the model's ``skeleton`` onto the rig ``rig`` (its bones
    the counterparts), calibrated on their rest poses. ``mapping``: {model joint index: rig bone index};
    ``world``: the armature object's matrix (4, 4); ``up``: the model's up axis (0, 1, 2); ``reference``:
    local rotations (J, 4) of a natural pose of the model's skeleton (a T-pose, a standing pose), tried
    besides its rest pose as the counterpart of the rig's rest pose; the one that needs the smaller turns
    wins, and with it the bones' twists are right too. ``moving()`` gives armature-space pose matrices
    (F, bones, 4, 4) of the rig in motion (or None), whose natural stance is tried against ``reference``
    too (see the module's docstring); it is only called where the rest poses differ and the rig's is no
    stance."""
    if len(set(mapping.values())) != len(mapping):
        raise MappingError("two model joints are mapped to the same bone; map each bone once")
    joints = np.array(sorted(mapping), dtype=np.int64)
    if len(joints) < 2:
        raise MappingError(f"only {len(joints)} of the model's {len(skeleton)} joints are mapped; "
                           "map the bones in the Betwixt panel (Bone Mapping > Detect)")
    traj = skeleton.names[trajectory]
    if trajectory not in mapping:
        raise MappingError(f"the model's {traj!r} joint, which carries the character through the "
                           "world, is not mapped; map it to the rig's hip bone")
    bones = np.array([mapping[j] for j in joints], dtype=np.int64)
    for b in bones:
        while b >= 0:
            if not rig.plain[b]:
                raise MappingError(f"bone {rig.names[b]!r} does not inherit its parent's rotation or has "
                                   "non-local location; Betwixt needs Blender's defaults there (Bone "
                                   "properties > Relations: Inherit Rotation and Local Location on)")
            b = rig.parents[b]
    if rig.connected[mapping[trajectory]]:
        raise MappingError(f"bone {rig.names[mapping[trajectory]]!r} plays {traj!r}, which carries the "
                           "character through the world, but it is connected to its parent and cannot "
                           "move; untick Connected in its Relations, or map a bone that is free")
    world = np.asarray(world, dtype=np.float64)
    scale = np.linalg.norm(world[:3, :3], axis=0)
    if scale.max() > 1.001 * scale.min():   # bones would bend as they turn: no rotation reads them
        raise MappingError(f"the armature object's scale ({', '.join(f'{v:g}' for v in scale)}) is not the same "
                           "on all three axes; apply it (Object > Apply > Scale) or make it uniform")
    axes = AXIS_CHANGE[int(up)]
    rest_world = world @ rig.rest
    rest_rot = axes.T @ rotation_part(rest_world)              # Cᵀ R_b^rest
    heads = rest_world[:, :3, 3] @ axes                         # Cᵀ h, in rig units
    scale = length_ratio(skeleton, mapping, heads)
    if scale is None:
        raise MappingError("the mapped bones have no length between them; map bones that are apart")
    poses = [np.tile([1.0, 0.0, 0.0, 0.0], (len(skeleton), 1))]   # the model's rest pose, and
    if reference is not None:                                       # a pose of its own, when it has one
        poses.append(quat.normalize(np.asarray(reference, dtype=np.float64)))
    reach = None if rig.lengths is None else (rig.lengths * np.linalg.norm(world[:3, 0]))[bones, None]
    tails = None if reach is None else heads[bones] + reach * rest_rot[bones][:, :, 1]
    fits = [calibrate(skeleton, joints, rest_rot[bones], heads[bones], poses, tails)]
    if fits[0][1] > SAME_STANCE and moving is not None and reference is not None \
            and pelvis(skeleton) in mapping and not _stands(skeleton, mapping, heads, up):
        pose = moving()
        if pose is not None:
            stance, at = _natural(rig, world @ pose, axes, rest_rot, heads, mapping[pelvis(skeleton)], int(up))
            turned = quat.to_matrix(stance[bones])
            fits.append(calibrate(skeleton, joints, turned, at[bones], poses[-1:],
                                  None if reach is None else at[bones] + reach * turned[:, :, 1]))
    offsets = min(fits, key=lambda fit: fit[1])[0]
    positional = tuple(sorted({0, int(trajectory)} & set(mapping)))
    return Retargeting(skeleton, joints, bones, offsets, poses[-1], positional, scale, world, axes, rig,
                       rig_offsets(skeleton, rig, mapping, offsets, joints, rest_rot, heads / scale, poses[-1]))


def to_rig(retarget, rotations, positions, location, rotation, scale, heads=None):
    """The model's frames (local ``rotations`` (F, J, 4) and ``positions`` (F, J, 3)) → channels of the rig of
    ``retarget``: ``(location, rotation)`` per bone and frame, and the armature-space pose (F, bones, 4, 4).

    ``location``/``rotation``/``scale`` (frames, bones, …) are the rig's current channels on those
    frames; unmapped bones keep theirs, mapped bones get the rotation (and the trajectory bone the
    location) that puts them where the model's joints are. ``heads`` (F, K, 3), as :meth:`~..inference.
    retarget.Retargeting.to_world` gives them: where the mapped bones' heads go in the pose, rather than
    where the rig's chain puts them, whose unmapped bones between two mapped ones (a spine or neck of
    more bones than the model's, a limb's segments) keep their current turns.
    """
    rig, world = retarget.rig, retarget.world
    want_rot, placed = retarget.to_world(rotations, positions)
    moved = heads is not None
    heads = heads if moved else placed
    # wanted armature-space rotations (3x3) and heads of the mapped bones
    want_rot = rotation_part(world).T @ retarget.axes @ want_rot
    inv_world = affine_inverse(world)
    want_head = (heads @ retarget.axes.T) @ inv_world[:3, :3].T + inv_world[:3, 3]
    location, rotation = location.copy(), rotation.copy()
    rel = rig.relative
    frames = rotations.shape[0]
    pose = np.empty((frames, len(rig), 4, 4))
    mapped = np.full(len(rig), -1)
    mapped[retarget.bones] = np.arange(len(retarget.bones))
    positional = np.isin(retarget.joints, retarget.positional)
    for bones in depth_levels(tuple(rig.parents.tolist())):   # a depth's bones at once: their parents are placed
        parents = rig.parents[bones]
        above = np.broadcast_to(rel[bones], (frames,) + rel[bones].shape) if parents[0] < 0 else \
            pose[:, parents] @ rel[bones]
        ks = mapped[bones]
        turned = ks >= 0
        if turned.any():
            b, k, over = bones[turned], ks[turned], above[:, turned]
            rotation[:, b] = matrix_to_quat(np.swapaxes(rotation_part(over), -1, -2) @ want_rot[:, k])
            moving = positional[k] & ~rig.connected[b]
            if moving.any():
                head = np.concatenate([want_head[:, k[moving]], np.ones((frames, moving.sum(), 1))], -1)
                location[:, b[moving]] = (affine_inverse(over[:, moving]) @ head[..., None])[..., :3, 0]
        loc = np.where(rig.connected[bones][:, None], 0.0, location[:, bones])
        placed = above @ compose(loc, rotation[:, bones], scale[:, bones])
        if moved:
            placed[..., :3, 3][:, turned] = want_head[:, ks[turned]]
        pose[:, bones] = placed
    return location, rotation, pose
