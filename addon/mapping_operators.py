"""Detect and Clear the bone mapping (and the control map detected with it) of the active armature."""

import bpy

from ..inference.modelfile import KINDS, runtime_class
from . import controls, mapping
from .jobs import refusing
from .pose_io import active_armature
from .preferences import load_model, model_for


class BETWIXT_OT_detect_mapping(bpy.types.Operator):
    """Map the model's joints to the active armature's bones from their names and hierarchy"""

    bl_idname = "betwixt.detect_mapping"
    bl_label = "Detect Bone Mapping"
    bl_options = {"REGISTER", "UNDO"}

    skeleton: bpy.props.EnumProperty(
        name="Skeleton", description="Whose skeleton to map the rig to: the model's whose joints its bones "
        "fit best, or a kind's (a four-legged rig without a tail fits the human skeleton as well)",
        items=[("AUTO", "Best Fit", "The skeleton the bone names fit best, or the one already mapped")]
        + [(kind, runtime_class(kind).TITLE, f"The skeleton of the active {kind} model") for kind in KINDS],
        options={"SKIP_SAVE"})   # a plain Detect after the menu's is a plain one again

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        model = model_for(context, obj) if self.skeleton == "AUTO" else load_model(context, self.skeleton)
        skeleton = model.skeleton
        found = mapping.detected(obj, skeleton)
        mapping.store(obj.data, skeleton.names, found)
        controls.store(obj.data, controls.detect(obj))
        missing = [j for j in skeleton.names if j not in found]
        level = {"INFO"} if not missing else {"WARNING"}
        driving = [e.control for e in controls.entries_for(obj)]
        self.report(level, f"Betwixt: mapped {len(found)} of {len(skeleton)} joints of model {model.name}" +
                    (f"; not found: {', '.join(missing[:6])}{' …' if len(missing) > 6 else ''} "
                     "(pick their bones in the list or leave them unmapped)" if missing else "") +
                    (f"; reads the deform bones ({next(iter(found.values()), '')}, …) as Blender evaluates them and "
                     f"keys {len(driving)} controls ({', '.join(driving[:4])}, …) as each limb's IK/FK switch says"
                     if driving else ""))
        return {"FINISHED"}


class BETWIXT_OT_clear_mapping(bpy.types.Operator):
    """Forget the bone mapping and the control map stored on the active armature"""

    bl_idname = "betwixt.clear_mapping"
    bl_label = "Clear Bone Mapping"
    bl_options = {"REGISTER", "UNDO"}

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        obj.data.betwixt_joints.clear()
        obj.data.betwixt_controls.clear()
        return {"FINISHED"}
