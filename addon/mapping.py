"""Model joints ↔ rig bones, edited in the panel and stored on the armature.

Detection from names and hierarchy (naming schemes, Biovision collars, spine chains of other lengths) is
:func:`..inference.mapping.detect`, which training shares to bring other data sets onto a model's skeleton.
"""

import bpy

from ..inference.mapping import detect


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
    found = detect(skeleton.names, skeleton.parents, rig.names, rig.parents)
    return {skeleton.names.index(j): bones[b] for j, b in found.items()}, found


def played(obj, skeletons):
    """The index in ``skeletons`` of the skeleton the armature ``obj`` plays: the one its stored mapping
    is for, else the one whose joints detection maps most of; the first of equals (the in-betweening
    model's: the dog's names are a human skeleton's and a tail, so a quadruped rig without a tail
    maps as many human joints as dog joints, and is mapped to the dog by Detect's Skeleton option)."""
    counts = []
    for i, skeleton in enumerate(skeletons):
        unmapped, is_stored = status(obj, skeleton)
        if is_stored:
            return i
        counts.append(len(skeleton) - len(unmapped))
    return counts.index(max(counts))


def status(obj, skeleton):
    """``(unmapped joints, stored)`` for the panel: the model's joints that play no bone, in its order."""
    have = stored(obj.data)
    if have and set(skeleton.names) <= set(have):
        return [n for n in skeleton.names if have[n] not in obj.data.bones], True
    bones = [b.name for b in obj.data.bones]
    parents = [bones.index(b.parent.name) if b.parent else -1 for b in obj.data.bones]
    found = detect(skeleton.names, skeleton.parents, bones, parents)
    return [n for n in skeleton.names if n not in found], False