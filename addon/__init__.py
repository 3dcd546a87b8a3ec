"""Blender side of Betwixt: operators, panels, preferences, bone mapping and key I/O.

Imports ``bpy`` and ``..inference``; never torch. Modules: :mod:`.preferences` (which model),
:mod:`.mapping` (joints ↔ bones), :mod:`.rigify` and :mod:`.controls` (the controls that drive them),
:mod:`.evaluated` (the pose Blender evaluates), :mod:`.rig` and :mod:`.retarget` (pose maths, numpy only),
:mod:`.pose_io` (F-curves in, keys out), ``inference.edit`` (the model over a scene's gaps),
:mod:`.jobs` (worker thread, progress, Esc), :mod:`.plan` (reading the scene), :mod:`.writing` (keys out),
:mod:`.options` (shared operator options), :mod:`.generate` (Fill Gaps, Decompress), :mod:`.variants`,
:mod:`.mapping_operators`, :mod:`.export` (training data), :mod:`.locomotion` (Follow Path),
:mod:`.continuation` (Continue), :mod:`.physics` (Physics Pass), :mod:`.library` (Transitions) and :mod:`.panels`
(the user interface).
"""

import bpy

from . import (continuation, controls, export, generate, library, locomotion, mapping, mapping_operators, panels,
               physics, preferences, variants)

CLASSES = (
    preferences.BetwixtPreferences,
    mapping.BETWIXT_PG_joint,
    controls.BETWIXT_PG_control,
    controls.BETWIXT_UL_controls,
    controls.BETWIXT_OT_control_add,
    controls.BETWIXT_OT_control_remove,
    export.BETWIXT_PG_action_choice,
    panels.BETWIXT_PG_settings,
    generate.BETWIXT_OT_fill_gaps,
    generate.BETWIXT_OT_decompress,
    variants.BETWIXT_OT_variants,
    variants.BETWIXT_OT_preview_variant,
    variants.BETWIXT_OT_apply_variant,
    variants.BETWIXT_OT_discard_variants,
    mapping_operators.BETWIXT_OT_detect_mapping,
    mapping_operators.BETWIXT_OT_clear_mapping,
    export.BETWIXT_OT_export_training_data,
    locomotion.BETWIXT_OT_follow_path,
    continuation.BETWIXT_OT_continue_motion,
    physics.BETWIXT_OT_physics_pass,
    library.BETWIXT_OT_transitions,
    library.BETWIXT_OT_preview_transition,
    library.BETWIXT_OT_discard_transitions,
    library.BETWIXT_OT_show_contact_sheet,
    library.BETWIXT_OT_export_transitions,
    library.BETWIXT_UL_transitions,
    panels.BETWIXT_UL_joints,
    panels.BETWIXT_PT_graph,
    panels.BETWIXT_PT_dopesheet,
    panels.BETWIXT_PT_view3d,
)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Armature.betwixt_joints = bpy.props.CollectionProperty(type=mapping.BETWIXT_PG_joint)
    bpy.types.Armature.betwixt_joint_index = bpy.props.IntProperty()
    bpy.types.Armature.betwixt_controls = bpy.props.CollectionProperty(type=controls.BETWIXT_PG_control)
    bpy.types.Armature.betwixt_control_index = bpy.props.IntProperty()
    bpy.types.Scene.betwixt = bpy.props.PointerProperty(type=panels.BETWIXT_PG_settings)
    bpy.types.Action.betwixt_pick = bpy.props.BoolProperty(name="Use in Transitions", default=False,
                                                           description="Make transitions from and to this action")
    for name in panels.MENUS:
        getattr(bpy.types, name).append(panels.draw_key_menu)


def unregister():
    for name in panels.MENUS:
        menu = getattr(bpy.types, name, None)
        if menu is not None:
            menu.remove(panels.draw_key_menu)
    del bpy.types.Action.betwixt_pick
    del bpy.types.Scene.betwixt
    del bpy.types.Armature.betwixt_control_index
    del bpy.types.Armature.betwixt_controls
    del bpy.types.Armature.betwixt_joint_index
    del bpy.types.Armature.betwixt_joints
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    preferences.forget_models()
