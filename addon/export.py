"""Export Training Data: the armature's actions as Y-up BVH files for Betwixt's training module."""

from pathlib import Path

import bpy
import numpy as np

from ..inference import quat
from ..inference.bvh import read_bvh, write_bvh
from ..inference.errors import BetwixtError
from ..inference.motion import Motion, Skeleton
from .jobs import refusing
from .pose_io import Channels, active_armature
from .retarget import AXIS_CHANGE
from .rig import matrix_to_quat
from .variants import VARIANT_OF, assign, slot_of


class BETWIXT_PG_action_choice(bpy.types.PropertyGroup):
    use: bpy.props.BoolProperty(name="Export", default=True)


def armature_actions(obj):
    """Actions that animate bones of an armature like ``obj`` (variants left out)."""
    out = []
    for action in bpy.data.actions:
        if action.get(VARIANT_OF):
            continue
        slot = slot_of(action, getattr(getattr(obj.animation_data, "action_slot", None), "identifier", None))
        try:
            curves = Channels(obj, action=action, slot=slot).curves()
        except BetwixtError:
            continue
        if any(path.startswith("pose.bones[") and obj.pose.bones.get(path.split('"')[1]) is not None
               for path, _ in curves):
            out.append(action)
    return out


def y_up(motion):
    """A BVH motion written in Blender's Z-up axes, turned to BVH's usual Y-up (``C`` undone)."""
    c = AXIS_CHANGE[1]
    turn = matrix_to_quat(c.T)
    sk = motion.skeleton
    skeleton = Skeleton(sk.names, sk.parents, sk.offsets @ c, sk.channels,
                        tuple((j, tuple(np.asarray(o) @ c)) for j, o in sk.end_sites))
    rotations = quat.mul(quat.mul(turn, motion.rotations), quat.inv(turn))
    return Motion(skeleton, rotations, motion.positions @ c, motion.fps, up="Y", name=motion.name)


class BETWIXT_OT_export_training_data(bpy.types.Operator):
    """Write the chosen actions of the active armature as BVH files (Y-up) for Betwixt's training module"""

    bl_idname = "betwixt.export_training_data"
    bl_label = "Export Training Data"
    bl_options = {"REGISTER"}

    directory: bpy.props.StringProperty(name="Folder", subtype="DIR_PATH")
    actions: bpy.props.CollectionProperty(type=BETWIXT_PG_action_choice)
    root_only: bpy.props.BoolProperty(name="Root Translation Only", default=True,
                                      description="Write translation channels for the root bone only")

    def invoke(self, context, event):
        try:
            obj = active_armature(context)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        self.actions.clear()
        for action in armature_actions(obj):
            item = self.actions.add()
            item.name = action.name
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "root_only")
        layout.label(text="Actions:")
        for item in self.actions:
            layout.prop(item, "use", text=item.name)

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        names = [item.name for item in self.actions if item.use] if len(self.actions) else \
            [a.name for a in armature_actions(obj)]
        if not names:
            raise BetwixtError("no action chosen; tick at least one action to export")
        folder = Path(bpy.path.abspath(self.directory or "//"))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            written = [export_action(context, obj, name, folder, self.root_only) for name in names]
        except OSError as e:
            where = e.filename or folder
            self.report({"ERROR"}, f"Betwixt: cannot write the BVH files in {where} ({e.strerror or e}); choose "
                        "a folder you can write to")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Betwixt: wrote {len(written)} BVH file{'s' * (len(written) != 1)} to {folder}; "
                    f"train with: python -m training rtn --data {folder}")
        return {"FINISHED"}


def export_action(context, obj, name, folder, root_only):
    """One action through Blender's BVH exporter, then turned Y-up; the armature keeps its own action."""
    action = bpy.data.actions.get(name)
    if action is None:
        raise BetwixtError(f"there is no action {name!r}")
    anim = obj.animation_data or obj.animation_data_create()
    saved = anim.action, getattr(anim, "action_slot", None)
    active = context.view_layer.objects.active
    path = folder / f"{bpy.path.clean_name(name)}.bvh"
    start, end = (int(round(f)) for f in action.frame_range)
    try:
        context.view_layer.objects.active = obj
        slot = slot_of(action, saved[1].identifier if saved[1] is not None else None)
        assign(obj, action, slot.identifier if slot is not None else None)
        bpy.ops.export_anim.bvh(filepath=str(path), check_existing=False, frame_start=start, frame_end=end,
                                rotate_mode="NATIVE", root_transform_only=root_only)
    finally:
        anim.action = saved[0]
        if saved[1] is not None:
            anim.action_slot = saved[1]
        context.view_layer.objects.active = active
    write_bvh(y_up(read_bvh(path)), path)
    return path
