"""Follow Path and the quadruped's model choice with the real ``bpy``: a clip of the dog capture's test
split imported by Blender's own BVH importer (in metres), curves added as a user adds them, the
operator run as a script runs it, and the keys and Blender's own evaluation of them checked.

The model is the shipped ``mann-dog``: these tests check mechanics (which keys, what is left alone,
undo, failures) and that the dog's hips, as Blender evaluates the keys, go along the curve.
"""

import zipfile

import bpy
import numpy as np
import pytest
from mathutils import Vector
from mathutils.geometry import interpolate_bezier

from inference.bvh import parse_bvh, write_bvh
from inference.mann.runtime import MANNModel
from inference.modelfile import open_model
from test_addon import ROOT, betwixt_addon, channels, clip, cut, import_bvh, same_keys, snapshot  # noqa: F401
from test_addon_mvae import without_a_shipped_motion_vae

MANN = ROOT / "inference" / "models" / "mann-dog.onnx"
CLIP = "D1_008_KAN01_002"   # of the test split: never trained on
RANGE = (51, 250)           # keys of the clip's 300 frames before and after it stay


@pytest.fixture
def scene(betwixt_addon):  # noqa: F811
    """An empty scene, the shipped models chosen."""
    bpy.ops.wm.read_homefile(use_empty=True)
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.rtn_file = prefs.mann_file = ""
    return bpy.context.scene


@pytest.fixture(scope="module")
def dog(mocap, tmp_path_factory):
    """300 frames (60 fps, centimetres) of a test-split clip as a BVH file."""
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        motion = parse_bvh(z.read(f"{CLIP}.bvh"), CLIP).frames(0, 300)
    path = tmp_path_factory.mktemp("dog") / "dog.bvh"
    write_bvh(motion, path)
    return path


def import_dog(path):
    """The dog as Blender's importer makes it, in metres, its curves' handles computed (the importer
    leaves them at zero until a curve is next updated)."""
    assert bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True, global_scale=0.01) == {"FINISHED"}
    obj = bpy.context.active_object
    for fc in channels(obj).curves().values():
        fc.update()
    return obj


def bezier(points, handles, name="Path", cyclic=False):
    """A Bezier curve object through ``points`` (N, 3) with automatic handles."""
    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    spline = data.splines.new("BEZIER")
    spline.bezier_points.add(len(points) - 1)
    for p, co in zip(spline.bezier_points, points):
        p.co = co
        p.handle_left_type = p.handle_right_type = handles
    spline.use_cyclic_u = cyclic
    return link(data, name)


def poly(points, name="Path", cyclic=False):
    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    spline = data.splines.new("POLY")
    spline.points.add(len(points) - 1)
    for p, co in zip(spline.points, points):
        p.co = (*co, 1.0)
    spline.use_cyclic_u = cyclic
    return link(data, name)


def link(data, name):
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def follow_with(armature, *curves):
    """Select ``curves`` and make ``armature`` active, as a user does before Follow Path."""
    bpy.ops.object.select_all(action="DESELECT")
    for c in curves:
        c.select_set(True)
    armature.select_set(True)
    bpy.context.view_layer.objects.active = armature


def bezier_line(obj, resolution=64):
    """A Bezier curve object's world positions, finely sampled (N, 3), from its own control points."""
    spline = obj.data.splines[0]
    points = list(spline.bezier_points)
    pairs = list(zip(points[:-1], points[1:])) + ([(points[-1], points[0])] if spline.use_cyclic_u else [])
    line = [v for a, b in pairs for v in interpolate_bezier(a.co, a.handle_right, b.handle_left, b.co, resolution)]
    return np.array([obj.matrix_world @ Vector(v) for v in line])


def hips_track(obj, frames, hips="Hips"):
    """World position of the ``hips`` bone on ``frames`` as Blender evaluates the keys (frames, 3)."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append(obj.matrix_world @ obj.pose.bones[hips].head)
    return np.array(out)


def heads(obj, frames):
    """World positions of every bone's head on ``frames`` as Blender evaluates the keys (frames, bones, 3)."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append([obj.matrix_world @ bone.head for bone in obj.pose.bones])
    return np.array(out)


def distance_to(track, line):
    """Each ground point of ``track`` (F, 3)'s distance to the polyline ``line`` (N, 3) on the ground."""
    a, b = line[:-1, :2], line[1:, :2]
    seg = b - a
    u = np.clip(np.einsum("fsc,sc->fs", track[:, None, :2] - a, seg) / np.maximum((seg * seg).sum(-1), 1e-12), 0, 1)
    return np.linalg.norm(track[:, None, :2] - (a + u[..., None] * seg), axis=-1).min(axis=1)


def test_follow_path_keys_the_range_along_a_bezier_curve_and_undo_restores_it(scene, dog):
    obj = import_dog(dog)
    a, b = RANGE
    for (path, _), fc in channels(obj).curves().items():   # the hips' keys stop some frames before the range
        if '"Hips"' in path:
            for k in reversed(list(fc.keyframe_points)):
                if a - 10 <= k.co[0] < a or b < k.co[0] <= b + 10:
                    fc.keyframe_points.remove(k, fast=True)
            fc.update()
    curve = bezier([(0.5, -1.0, 0.3), (2.0, 0.5, 0.3), (3.5, 0.0, 0.3)], "AUTO")
    follow_with(obj, curve)
    scene.frame_start, scene.frame_end = RANGE
    before = snapshot(obj)
    bpy.ops.ed.undo_push(message="curve")
    assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True) == {"FINISHED"}
    obj = bpy.data.objects[obj.name]
    after = snapshot(obj)
    assert after.keys() == before.keys() and len(after) == 3 * 21 + 3
    for key, data in after.items():
        frames = data["co"][0::2]
        inside = (frames >= a) & (frames <= b)
        assert np.array_equal(frames[inside], np.arange(a, b + 1)), key
        old = before[key]
        outside = (old["co"][0::2] < a) | (old["co"][0::2] > b)
        for name in ("co", "interpolation", "type"):
            width = 2 if name == "co" else 1
            assert np.array_equal(data[name].reshape(-1, width)[~inside], old[name].reshape(-1, width)[outside]), \
                (key, name)
        # handles too, but for the one facing the range on the nearest key either side (as Fill Gaps
        # treats a gap's keys), which is freed so that the curve beyond that key keeps its shape
        ends = frames[~inside]
        for side, inner in (("left", ends[ends > b].min()), ("right", ends[ends < a].max())):
            handles, was = data[f"handle_{side}"].reshape(-1, 2)[~inside], old[f"handle_{side}"].reshape(-1, 2)[outside]
            assert np.allclose(handles[ends != inner], was[ends != inner], rtol=0, atol=1e-4), (key, side)
        assert not np.array_equal(data["co"][1::2][inside], old["co"][1::2][~outside]), key   # new motion
    assert {i.joint: i.bone for i in obj.data.betwixt_joints} == {b.name: b.name for b in obj.data.bones}

    track = hips_track(obj, np.arange(a, b + 1))
    off = distance_to(track, bezier_line(curve))
    assert off.mean() < 0.10 and off.max() < 0.25, (off.mean(), off.max())   # metres
    assert np.linalg.norm(track[0, :2] - [0.5, -1.0]) < 0.05                  # from the curve's start
    # to its end by the range's end (measured 0.15 m; Fit the Range leaves the dog 0.75 s to arrive, and the
    # controller asks it on to the end of its path, inference/mann/pursuit.py: 0.40 m short without both)
    assert np.linalg.norm(track[-1, :2] - [3.5, 0.0]) < 0.2
    assert 0.3 < track[:, 2].mean() < 0.6                                     # a dog's hips above the floor

    name = obj.name
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert same_keys(snapshot(obj), before) and len(obj.data.betwixt_joints) == 0
    assert bpy.ops.ed.redo() == {"FINISHED"}
    assert same_keys(snapshot(bpy.data.objects[name]), after)


def test_at_a_walk_the_dog_goes_round_a_closed_poly_curve_and_stops_at_its_end(scene, dog):
    """A square of 1 m sides at a walk (1 m/s) takes 4 s of a 6 s range, in a scene at 24 fps."""
    obj = import_dog(dog)
    scene.render.fps = 24
    corners = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (0.0, 1.0, 0.0)]
    curve = poly(corners, cyclic=True)
    follow_with(obj, curve)
    assert bpy.ops.betwixt.follow_path(frame_start=1, frame_end=145, gait="WALK") == {"FINISHED"}
    frames, _ = (lambda co: (co[0::2], co[1::2]))(snapshot(obj)[('pose.bones["Hips"].location', 0)]["co"])
    assert np.array_equal(frames[frames <= 145], np.arange(1, 146))
    track = hips_track(obj, np.arange(1, 146))
    off = distance_to(track, np.array(corners + corners[:1]))
    assert off[:97].mean() < 0.10, off[:97].mean()                         # round the square in 4 s
    # back at the start (measured 0.7 cm; 0.29 m short before the controller asked a dog on to its path's end,
    # inference/mann/pursuit.py)
    assert np.linalg.norm(track[-1, :2] - corners[0][:2]) < 0.1
    assert np.linalg.norm(track[-24:, :2] - track[-1, :2], axis=-1).max() < 0.10   # and still for the last second


def test_the_controller_reports_progress_and_stops_on_esc(scene, dog):
    from betwixt.addon import locomotion
    from betwixt.inference.edit import Cancelled
    obj = import_dog(dog)
    follow_with(obj, bezier([(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)], "VECTOR"))
    route = locomotion.read_route(bpy.context, 1, 120, "RANGE")
    seen = []
    motion = locomotion.follow(route, lambda done, total: seen.append((done, total)))
    assert motion.n_frames == 122                                          # the range and a frame either side
    total = seen[0][1]
    assert [d for d, _ in seen] == list(range(1, total + 1)) and total == 60 + 119   # a second standing up, then the range
    calls = []
    with pytest.raises(Cancelled):
        locomotion.follow(route, lambda done, total: calls.append(done), lambda: len(calls) >= 30)
    assert len(calls) == 30


def test_bad_input_says_what_to_do_and_changes_nothing(scene, dog, clip, monkeypatch):
    obj = import_dog(dog)
    path = bezier([(0.0, 0.0, 0.0), (2.0, 1.0, 0.0)], "AUTO")
    other = bezier([(0.0, 0.0, 0.0), (0.0, 2.0, 0.0)], "AUTO", name="Other")

    def fails(match, armature=None, **options):
        armature = armature or obj
        before = {o.name: snapshot(o) for o in bpy.data.objects if o.type == "ARMATURE" and o.animation_data}
        actions = sorted(a.name for a in bpy.data.actions)
        with pytest.raises(RuntimeError, match=match):
            bpy.ops.betwixt.follow_path(**options)
        assert {o.name: snapshot(o) for o in bpy.data.objects if o.type == "ARMATURE" and o.animation_data}.keys() \
            == before.keys()
        assert all(same_keys(snapshot(bpy.data.objects[n]), keys) for n, keys in before.items())
        assert sorted(a.name for a in bpy.data.actions) == actions
        assert len(armature.data.betwixt_joints) == 0

    follow_with(obj)
    fails("select the path, one curve object")
    follow_with(obj, path, other)
    fails("2 curves are selected .*'Other', 'Path'.*select only the one")
    follow_with(obj, path)
    fails("frame range 10-10 has 1 frames; Follow Path needs at least two", frame_start=10, frame_end=10)
    upright = bezier([(1.0, 1.0, 0.0), (1.0, 1.0, 3.0)], "VECTOR", name="Upright")
    follow_with(obj, upright)
    fails("curve 'Upright' has no length on the ground")
    path.data.bevel_depth = 0.05
    follow_with(obj, path)
    fails("curve 'Path' makes faces .*Bevel Depth to 0")
    path.data.bevel_depth = 0.0

    bpy.ops.object.armature_add()                                          # an armature whose bones say nothing
    stranger = bpy.context.active_object
    follow_with(stranger, path)
    fails(r"armature 'Armature' for model mvae-lafan1: only 0 of the model's 22 joints are mapped; map the bones "
          r"in the Betwixt panel \(Bone Mapping > Detect\)", stranger)   # a person's, whom the Motion VAE walks
    human = import_bvh(clip[0])                                            # a human: the in-betweening model's
    from betwixt.addon.preferences import model_for
    assert model_for(bpy.context, human, "fill").name == "rtn-human"
    assert model_for(bpy.context, human, "follow-path").name == "mvae-lafan1"
    with monkeypatch.context() as patched:                                 # a build without a Motion VAE
        without_a_shipped_motion_vae(patched)
        follow_with(stranger, path)
        fails("armature 'Armature' plays the skeleton of model rtn-human .* which does not follow paths; to "
              r"follow paths, map its bones to model mann-dog's skeleton .*, or put a Continuations \(Motion VAE\) "
              "model in a folder", stranger)
        follow_with(human, path)
        fails("plays the skeleton of model rtn-human", human)
    bpy.context.view_layer.objects.active = None
    fails("no armature is active")
    follow_with(obj, path)
    assert bpy.ops.betwixt.follow_path() == {"FINISHED"}                   # and the dog goes


RIGIFY = {"Hips": "pelvis", "Spine": "spine", "Spine1": "chest", "Neck": "neck", "Head": "head", "Tail": "tail",
          "Tail1": "tail.001"}
for _side, _s in (("Left", "L"), ("Right", "R")):
    RIGIFY.update({_side + j: f"{b}.{_s}" for j, b in (("Shoulder", "shoulder"), ("Arm", "upper_arm"),
                                                      ("ForeArm", "forearm"), ("Hand", "hand"), ("UpLeg", "thigh"),
                                                      ("Leg", "shin"), ("Foot", "foot"))})


def quadruped_rig(skeleton, rotations, tail=True):
    """An armature in Rigify's names (``pelvis``, ``upper_arm.L``, ``tail.001``), in metres, standing in
    the pose ``rotations`` (joints, 4) of ``skeleton`` as its rest pose, each bone pointing at its child;
    with ``tail`` False, without the tail's bones."""
    from inference.motion import forward_kinematics
    offsets = skeleton.offsets.copy()
    offsets[0] = 0.0
    _, heads = forward_kinematics(rotations, offsets, skeleton.parents)
    heads = (heads + [0.0, 45.0, 0.0]) @ np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]]).T * 0.01
    arm = bpy.data.armatures.new("Dog")
    obj = link(arm, "Dog")
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for j, name in enumerate(skeleton.names):
        if name.startswith("Tail") and not tail:
            continue
        bone = arm.edit_bones.new(RIGIFY[name])
        below = [heads[c] - heads[j] for c in skeleton.children(j) if np.linalg.norm(heads[c] - heads[j]) > 1e-3]
        below += [heads[j] - heads[skeleton.parents[j]]] if j else [[0.0, 0.1, 0.0]]
        bone.head, bone.tail = heads[j], heads[j] + 0.05 * np.asarray(below[0]) / np.linalg.norm(below[0])
        if j:
            bone.parent = arm.edit_bones[RIGIFY[skeleton.names[skeleton.parents[j]]]]
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def test_a_renamed_quadruped_rig_without_an_action_is_detected_and_follows(scene, dog):
    from betwixt.addon import mapping
    from betwixt.addon.preferences import model_for
    from inference.bvh import read_bvh
    model = open_model(MANN)
    imported = import_dog(dog)                                              # the dog's own names
    # the dog's own models beside the human ones the preferences hold: its RTN fills, MANN walks
    assert model_for(bpy.context, imported, "fill").name == "rtn-dog"
    assert model_for(bpy.context, imported, "follow-path").name == "mann-dog"
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    assert mapping.stored(imported.data) == {n: n for n in model.skeleton.names}

    obj = quadruped_rig(model.skeleton, read_bvh(dog).rotations[0])
    assert obj.animation_data is None
    curve = bezier([(0.0, 0.0, 0.0), (1.5, 1.0, 0.0), (3.0, 0.0, 0.0)], "AUTO")
    follow_with(obj, curve)
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    assert mapping.stored(obj.data) == RIGIFY
    bpy.ops.ed.undo_push(message="mapped")
    assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True, frame_start=1, frame_end=200) == {"FINISHED"}
    obj = bpy.data.objects["Dog"]
    assert obj.animation_data.action.name == "DogAction"
    track = hips_track(obj, np.arange(1, 201), "pelvis")
    off = distance_to(track, bezier_line(curve))
    assert off.mean() < 0.10, off.mean()
    assert 0.3 < track[:, 2].mean() < 0.6
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects["Dog"]
    assert obj.animation_data is None and "DogAction" not in bpy.data.actions


def test_a_quadruped_rig_without_a_tail_is_taken_for_the_dog_by_its_pose(scene, dog):
    """Its names fit the human skeleton as well as the dog's (as a person's Rigify rig does): standing on all
    fours it is taken for the dog, by Follow Path and by Detect; the same rig standing up on its hind legs,
    for a person; Detect's menu maps it to either."""
    from betwixt.addon import mapping
    from inference import quat
    from inference.bvh import read_bvh
    rotations = read_bvh(dog).rotations[0]
    obj = quadruped_rig(open_model(MANN).skeleton, rotations, tail=False)
    follow_with(obj, bezier([(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)], "VECTOR"))
    assert bpy.ops.betwixt.follow_path(frame_start=1, frame_end=60) == {"FINISHED"}
    dog_mapping = {**{j: b for j, b in RIGIFY.items() if b[:4] != "tail"}, "Tail": "", "Tail1": ""}
    assert mapping.stored(obj.data) == dog_mapping
    end = hips_track(obj, [60], "pelvis")[0]
    assert 1.5 < end[0] < 2.1 and abs(end[1]) < 0.2, end                     # along the 2 m line in a second
    assert bpy.ops.betwixt.clear_mapping() == {"FINISHED"}
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}                 # a plain Detect: the best fit again
    assert mapping.stored(obj.data) == dog_mapping                          # a tie, which its pose breaks
    assert bpy.ops.betwixt.detect_mapping(skeleton="rtn") == {"FINISHED"}   # the menu: the human skeleton
    assert "Spine2" in mapping.stored(obj.data)

    upright = rotations.copy()                                              # reared up: the spine vertical
    upright[0] = quat.mul(quat.from_angle_axis(-np.pi / 2, np.array([1.0, 0.0, 0.0])), rotations[0])
    person = quadruped_rig(open_model(MANN).skeleton, upright, tail=False)
    dog_skeleton = open_model(MANN).skeleton
    assert mapping.on_all_fours(obj, dog_skeleton) and not mapping.on_all_fours(person, dog_skeleton)
    bpy.context.view_layer.objects.active = person
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    assert "Spine2" in mapping.stored(person.data)                          # a tie, which the human skeleton wins


def test_fill_gaps_and_decompress_on_a_dog_rig_use_the_dogs_models(scene, dog):
    """The dog's RTN fills its gaps up to two seconds; a longer one goes to MANN."""
    from betwixt.addon import plan as reading
    obj = import_dog(dog)
    cut(obj, 20, 220)
    assert reading.read_plan(bpy.context, reading.selected_gaps).model.name == "mann-dog"
    obj = import_dog(dog)
    a, b = 100, 160
    inside_gap = range(a + 1, b)
    capture = heads(obj, inside_gap)
    cut(obj, a, b)
    assert reading.read_plan(bpy.context, reading.selected_gaps).model.name == "rtn-dog"
    before = snapshot(obj)
    bezier = heads(obj, inside_gap)
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    ours = np.linalg.norm(heads(obj, inside_gap) - capture, axis=-1).mean()
    theirs = np.linalg.norm(bezier - capture, axis=-1).mean()
    # rtn-dog measured 0.50 cm against Bezier's 0.79 on this walk's keys (mann-dog: 2.1); the dog's rig suite
    # cases compare them widely
    assert ours < 0.015 and theirs < 0.01, (ours, theirs)
    for key, data in snapshot(obj).items():
        frames = data["co"][0::2]
        inside = (frames > a) & (frames < b)
        assert np.array_equal(frames[inside], np.arange(a + 1, b)), key
        assert np.array_equal(data["co"].reshape(-1, 2)[~inside], before[key]["co"].reshape(-1, 2)), key
    sparse = set(range(1, 301, 30)) | {300}
    for fc in channels(obj).curves().values():
        for k in reversed(list(fc.keyframe_points)):
            if round(k.co[0]) not in sparse:
                fc.keyframe_points.remove(k, fast=True)
        fc.update()
    assert bpy.ops.betwixt.decompress() == {"FINISHED"}
    for key, data in snapshot(obj).items():
        assert data["co"][0::2].tolist() == list(range(1, 301)), key
