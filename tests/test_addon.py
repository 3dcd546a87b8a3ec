"""The Blender add-on with the real ``bpy``: a real LaFAN1 clip imported by Blender's own BVH importer,
a hole cut in its keys, the operators run as a script would run them, and the keys checked.

The model is ``trained_rtn`` (four training steps): poor motion, so these tests check mechanics (which
keys, which values, what is left alone, undo, failures) and that Blender's own evaluation of the keys
puts every joint where the model's skeleton puts it. Generated frames are compared with the runtime's
answer for the same context: the clip's own frames, with each joint's quaternion in the hemisphere
``w >= 0`` on the key before the gap and the key after it nearest that, as the add-on gives them.
"""

import os
import re
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np
import pytest

from inference import quat
from inference.bvh import parse_bvh, read_bvh, write_bvh
from inference.motion import forward_kinematics

ROOT = Path(__file__).resolve().parents[1]
C = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # BVH Y-up to Blender Z-up
GAP = (101, 132)          # scene frames of the keys around the hole; clip frames 100 and 131


@pytest.fixture(scope="module")
def betwixt_addon(tmp_path_factory):
    """The repository as the add-on package ``betwixt`` (through a symlink), enabled like Blender does."""
    import addon_utils   # Blender's own module, importable once bpy is
    folder = tmp_path_factory.mktemp("addons")
    os.symlink(ROOT, folder / "betwixt")
    sys.path.insert(0, str(folder))
    module = addon_utils.enable("betwixt", default_set=True)
    assert module is not None, "the add-on failed to register (see the output above)"
    yield module
    addon_utils.disable("betwixt", default_set=True)
    sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def model_path(trained_rtn):
    return trained_rtn["model"]


@pytest.fixture
def addon(betwixt_addon, model_path):
    """An empty scene and the test model chosen in the preferences."""
    bpy.ops.wm.read_homefile(use_empty=True)
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.rtn_file = str(model_path)
    yield betwixt_addon
    prefs.rtn_file = ""


@pytest.fixture(scope="module")
def clip(lafan1_zip, tmp_path_factory):
    """300 frames of a test-subject clip as a BVH file, and that file as we read it."""
    with zipfile.ZipFile(lafan1_zip) as z:
        motion = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1000, 1300)
    path = tmp_path_factory.mktemp("clip") / "clip.bvh"
    write_bvh(motion, path)
    return path, read_bvh(path)


def import_bvh(path):
    """Blender's BVH importer with its defaults (and the file's frame rate for the scene)."""
    assert bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True) == {"FINISHED"}
    obj = bpy.context.active_object
    assert obj.type == "ARMATURE"
    return obj


def channels(obj, action=None):
    """The armature's F-curves, or those of another ``action`` for the same slot."""
    from betwixt.addon.pose_io import Channels
    if action is None:
        return Channels(obj)
    slot = getattr(obj.animation_data, "action_slot", None)      # None: Blender 4.2/4.3, no slots
    if slot is None:
        return Channels(obj, action=action)
    return Channels(obj, action=action, slot=next(s for s in action.slots if s.identifier == slot.identifier))


def snapshot(obj, action=None):
    """Every F-curve's keyframe data, for exact comparison."""
    from betwixt.addon.pose_io import read_points
    return {key: read_points(fc) for key, fc in channels(obj, action).curves().items()}


def same_keys(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k][n], b[k][n]) for k in a for n in a[k])


def cut(obj, a, b, bones=None):
    """Delete the keys strictly between frames a and b (of ``bones``' curves) and select only a and b."""
    for (path, _), fc in channels(obj).curves().items():
        points = fc.keyframe_points
        if bones is None or any(f'["{n}"]' in path for n in bones):
            for k in reversed(list(points)):
                if a < k.co[0] < b:
                    points.remove(k, fast=True)
        for k in points:
            k.select_control_point = k.co[0] in (a, b)
        fc.update()


def frames_of(fc):
    co = np.empty(2 * len(fc.keyframe_points))
    fc.keyframe_points.foreach_get("co", co)
    return co[0::2], co[1::2]


def evaluated(obj, frames):
    """World matrices of every pose bone on ``frames`` as Blender evaluates them (frames, bones, 4, 4)."""
    bones = obj.pose.bones
    out = np.empty((len(frames), len(bones), 16), dtype=np.float32)
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(int(f))
        bones.foreach_get("matrix", out[i].reshape(-1))
    pose = np.swapaxes(out.reshape(len(frames), -1, 4, 4), -1, -2).astype(np.float64)
    return np.array(obj.matrix_world) @ pose


def runtime_fill(model, motion, a, b, plant=True):
    """The runtime's fill of the gap between frames a and b of ``motion``, read as the add-on reads: the
    frames of its plan (a past context's worth on either side) and those around it that its probes are cut
    from (``edit.surround``), each joint's quaternion in the hemisphere ``w >= 0`` on key a and the key b
    nearest that; feet planted unless ``plant`` is False."""
    from betwixt.inference import edit
    from betwixt.inference.contacts import plant as planted
    r = quat.unroll(motion.rotations)
    r = np.where(r[a:a + 1, :, :1] < 0, -r, r)
    flip = np.sum(r[b] * r[a], axis=-1) < 0
    r[b:, flip] *= -1
    first, last = a - model.past, b + model.past + 1
    near, far = edit.surround(model, [(a, b)], model.layout.fps)
    near, far = max(near, 0), min(far, motion.n_frames - 1)
    gap = [(a - first, b - first)]
    keyed = replace(motion, rotations=r)
    out = edit.fill(model, keyed.frames(first, last), first, [(a, b)], model.layout.fps,
                    around=(keyed.frames(near, far + 1), near))
    out = planted(out, gap, model.layout.height) if plant else out
    rotations, positions = r.copy(), motion.positions.copy()
    rotations[first:last], positions[first:last] = out.rotations, out.positions
    return replace(motion, rotations=rotations, positions=positions)


def test_registers_operators_panels_menus_and_preferences(addon):
    for op in ("fill_gaps", "decompress", "variants", "apply_variant", "preview_variant", "discard_variants",
               "detect_mapping", "clear_mapping", "export_training_data"):
        assert hasattr(bpy.ops.betwixt, op)
    for space in ("graph", "dopesheet", "view3d"):
        panel = getattr(bpy.types, f"BETWIXT_PT_{space}")
        assert panel.bl_category == "Betwixt" and panel.bl_region_type == "UI"
    from betwixt.addon.panels import MENUS, draw_key_menu
    for menu in MENUS:
        assert draw_key_menu in getattr(bpy.types, menu)._dyn_ui_initialize()
    assert bpy.context.preferences.addons["betwixt"].preferences.bl_rna.properties["rtn_file"].subtype == "FILE_PATH"


def test_each_shipped_model_can_be_chosen_and_a_model_file_overrides_it(addon, model_path):
    from betwixt.addon.preferences import _items_of, load_model
    from betwixt.inference.modelfile import shipped
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    # the menu's tooltips say what each was trained on and whether its data allows commercial use
    tips = {name: tip for name, _, tip in _items_of("rtn")(prefs, bpy.context)}
    assert tips["rtn-human"].startswith("Trained on lafan1-27.zip + bandai1.zip") and len(tips) == 5
    assert tips.pop("rtn-cmu").endswith("(commercial use allowed)")
    assert all(tip.endswith("(non-commercial use only)") for tip in tips.values())
    assert load_model().path == model_path
    prefs.rtn_file = ""
    try:
        assert load_model().name == prefs.rtn_model == "rtn-human"     # the default
        for path in shipped("rtn"):
            prefs.rtn_model = path.stem
            assert load_model().name == path.stem
        with pytest.raises(TypeError):
            prefs.rtn_model = "no-such-model"
    finally:
        prefs.rtn_model = "rtn-human"
        prefs.rtn_file = str(model_path)
    assert load_model().path == model_path


def test_reading_an_imported_clip_gives_the_clip_back(addon, clip):
    """Blender's importer turns the file into bones with rest orientations, Z-up; reading undoes all of it."""
    from betwixt.addon import mapping, pose_io
    from betwixt.addon.preferences import load_model
    from betwixt.addon.retarget import rig_retargeting, to_rig
    path, motion = clip
    obj = import_bvh(path)
    model = load_model()
    rig = pose_io.read_rig(obj)
    joints, detected = mapping.mapping_for(obj, model.skeleton, rig)
    assert detected == {n: n for n in model.skeleton.names}
    frames = np.arange(1, motion.n_frames + 1)
    location, rotation, scale, _ = pose_io.sample(obj, pose_io.Channels(obj), rig, frames)
    pose = rig.pose(location, rotation, scale)
    check = [0, 57, 299]
    blender = np.linalg.inv(np.array(obj.matrix_world)) @ evaluated(obj, frames[check])
    assert np.abs(pose[check] - blender).max() < 1e-3          # cm, float32 Blender
    retarget = rig_retargeting(model.skeleton, rig, joints, pose_io.world_matrix(obj))
    assert abs(retarget.scale - 1.0) < 1e-6                       # the importer keeps the file's units
    rotations, positions = retarget.to_model(pose)
    assert np.minimum(np.abs(rotations - motion.rotations), np.abs(rotations + motion.rotations)).max() < 1e-5
    assert np.abs(positions - motion.positions).max() < 1e-3
    # and back: the same channels
    new_location, new_rotation, _ = to_rig(retarget, rotations, positions, location, rotation, scale)
    assert np.abs(new_location - location).max() < 1e-6
    assert np.minimum(np.abs(new_rotation - rotation), np.abs(new_rotation + rotation)).max() < 1e-6


def test_fill_gaps_keys_the_hole_and_undo_restores_it(addon, clip):
    from betwixt.addon.preferences import load_model
    path, motion = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)
    before = snapshot(obj)
    bpy.ops.ed.undo_push(message="cut")
    assert bpy.ops.betwixt.fill_gaps("EXEC_DEFAULT", True) == {"FINISHED"}   # True: one undo step, as in the UI
    obj = bpy.data.objects[obj.name]
    after = snapshot(obj)
    rotation_curves = [k for k in after if k[0].endswith("rotation_euler")]
    assert len(rotation_curves) == 3 * 22
    for key, data in after.items():
        frames = data["co"][0::2]
        inside = (frames > a) & (frames < b)
        moved = key[0].endswith("rotation_euler") or key[0] == 'pose.bones["Hips"].location'
        assert np.array_equal(frames[inside], np.arange(a + 1, b)) if moved else not inside.any(), key
        old = before[key]
        for name in ("co", "interpolation", "type"):   # outside the hole: as before
            width = 2 if name == "co" else 1
            assert np.array_equal(data[name].reshape(-1, width)[~inside], old[name].reshape(-1, width)), (key, name)
        # and so is every handle facing away from it: the keys around the hole keep their outer handles
        # (freed where they were automatic), so the curve outside does not bend to the new keys beside them
        ends = frames[~inside]
        for side, inner in (("left", b), ("right", a)):
            handles = data[f"handle_{side}"].reshape(-1, 2)[~inside]
            # (to float32 rounding where Blender recomputes an automatic handle from the same neighbours)
            assert np.allclose(handles[ends != inner], old[f"handle_{side}"].reshape(-1, 2)[ends != inner],
                               rtol=0, atol=1e-4), (key, side)
            types, was = data[f"handle_{side}_type"][~inside], old[f"handle_{side}_type"]
            around = np.isin(ends, (a, b))
            assert np.array_equal(types[~around], was[~around]), (key, side)
            assert np.all((types[around] == was[around]) | (types[around] == 0)), (key, side)   # or FREE
        assert np.all(data["type"][inside] == 0)   # KEYFRAME
    # what Blender now evaluates in the hole is the runtime's motion, joint for joint, in world space
    expected = runtime_fill(load_model(), motion, a - 1, b - 1)
    _, world = forward_kinematics(expected.rotations, expected.positions, motion.skeleton.parents)
    heads = evaluated(obj, np.arange(a + 1, b))[..., :3, 3]
    assert np.abs(heads - world[a:b - 1] @ C.T).max() < 2e-3   # cm: float32 Euler keys and pose matrices
    # the mapping found on the way is stored on the armature
    assert {i.joint: i.bone for i in obj.data.betwixt_joints} == {n: n for n in motion.skeleton.names}

    name = obj.name
    assert bpy.ops.ed.undo() == {"FINISHED"}   # Blender reloads the data: old references are gone
    obj = bpy.data.objects[name]
    assert same_keys(snapshot(obj), before)
    assert len(obj.data.betwixt_joints) == 0
    assert bpy.ops.ed.redo() == {"FINISHED"}
    assert same_keys(snapshot(bpy.data.objects[name]), after)


def test_plant_feet_off_keys_the_model_s_own_fill_and_on_plants_them(addon, clip):
    from betwixt.addon.preferences import load_model
    path, motion = clip
    a, b = GAP
    model = load_model()
    for plant in (False, True):
        obj = import_bvh(path)
        cut(obj, a, b)
        assert bpy.ops.betwixt.fill_gaps(plant_feet=plant) == {"FINISHED"}
        heads = evaluated(obj, np.arange(a + 1, b))[..., :3, 3]
        for version in (False, True):
            expected = runtime_fill(model, motion, a - 1, b - 1, plant=version)
            world = forward_kinematics(expected.rotations, expected.positions, motion.skeleton.parents)[1]
            miss = np.abs(heads - world[a:b - 1] @ C.T).max()
            assert miss < 2e-3 if version == plant else miss > 0.1, (plant, version, miss)   # cm
        bpy.data.objects.remove(obj)
    assert bpy.context.scene.betwixt.plant_feet   # the panel's default


def test_a_rig_standing_half_a_metre_higher_gets_the_same_fill(addon, clip):
    """The floor is where the rig's feet are: the whole armature object raised by half a metre of the
    rig's own size (50 units: the BVH's centimetres) keys the same values in the gap."""
    path, _ = clip
    a, b = GAP
    keys = []
    for z in (0.0, 50.0):
        obj = import_bvh(path)
        obj.location.z = z
        bpy.context.view_layer.update()
        cut(obj, a, b)
        assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
        keys.append({k: data["co"].reshape(-1, 2) for k, data in snapshot(obj).items()})
        bpy.data.objects.remove(obj)
    low, high = keys
    assert low.keys() == high.keys()
    for key in low:
        scale = 1.0 + np.abs(low[key][:, 1]).max()
        assert np.abs(low[key] - high[key]).max() < 1e-5 * scale, key   # float32 keys


def test_fill_options_every_nth_breakdowns_and_variation(addon, clip):
    path, motion = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)
    assert bpy.ops.betwixt.fill_gaps(step=7, breakdown=True, blend=5) == {"FINISHED"}
    fc = channels(obj).find('pose.bones["LeftLeg"].rotation_euler', 0)
    frames, _ = frames_of(fc)
    inside = (frames > a) & (frames < b)
    assert frames[inside].tolist() == list(range(a + 7, b, 7))
    types = np.empty(len(frames), dtype=np.int32)
    fc.keyframe_points.foreach_get("type", types)
    assert np.all(types[inside] == 2) and np.all(types[~inside] == 0)       # BREAKDOWN inside only

    def hole(**options):
        cut(obj, a, b)
        assert bpy.ops.betwixt.fill_gaps(**options) == {"FINISHED"}
        data = snapshot(obj)[('pose.bones["Hips"].location', 0)]["co"]
        return data[1::2][(data[0::2] > a) & (data[0::2] < b)]
    plain, again = hole(), hole()
    varied, other = hole(variation=1.0, seed=1), hole(variation=1.0, seed=2)
    np.testing.assert_array_equal(plain, again)
    assert np.abs(varied - plain).max() > 1e-4 and np.abs(varied - other).max() > 1e-4


def test_failures_change_nothing_and_say_what_to_do(addon, clip, tmp_path, monkeypatch):
    path, _ = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)

    def fails(match, **options):
        before = snapshot(obj)
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.betwixt.fill_gaps(**options)
        assert same_keys(snapshot(obj), before)
        assert len(obj.data.betwixt_joints) == 0

    prefs = bpy.context.preferences.addons["betwixt"].preferences
    model = prefs.rtn_file
    (tmp_path / "corrupt.onnx").write_bytes(Path(model).read_bytes()[:5000])
    prefs.rtn_file = str(tmp_path / "corrupt.onnx")
    fails("not an ONNX model file")
    prefs.rtn_file = str(tmp_path / "missing.onnx")
    fails("no such model file")
    prefs.rtn_file = model

    obj.scale = (1.0, 2.0, 1.0)                         # bones that would bend as they turn
    fails(r"object's scale \(1, 2, 1\) is not the same on all three axes; apply it")
    obj.scale = (1.0, 1.0, 1.0)

    for fc in channels(obj).curves().values():          # a gap longer than the model fills
        for k in fc.keyframe_points:
            k.select_control_point = k.co[0] in (1, 250)
    fails("add a key inside it")
    for fc in channels(obj).curves().values():
        for k in fc.keyframe_points:
            k.select_control_point = False
    fails("select the keys on both sides")
    cut(obj, a, b)

    # a failure half way through writing, after new curves were made for a bone that had none:
    # every curve put back as it was, the new ones gone
    from betwixt.addon import pose_io
    toe = 'pose.bones["LeftToe"].rotation_euler'
    for i in range(3):
        channels(obj).remove(toe, i)
    still = tuple(obj.pose.bones["LeftToe"].rotation_euler)
    real, calls = pose_io.write_points, []

    def breaks(*args):
        calls.append(1)
        if len(calls) == 40:
            raise OSError("disk on fire")
        return real(*args)
    monkeypatch.setattr(pose_io, "write_points", breaks)
    fails("disk on fire")
    monkeypatch.undo()
    assert channels(obj).find(toe, 0) is None

    # the same without the failure: the toe gets keys in the hole and on its ends, so it stays still outside
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    for i in range(3):
        frames, values = frames_of(channels(obj).find(toe, i))
        assert frames.tolist() == list(range(a, b + 1))
        assert values[0] == pytest.approx(still[i], abs=1e-6) and values[-1] == pytest.approx(still[i], abs=1e-6)

    # an armature whose bones say nothing
    bpy.ops.object.armature_add()
    stranger = bpy.context.active_object
    pb = stranger.pose.bones[0]
    for frame in (1, 40):
        pb.keyframe_insert("rotation_quaternion", frame=frame)
    kept = snapshot(stranger)
    with pytest.raises(RuntimeError, match="not mapped|joints are mapped"):
        bpy.ops.betwixt.fill_gaps()
    assert same_keys(snapshot(stranger), kept)

    # no armature at all
    bpy.ops.object.select_all(action="DESELECT")
    bpy.context.view_layer.objects.active = None
    with pytest.raises(RuntimeError, match="no armature is active"):
        bpy.ops.betwixt.fill_gaps()


def test_a_broken_result_is_refused_with_its_frames_and_nothing_is_written(addon, clip, monkeypatch):
    """The result check before writing: a fill that came back with NaN on some frames (a model that
    diverged, a planting that spread a NaN) is one error naming the scene frames, and no key changes."""
    from betwixt.inference import edit
    path, _ = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)
    fill = edit.fill

    def diverged(*args, **kwargs):
        out = fill(*args, **kwargs)
        rotations = out.rotations.copy()
        rotations[a + 5 - args[2]:a + 8 - args[2]] = np.nan   # scene frames a+5 .. a+7
        return replace(out, rotations=rotations)
    monkeypatch.setattr(edit, "fill", diverged)
    before = snapshot(obj)
    with pytest.raises(RuntimeError, match=r"not a number .*nothing was written") as refused:
        bpy.ops.betwixt.fill_gaps()
    first, last = (int(f) for f in re.search(r"at frames (\d+)-(\d+)", str(refused.value)).groups())
    assert a < first <= a + 5 and a + 7 <= last < b                    # scene frames, inside the gap
    assert same_keys(snapshot(obj), before)


def test_a_nan_key_is_named_by_its_bone_and_scene_frame(addon, clip):
    path, _ = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)
    fc = channels(obj).find('pose.bones["LeftForeArm"].rotation_euler', 1)
    point = next(k for k in fc.keyframe_points if k.co[0] == a - 3)
    point.co[1] = float("nan")
    fc.update()
    before = snapshot(obj)
    with pytest.raises(RuntimeError, match=rf"bone 'LeftForeArm' is not a number .* on frame {a - 3}"):
        bpy.ops.betwixt.fill_gaps()
    after = snapshot(obj)
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k][n], before[k][n], equal_nan=True) for k in after for n in after[k]
               if after[k][n].dtype.kind == "f")


def test_an_edited_mapping_is_used_and_unmapped_bones_keep_their_keys(addon, clip):
    from betwixt.addon import mapping
    from betwixt.addon.preferences import load_model
    path, _ = clip
    obj = import_bvh(path)
    skeleton = load_model().skeleton
    assert mapping.status(obj, skeleton) == ([], False)            # detected, not yet stored
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    assert mapping.status(obj, skeleton) == ([], True)
    next(i for i in obj.data.betwixt_joints if i.joint == "LeftHand").bone = ""
    assert mapping.status(obj, skeleton) == (["LeftHand"], True)   # the panel warns, naming it
    a, b = GAP
    cut(obj, a, b)
    hand = {k: v for k, v in snapshot(obj).items() if '"LeftHand"' in k[0]}
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    after = snapshot(obj)
    assert same_keys({k: after[k] for k in hand}, hand)
    frames = after[('pose.bones["LeftForeArm"].rotation_euler', 0)]["co"][0::2]
    assert ((frames > a) & (frames < b)).sum() == b - a - 1
    assert bpy.ops.betwixt.clear_mapping() == {"FINISHED"} and len(obj.data.betwixt_joints) == 0


MIXAMO = {"LeftToe": "LeftToeBase", "RightToe": "RightToeBase"}
MODES = ("QUATERNION", "XYZ", "ZXY", "YZX", "QUATERNION", "ZYX", "XZY", "YXZ")


def build_rig(skeleton, rest_rotations, seed):
    """A Mixamo-named rig in metres with LaFAN1's bone lengths, random tails and rolls, an animated
    unmapped ``Root`` above the hips and an unmapped ``Prop`` in the right hand, placed, turned and
    scaled in the world. Its rest pose is the model's (identity rotations) or ``rest_rotations``."""
    rng = np.random.default_rng(seed)
    bpy.context.scene.render.fps = 30
    offsets = skeleton.offsets.copy()
    offsets[0] = [0.0, 0.0, 0.0]
    _, heads = forward_kinematics(rest_rotations, offsets, skeleton.parents)
    heads = (heads - heads[0] + [0.0, 95.0, 0.0]) @ C.T * 0.01
    arm = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    root = arm.edit_bones.new("Root")
    root.head, root.tail = (0.0, 0.0, 0.0), (0.0, 0.3, 0.0)
    names = ["mixamorig:" + MIXAMO.get(n, n) for n in skeleton.names]
    for j, name in enumerate(names):
        bone = arm.edit_bones.new(name)
        direction = rng.standard_normal(3)
        bone.head = heads[j]
        bone.tail = heads[j] + 0.06 * direction / np.linalg.norm(direction)
        bone.roll = rng.uniform(-np.pi, np.pi)
        bone.parent = arm.edit_bones[names[skeleton.parents[j]]] if j else root
    prop = arm.edit_bones.new("Prop")
    prop.head, prop.tail = heads[skeleton.index("RightHand")], heads[skeleton.index("RightHand")] + [0, 0, 0.2]
    prop.parent = arm.edit_bones["mixamorig:RightHand"]
    bpy.ops.object.mode_set(mode="OBJECT")
    for i, pb in enumerate(obj.pose.bones):
        pb.rotation_mode = MODES[i % len(MODES)]
    obj.location, obj.rotation_euler, obj.scale = (0.5, -1.0, 0.2), (0.0, 0.0, 0.6), (1.5, 1.5, 1.5)
    bpy.context.view_layer.update()
    return obj, names


def key_rig(obj, names, motion):
    """Key the whole clip on the rig (frames 1…), with the Root swaying and the Prop on its own keys.

    The clip goes on through the bone frames the add-on reads the rig with (the model's reference
    pose included): from rest positions a bone's twist about itself is a choice, and the model sees
    the clip only if writer and reader make the same one. Returns that Retargeting.
    """
    from betwixt.addon import plan as reading, pose_io
    from betwixt.addon.preferences import load_model
    from betwixt.addon.retarget import rig_retargeting, to_rig
    from betwixt.addon.rig import channel_count, channel_path, quat_to_channels, quat_to_euler
    rig = pose_io.read_rig(obj)
    mapping = {j: rig.names.index(n) for j, n in enumerate(names)}
    retarget = rig_retargeting(motion.skeleton, rig, mapping, pose_io.world_matrix(obj),
                               reference=reading.reference_pose(load_model()))
    n = motion.n_frames
    t = np.arange(n) / 30.0
    location = np.zeros((n, len(rig), 3))
    rotation = np.tile([1.0, 0, 0, 0], (n, len(rig), 1))
    root = rig.names.index("Root")
    location[:, root] = np.stack([0.1 * np.sin(t), 0.05 * t, 0 * t], -1)
    rotation[:, root] = quat.from_angle_axis(0.3 * np.sin(0.7 * t), np.array([0.0, 0.0, 1.0]))
    location, rotation, _ = to_rig(retarget, motion.rotations, motion.positions, location, rotation,
                                   np.ones_like(location))
    prop = rig.names.index("Prop")
    rotation[:, prop] = quat.from_angle_axis(np.sin(t), np.array([1.0, 0.0, 0.0]))
    anim = obj.animation_data_create()
    anim.action = bpy.data.actions.new("RigAction")
    ch = pose_io.Channels(obj)
    frames = np.arange(1, n + 1, dtype=np.float64)
    for b, name in enumerate(rig.names):
        mode = rig.rotation_modes[b]
        start = rotation[0, b] if mode == "QUATERNION" else quat_to_euler(rotation[:1, b], mode)[0] \
            if mode != "AXIS_ANGLE" else np.zeros(4)
        values = {channel_path(mode): quat_to_channels(rotation[:, b], mode, start)}
        if name in ("Root", "mixamorig:Hips"):
            values["location"] = location[:, b]
        for prop_name, v in values.items():
            for i in range(channel_count(mode) if prop_name != "location" else 3):
                fc = ch.new(pose_io.bone_path(name, prop_name), i, name)
                keep = slice(None, None, 10) if name == "Prop" else slice(None)
                fc.keyframe_points.add(len(frames[keep]))
                fc.keyframe_points.foreach_set("co", np.stack([frames[keep], v[keep, i]], -1).reshape(-1))
                fc.update()
    return retarget


@pytest.mark.parametrize("rest", ["model", "posed"])
def test_a_rig_with_other_names_and_rest_orientations_moves_like_the_model(addon, clip, rest):
    """World joint positions Blender evaluates on the rig = the model skeleton's, scaled and turned Z-up."""
    from betwixt.addon.preferences import load_model
    from betwixt.addon.retarget import rig_retargeting
    _, motion = clip
    sk = motion.skeleton
    rest_rotations = np.tile([1.0, 0, 0, 0], (len(sk), 1)) if rest == "model" else motion.rotations[0]
    obj, names = build_rig(sk, rest_rotations, seed=3 if rest == "model" else 4)
    retarget = key_rig(obj, names, motion)
    scale = retarget.scale
    assert abs(scale - 0.015) < 1e-6
    # the bone frames are the rest pose's own, up to a small twist where only the model's natural pose
    # can tell it (its rest pose would turn posed legs and arms about half a turn); end bones aside
    truth = rig_retargeting(sk, retarget.rig, retarget.mapping, retarget.world, reference=rest_rotations)
    twist = np.degrees(np.arccos(np.clip((np.trace(np.swapaxes(retarget.offsets, -1, -2) @ truth.offsets,
                                                   axis1=-2, axis2=-1) - 1) / 2, -1, 1)))
    assert twist[[j for j in range(len(sk)) if sk.children(j)]].max() < 20.0, twist
    bones = [obj.pose.bones.find(n) for n in names]

    def heads(frames):
        return evaluated(obj, frames)[:, bones][..., :3, 3]

    _, world = forward_kinematics(motion.rotations, motion.positions, sk.parents)
    frames = np.array([1, 80, 200])
    size = 1.7 * 1.5
    assert np.abs(heads(frames) - scale * world[frames - 1] @ C.T).max() < 1e-5 * size   # the rig plays the clip

    a, b = GAP
    cut(obj, a, b, bones=names)
    untouched = {k: v for k, v in snapshot(obj).items() if '"Root"' in k[0] or '"Prop"' in k[0]}
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    assert same_keys({k: v for k, v in snapshot(obj).items() if k in untouched}, untouched)
    assert {i.joint: i.bone for i in obj.data.betwixt_joints} == dict(zip(sk.names, names))

    expected = runtime_fill(load_model(), motion, a - 1, b - 1)
    _, world = forward_kinematics(expected.rotations, expected.positions, sk.parents)
    inside = np.arange(a + 1, b)
    error = np.abs(heads(inside) - scale * world[inside - 1] @ C.T).max()
    assert error < 1e-4 * size, error
    assert np.abs(world[inside - 1] - forward_kinematics(motion.rotations, motion.positions, sk.parents)[1]
                  [inside - 1]).max() > 1.0                      # the hole holds new motion, not the clip


def bandai_walk(mocap, tmp_path, a, b):
    """A Bandai-1 walk imported by Blender's importer, its keys between frames ``a`` and ``b`` cut."""
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        motion = parse_bvh(z.read("dataset-1_walk_normal_001.bvh"), "walk").frames(0, 160)
    write_bvh(motion, tmp_path / "walk.bvh")
    obj = import_bvh(tmp_path / "walk.bvh")
    cut(obj, a, b)
    return obj


def test_bandai_rig_is_mapped_and_its_bones_point_where_the_model_s_do(addon, mocap, tmp_path):
    """Another skeleton (Bandai: _L/_R names, joint_Root, two spine bones, other rest pose and units)."""
    from betwixt.addon import plan as reading, writing
    from betwixt.inference import edit
    a, b = 60, 75
    obj = bandai_walk(mocap, tmp_path, a, b)
    before = snapshot(obj)
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    stored = {i.joint: i.bone for i in obj.data.betwixt_joints}
    assert stored["Spine2"] == "Chest" and stored["LeftUpLeg"] == "UpperLeg_L" and stored["Spine1"] == ""
    after = snapshot(obj)
    for key, data in after.items():
        moved = key[0].endswith("rotation_euler") and '"joint_Root"' not in key[0] \
            or key[0] == 'pose.bones["Hips"].location'
        frames = data["co"][0::2]
        assert ((frames > a) & (frames < b)).any() == moved, key
        if not moved:
            assert all(np.array_equal(data[n], before[key][n]) for n in data), key

    # the frames around the gap that its probes are cut from (edit.surround), read as the window is
    near, far = edit.surround(plan.model, plan.gaps, plan.fps)
    assert plan.around[1] == near and plan.around[0].n_frames == far - near + 1
    window = slice(plan.first - near, plan.first - near + plan.motion.n_frames)
    known = np.ones(plan.motion.n_frames, dtype=bool)
    known[a + 1 - plan.first:b - plan.first] = False
    assert np.allclose(plan.around[0].positions[window][known], plan.motion.positions[known])
    result = writing.planted(plan, edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps,
                                             momentum=plan.momentum, around=plan.around))
    _, world = forward_kinematics(result.rotations, result.positions, plan.model.skeleton.parents)
    inside = np.arange(a + 1, b)
    heads = evaluated(obj, inside)[..., :3, 3]
    bones = {n: obj.pose.bones.find(stored[n]) for n in stored if stored[n]}
    sk = plan.model.skeleton
    checked = 0
    for j, name in enumerate(sk.names):
        parent = sk.parents[j]
        if not (j and name in bones and sk.names[parent] in bones):
            continue
        want = (world[inside - plan.first, j] - world[inside - plan.first, parent]) @ C.T
        have = heads[:, bones[name]] - heads[:, bones[sk.names[parent]]]
        cos = np.sum(want * have, -1) / np.linalg.norm(want, axis=-1) / np.linalg.norm(have, axis=-1)
        angle = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
        if len(sk.children(parent)) == 1:
            assert angle.max() < 0.01, name            # a bone points where the model's bone points
        else:
            # below a branch (hips, chest) the two skeletons' rest shapes differ (Bandai's hip joints sit
            # lower and further back): the best rigid fit leaves a constant angle, which must not move
            assert np.ptp(angle) < 0.5 and angle.max() < 20.0, name
        checked += 1
    assert checked == 19                              # all but Spine→Spine1→Spine2 (no Spine1)


def test_an_action_with_no_room_beside_its_gap_is_filled_without_probes(addon, clip, tmp_path):
    """Half a second cut from an action no longer than the frames Fill Gaps reads around it: no probe fits, and
    the gap gets the plain fill (the one the model makes without the frames around)."""
    from betwixt.addon import plan as reading, writing
    from betwixt.inference import edit
    _, motion = clip
    write_bvh(motion.frames(0, 36), tmp_path / "short.bvh")
    obj = import_bvh(tmp_path / "short.bvh")
    cut(obj, 11, 26)
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    assert plan.momentum == [True] and plan.around is None
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    plain = writing.planted(plan, edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps,
                                            momentum=plan.momentum))
    inside = np.arange(12, 26)
    want = forward_kinematics(plain.rotations, plain.positions, motion.skeleton.parents)[1][inside - plan.first]
    bones = [obj.pose.bones.find(n) for n in motion.skeleton.names]
    assert np.abs(evaluated(obj, inside)[..., :3, 3][:, bones] @ C - want).max() < 0.01   # cm


def test_feet_planted_on_a_rig_of_other_proportions_stand_still_on_it(addon, mocap, tmp_path):
    """Bandai's legs are not the model's: planted on the model's lengths, a foot that stands still in
    the model's skeleton slides on the rig; planted on the rig's own (``Retargeting.on_rig``) it stands.
    With the shipped default model: the test model's feet never stand still."""
    from betwixt.addon import plan as reading, writing
    from betwixt.inference import edit
    bpy.context.preferences.addons["betwixt"].preferences.rtn_file = ""
    a, b = 60, 100
    obj = bandai_walk(mocap, tmp_path, a, b)
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    assert bpy.ops.betwixt.fill_gaps(plant_feet=True) == {"FINISHED"}
    result = writing.planted(plan, edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps,
                                             momentum=plan.momentum, around=plan.around))
    sk, retarget = plan.model.skeleton, plan.retarget
    feet = [sk.index(n) for n in ("LeftFoot", "RightFoot", "LeftToe", "RightToe")]
    bones = [obj.pose.bones.find({i.joint: i.bone for i in obj.data.betwixt_joints}[sk.names[j]]) for j in feet]
    inside = np.arange(a + 1, b)
    rig = evaluated(obj, inside)[:, bones][..., :3, 3]
    on_rig = forward_kinematics(result.rotations, retarget.on_rig(result).positions, sk.parents)[1]
    on_model = forward_kinematics(result.rotations, result.positions, sk.parents)[1]
    placed = {name: (w[inside - plan.first][:, feet] @ C.T) * retarget.scale for name, w in
              (("rig", on_rig), ("model", on_model))}
    # the rig's feet are where forward kinematics on the rig's lengths puts them (up to the hips' place)
    miss = rig - placed["rig"]
    assert np.abs(miss - miss[:1, :1]).max() < 0.05                                         # cm
    # so a foot standing still there stands still on the rig; on the model's lengths it would not
    steps = {k: np.linalg.norm(np.diff(p[..., :2], axis=0), axis=-1) for k, p in placed.items()}
    rig_steps = np.linalg.norm(np.diff(rig[..., :2], axis=0), axis=-1)
    still = steps["rig"] < 0.01
    assert still.sum() > 20 and rig_steps[still].max() < 0.05
    assert np.abs(steps["model"] - rig_steps)[still].max() > 0.5


def test_fill_gaps_names_a_gap_the_model_was_unsure_of(addon, lafan1_zip, tmp_path, capfd):
    """With the shipped model, Fill Gaps over fallAndGetUp1's frames 3370-3430 (a gap whose fills as it is,
    mirrored and backwards part: test_runtime.py) warns the animator where to look."""
    bpy.context.preferences.addons["betwixt"].preferences.rtn_file = ""   # the shipped model of the skeleton
    with zipfile.ZipFile(lafan1_zip) as z:
        motion = parse_bvh(z.read("fallAndGetUp1_subject5.bvh"), "fallAndGetUp1_subject5").frames(3330, 3480)
    write_bvh(motion, tmp_path / "falling.bvh")
    obj = import_bvh(tmp_path / "falling.bvh")
    cut(obj, 41, 101)   # scene frames: the clip's 3370 and 3430
    capfd.readouterr()
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    warned = [line for line in capfd.readouterr().out.splitlines() if line.startswith("Warning")]
    assert any("the model was unsure of frames 42-100" in line for line in warned), warned


def test_a_gap_longer_than_the_default_model_trained_on_goes_to_the_rtn_of_its_skeleton(addon, clip, capfd):
    """The shipped rtn-human (a transformer) fills gaps of up to 2 s, the longest it trained on; a longer gap goes
    to rtn-lafan1, the RTN of the same skeleton, trained to 4 s, which fills it better (docs/experiments.md, "The
    transformer ships as `rtn-human`"), and the report names it."""
    from betwixt.addon import plan as reading
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    chosen, prefs.rtn_file = prefs.rtn_file, ""   # the shipped default
    try:
        path, _ = clip
        for b, name in ((160, "rtn-human"), (200, "rtn-lafan1")):
            obj = import_bvh(path)
            cut(obj, 100, b)
            assert reading.read_plan(bpy.context, reading.selected_gaps).model.name == name
        capfd.readouterr()
        assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
        assert "with model rtn-lafan1" in capfd.readouterr().out
    finally:
        prefs.rtn_file = chosen


def test_a_scene_at_another_frame_rate_is_filled_at_the_model_s(addon, clip):
    path, _ = clip
    obj = import_bvh(path)
    bpy.context.scene.render.fps = 24
    a, b = GAP
    cut(obj, a, b)
    before = snapshot(obj)
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    for key, data in snapshot(obj).items():
        frames, values = data["co"][0::2], data["co"][1::2]
        inside = (frames > a) & (frames < b)
        if key[0].endswith("rotation_euler"):
            assert frames[inside].tolist() == list(range(a + 1, b)) and np.isfinite(values).all()
        assert np.array_equal(data["co"].reshape(-1, 2)[~inside], before[key]["co"].reshape(-1, 2))


@pytest.mark.parametrize("fps", [24, 60])
def test_the_command_line_and_blender_fill_a_file_alike_at_any_frame_rate(addon, clip, model_path, tmp_path, fps):
    """One edit pipeline (inference/edit.py): the test clip as a BVH file at 24 or 60 fps, its gap filled
    by ``python -m inference fill`` and by Fill Gaps on the file Blender imported, is the same motion:
    each at the model's 30 fps, its feet planted, every joint where the other puts it. Half a second: both lean
    toward the keys' own spline as far as their probes say (inference/keyspline.py)."""
    import subprocess
    _, motion = clip
    path, out = tmp_path / f"clip{fps}.bvh", tmp_path / "filled.bvh"
    write_bvh(motion.resample(fps), path)
    a, b = round(100 * fps / 30), round(115 * fps / 30)     # the file's frames of the keys around the gap
    run = subprocess.run([sys.executable, "-m", "inference", "fill", str(path), "--gap", f"{a}:{b}", "--model",
                          str(model_path), "-o", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    filled = read_bvh(out)
    assert not np.allclose(filled.rotations[a + 1:b], read_bvh(path).rotations[a + 1:b], atol=1e-3)
    want = forward_kinematics(filled.rotations, filled.positions, filled.skeleton.parents)[1][a + 1:b]
    obj = import_bvh(path)
    assert bpy.context.scene.render.fps == fps
    cut(obj, a + 1, b + 1)                                  # the file's frame i is the scene's frame i + 1
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    bones = [obj.pose.bones.find(n) for n in filled.skeleton.names]
    have = evaluated(obj, np.arange(a + 2, b + 1))[..., :3, 3][:, bones] @ C   # back to the file's Y-up
    assert np.abs(have - want).max() < 0.01                # cm


def test_decompress_turns_sparse_keys_into_dense_motion(addon, clip):
    path, _ = clip
    obj = import_bvh(path)
    every = 15
    sparse = set(range(1, 301, every)) | {300}
    for fc in channels(obj).curves().values():
        for k in reversed(list(fc.keyframe_points)):
            if round(k.co[0]) not in sparse:
                fc.keyframe_points.remove(k, fast=True)
        fc.update()
    before = snapshot(obj)
    assert bpy.ops.betwixt.decompress() == {"FINISHED"}
    for key, data in snapshot(obj).items():
        frames = data["co"][0::2]
        assert frames.tolist() == list(range(1, 301)), key
        at_keys = np.isin(frames, sorted(sparse))
        assert np.array_equal(data["co"].reshape(-1, 2)[at_keys], before[key]["co"].reshape(-1, 2))


def test_decompress_writes_the_same_keys_however_its_curves_are_batched(addon, clip, monkeypatch):
    """Curves merged together or one by one, handles written whole or key by key (pose_io's MERGED_KEYS and
    FEW_HANDLES, which a long action's size decides): every keyframe property the same."""
    from betwixt.addon import pose_io
    path, _ = clip
    written = []
    for merged, few in ((pose_io.MERGED_KEYS, pose_io.FEW_HANDLES), (1, 10 ** 6)):
        monkeypatch.setattr(pose_io, "MERGED_KEYS", merged)
        monkeypatch.setattr(pose_io, "FEW_HANDLES", few)
        obj = import_bvh(path)
        for fc in channels(obj).curves().values():
            for k in reversed(list(fc.keyframe_points)):
                if round(k.co[0]) % 15 != 1:
                    fc.keyframe_points.remove(k, fast=True)
            fc.update()
        assert bpy.ops.betwixt.decompress() == {"FINISHED"}
        written.append(snapshot(obj))
    assert len(written[0]) > 60 and same_keys(*written)


def test_variants_are_actions_to_compare_and_one_is_applied(addon, clip):
    path, _ = clip
    obj = import_bvh(path)
    a, b = GAP
    cut(obj, a, b)
    original = obj.animation_data.action.name
    before = snapshot(obj)
    assert bpy.ops.betwixt.variants(count=3, variation=1.0, seed=5) == {"FINISHED"}
    assert same_keys(snapshot(obj), before)                       # the original is untouched
    names = [f"{original} variant {i}" for i in (1, 2, 3)]
    variants = [bpy.data.actions[n] for n in names]
    hips = ('pose.bones["Hips"].location', 0)
    holes = []
    for action in variants:
        keys = snapshot(obj, action)
        frames, values = keys[hips]["co"][0::2], keys[hips]["co"][1::2]
        inside = (frames > a) & (frames < b)
        assert frames[inside].tolist() == list(range(a + 1, b))
        outside = before[hips]["co"].reshape(-1, 2)
        assert np.array_equal(keys[hips]["co"].reshape(-1, 2)[~inside], outside)
        holes.append(values[inside])
    assert np.abs(holes[0] - holes[1]).max() > 1e-4 and np.abs(holes[1] - holes[2]).max() > 1e-4

    assert bpy.ops.betwixt.preview_variant(action=names[1]) == {"FINISHED"}
    assert obj.animation_data.action.name == names[1]
    assert bpy.ops.betwixt.apply_variant(action=names[1]) == {"FINISHED"}
    assert obj.animation_data.action.name == original
    assert not any(n in bpy.data.actions for n in names)
    keys = snapshot(obj)
    frames, values = keys[hips]["co"][0::2], keys[hips]["co"][1::2]
    np.testing.assert_array_equal(values[(frames > a) & (frames < b)], holes[1])

    assert bpy.ops.betwixt.variants(count=2) == {"FINISHED"}
    assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}
    assert [x.name for x in bpy.data.actions] == [original]


def test_export_training_data_writes_y_up_bvh_the_training_module_reads(addon, clip, tmp_path):
    from lab.dataset import read_motions
    path, motion = clip
    obj = import_bvh(path)
    action = obj.animation_data.action.name
    chosen = [{"name": action, "use": True}]
    assert bpy.ops.betwixt.export_training_data(directory=str(tmp_path / "data"), actions=chosen) == {"FINISHED"}
    assert obj.animation_data.action.name == action
    [exported] = read_motions(tmp_path / "data")
    assert exported.skeleton.names == motion.skeleton.names and exported.n_frames == motion.n_frames
    assert exported.fps == 30
    _, theirs = exported.global_transforms()
    _, ours = motion.global_transforms()
    assert np.abs(theirs - ours).max() < 1e-2                      # Y-up, centimetres, as the clip was


def test_job_reports_progress_and_stops_when_cancelled(addon):
    import threading
    from betwixt.addon.jobs import Job
    from betwixt.inference.edit import Cancelled
    go = threading.Event()

    def work(progress, cancelled):
        for i in range(1000):
            go.wait()
            if cancelled():
                raise Cancelled()
            progress(i + 1, 1000)
        return "done"
    job = Job(work)
    job.cancel()
    go.set()
    job._thread.join(5)
    assert job.done and isinstance(job.error, Cancelled) and job.result is None
    finished = Job(lambda progress, cancelled: (progress(1, 1), 42)[1])
    finished._thread.join(5)
    assert finished.done and finished.result == 42 and finished.fraction == 1.0


SHIPPED = ROOT / "inference" / "models" / "rtn-lafan1.onnx"


def bezier_and_filled(obj, truth, gaps):
    """Mean world error (cm) against ``truth`` (frames, bones, 3: scene frame f at row f - 1) of Blender's
    Bezier (auto-clamped, its defaults) and of Fill Gaps, over the (a, b) ``gaps``, each cut and filled
    alone from the keys as they were."""
    keys = {k: d["co"].reshape(-1, 2).copy() for k, d in snapshot(obj).items()}
    errors = []
    for a, b in gaps:
        for key, fc in channels(obj).curves().items():
            co = keys[key][(keys[key][:, 0] <= a) | (keys[key][:, 0] >= b)]
            fc.keyframe_points.clear()
            fc.keyframe_points.add(len(co))
            fc.keyframe_points.foreach_set("co", co.reshape(-1))
            for k in fc.keyframe_points:
                k.interpolation, k.handle_left_type, k.handle_right_type = "BEZIER", "AUTO_CLAMPED", "AUTO_CLAMPED"
                k.select_control_point = k.co[0] in (a, b)
            fc.update()
        inside = np.arange(a + 1, b)
        bezier = np.linalg.norm(evaluated(obj, inside)[..., :3, 3] - truth[inside - 1], axis=-1).mean()
        assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
        errors.append((bezier, np.linalg.norm(evaluated(obj, inside)[..., :3, 3] - truth[inside - 1], axis=-1).mean()))
    return np.mean(errors, axis=0)


@pytest.mark.parametrize("lacks", [(), ("LeftToe", "RightToe")], ids=["whole rig", "rig without toes"])
def test_filled_gap_is_closer_to_the_capture_than_bezier(betwixt_addon, clip, lacks):
    """Quality, with the shipped model: world joint positions in the hole against the capture, on the
    clip's own rig and on one without toe bones (whose toes the model reads in its reference pose:
    at the rest pose's identity they had made the fill four times Bezier's error)."""
    assert SHIPPED.exists(), f"{SHIPPED} is the default model the add-on ships"
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.preferences.addons["betwixt"].preferences.rtn_file = ""
    path, motion = clip
    obj = import_bvh(path)
    if lacks:
        bpy.ops.object.mode_set(mode="EDIT")
        for name in lacks:
            obj.data.edit_bones.remove(obj.data.edit_bones[name])
        bpy.ops.object.mode_set(mode="OBJECT")
    _, truth = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    truth = truth[:, [motion.skeleton.names.index(b.name) for b in obj.pose.bones]] @ C.T
    bezier, filled = bezier_and_filled(obj, truth, [GAP])
    assert filled < bezier, (filled, bezier)


def test_a_rig_whose_rest_pose_is_no_stance_is_matched_in_its_natural_stance(betwixt_addon, mocap, tmp_path):
    """Bandai's BVH rest pose lays every bone along X: matched at rest, the shipped model read its walk bent
    and filled 1 s gaps at 1.26 of Bezier's error (rig suite); matched in the walk's natural stance (as
    training's retargeting matches data sets), the fills beat Bezier."""
    from betwixt.addon import plan as reading
    from betwixt.addon.retarget import rig_retargeting
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.preferences.addons["betwixt"].preferences.rtn_file = ""
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        motion = parse_bvh(z.read("dataset-1_walk_old_001.bvh"), "walk").frames(0, 285)
    write_bvh(motion, tmp_path / "walk.bvh")
    obj = import_bvh(tmp_path / "walk.bvh")
    rig, retarget, _ = reading.read_retarget(obj, reading.model_for(bpy.context, obj, "fill"))
    at_rest = replace(retarget, offsets=rig_retargeting(retarget.skeleton, rig, retarget.mapping, retarget.world,
                                                        reference=retarget.pose).offsets)
    assert np.abs(at_rest.offsets - retarget.offsets).max() > 0.1     # another calibration than at rest
    _, truth = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    truth = truth[:, [motion.skeleton.names.index(b.name) for b in obj.pose.bones]] @ C.T
    bezier, filled = bezier_and_filled(obj, truth, [(20, 50), (120, 150), (220, 250)])
    assert filled < 0.9 * bezier, (filled, bezier)


def test_the_root_leans_to_the_keys_spline_only_where_their_velocity_is_keyed(addon, clip):
    """Baked keys on every frame carry the velocity at the gap's keys, and Fill Gaps leans the root's path
    toward the spline through it; blocking keys every 5 frames leave it to Bezier's guess, and the root keeps
    the network's own path."""
    from betwixt.addon import plan as reading
    from betwixt.inference import edit
    assert edit.keyed_momentum([9, 10, 20, 21], [(10, 20)], 1.0) == [True]
    assert edit.keyed_momentum([5, 10, 20, 21], [(10, 20)], 1.0) == [False]
    assert edit.keyed_momentum([10, 20, 21], [(10, 20)], 1.0) == [False]       # nothing before
    assert edit.keyed_momentum([6, 10, 20, 24], [(10, 20)], 4.0) == [True]     # 120 fps scene, 30 fps model
    path, motion = clip
    a, b = GAP
    for every, keyed in ((1, True), (5, False)):
        bpy.ops.wm.read_homefile(use_empty=True)
        obj = import_bvh(path)
        for fc in channels(obj).curves().values():
            points = fc.keyframe_points
            for k in reversed(list(points)):
                if (k.co[0] - a) % every and k.co[0] != b:
                    points.remove(k, fast=True)
            fc.update()
        cut(obj, a, b)
        plan = reading.read_plan(bpy.context, reading.selected_gaps)
        assert plan.momentum == [keyed]
        made, own = (edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps, momentum=m)
                     for m in (plan.momentum, [False]))
        lean = np.abs(made.positions[:, 0] - own.positions[:, 0]).max()   # cm
        assert (lean > 0.5) == keyed, (every, lean)


def test_decompress_in_a_scene_at_another_frame_rate_leans_the_root_as_at_the_model_s(addon, clip):
    """At another frame rate each gap is filled alone at the model's (edit._fill_resampled) and sees
    no neighbouring keys; the root's lean to the spline through the keys (tangents from the keys either
    side) must come with it, so that a 24 fps scene's Decompress leans as a 30 fps one does."""
    from betwixt.addon import plan as reading
    from betwixt.inference import edit
    from betwixt.inference.inbetween import between_keys
    from betwixt.inference.transition import hermite, key_rates
    path, _ = clip
    every = 15
    toward = {}
    for fps in (30, 24):
        bpy.ops.wm.read_homefile(use_empty=True)
        obj = import_bvh(path)
        bpy.context.scene.render.fps = fps
        for fc in channels(obj).curves().values():
            for k in reversed(list(fc.keyframe_points)):
                if (k.co[0] - 1) % every:
                    fc.keyframe_points.remove(k, fast=True)
            fc.update()
        plan = reading.read_plan(bpy.context, reading.all_gaps)
        model, joint = plan.model, plan.model.layout.trajectory
        ground = [a for a in range(3) if a != model.layout.up]
        shares = {}
        for share in (model.key_spline, 0.0):
            leaned, model.key_spline = model.key_spline, share
            try:
                made = edit.fill(model, plan.motion, plan.first, plan.gaps, plan.fps, momentum=plan.momentum)
            finally:
                model.key_spline = leaned
            shares[share] = made.positions[:, joint][:, ground]
        root = plan.motion.positions[:, joint]
        far = {share: [] for share in shares}
        for i, (a, b) in enumerate(plan.gaps):
            keys = between_keys(plan.gaps, i)
            if keys is None:
                continue
            keys = np.asarray(keys) - plan.first
            rates = key_rates(root, keys)[0]
            spline = hermite(root[keys[1]], rates[0], root[keys[2]], rates[1], b - a)[1:-1][:, ground]
            for share, p in shares.items():
                far[share].append(np.linalg.norm(p[keys[1] + 1:keys[2]] - spline, axis=-1))
        toward[fps] = np.concatenate(far[model.key_spline]).mean() / np.concatenate(far[0.0]).mean()
    assert toward[30] < 0.9, toward
    assert abs(toward[24] - toward[30]) < 0.1, toward


def test_models_of_other_kinds_beside_the_in_betweening_ones_change_nothing(addon, model_path, clip):
    """The shipped models of other kinds (the dog's MANN; a Motion VAE where one is shipped) lie beside
    the RTNs: the preferences offer the RTN models only for in-betweening, Fill Gaps on a human rig
    still runs, and a model of another kind chosen as the in-betweening file is one clear error."""
    import betwixt.inference.modelfile as modelfile
    from betwixt.addon import preferences

    assert {p.stem for p in modelfile.MODELS.glob("*.onnx")} - {"rtn-human", "rtn-lafan1", "rtn-bandai1", "rtn-cmu",
                                                                 "rtn-dog"}
    preferences.forget_models()
    try:
        prefs = bpy.context.preferences.addons["betwixt"].preferences
        prefs.rtn_file = ""
        rtns = ["rtn-human", "rtn-bandai1", "rtn-cmu", "rtn-dog", "rtn-lafan1"]   # the default first
        assert [p.stem for p in modelfile.shipped("rtn")] == rtns
        assert [item[0] for item in preferences._items_of("rtn")(prefs, bpy.context)] == rtns
        assert preferences.load_model().name == "rtn-human"
        prefs.rtn_file = str(modelfile.MODELS / "mann-dog.onnx")      # chosen by mistake: one clear error
        with pytest.raises(modelfile.ModelError, match="a 'mann' model where a 'rtn' model is needed"):
            preferences.load_model()
    finally:
        prefs.rtn_file = str(model_path)
        preferences.forget_models()
    obj = import_bvh(clip[0])
    cut(obj, *GAP)
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
