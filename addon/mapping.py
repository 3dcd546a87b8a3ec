"""Model joints ↔ rig bones, edited in the panel and stored on the armature.

Detection from names and hierarchy (naming schemes, Biovision collars, spine chains of other lengths) is
:func:`..inference.mapping.detect`, which training shares to bring other data sets onto a model's skeleton.
"""

import bpy

from ..inference.anatomy import hands, is_quadruped
from ..inference.mapping import detect
from . import rigify

ON_ALL_FOURS = 0.5   # of the hips' height above the floor: hands at rest below this stand on it


class BETWIXT_PG_joint(bpy.types.PropertyGroup):
    """One model joint and the bone that plays it (stored on the armature data, ``betwixt_joints``)."""

    joint: bpy.props.StringProperty(name="Joint", description="A joint of the model's skeleton")
    bone: bpy.props.StringProperty(name="Bone", description="The rig's bone that plays this joint; "
                                   "empty leaves the joint at its rest pose and the bone's keys alone")


def stored(armature):
    """{joint: bone} as stored on the armature data (empty bones included)."""
    return {item.joint: item.bone for item in armature.betwixt_joints}


def store(armature, joints, found):
    """Store a mapping for every joint of ``joints`` (``found``: {joint: bone}), in the model's order."""
    items = armature.betwixt_joints
    items.clear()
    for joint in joints:
        item = items.add()
        item.joint = joint
        item.bone = found.get(joint, "")


def mapping_for(obj, skeleton, rig):
    """``({joint index: bone index}, detected)``: the stored mapping when it is for this skeleton, else
    one detected now (``detected`` then holds it by name, for storing once the operation succeeds)."""
    have = stored(obj.data)
    bones = {n: i for i, n in enumerate(rig.names)}
    if have and set(skeleton.names) <= set(have):
        return {j: bones[have[n]] for j, n in enumerate(skeleton.names) if have[n] in bones}, None
    found = detected(obj, skeleton)
    return {skeleton.names.index(j): bones[b] for j, b in found.items()}, found


def played(obj, skeletons):
    """The index in ``skeletons`` of the skeleton the armature ``obj`` plays: where it has a stored mapping,
    the first of ``skeletons`` of that mapping's body (two legs or four: the in-betweening model chosen in
    the preferences, though the rig was mapped to another model's skeleton of that body), else the one whose
    joints detection maps most of. Of equals, a four-legged one where the rig stands on all fours
    (:func:`on_all_fours`), else the first (the in-betweening model's): the dog's names are a human
    skeleton's and a tail, so a quadruped rig without a tail maps as many human joints as dog joints, as a
    person's rig named alike (Rigify's) does; only its pose tells them apart."""
    counts = []
    for skeleton in skeletons:
        unmapped, is_stored = status(obj, skeleton)
        if is_stored:
            return next(i for i, other in enumerate(skeletons) if is_quadruped(other) == is_quadruped(skeleton))
        counts.append(len(skeleton) - len(unmapped))
    best = [i for i, count in enumerate(counts) if count == max(counts)]
    if len(best) > 1 and on_all_fours(obj, skeletons[best[0]]):
        return next((i for i in best if is_quadruped(skeletons[i])), best[0])
    return best[0]


def on_all_fours(obj, skeleton):
    """Whether the armature ``obj`` stands on its hands in its rest pose: the bones detection maps to
    ``skeleton``'s hand joints nearer its floor (its lowest bone end) than ON_ALL_FOURS of the height of
    the bone mapped to its root. A dog's front paws stand on the floor; a person's hands hang at the
    thigh or reach out to the sides."""
    bones, found = obj.data.bones, detected(obj, skeleton)
    hand_bones = [found[skeleton.names[j]] for j in hands(skeleton.names) if skeleton.names[j] in found]
    if not hand_bones or skeleton.names[0] not in found:
        return False
    floor = min(min(b.head_local.z, b.tail_local.z) for b in bones)
    hips = bones[found[skeleton.names[0]]].head_local.z - floor
    return hips > 0 and max(bones[h].head_local.z for h in hand_bones) - floor < ON_ALL_FOURS * hips


def status(obj, skeleton):
    """``(unmapped joints, stored)`` for the panel: the model's joints that play no bone, in its order."""
    have = stored(obj.data)
    if have and set(skeleton.names) <= set(have):
        return [n for n in skeleton.names if have[n] not in obj.data.bones], True
    found = detected(obj, skeleton)
    return [n for n in skeleton.names if n not in found], False


def detected(obj, skeleton):
    """{model joint: bone} that detection (:func:`..inference.mapping.detect`) finds for ``skeleton`` among
    the armature ``obj``'s bones, from their names and hierarchy; on a rig Rigify generated from the human
    or the wolf metarig, its deform bones (:mod:`.rigify`), and none for a skeleton of the other kind."""
    layout = rigify.layout_of(obj)
    if layout is not None:
        return rigify.deform_mapping(layout, skeleton) if layout.quadruped == is_quadruped(skeleton) else {}
    bones = [b.name for b in obj.data.bones]
    parents = [bones.index(b.parent.name) if b.parent else -1 for b in obj.data.bones]
    return detect(skeleton.names, skeleton.parents, bones, parents)
