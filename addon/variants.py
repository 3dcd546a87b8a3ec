"""Variants: several transitions of one gap, each in its own copy of the action (Continue's continuations
are kept the same way), previewed, applied (the keys inside the gap) and discarded."""

import bpy
import numpy as np

from ..inference import edit
from ..inference.errors import BetwixtError
from ..inference.modelfile import ModelError
from . import mapping, options
from .generate import _Generate
from .jobs import refusing
from .plan import resolve
from .pose_io import Channels, KeyStyle, Snapshot, active_armature, read_points, write_bone_keys, write_points
from .steps import share
from .writing import checked, key_edits, planted

VARIANT_OF = "betwixt_variant_of"
VARIANT_GAP = "betwixt_gap"
VARIANT_SLOT = "betwixt_slot"
VARIANT_INDEX = "betwixt_variant"


def variants_of(name):
    """The variant actions made from action ``name``, in order."""
    found = [a for a in bpy.data.actions if a.get(VARIANT_OF) == name]
    return sorted(found, key=lambda a: int(a.get(VARIANT_INDEX, 0)))


def original_of(action):
    """The action a variant was made from (the action itself if it is none)."""
    name = action.get(VARIANT_OF) if action is not None else None
    return bpy.data.actions.get(name) if name else action


def assign(obj, action, slot_identifier):
    anim = obj.animation_data
    anim.action = action
    if hasattr(anim, "action_slot") and slot_identifier:
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
        if slot is not None:
            anim.action_slot = slot


def check_original(plan):
    """Refuse to make variants of an action that is itself one."""
    if original_of(bpy.data.actions[plan.action_name]).name != plan.action_name:
        raise BetwixtError(f"action {plan.action_name!r} is itself a variant; apply it or go back to the "
                           "original before making new variants")


def keep_variants(plan, motions, step=1, breakdown=False, label="variant"):
    """Each of ``motions`` (model space, as :func:`bone_edits` reads them) keyed into its own copy of the
    plan's action, inside the plan's one gap, in place of the action's variants made before: the copies
    ('<action> <label> <i>'), all or none. Variants and Continue's continuations alike: they are
    previewed, applied (the keys inside the gap) and discarded by the operators below. Steps (see
    :mod:`.jobs`) that return the copies."""
    obj, channels = resolve(plan)
    action = channels.action
    old = variants_of(action.name)
    made = []
    for motion in motions:
        checked(plan, motion, plan.gaps)
    try:
        for i, motion in enumerate(motions):
            copy = action.copy()
            made.append(copy)
            copy.use_fake_user = True
            copy[VARIANT_OF] = action.name
            copy[VARIANT_GAP] = list(plan.gaps[0])
            copy[VARIANT_INDEX] = i + 1
            copy[VARIANT_SLOT] = plan.slot or ""
            target = Channels(obj, action=copy, slot=channels.slot_in(copy))
            rig, edits = yield from share(key_edits(plan, channels, motion, plan.gaps, step), 2 * i, 2 * len(motions))
            yield from share(write_bone_keys(target, rig, edits, plan.gaps, KeyStyle(breakdown=breakdown),
                                             pin=plan.drive is not None), 2 * i + 1, 2 * len(motions))
    except BaseException:
        for copy in made:
            bpy.data.actions.remove(copy)
        raise
    for a in old:
        bpy.data.actions.remove(a)
    for i, copy in enumerate(made):
        copy.name = f"{action.name} {label} {i + 1}"
    if plan.detected is not None:
        mapping.store(obj.data, plan.model.skeleton.names, plan.detected)
    return made


SOURCES = {"NOISE": "rtn", "MVAE": "mvae"}   # the Variants operator's Source -> the kind of model it uses


class BETWIXT_OT_variants(_Generate, bpy.types.Operator):
    """Make several different transitions for the selected gap, each in its own action, to compare"""

    bl_idname = "betwixt.variants"
    bl_label = "Variants"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Making variants"
    serves = "variants"

    count: options.count("Variants", "How many transitions to make", 2)
    variation: options.variation(1.0)
    source: options.SOURCE

    def prepare(self, context):
        frame = context.scene.frame_current

        def one_gap(keys):
            chosen = edit.gaps_between(keys.selected())
            if len(chosen) != 1:
                around = [(a, b) for a, b in edit.gaps_between(keys.all()) if a < frame < b]
                chosen = around or chosen
            if len(chosen) != 1:
                raise BetwixtError("select the two keys around one gap on the mapped bones (or put the current frame "
                                   "inside a gap) to make variants of it")
            return chosen
        try:
            plan = yield from self.read(context, one_gap, SOURCES[self.source])
        except ModelError as e:
            if self.source != "MVAE":
                raise
            raise ModelError(f"{e}; or make variants with Source: Noise (RTN)") from None
        plan.count = self.count
        check_original(plan)
        return plan

    def compute(self, plan, progress, cancelled):
        made = edit.variants(plan.model, plan.motion, plan.first, plan.gaps[0], plan.fps, plan.count,
                             None if plan.momentum is None else plan.momentum[0], **plan.options)
        out = []
        for i, motion in enumerate(made):
            if cancelled():
                raise edit.Cancelled()
            out.append(planted(plan, motion))
            progress(i + 1, plan.count)
        return out

    def finish(self, context, plan, result):
        made = yield from keep_variants(plan, result, self.step, self.breakdown)
        a, b = plan.gaps[0]
        return (f"Betwixt: {len(made)} variants of frames {a}–{b} by model {plan.model.name} in actions "
                f"'{made[0].name}' … '{made[-1].name}'; preview and apply one in the Betwixt panel")


class BETWIXT_OT_preview_variant(bpy.types.Operator):
    """Show this action (a variant, or the original) on the armature"""

    bl_idname = "betwixt.preview_variant"
    bl_label = "Preview Variant"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.StringProperty(name="Action")

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        action = bpy.data.actions.get(self.action)
        if action is None:
            raise BetwixtError(f"there is no action {self.action!r}")
        current = obj.animation_data.action if obj.animation_data else None
        playing = getattr(obj.animation_data, "action_slot", None)
        slot = action.get(VARIANT_SLOT) or getattr(playing, "identifier", None)
        if original_of(action) != original_of(current):
            raise BetwixtError(f"action {action.name!r} is not a variant of the armature's action")
        assign(obj, action, slot)
        return {"FINISHED"}


class BETWIXT_OT_apply_variant(bpy.types.Operator):
    """Copy this variant's transition into the original action, go back to it and remove the variants"""

    bl_idname = "betwixt.apply_variant"
    bl_label = "Apply Variant"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.StringProperty(name="Action")

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        variant = bpy.data.actions.get(self.action)
        original = original_of(variant) if variant is not None else None
        if variant is None or original is None or original == variant:
            raise BetwixtError(f"{self.action!r} is not a variant made by Betwixt (or its original action "
                               "was deleted)")
        a, b = (int(v) for v in variant[VARIANT_GAP])
        identifier = variant.get(VARIANT_SLOT) or None
        source = Channels(obj, action=variant, slot=slot_of(variant, identifier))
        target = Channels(obj, action=original, slot=slot_of(original, identifier))
        copy_inside(source, target, a, b)
        assign(obj, original, identifier)
        for other in variants_of(original.name):
            bpy.data.actions.remove(other)
        self.report({"INFO"}, f"Betwixt: applied {self.action} to {original.name}")
        return {"FINISHED"}


def slot_of(action, identifier):
    if not hasattr(action, "slots"):
        return None
    return next((s for s in action.slots if s.identifier == identifier), None) or \
        next((s for s in action.slots if s.target_id_type == "OBJECT"), None)


def copy_inside(source, target, a, b):
    """The keys strictly between frames ``a`` and ``b`` of the bone curves of ``source``, into ``target``."""
    snapshot = Snapshot(target)
    try:
        for (path, index), fc in source.curves().items():
            if not path.startswith("pose.bones["):
                continue
            data = read_points(fc)
            dst = snapshot.keep(path, index)
            if dst is None:
                dst = target.new(path, index, fc.group.name if fc.group else None)
                snapshot.created_curve(path, index)
                write_points(dst, data)
                continue
            old = read_points(dst)
            t_src, t_old = data["co"][0::2], old["co"][0::2]
            take = (t_src > a + 1e-4) & (t_src < b - 1e-4)
            keep = ~((t_old > a + 1e-4) & (t_old < b - 1e-4))
            order = np.argsort(np.concatenate([t_old[keep], t_src[take]]), kind="stable")
            merged = {}
            for name, array in old.items():
                width = 2 if name in ("co", "handle_left", "handle_right") else 1
                both = np.concatenate([array.reshape(-1, width)[keep], data[name].reshape(-1, width)[take]])
                merged[name] = both[order].reshape(-1)
            write_points(dst, merged)
    except BaseException:
        snapshot.restore()
        raise


class BETWIXT_OT_discard_variants(bpy.types.Operator):
    """Remove the variants of the armature's action and go back to the original"""

    bl_idname = "betwixt.discard_variants"
    bl_label = "Discard Variants"
    bl_options = {"REGISTER", "UNDO"}

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        current = obj.animation_data.action if obj.animation_data else None
        original = original_of(current)
        if original is None:
            raise BetwixtError("the armature has no action")
        if original != current:
            assign(obj, original, current.get(VARIANT_SLOT) or None)
        for other in variants_of(original.name):
            bpy.data.actions.remove(other)
        return {"FINISHED"}
