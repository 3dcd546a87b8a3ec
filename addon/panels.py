"""The "Betwixt" sidebar tab (Graph Editor, Dope Sheet, 3D View) and the Key menu entries."""

import bpy

from ..inference.modelfile import ModelError
from . import controls, mapping, options
from .library import ENTERS, LEAVES, choices, transitions_of
from .locomotion import GAIT, PHYSICS
from .variants import SOURCES, original_of, variants_of
from .preferences import draw_error, draw_model, model_for

# What unmapped joints cost (docs/rig-suite.md: a rig without toes, a spine of one bone against the
# whole rig's error over Bezier's), for the panel's warning
UNMAPPED_COST = "Read in the model's average pose: 5-50 % more error"


class BETWIXT_PG_settings(bpy.types.PropertyGroup):
    """The panel's options, kept per scene and handed to the operators."""

    step: options.STEP
    breakdown: options.BREAKDOWN
    blend: options.BLEND
    variation: options.variation(0.0, "How far Fill Gaps and Decompress may stray from the most likely motion")
    seed: options.seed("Which variation, variants or continuations")
    count: options.count("Variants", "How many variants to make", 2)
    source: options.SOURCE
    continuations: options.count("Continuations", "How many continuations Continue makes", 1)
    frames: options.FRAMES
    plant_feet: options.PLANT_FEET
    show_mapping: bpy.props.BoolProperty(name="Show Bone Mapping", default=False)
    gait: GAIT
    path_physics: PHYSICS
    show_transitions: bpy.props.BoolProperty(name="Transitions", default=False)
    transition_length: bpy.props.IntProperty(name="Length", description="Frames of each transition", default=30,
                                             min=1, soft_max=120)
    transition_count: options.count("Variants", "Transitions per pair of actions", 1)
    leave: bpy.props.EnumProperty(name="Leave", description="Where each source action is left", items=LEAVES)
    enter: bpy.props.EnumProperty(name="Enter", description="Where each target action is entered", items=ENTERS)
    transition_index: bpy.props.IntProperty()


def _unable(context, obj, request, kind=None):
    """Why the armature ``obj`` has no model for ``request`` (see :func:`.preferences.model_for`), or None."""
    try:
        model_for(context, obj, request, kind)
    except ModelError as e:
        return str(e)
    return None


class BETWIXT_UL_joints(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.label(text=item.joint)
        row.prop_search(item, "bone", data, "bones", text="")


def _options(op, settings, generate=True):
    op.step = settings.step
    op.breakdown = settings.breakdown
    op.blend = settings.blend
    op.seed = settings.seed
    op.plant_feet = settings.plant_feet
    if generate:
        op.variation = settings.variation
    return op


class _BetwixtPanel:
    bl_region_type = "UI"
    bl_category = "Betwixt"
    bl_label = "Betwixt"

    def draw(self, context):
        layout = self.layout
        settings = context.scene.betwixt
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            draw_model(layout.box(), context)
            layout.label(text="Select an armature", icon="INFO")
            return
        model = draw_model(layout.box(), context, obj=obj)
        box = layout.box()
        if model is not None:
            unmapped, is_stored = mapping.status(obj, model.skeleton)
            mapped = len(model.skeleton) - len(unmapped)
            icon = "CHECKMARK" if not unmapped else "ERROR" if mapped < 2 else "INFO"
            box.label(text=f"{obj.name}: {mapped}/{len(model.skeleton)} joints mapped"
                      f"{'' if is_stored else ' (detected)'}", icon=icon)
            if unmapped and mapped >= 2:
                col = box.column(align=True)
                col.alert = True
                col.label(text=f"Unmapped: {', '.join(unmapped[:4])}{' …' if len(unmapped) > 4 else ''}", icon="ERROR")
                col.label(text=UNMAPPED_COST, icon="BLANK1")
        row = box.row(align=True)
        row.operator("betwixt.detect_mapping", text="Detect", icon="VIEWZOOM")
        row.operator_menu_enum("betwixt.detect_mapping", "skeleton", text="", icon="DOWNARROW_HLT")
        row.operator("betwixt.clear_mapping", text="Clear", icon="X")
        row.prop(settings, "show_mapping", text="", icon="PREFERENCES")
        if settings.show_mapping and len(obj.data.betwixt_joints):
            box.template_list("BETWIXT_UL_joints", "", obj.data, "betwixt_joints", obj.data, "betwixt_joint_index",
                              rows=6)
        entries = controls.entries_for(obj)
        if entries or settings.show_mapping:
            stored = len(obj.data.betwixt_controls) > 0
            box.label(text=f"Control Map: {len(entries)} controls{'' if stored else ' (detected)'}"
                      if entries else "Control Map: none (keys go on the mapped bones)", icon="CON_ARMATURE")
        if settings.show_mapping:
            row = box.row()
            row.template_list("BETWIXT_UL_controls", "", obj.data, "betwixt_controls", obj.data,
                              "betwixt_control_index", rows=4)
            col = row.column(align=True)
            col.operator("betwixt.control_add", text="", icon="ADD")
            col.operator("betwixt.control_remove", text="", icon="REMOVE")

        col = layout.column(align=True)
        col.prop(settings, "step")
        col.prop(settings, "blend")
        col.prop(settings, "variation")
        col.prop(settings, "seed")
        col.prop(settings, "breakdown")
        col.prop(settings, "plant_feet")
        col = layout.column(align=True)
        _options(col.operator("betwixt.fill_gaps", icon="IPO_EASE_IN_OUT"), settings)
        _options(col.operator("betwixt.decompress", icon="IPO_BEZIER"), settings)

        box = layout.box()
        row = box.row(align=True)
        row.prop(settings, "count")
        row.prop(settings, "source", text="")
        why = _unable(context, obj, "variants", SOURCES[settings.source]) if settings.source == "MVAE" else None
        sub = row.row(align=True)
        sub.enabled = why is None
        op = _options(sub.operator("betwixt.variants", icon="DUPLICATE"), settings, generate=False)
        op.count, op.source = settings.count, settings.source
        if why:
            draw_error(box, why)
        row = box.row(align=True)
        row.prop(settings, "continuations", text="")
        row.prop(settings, "frames")
        why = _unable(context, obj, "continue")
        sub = row.row(align=True)
        sub.enabled = why is None
        op = sub.operator("betwixt.continue_motion", icon="FF")
        op.count, op.frames, op.seed = settings.continuations, settings.frames, settings.seed
        op.plant_feet = settings.plant_feet
        if why:
            draw_error(box, why)
        current = obj.animation_data.action if obj.animation_data else None
        original = original_of(current)
        variants = variants_of(original.name) if original is not None else []
        if variants:
            col = box.column(align=True)
            for action in [original] + variants:
                row = col.row(align=True)
                row.operator("betwixt.preview_variant", text=action.name,
                             depress=action == current).action = action.name
                if action != original:
                    row.operator("betwixt.apply_variant", text="", icon="CHECKMARK").action = action.name
            box.operator("betwixt.discard_variants", icon="TRASH")

        _draw_paths(layout.box(), context, obj, settings)
        _draw_transitions(layout.box(), context, obj, settings)

        layout.operator("betwixt.export_training_data", icon="EXPORT")


def _draw_paths(box, context, obj, settings):
    """Follow Path (its speed, and Physics where the rig has a physics model) and the Physics Pass."""
    simulated = _unable(context, obj, "physics") is None   # no red lines: most rigs have no physics model
    row = box.row(align=True)
    row.prop(settings, "gait", text="")
    if simulated:
        row.prop(settings, "path_physics", text="", icon="PHYSICS")
    op = row.operator("betwixt.follow_path", icon="CURVE_PATH")
    op.gait, op.plant_feet, op.physics = settings.gait, settings.plant_feet, simulated and settings.path_physics
    row = box.row()
    row.enabled = simulated
    row.operator("betwixt.physics_pass", icon="PHYSICS")


def _draw_transitions(box, context, obj, settings):
    """The Transitions section, folded by default: the ticked actions, where each leaves and enters, the
    length and K; the library made, to preview, see on its contact sheet, discard or export."""
    box.prop(settings, "show_transitions", icon="TRIA_DOWN" if settings.show_transitions else "TRIA_RIGHT",
             emboss=False)
    if not settings.show_transitions:
        return
    col = box.column(align=True)
    for action in choices(obj):
        col.prop(action, "betwixt_pick", text=action.name)
    row = box.row(align=True)
    row.prop(settings, "leave", text="")
    row.prop(settings, "enter", text="")
    row = box.row(align=True)
    row.prop(settings, "transition_length")
    row.prop(settings, "transition_count")
    op = box.operator("betwixt.transitions", icon="NLA")
    op.length, op.count, op.leave, op.enter = (settings.transition_length, settings.transition_count,
                                               settings.leave, settings.enter)
    op.seed, op.plant_feet = settings.seed, settings.plant_feet
    if transitions_of(obj):
        box.template_list("BETWIXT_UL_transitions", "", bpy.data, "actions", settings, "transition_index", rows=4)
        row = box.row(align=True)
        row.operator("betwixt.show_contact_sheet", icon="IMAGE_DATA", text="Sheet")
        row.operator("betwixt.discard_transitions", icon="TRASH")
        row.operator("betwixt.export_transitions", icon="EXPORT", text="FBX")


class BETWIXT_PT_graph(_BetwixtPanel, bpy.types.Panel):
    bl_idname = "BETWIXT_PT_graph"
    bl_space_type = "GRAPH_EDITOR"


class BETWIXT_PT_dopesheet(_BetwixtPanel, bpy.types.Panel):
    bl_idname = "BETWIXT_PT_dopesheet"
    bl_space_type = "DOPESHEET_EDITOR"


class BETWIXT_PT_view3d(_BetwixtPanel, bpy.types.Panel):
    bl_idname = "BETWIXT_PT_view3d"
    bl_space_type = "VIEW_3D"


def draw_key_menu(self, context):
    layout = self.layout
    layout.separator()
    layout.operator("betwixt.fill_gaps", text="Betwixt: Fill Gaps")
    layout.operator("betwixt.decompress", text="Betwixt: Decompress")
    layout.operator("betwixt.variants", text="Betwixt: Variants")
    layout.operator("betwixt.continue_motion", text="Betwixt: Continue")


MENUS = ("GRAPH_MT_key", "DOPESHEET_MT_key", "VIEW3D_MT_object_animation")
