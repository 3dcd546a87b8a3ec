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
from test_addon import ROOT, betwixt_addon, channels, cut, import_bvh, same_keys, snapshot  # noqa: F401

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


def hips_track(obj, frames):
    """World position of the hips on ``frames`` as Blender evaluates the keys (frames, 3)."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append(obj.matrix_world @ obj.pose.bones["Hips"].head)
    return np.array(out)


def distance_to(track, line):
    """Each ground point of ``track`` (F, 3)'s distance to the polyline ``line`` (N, 3) on the ground."""
    a, b = line[:-1, :2], line[1:, :2]
    seg = b - a
    u = np.clip(np.einsum("fsc,sc->fs", track[:, None, :2] - a, seg) / np.maximum((seg * seg).sum(-1), 1e-12), 0, 1)
    return np.linalg.norm(track[:, None, :2] - (a + u[..., None] * seg), axis=-1).min(axis=1)


def test_follow_path_keys_the_range_along_a_bezier_curve_and_undo_restores_it(scene, dog):
    obj = import_dog(dog)
    curve = bezier([(0.5, -1.0, 0.3), (2.0, 0.5, 0.3), (3.5, 0.0, 0.3)], "AUTO")
    follow_with(obj, curve)
    scene.frame_start, scene.frame_end = RANGE
    before = snapshot(obj)
    bpy.ops.ed.undo_push(message="curve")
    assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True) == {"FINISHED"}
    obj = bpy.data.objects[obj.name]
    after = snapshot(obj)
    a, b = RANGE
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
        # handles too, but for the one facing the range on the key either side (as Fill Gaps treats a gap)
        ends = frames[~inside]
        for side, inner in (("left", b + 1), ("right", a - 1)):
            handles, was = data[f"handle_{side}"].reshape(-1, 2)[~inside], old[f"handle_{side}"].reshape(-1, 2)[outside]
            assert np.allclose(handles[ends != inner], was[ends != inner], rtol=0, atol=1e-4), (key, side)
        assert not np.array_equal(data["co"][1::2][inside], old["co"][1::2][~outside]), key   # new motion
    assert {i.joint: i.bone for i in obj.data.betwixt_joints} == {b.name: b.name for b in obj.data.bones}

    track = hips_track(obj, np.arange(a, b + 1))
    off = distance_to(track, bezier_line(curve))
    assert off.mean() < 0.10 and off.max() < 0.25, (off.mean(), off.max())   # metres
    assert np.linalg.norm(track[0, :2] - [0.5, -1.0]) < 0.05                  # from the curve's start
    assert np.linalg.norm(track[-1, :2] - [3.5, 0.0]) < 0.3                   # to its end, over the range
    assert 0.3 < track[:, 2].mean() < 0.6                                     # a dog's hips above the floor

    name = obj.name
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert same_keys(snapshot(obj), before) and len(obj.data.betwixt_joints) == 0
    assert bpy.ops.ed.redo() == {"FINISHED"}
    assert same_keys(snapshot(bpy.data.objects[name]), after)
