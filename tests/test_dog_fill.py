"""``tools/dog_fill.py``'s Bézier stand-in against real Blender (the ``bpy`` package): the curve Blender's
F-curves evaluate to through the same keys, and the channels its BVH importer keys for a dog clip, so
that the held-out measurement compares the dog's fill with what an animator gets in Blender.
"""

import zipfile

import bpy
import numpy as np
import pytest

from inference.bvh import parse_bvh, write_bvh
from tools.dog_fill import bezier, channels

CLIP = "D1_010_KAN01_003"   # a test clip of the dog: only read here, never used for choosing


def _blender_curve(keys, values):
    """Blender's evaluation (frames 0 .. last key) of an F-curve with auto-clamped Bézier keys at
    ``keys`` (K,) holding ``values`` (K,), made as the rig suite makes an animator's keys."""
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = bpy.data.objects.new("curve", None)
    bpy.context.scene.collection.objects.link(obj)
    obj.keyframe_insert("location", index=0, frame=0)
    curve = obj.animation_data.action.layers[0].strips[0].channelbags[0].fcurves[0]
    points = curve.keyframe_points
    points.clear()
    points.add(len(keys))
    points.foreach_set("co", np.stack([keys, values], axis=1).astype(np.float64).ravel())
    enum = bpy.types.Keyframe.bl_rna.properties
    clamped = enum["handle_left_type"].enum_items["AUTO_CLAMPED"].value
    points.foreach_set("interpolation", np.full(len(keys), enum["interpolation"].enum_items["BEZIER"].value, np.int32))
    points.foreach_set("handle_left_type", np.full(len(keys), clamped, np.int32))
    points.foreach_set("handle_right_type", np.full(len(keys), clamped, np.int32))
    curve.update()
    return np.array([curve.evaluate(f) for f in range(int(keys[-1]) + 1)])


@pytest.mark.parametrize("shape", ["wander", "ramp into a plateau"])
def test_bezier_is_blenders_auto_clamped_curve(shape):
    rng = np.random.default_rng(3)
    values = np.cumsum(rng.normal(size=300))
    if shape != "wander":   # a steep dense run meeting a nearly flat one across a gap: handles clamped
        values[:100], values[150:] = 0.5 * np.arange(100), 50.3 + 0.001 * np.arange(150)
    keys = np.concatenate([np.arange(100), [140, 170], np.arange(220, 300)])
    mine = bezier(values[:, None], keys)[:, 0]
    blender = _blender_curve(keys, values[keys])
    # measured 1e-6 on the wander (Blender's float32), 0.007 where a handle is clamped (Blender's solver
    # clamps a little differently after the first pass); the curves span 50
    assert np.abs(mine - blender).max() < 0.02
    # and not the straight line or the keys' own values: the curve is Blender's, not a lookalike
    assert np.abs(np.interp(np.arange(300), keys, values[keys]) - blender)[100:220].max() > 0.05


def test_channels_are_what_blenders_bvh_importer_keys(mocap, tmp_path):
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        member = next(n for n in z.namelist() if n.endswith(CLIP + ".bvh"))
        motion = parse_bvh(z.read(member), member).frames(0, 150)
    path = tmp_path / "dog.bvh"
    write_bvh(motion, path)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=1.0)
    curves = bpy.context.active_object.animation_data.action.layers[0].strips[0].channelbags[0].fcurves

    def keyed(path, index):
        points = curves.find(path, index=index).keyframe_points
        return np.array([p.co[1] for p in points])

    mine = channels(motion)
    hips = np.stack([keyed('pose.bones["Hips"].location', i) for i in range(3)], axis=1)
    assert np.ptp(hips - mine[:, :3], axis=0).max() < 1e-3          # the same up to the rest head's offset
    for j, name in enumerate(motion.skeleton.names):
        order = [c[0] for c in motion.skeleton.channels[j] if c.endswith("rotation")][::-1]
        blender = np.stack([keyed(f'pose.bones["{name}"].rotation_euler', "XYZ".index(a)) for a in order], axis=1)
        assert np.abs(blender - mine[:, 3 + 3 * j:6 + 3 * j]).max() < 1e-4, name
