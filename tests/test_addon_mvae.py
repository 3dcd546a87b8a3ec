"""The Motion VAE in the add-on with the real ``bpy``: the Model Folder, Continue on a real LaFAN1 clip
imported by Blender's own BVH importer, and Variants' Source.

The Motion VAE is a tiny one trained by our own training command (``run`` of test_mvae.py: six steps,
poor motion), put in the Model Folder: these tests check mechanics (which actions, which keys, what is
left alone, undo, apply, discard, failures) and that Blender's own evaluation of the keys puts every
joint where the runtime's walk (or variants) puts it. Variants from noise use the default ``rtn-human``.
"""

import shutil
from dataclasses import replace

import bpy
import numpy as np
import pytest

from inference.contacts import plant
from inference.ends import ends
from inference.inbetween import floor, gap_in
from inference.modelfile import open_model
from inference.motion import forward_kinematics
from test_addon import (C, GAP, ROOT, betwixt_addon, clip, cut, evaluated, import_bvh,  # noqa: F401
                        same_keys, snapshot)
from test_mvae import run  # noqa: F401

FRAME, FRAMES = 100, 30     # Continue from scene frame 100 (the clip's frame 99), 30 frames
RTN = ROOT / "inference" / "models" / "rtn-lafan1.onnx"


@pytest.fixture(scope="module")
def folder(run, tmp_path_factory):  # noqa: F811
    """A Model Folder holding the tiny Motion VAE."""
    folder = tmp_path_factory.mktemp("models")
    shutil.copy(run["model"], folder / "mvae-tiny.onnx")
    return folder


@pytest.fixture
def scene(betwixt_addon, folder):  # noqa: F811
    """An empty scene, the shipped models and the Model Folder chosen, and its tiny Motion VAE the active one
    (the shipped mvae-lafan1 is measured by bench-mvae; the tiny one keeps these tests quick)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.rtn_file = prefs.mvae_file = ""
    prefs.model_folder = str(folder)
    prefs.mvae_model = "mvae-tiny"
    yield bpy.context.scene
    prefs.mvae_model = "mvae-lafan1"
    prefs.model_folder = ""


def without_a_shipped_motion_vae(monkeypatch):
    """As a build of Betwixt that ships no Motion VAE: the shipped mvae-lafan1 is not offered."""
    from betwixt.addon import preferences
    real = preferences.shipped
    monkeypatch.setattr(preferences, "shipped", lambda kind=None, folder=None: [
        p for p in real(kind, folder) if folder is not None or p.stem != "mvae-lafan1"])


def continuations(obj):
    from betwixt.addon.variants import variants_of
    return variants_of(obj.animation_data.action.name)


def keys_at(keys, test):
    """{curve: its keys' (frame, value) rows where ``test(frames)``}."""
    return {k: d["co"].reshape(-1, 2)[test(d["co"][0::2])] for k, d in keys.items()}


def walked(model, motion, frame, frames, seed, planted=True):
    """The runtime's walk from ``frame`` of ``motion`` (and the frame before it), on the floor the add-on
    stands the model on (where the feet were lowest over the second before), as world positions; its
    feet ``planted`` as Plant Feet plants them, the second before ``frame`` their context."""
    level = floor(motion.frames(frame - 30, frame + 1), []) - model.floor
    positions = motion.positions.copy()
    positions[:, 0, 1] -= level
    [walk] = model.walk(replace(motion, positions=positions).frames(frame - 1, frame + 1), 1, frames, 1, seed)
    positions = walk.positions.copy()
    positions[:, 0, 1] += level
    walk = replace(walk, positions=positions)
    if planted:
        context = motion.frames(frame - 30, frame - 1)
        joined = replace(walk, rotations=np.concatenate([context.rotations, walk.rotations]),
                         positions=np.concatenate([context.positions, walk.positions]))
        walk = plant(joined, [(context.n_frames + 1, joined.n_frames)], model.layout.height).frames(context.n_frames)
    return forward_kinematics(walk.rotations, walk.positions, motion.skeleton.parents)[1][2:]


def test_the_model_folder_offers_its_models_beside_the_shipped_ones(scene, folder, tmp_path, monkeypatch):
    import betwixt.inference.modelfile as modelfile
    from betwixt.addon import preferences
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    assert prefs.bl_rna.properties["model_folder"].subtype == "DIR_PATH"
    assert hasattr(bpy.ops.betwixt, "continue_motion")
    shipped = modelfile.MODELS / "mvae-lafan1.onnx"
    assert preferences.offered_models("mvae") == [shipped, folder / "mvae-tiny.onnx"]
    assert [i[0] for i in preferences._items_of("mvae")(prefs, bpy.context)] == ["mvae-lafan1", "mvae-tiny"]
    assert preferences.load_model(kind="mvae").path == folder / "mvae-tiny.onnx"     # as chosen
    # models of every kind: a folder's RTN is offered after the shipped ones, the default still first
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(folder / "mvae-tiny.onnx", mine / "mvae-tiny.onnx")
    shutil.copy(RTN, mine / "rtn-mine.onnx")
    prefs.model_folder = str(mine)
    assert [p.stem for p in preferences.offered_models("rtn")] == ["rtn-human", "rtn-bandai1", "rtn-cmu", "rtn-dog",
                                                                  "rtn-lafan1", "rtn-mine"]
    assert [i[0] for i in preferences._items_of("rtn")(prefs, bpy.context)][-1] == "rtn-mine"
    prefs.rtn_model = "rtn-mine"
    try:
        assert preferences.load_model().path == mine / "rtn-mine.onnx"
    finally:
        prefs.rtn_model = "rtn-human"
    prefs.mvae_model = "mvae-lafan1"
    prefs.model_folder = ""
    assert preferences.load_model(kind="mvae").path == shipped                         # without a folder
    without_a_shipped_motion_vae(monkeypatch)   # and no folder: one error that says where to put one
    with pytest.raises(preferences.ModelError, match=r"no Continuations \(Motion VAE\) model: none is shipped .* "
                       "set it as the Model Folder in Preferences > Add-ons > Betwixt"):
        preferences.load_model(kind="mvae")


def test_continue_makes_k_actions_after_the_current_frame_and_undo_restores_the_original(scene, clip, folder):
    """Three continuations of 30 frames: three actions, keys up to the current frame as they were, Blender's
    evaluation of each the runtime's walk, its feet planted (Plant Feet, on by default); one undo step takes
    them all away."""
    path, motion = clip
    obj = import_bvh(path)
    original = obj.animation_data.action.name
    scene.frame_set(FRAME)
    before = snapshot(obj)
    bpy.ops.ed.undo_push(message="imported")
    assert bpy.ops.betwixt.continue_motion("EXEC_DEFAULT", True, count=3, frames=FRAMES, seed=4) == {"FINISHED"}
    obj = bpy.data.objects[obj.name]
    assert same_keys(snapshot(obj), before)                          # the original is untouched
    made = continuations(obj)
    assert [a.name for a in made] == [f"{original} continuation {i}" for i in (1, 2, 3)]
    for action in made:
        keys = snapshot(obj, action)
        assert keys.keys() == before.keys()
        # the keys up to the current frame and after the continuation: as they were, bit for bit
        outside = lambda f: (f <= FRAME) | (f > FRAME + FRAMES)  # noqa: E731
        assert all(np.array_equal(a, b) for a, b in zip(keys_at(keys, outside).values(),
                                                         keys_at(before, outside).values()))
        for key, data in keys.items():
            frames = data["co"][0::2]
            inside = (frames > FRAME) & (frames <= FRAME + FRAMES)
            moved = key[0].endswith("rotation_euler") or key[0] == 'pose.bones["Hips"].location'
            assert frames[inside].tolist() == (list(range(FRAME + 1, FRAME + FRAMES + 1)) if moved else []), key

    name = obj.name
    assert bpy.ops.ed.undo() == {"FINISHED"}                          # one step: the original alone
    obj = bpy.data.objects[name]
    assert continuations(obj) == [] and [a.name for a in bpy.data.actions] == [original]
    assert same_keys(snapshot(obj), before)
    assert bpy.ops.ed.redo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    made = continuations(obj)
    assert len(made) == 3

    model = open_model(folder / "mvae-tiny.onnx")
    heads = []
    for i, action in enumerate(made):
        assert bpy.ops.betwixt.preview_variant(action=action.name) == {"FINISHED"}
        here = evaluated(obj, np.arange(1, FRAME + FRAMES + 1))[..., :3, 3]
        assert bpy.ops.betwixt.preview_variant(action=original) == {"FINISHED"}
        heads.append(here[FRAME:])
        if i == 0:   # what Blender evaluates up to the current frame is the original's, bit for bit
            assert np.array_equal(here[:FRAME], evaluated(obj, np.arange(1, FRAME + 1))[..., :3, 3])
        # and after it, the runtime's walk i (seed + i) from the clip's frame FRAME - 1, joint for joint
        want = walked(model, motion, FRAME - 1, FRAMES, 4 + i) @ C.T
        # cm: planted on the keys Blender reads back (float32); measured up to 0.056
        assert np.abs(heads[-1] - want).max() < 0.1, np.abs(heads[-1] - want).max()
    assert np.abs(heads[0] - heads[1]).max() > 1.0 and np.abs(heads[1] - heads[2]).max() > 1.0


def test_apply_keeps_one_continuation_and_discard_removes_them(scene, clip):
    path, _ = clip
    obj = import_bvh(path)
    original = obj.animation_data.action.name
    scene.frame_set(FRAME)
    before = snapshot(obj)
    assert bpy.ops.betwixt.continue_motion(count=2, frames=FRAMES) == {"FINISHED"}
    second = f"{original} continuation 2"
    chosen = snapshot(obj, bpy.data.actions[second])
    assert bpy.ops.betwixt.preview_variant(action=second) == {"FINISHED"}
    assert obj.animation_data.action.name == second
    assert bpy.ops.betwixt.apply_variant(action=second) == {"FINISHED"}
    assert obj.animation_data.action.name == original and continuations(obj) == []
    after = snapshot(obj)
    inside = lambda f: (f > FRAME) & (f <= FRAME + FRAMES)  # noqa: E731
    for key in after:
        assert np.array_equal(keys_at(after, inside)[key], keys_at(chosen, inside)[key]), key
        assert np.array_equal(keys_at(after, lambda f: f <= FRAME)[key], keys_at(before, lambda f: f <= FRAME)[key])

    assert bpy.ops.betwixt.continue_motion(count=2, frames=5) == {"FINISHED"}
    assert bpy.ops.betwixt.preview_variant(action=f"{original} continuation 1") == {"FINISHED"}
    assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}
    assert obj.animation_data.action.name == original and [a.name for a in bpy.data.actions] == [original]


def test_continue_with_plant_feet_off_keys_the_walk_as_the_model_made_it(scene, clip, folder):
    """Plant Feet off: Blender's evaluation is the runtime's walk itself; on, the planted walk, which differs
    from it in the legs alone (the hips and the rest of the body as the model made them)."""
    path, motion = clip
    obj = import_bvh(path)
    original = obj.animation_data.action.name
    model = open_model(folder / "mvae-tiny.onnx")
    raw, planted = (walked(model, motion, FRAME - 1, FRAMES, 4, p) @ C.T for p in (False, True))
    legs = [motion.skeleton.index(n) for n in motion.skeleton.names if "Leg" in n or "Foot" in n or "Toe" in n]
    rest = [j for j in range(len(motion.skeleton)) if j not in legs]
    assert np.abs(raw[:, rest] - planted[:, rest]).max() < 1e-9 and np.abs(raw - planted).max() > 0.1   # cm
    for plant_feet, want in ((False, raw), (True, planted)):
        scene.frame_set(FRAME)
        assert bpy.ops.betwixt.continue_motion(count=1, frames=FRAMES, seed=4, plant_feet=plant_feet) == {"FINISHED"}
        [action] = continuations(obj)
        assert bpy.ops.betwixt.preview_variant(action=action.name) == {"FINISHED"}
        here = evaluated(obj, np.arange(FRAME + 1, FRAME + FRAMES + 1))[..., :3, 3]
        assert np.abs(here - want).max() < 0.1, (plant_feet, np.abs(here - want).max())   # cm, as above
        assert bpy.ops.betwixt.preview_variant(action=original) == {"FINISHED"}
        assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}


def test_continue_in_a_scene_at_another_frame_rate(scene, clip):
    """At 24 fps the model's 30 fps walk is sampled on the scene's frames: every frame keyed, finite."""
    path, _ = clip
    obj = import_bvh(path)
    scene.render.fps = 24
    scene.frame_set(FRAME)
    before = snapshot(obj)
    assert bpy.ops.betwixt.continue_motion(count=1, frames=FRAMES) == {"FINISHED"}
    [action] = continuations(obj)
    keys = snapshot(obj, action)
    for key, data in keys.items():
        frames, values = data["co"][0::2], data["co"][1::2]
        inside = (frames > FRAME) & (frames <= FRAME + FRAMES)
        if key[0].endswith("rotation_euler"):
            assert frames[inside].tolist() == list(range(FRAME + 1, FRAME + FRAMES + 1)) and np.isfinite(values).all()
    outside = lambda f: (f <= FRAME) | (f > FRAME + FRAMES)  # noqa: E731
    assert all(np.array_equal(a, b) for a, b in zip(keys_at(keys, outside).values(), keys_at(before, outside).values()))


def test_continue_refuses_the_bad_cases_and_changes_nothing(scene, clip, folder, mocap, tmp_path, monkeypatch):
    import zipfile

    from inference.bvh import parse_bvh, write_bvh
    path, _ = clip
    obj = import_bvh(path)
    prefs = bpy.context.preferences.addons["betwixt"].preferences

    def fails(match, **options):
        actions = sorted(a.name for a in bpy.data.actions)
        keys = snapshot(obj) if obj.animation_data and obj.animation_data.action else None
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.betwixt.continue_motion(**options)
        assert sorted(a.name for a in bpy.data.actions) == actions
        if keys is not None:
            assert same_keys(snapshot(obj), keys)

    scene.frame_set(1)
    fails(r"the current frame \(1\) is not 1 frame after the action's first key \(frame 1\): a continuation "
          "starts from a pose and the one before it; go to frame 2 or later")
    scene.frame_set(FRAME)
    prefs.model_folder = ""
    with monkeypatch.context() as patched:    # a build without a Motion VAE
        without_a_shipped_motion_vae(patched)
        fails(r"no Continuations \(Motion VAE\) model: none is shipped with this build of Betwixt; put one .* Model "
          "Folder in Preferences > Add-ons > Betwixt")
        prefs.model_folder = str(tmp_path)                   # a folder without one
        fails(f"and the Model Folder '{tmp_path}' holds none")
    prefs.model_folder = str(folder)
    prefs.mvae_model = "mvae-tiny"
    assert bpy.ops.betwixt.continue_motion(count=1, frames=3) == {"FINISHED"}
    assert bpy.ops.betwixt.preview_variant(action=continuations(obj)[0].name) == {"FINISHED"}
    fails("is itself a variant; apply it or go back to the original")
    assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}

    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:  # a rig the Motion VAE does not know: the dog
        dog = parse_bvh(z.read("D1_008_KAN01_002.bvh"), "dog").frames(0, 120)
    write_bvh(dog, tmp_path / "dog.bvh")
    obj = import_bvh(tmp_path / "dog.bvh")
    fails(r"plays the skeleton of model rtn-dog \(In-betweening \(RTN\)\), which does not make continuations; to "
          r"make continuations, map its bones to model mvae-tiny's skeleton")
    bpy.ops.object.armature_add()                         # an armature whose one bone says nothing
    obj = bpy.context.active_object
    fails(f"armature {obj.name!r} has no action; key a few poses first")
    obj.pose.bones[0].keyframe_insert("rotation_quaternion", frame=1)
    fails("joints are mapped|not mapped")
    bpy.ops.object.select_all(action="DESELECT")
    bpy.context.view_layer.objects.active = None
    fails("no armature is active")


def test_variants_from_noise_are_the_rtn_s_own_variants_and_its_plain_fill_without_noise(scene, clip):
    """Source Noise (RTN) calls the RTN's variants once for all K: on the clip's frames the add-on's gap
    is the runtime's, each variant Blender evaluates is the one made from the rig as read, and without
    noise each variant is Fill Gaps' fill, at the scene's rate and at another."""
    from betwixt.addon import plan as reading, writing
    from betwixt.inference import edit
    path, motion = clip
    a, b = GAP
    obj = import_bvh(path)
    original = obj.animation_data.action.name
    cut(obj, a, b)
    plan = reading.read_plan(bpy.context, reading.selected_gaps, "variants", "rtn")
    assert plan.model.name == "rtn-human"     # the default
    # the clip's own frames: what the runtime makes of the same gap, to rounding
    own = motion.frames(plan.first - 1, plan.first - 1 + plan.motion.n_frames)
    made = edit.variants(plan.model, own, plan.first, (a, b), 30.0, 3, variation=1.0, seed=5)
    wants = runtime_variants(plan.model, own, a - plan.first, b - plan.first, 3, seed=5)
    for have, want in zip(made, wants):
        world = forward_kinematics(have.rotations, have.positions, motion.skeleton.parents)[1]
        assert np.abs(world - want).max() < 1e-9
    assert np.abs(wants[0] - wants[1]).max() > 1.0                   # cm: variants, not copies

    assert bpy.ops.betwixt.variants(count=3, variation=1.0, seed=5, source="NOISE") == {"FINISHED"}
    made = edit.variants(plan.model, plan.motion, plan.first, (a, b), plan.fps, 3, variation=1.0, seed=5)
    inside = np.arange(a + 1, b)
    for i, have in enumerate(made):
        have = writing.planted(plan, have)
        want = forward_kinematics(have.rotations, have.positions, motion.skeleton.parents)[1]
        assert bpy.ops.betwixt.preview_variant(action=f"{original} variant {i + 1}") == {"FINISHED"}
        heads = evaluated(obj, inside)[..., :3, 3]
        assert np.abs(heads - want[inside - plan.first] @ C.T).max() < 2e-3, i   # cm: float32 Euler keys
    assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}

    for fps in (30, 24):   # Plant Feet off: Fill Gaps leans the root's ground path to the keys' spline
        # (fill_gaps), variants keep the network's, and planted feet would follow each path their own way; the
        # legs that stand at the eased keys (ends) are put back on their feet about each root path, within a degree
        # of each other
        scene.render.fps = fps
        assert bpy.ops.betwixt.fill_gaps(plant_feet=False) == {"FINISHED"}
        filled = keys_at(snapshot(obj), lambda f: (f > a) & (f < b))
        cut(obj, a, b)
        assert bpy.ops.betwixt.variants(count=2, variation=0.0, source="NOISE", plant_feet=False) == {"FINISHED"}
        for action in continuations(obj):
            made = keys_at(snapshot(obj, action), lambda f: (f > a) & (f < b))
            assert made.keys() == filled.keys()
            for key in made:
                if key[0] != 'pose.bones["Hips"].location':
                    legs = any(part in key[0] for part in ("UpLeg", "Leg\"", "Foot", "Toe"))
                    assert np.abs(made[key] - filled[key]).max() < (0.02 if legs else 1e-4), (fps, key)
        assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}


def runtime_variants(model, motion, a, b, k, seed):
    """World positions (frames, J, 3) of ``motion`` with each of the runtime's ``k`` variants of the gap
    between its frames a and b, made on the floor the add-on stands the model on and met at the keys as a fill
    is (as fill_gaps does both)."""
    level = floor(motion, [(a, b)]) - model.floor
    lowered = motion.positions.copy()
    lowered[:, 0, 1] -= level
    gap = gap_in(replace(motion, positions=lowered), a, b, model.past)
    rot, pos = model.variants(gap, k, variation=1.0, seed=seed)
    for i in range(k):
        rot[i], pos[i] = ends(gap, rot[i], pos[i], model.layout, a > 0, True)
    out = []
    for i in range(k):
        rotations, positions = motion.rotations.copy(), motion.positions.copy()
        rotations[a + 1:b], positions[a + 1:b] = rot[i, 0], pos[i, 0]
        positions[a + 1:b, 0, 1] += level
        out.append(forward_kinematics(rotations, positions, motion.skeleton.parents)[1])
    return out


def test_variants_from_the_motion_vae_are_its_own_variants_and_leave_the_rest(scene, clip, monkeypatch):
    """Source Motion VAE: K actions whose keys inside the gap Blender evaluates to the Motion VAE's variants of
    the gap as read (sampling toward the key, then the target blend), different from each other, the keys
    outside the gap as they were; without any Motion VAE, one clear error that names the other Source."""
    from betwixt.addon import panels, plan as reading, writing
    from betwixt.inference import edit
    path, motion = clip
    a, b = GAP
    obj = import_bvh(path)
    original = obj.animation_data.action.name
    cut(obj, a, b)
    before = snapshot(obj)
    assert panels._unable(bpy.context, obj, "variants", "mvae") is None
    plan = reading.read_plan(bpy.context, reading.selected_gaps, "variants", "mvae")
    assert plan.model.name == "mvae-tiny"
    assert bpy.ops.betwixt.variants(count=3, variation=1.0, seed=2, source="MVAE") == {"FINISHED"}
    made = edit.variants(plan.model, plan.motion, plan.first, (a, b), plan.fps, 3, variation=1.0, seed=2)
    outside = keys_at(before, lambda f: (f <= a) | (f >= b))
    inside = np.arange(a + 1, b)
    wants = []
    for i, have in enumerate(made):
        have = writing.planted(plan, have)
        want = forward_kinematics(have.rotations, have.positions, motion.skeleton.parents)[1][inside - plan.first]
        action = f"{original} variant {i + 1}"
        kept = keys_at(snapshot(obj, bpy.data.actions[action]), lambda f: (f <= a) | (f >= b))
        assert kept.keys() == outside.keys() and all(np.array_equal(kept[k], outside[k]) for k in kept)
        assert bpy.ops.betwixt.preview_variant(action=action) == {"FINISHED"}
        assert np.abs(evaluated(obj, inside)[..., :3, 3] - want @ C.T).max() < 2e-3, i   # cm: float32 Euler keys
        wants.append(want)
    assert np.linalg.norm(wants[0] - wants[1], axis=-1).mean() > 1.0      # cm: variants, not copies
    assert bpy.ops.betwixt.preview_variant(action=original) == {"FINISHED"}
    assert same_keys(snapshot(obj), before)
    assert bpy.ops.betwixt.discard_variants() == {"FINISHED"}
    assert len(bpy.data.actions) == 1 and same_keys(snapshot(obj), before)

    bpy.context.preferences.addons["betwixt"].preferences.model_folder = ""
    without_a_shipped_motion_vae(monkeypatch)
    with pytest.raises(RuntimeError, match=r"no Continuations \(Motion VAE\) model.*Source: Noise \(RTN\)"):
        bpy.ops.betwixt.variants(source="MVAE")
    assert same_keys(snapshot(obj), before) and len(bpy.data.actions) == 1


def test_follow_path_on_a_human_rig_uses_the_motion_vae_and_undo_restores_it(scene, clip):
    """A human rig follows a curve with the Motion VAE (the dog's model is of another skeleton): every frame
    of the range keyed, the keys outside it as they were, Blender's evaluation of the hips the runtime's
    walk along the path from its first point, one undo step."""
    from betwixt.addon import locomotion
    from test_addon_locomotion import bezier, follow_with, hips_track
    path, motion = clip
    obj = import_bvh(path)                       # centimetres: Blender units are the clip's
    a, b = 40, 70
    curve = bezier([(0.0, 0.0, 0.0), (100.0, 60.0, 0.0), (200.0, 0.0, 0.0)], "AUTO")
    follow_with(obj, curve)
    scene.frame_start, scene.frame_end = a, b
    before = snapshot(obj)
    route = locomotion.read_route(bpy.context, a, b)
    assert route.keys.model.name == "mvae-tiny"
    bpy.ops.ed.undo_push(message="curve")
    assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True) == {"FINISHED"}
    obj = bpy.data.objects[obj.name]
    after = snapshot(obj)
    outside = keys_at(before, lambda f: (f < a) | (f > b))
    kept = keys_at(after, lambda f: (f < a) | (f > b))
    assert kept.keys() == outside.keys() and all(np.array_equal(kept[k], outside[k]) for k in kept)
    rotations = [k for k in after if k[0].endswith("rotation_euler")]
    assert all(np.array_equal(keys_at(after, lambda f: (f >= a) & (f <= b))[k][:, 0], np.arange(a, b + 1))
               for k in rotations)
    want = locomotion.follow(route)              # scene frames a - 1 to b + 1, the model's skeleton
    hips = forward_kinematics(want.rotations, want.positions, want.skeleton.parents)[1][1:-1, 0]
    track = hips_track(obj, np.arange(a, b + 1))
    assert np.abs(track - hips @ C.T).max() < 2e-3                       # cm
    assert np.linalg.norm(track[0, :2]) < 5.0                            # from the curve's first point
    name = obj.name
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert same_keys(snapshot(bpy.data.objects[name]), before)
