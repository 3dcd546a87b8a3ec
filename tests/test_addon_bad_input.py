"""Bad input in Blender, operator by operator (issue 46): what a user can hand Betwixt by mistake (the wrong
object, no keys, a NaN key, a file that is not a model, an unmapped rig, options out of range set from Python,
an export folder that cannot be) is refused with one line that names the thing and says what to do, and the
scene is left exactly as it was: every armature's keys, the actions, the objects, the current frame and the
bone mappings.

Already covered elsewhere, not repeated here: a truncated model file, a missing one, an object scaled unevenly, a
gap longer than the model fills, keys not selected, an unmapped armature and no armature for Fill Gaps
(test_addon.py: test_failures_change_nothing_and_say_what_to_do); a NaN key for Fill Gaps
(test_a_nan_key_is_named_by_its_bone_and_scene_frame); a broken result (test_a_broken_result_is_refused...);
Follow Path's curve (none, two, flat, beveled), its one-frame range, an unmapped rig and no armature
(test_addon_locomotion.py: test_bad_input_says_what_to_do_and_changes_nothing); Continue's start too early
(test_addon_mvae.py: test_continue_refuses_the_bad_cases_and_changes_nothing); Transitions' length 0, fewer than
two actions, an action of one key (test_addon_library.py: test_esc_a_failed_write_and_bad_input_change_nothing).

The shipped models serve (no test here trains one): every case is refused before or without a long run.
"""

from pathlib import Path

import bpy
import numpy as np
import pytest

from test_addon import GAP, ROOT, betwixt_addon, channels, clip, cut, import_bvh, snapshot  # noqa: F401
from test_addon_locomotion import bezier, dog, follow_with, import_dog, scene  # noqa: F401

GENERATORS = ("fill_gaps", "decompress", "variants", "continue_motion")
TOO_FEW = {"fill_gaps": ["select the keys on both sides of each gap to fill (at least two keys on the mapped bones)"],
           "decompress": ["the mapped bones have fewer than two keys; key at least a first and a last pose"],
           "variants": ["select the two keys around one gap on the mapped bones"],
           "continue_motion": ["action 'Object' has no keys on the bones mapped to model mvae-lafan1's joints"]}
MODEL_FILE = {"fill_gaps": "rtn_file", "decompress": "rtn_file", "variants": "rtn_file",
              "continue_motion": "mvae_file", "follow_path": "mann_file"}


def state():
    """What a refusal must leave as it was: the current frame, the objects, the actions, which action each
    object plays, each armature's bone mapping and the keys of every F-curve of the action it plays."""
    armatures = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    return {"frame": bpy.context.scene.frame_current,
            "objects": sorted(o.name for o in bpy.data.objects),
            "actions": sorted(a.name for a in bpy.data.actions),
            "playing": {o.name: o.animation_data.action.name for o in bpy.data.objects
                        if o.animation_data and o.animation_data.action},
            "mapped": {o.name: [(j.joint, j.bone) for j in o.data.betwixt_joints] for o in armatures},
            "keys": {o.name: snapshot(o) for o in armatures if o.animation_data and o.animation_data.action}}


def same(a, b):
    """``a == b`` for nested dicts and lists of numpy arrays, a NaN key equal to itself."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def refused(operator, *words, **options):
    """``bpy.ops.betwixt.<operator>(**options)`` is refused (an ERROR report, which bpy raises as RuntimeError)
    with one line holding ``words``, no "failed unexpectedly" (the message of a bug), and the scene as it was."""
    before = state()
    with pytest.raises(RuntimeError) as error:
        getattr(bpy.ops.betwixt, operator)(**options)
    text = str(error.value).strip()
    assert len(text.splitlines()) == 1 and "unexpectedly" not in text, text
    for word in words:
        assert word in text, text
    assert same(state(), before), f"{operator} changed the scene: {text}"
    return text


def keyed(obj, frames, nan=None):
    """A new action on ``obj`` (made its action) with keys only on its hips' rotation, on ``frames``; the key on
    frame ``nan`` not a number."""
    action = bpy.data.actions.new("Sparse")
    obj.animation_data.action = action
    bone = obj.pose.bones["Hips"]
    for frame in frames:
        bone.keyframe_insert("rotation_euler", frame=frame)
    if nan is not None:
        fc = channels(obj).find('pose.bones["Hips"].rotation_euler', 1)
        next(k for k in fc.keyframe_points if k.co[0] == nan).co[1] = float("nan")
        fc.update()
    return action


@pytest.fixture
def human(scene, clip):  # noqa: F811
    """A LaFAN1 clip imported by Blender's importer, its keys cut around GAP and those two selected; the shipped
    models chosen, the current frame inside the gap."""
    obj = import_bvh(clip[0])
    cut(obj, *GAP)
    scene.frame_set(GAP[0] + 5)
    return obj


@pytest.mark.parametrize("operator", GENERATORS)
def test_the_wrong_object_no_keys_one_key_or_a_nan_key_is_refused(human, operator):
    obj = human
    bpy.ops.mesh.primitive_cube_add()                         # a mesh active, the armature not
    refused(operator, "no armature is active; click the character's armature")
    bpy.context.view_layer.objects.active = obj
    cut_action = obj.animation_data.action
    obj.animation_data.action = None                          # an armature without an action
    refused(operator, "armature 'clip' has no action; key a few poses first")
    if operator != "continue_motion":                         # a continuation may start from one held pose
        keyed(obj, [GAP[0]])                                  # one key
        refused(operator, *TOO_FEW[operator])
    keyed(obj, [1, GAP[0], GAP[1]], nan=GAP[0])               # a NaN key, on the key's frame
    refused(operator, f"bone 'Hips' is not a number (NaN or infinite) on frame {GAP[0]}; fix its key in the Graph "
                      "Editor (or delete it)")
    obj.animation_data.action = bpy.data.actions.new("Object")  # keys on the object, none on its bones
    for frame in (1, GAP[0], GAP[1]):
        obj.keyframe_insert("location", frame=frame)
    refused(operator, *TOO_FEW[operator])
    obj.animation_data.action = cut_action
    bpy.ops.object.armature_add()                             # an armature whose one bone is nothing of the model's
    stranger = bpy.context.active_object
    for frame in (1, GAP[0], GAP[1]):
        stranger.pose.bones[0].keyframe_insert("rotation_quaternion", frame=frame)
    refused(operator, "armature 'Armature' for model", "joints are mapped; map the bones in the Betwixt panel")


@pytest.mark.parametrize("operator", ["decompress", "variants"])
def test_a_gap_longer_than_the_models_fill_is_refused(human, operator):
    keyed(human, [1, 300])                                    # ten seconds between two keys
    human.pose.bones["Hips"].rotation_euler.x += 0.1          # a pose the model could reach, but not over that gap
    human.pose.bones["Hips"].keyframe_insert("rotation_euler", frame=300)
    refused(operator, "add a key inside it")


@pytest.mark.parametrize("operator", GENERATORS)
def test_a_model_file_that_is_not_a_model_or_of_another_kind_is_refused(human, operator, tmp_path):
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    text = tmp_path / "notes.onnx"
    text.write_text("these are my notes, not a model\n")
    setattr(prefs, MODEL_FILE[operator], str(text))
    try:
        refused(operator, str(text))
        setattr(prefs, MODEL_FILE[operator], str(ROOT / "inference" / "models" / "mann-dog.onnx"))
        refused(operator, "mann-dog")
    finally:
        setattr(prefs, MODEL_FILE[operator], "")


def test_a_nan_option_from_python_is_refused_and_a_number_out_of_range_is_held_to_it(human):
    """Blender holds an option set from Python to its limits (Variants' count 1000 is 16, variation 1e9 is 10), but
    lets NaN through, which the model would have made a broken result of."""
    from betwixt.addon.variants import variants_of
    refused("variants", "Variation is nan, not a number; give 0 to 10", variation=float("nan"))
    made = []
    for count, variation in ((1000, 1e9), (16, 10.0)):
        assert bpy.ops.betwixt.variants(count=count, variation=variation) == {"FINISHED"}
        made.append([snapshot(human, action) for action in variants_of(human.animation_data.action.name)])
        assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}
    assert len(made[0]) == 16 and same(made[0], made[1])


def test_a_continuation_past_the_action_s_last_key_is_kept(human):
    """Frames out of range are held to 1 to 3,600; a continuation past the action's last key (frame 300) ends in
    its own pose, which Blender holds after it (it was refused: the action's last pose was taken for a jump to)."""
    from betwixt.addon.variants import variants_of
    frame = bpy.context.scene.frame_current                   # inside the gap cut from 101 to 132
    keyed = []
    for frames in (-5, 600):
        assert bpy.ops.betwixt.continue_motion(count=1, frames=frames) == {"FINISHED"}
        [made] = variants_of(human.animation_data.action.name)
        keyed.append(snapshot(human, made)[('pose.bones["Hips"].location', 0)]["co"][0::2])
        assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}
    assert keyed[0][(keyed[0] > frame) & (keyed[0] < GAP[1])].tolist() == [frame + 1]
    assert keyed[1][-1] == frame + 600


def test_follow_path_refuses_a_range_backwards_or_too_long(scene, dog):  # noqa: F811
    obj = import_dog(dog)
    follow_with(obj, bezier([(0.0, 0.0, 0.0), (2.0, 1.0, 0.0)], "AUTO"))
    refused("follow_path", "the frame range 100-50 has 0 frames", frame_start=100, frame_end=50)
    refused("follow_path", "the frame range 1-10000000 lasts 166,667 s at 60 fps, longer than the 1,200 s one "
                           "request follows; set a shorter Start and End", frame_start=1, frame_end=10**7)


@pytest.fixture
def library(scene, clip):  # noqa: F811
    """Two actions of the clip on one armature, both ticked for Transitions."""
    obj = import_bvh(clip[0])
    first = obj.animation_data.action
    second = first.copy()
    for action in (first, second):
        action.betwixt_pick = action.use_fake_user = True
    return obj


def test_transitions_refuse_a_nan_variation_and_hold_counts_to_their_range(library):
    refused("transitions", "Variation is nan, not a number; give 0 to 10", variation=float("nan"))
    refused("transitions", "a transition's length must be 1 to", length=10**6)


def test_export_refuses_a_folder_it_cannot_make_or_write(scene, clip, tmp_path):  # noqa: F811
    bpy.ops.mesh.primitive_cube_add()
    refused("export_training_data", "no armature is active", directory=str(tmp_path / "out"))
    obj = import_bvh(clip[0])
    (tmp_path / "afile").write_text("x")
    refused("export_training_data", f"{tmp_path / 'afile'}", "choose a folder you can write to",
            directory=str(tmp_path / "afile" / "out"))
    refused("export_training_data", "/proc/betwixt", "choose a folder you can write to", directory="/proc/betwixt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert bpy.ops.betwixt.export_training_data(directory=str(tmp_path / "new" / "deeper")) == {"FINISHED"}
    assert [p.name for p in (tmp_path / "new" / "deeper").iterdir()] == [f"{obj.animation_data.action.name}.bvh"]


def test_detect_mapping_refuses_no_armature(scene):
    """(An armature of bones it cannot place is mapped with every joint left to pick by hand, and a warning.)"""
    refused("detect_mapping", "no armature is active")
    bpy.ops.mesh.primitive_cube_add()
    refused("detect_mapping", "no armature is active")


def test_the_quick_operators_refuse_what_is_not_there_in_one_line(scene, clip, tmp_path):  # noqa: F811
    """Previews, Apply, Discard, the contact sheet, the library's export and Clear Bone Mapping, asked of an action,
    a library or an armature that is not there: one line saying what is missing, nothing changed."""
    refused("clear_mapping", "no armature is active")
    import_bvh(clip[0])
    refused("preview_variant", "there is no action 'nothing'", action="nothing")
    refused("apply_variant", "'nothing' is not a variant made by Betwixt", action="nothing")
    refused("preview_transition", "there is no action 'nothing'", action="nothing")
    refused("discard_transitions", "has no transitions")
    refused("show_contact_sheet", "has no contact sheet; make its transitions first")
    refused("export_transitions", "has no transitions; make them with Transitions first",
            filepath=str(tmp_path / "library.fbx"))
    assert not list(tmp_path.iterdir())
