"""Our BVH reader and forward kinematics against Blender's own BVH importer, frame by frame.

Blender's ``io_anim_bvh`` (in the bpy package) parses the file its own way, builds an armature with
bone rest orientations, keys every frame as Euler curves in the file's native order, then turns the
armature from BVH's Y-up into Blender's Z-up (``axis_conversion(from_forward='-Z', from_up='Y')``)
and applies that rotation. Its evaluated pose bones must put every joint where our forward kinematics
does, mapped through the same conversion, on every frame of a whole real clip of each source.
Blender evaluates in float32, hence a tolerance relative to the character's height.
"""

import re
import zipfile

import numpy as np
import pytest

import bpy
from bpy_extras.io_utils import axis_conversion

from inference import quat
from inference.bvh import parse_bvh
from inference.motion import height

SOURCES = {"lafan1": "lafan1-27.zip", "bandai": "bandai1.zip", "dog": "dog-mann.zip", "cmu": "cmu-01_01.bvh"}
TOLERANCE = 1e-4  # of the skeleton's height


def declared_frames(archive, info):
    """The ``Frames:`` count of an archived BVH file, reading only as far as that line."""
    head = b""
    with archive.open(info) as stream:
        while b"Frame Time" not in head:
            chunk = stream.read(1 << 14)
            if not chunk:
                break
            head += chunk
    return int(re.search(rb"Frames:\s*(\d+)", head)[1])


def shortest_clip(path):
    """(name, bytes) of the file with the fewest frames (ties by name); the file itself if not a zip."""
    if path.suffix == ".bvh":
        return path.name, path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        infos = [i for i in archive.infolist() if i.filename.lower().endswith(".bvh")]
        best = min(infos, key=lambda i: (declared_frames(archive, i), i.filename))
        return best.filename.rsplit("/", 1)[-1], archive.read(best)


def blender_import(path):
    """Import with Blender's own operator in a fresh empty scene; the armature object it made."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    result = bpy.ops.import_anim.bvh(
        filepath=str(path), target="ARMATURE", rotate_mode="NATIVE", global_scale=1.0, frame_start=1,
        use_fps_scale=False, update_scene_fps=False, update_scene_duration=False,
        axis_forward="-Z", axis_up="Y")
    assert result == {"FINISHED"}
    armatures = [o for o in bpy.context.scene.objects if o.type == "ARMATURE"]
    assert len(armatures) == 1
    return armatures[0]


def evaluated_pose(armature, n_frames):
    """Armature-space matrices of every pose bone on frames 1..n, shape (frames, bones, 4, 4).

    One ``frame_set`` and one bulk ``foreach_get`` per frame (a fraction of a millisecond each);
    ``foreach_get`` lays each 4x4 out column by column, hence the transpose.
    """
    scene = bpy.context.scene
    bones = armature.pose.bones
    out = np.empty((n_frames, len(bones), 16), dtype=np.float32)
    for f in range(n_frames):
        scene.frame_set(1 + f)
        bones.foreach_get("matrix", out[f].reshape(-1))
    return np.swapaxes(out.reshape(n_frames, len(bones), 4, 4), -1, -2).astype(np.float64)


@pytest.fixture(scope="module", autouse=True)
def clean_blender():
    yield
    bpy.ops.wm.read_factory_settings(use_empty=True)


def test_axis_conversion_is_y_up_to_z_up():
    c = np.array(axis_conversion(from_forward="-Z", from_up="Y").to_3x3())
    assert np.array_equal(c, [[1, 0, 0], [0, 0, -1], [0, 1, 0]])


@pytest.mark.parametrize("source", SOURCES)
def test_blender_agrees_on_every_frame(mocap, tmp_path, source):
    name, data = shortest_clip(mocap / SOURCES[source])
    path = tmp_path / name
    path.write_bytes(data)
    motion = parse_bvh(data, name)
    armature = blender_import(path)

    # the same skeleton, every frame keyed from 1 on
    bones = armature.pose.bones
    assert [b.name for b in bones] == list(motion.skeleton.names)
    assert [motion.skeleton.names.index(b.parent.name) if b.parent else -1 for b in bones] \
        == list(motion.skeleton.parents)
    action = armature.animation_data.action
    assert tuple(action.frame_range) == (1.0, float(motion.n_frames))

    conversion = np.array(axis_conversion(from_forward="-Z", from_up="Y").to_4x4())
    world = np.array(armature.matrix_world)
    assert np.allclose(world, np.eye(4), atol=1e-6)  # the importer applied the conversion to the bones
    pose = world @ evaluated_pose(armature, motion.n_frames)

    grot, gpos = motion.global_transforms()
    size = height(gpos)
    ours = gpos @ conversion[:3, :3].T
    position_error = np.linalg.norm(pose[..., :3, 3] - ours, axis=-1) / size

    # orientations too: Blender's bone = our world rotation, converted, times the bone's rest
    rest = np.empty((len(bones), 16), dtype=np.float32)
    armature.data.bones.foreach_get("matrix_local", rest.reshape(-1))
    rest = np.swapaxes(rest.reshape(-1, 4, 4), -1, -2)[:, :3, :3].astype(np.float64)
    c = conversion[:3, :3]
    expected = c @ quat.to_matrix(grot) @ c.T @ rest
    rotation_error = np.abs(pose[..., :3, :3] - expected).max(axis=(-1, -2))

    frame, joint = np.unravel_index(np.argmax(position_error), position_error.shape)
    print(f"\n{source} {name}: {motion.n_frames} frames x {len(bones)} joints, height {size:.2f}; "
          f"max position error {position_error.max():.2e} of height (frame {frame}, "
          f"{motion.skeleton.names[joint]}), max rotation-matrix error {rotation_error.max():.1e}")
    assert position_error.max() < TOLERANCE
    assert rotation_error.max() < 1e-4
    # and the motion is not trivially still: the check covers real movement
    assert np.ptp(ours, axis=0).max() > 0.1 * size
