"""The rig suite: Betwixt's Fill Gaps and Decompress against Blender's own Bézier interpolation, in real
Blender, on rigs and motion the shipped model never saw.

    .venv/bin/python tools/rig_suite.py --shared ../shared --json out/rig-suite.json

``--cases bandai-walk,still`` runs a subset; ``--out DIR`` keeps a .blend of every run and Blender's
own output (otherwise hidden and deleted); ``--model FILE.onnx`` tries another model; ``--from-source``
skips the zip; ``--no-plant`` turns Plant Feet off. About a minute on two cores. Not in CI: it needs the motion capture of ``../shared``,
and it measures quality, which a test cannot pin down.

Betwixt is installed as a user gets it: the linux-x64 (or this platform's) extension zip built by
``tools/build_extension.py`` and installed with Blender's ``extensions.package_install_files`` into
user folders of its own (``BLENDER_USER_RESOURCES`` and ``HOME`` in a temporary folder, as
``tests/test_packaging.py`` does), so the real ``~/.config/blender`` is never touched. When the zip
cannot be built (no cached onnxruntime wheels and no PyPI), the repository is enabled as the add-on
``betwixt`` the way ``tools/main_job.py`` does it, and the output says so.

Every case is a clip of real capture imported with Blender's BVH importer, in metres, and turned into
a rig an animator might have (other bone names, missing or merged bones, a scaled and turned object,
another frame rate, a hold, blocking keys), or a dog of MANN's test split on its own rig, which the
add-on fills with the quadruped model (the model whose skeleton Detect maps the rig to); its keys are made Bézier with auto-clamped handles,
Blender's defaults. Then, each time from the capture's keys and on exactly the same remaining keys:

- Fill Gaps, gaps of 0.5, 1 and 2 s: the keys strictly inside cut, the two around selected;
- Decompress: every key removed but one per second (blocking: the blocking keys).

Measured on the frames Betwixt generated, against the capture, from world bone heads of the mapped
bones (``../shared/docs/metrics.md``; Blender metres turned into centimetres): the mean position
error of Betwixt over Bézier's; PEAK, the 99th percentile of the fastest joint's speed, over the
capture's; foot skating (H = 2.5 cm, ground: each foot's 2nd percentile height over the clip; a dog's
feet are its paws, the tails of the bones of LeftHand, RightHand, LeftFoot and RightFoot, also measured) of
Betwixt, Bézier and the capture; on the hold, the drift of the hips between two identical keys (% of
body height); and what changed outside the gaps: key values (must be 0) and the evaluated pose (cm,
which moves only where auto-clamped handles of the gap's end keys see new neighbours). Bones are
mapped with the add-on's own Detect; a case whose mapping or operator fails reports the error.
"""

import argparse
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from inference.bvh import parse_bvh, write_bvh  # noqa: E402  (after the path is set)
from inference.anatomy import PAWS, is_quadruped  # noqa: E402
from inference.mapping import describe  # noqa: E402
from inference.modelfile import open_model  # noqa: E402
from inference.retarget import Retargeting, natural_pose  # noqa: E402
from inference.motion import Motion, Skeleton, forward_kinematics, height, inverse_kinematics  # noqa: E402

bpy = None   # imported by main() once Blender's user folders are isolated: Blender reads them on import

GAPS = (0.5, 1.0, 2.0)          # seconds between the two keys around a Fill Gaps gap
POSITIONS = 5                    # places in the clip each gap is cut at, one run each
SKATE_H = 2.5                    # cm, metrics.md
CM = 100.0                       # Blender metres to centimetres
CMU_UNIT = 0.0254 / 0.45         # metres per CMU BVH unit (the ASF length unit, 1/0.45 inch)
CLIP = "lafan1-27.zip:obstacles1_subject5.bvh"   # LaFAN1's test subject: the rig variants' motion
PLATFORMS = {("linux", "x86_64"): "linux-x64", ("win32", "AMD64"): "windows-x64",
             ("darwin", "arm64"): "macos-arm64", ("darwin", "x86_64"): "macos-x64"}


# --- the cases ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A clip, what is done to it before and after Blender imports it, and where its gaps go."""

    name: str
    about: str
    source: str                  # "archive.zip:member.bvh" or "file.bvh" in the mocap folder
    start: int                   # clip frames [start, stop) of the file
    stop: int
    units: float = 0.01          # metres per file unit (LaFAN1 and Bandai: cm)
    fps: float = None            # resampled to this before import (the scene takes the file's rate)
    shape: object = None         # Motion -> Motion, before import (a hold, merged bones)
    rig: object = None           # armature object -> None, after import (names, deleted bones, object)
    y_up: bool = False           # bones left Y-up by the importer (then ``rig`` stands the object up)
    every: int = 1               # keys on every Nth frame only (blocking)
    gap_at: int = None           # clip frame of the first key of every Fill Gaps gap (default: centred)
    make: object = None          # (betwixt, clip) -> armature: a rig built in Blender and keyed with the
                                 # clip through its controls, instead of the BVH importer's
    onto: str = None             # "file.bvh" in the mocap folder: the clip retargeted onto its skeleton (its
                                 # proportions, rest pose and units) before ``shape``


def renamed(names):
    """A rig edit: the imported bones renamed ({old: new}); Blender renames their F-curves too."""
    def edit(obj):
        for old, new in names.items():
            obj.data.bones[old].name = new
    return edit


def edits(*steps):
    """Rig edits made one after another."""
    def edit(obj):
        for step in steps:
            step(obj)
    return edit


def numbered(obj):
    """A rig edit: every bone renamed Bone, Bone.001, ...: names that tell Detect nothing."""
    for i, bone in enumerate(list(obj.data.bones)):
        bone.name = f"Bone.{i:03d}" if i else "Bone"


def deleted(names):
    """A rig edit: the named bones deleted in Edit Mode (their F-curves stay, dangling, as Blender leaves them)."""
    def edit(obj):
        bpy.ops.object.mode_set(mode="EDIT")
        for name in names:
            obj.data.edit_bones.remove(obj.data.edit_bones[name])
        bpy.ops.object.mode_set(mode="OBJECT")
    return edit


def placed(rotation_degrees, scale):
    """A rig edit: the armature object turned (XYZ Euler, degrees) and scaled."""
    def edit(obj):
        obj.rotation_euler = np.radians(rotation_degrees)
        obj.scale = scale
        bpy.context.view_layer.update()
    return edit


def merged(keep, drop):
    """A motion edit: joints ``drop`` (a chain below ``keep``) merged into ``keep``, whose world rotation
    becomes the last dropped joint's; every remaining joint keeps its world position and rotation."""
    def edit(motion):
        sk = motion.skeleton
        gone = [sk.index(n) for n in drop]
        grot, gpos = motion.global_transforms()
        grot[:, sk.index(keep)] = grot[:, gone[-1]]
        kept = [j for j in range(len(sk)) if j not in gone]
        parent, offsets = sk.parents.copy(), sk.offsets.copy()
        for j in kept:
            while parent[j] in gone:   # an orphan's rest offset: the dropped joints' added to its own
                offsets[j] += sk.offsets[parent[j]]
                parent[j] = sk.parents[parent[j]]
        parents = [kept.index(p) if p >= 0 else -1 for p in parent[kept]]
        skeleton = Skeleton([sk.names[j] for j in kept], parents, offsets[kept],
                            tuple(sk.channels[j] for j in kept),
                            tuple((kept.index(j), o) for j, o in sk.end_sites if j in kept))
        rotations, positions = inverse_kinematics(grot[:, kept], gpos[:, kept], skeleton.parents)
        return Motion(skeleton, rotations, positions, motion.fps, name=motion.name)
    return edit


def held(at, frames):
    """A motion edit: clip frame ``at`` held still for ``frames`` more frames, the clip going on after it."""
    def edit(motion):
        order = np.concatenate([np.arange(at + 1), np.full(frames, at), np.arange(at + 1, motion.n_frames)])
        return replace(motion, rotations=motion.rotations[order], positions=motion.positions[order])
    return edit


def in_place(motion):
    """A motion edit: the root held over its first frame's place on the ground, as games export cycles (the
    legs step, the engine moves the character)."""
    positions = motion.positions.copy()
    positions[:, 0, [0, 2]] = positions[0, 0, [0, 2]]
    return replace(motion, positions=positions)


SIDES = {"Left": "L", "Right": "R"}
MIXAMO = {n: "mixamorig:" + n for n in ("Hips", "Spine", "Spine1", "Spine2", "Neck", "Head")} | {
    f"{s}{p}": f"mixamorig:{s}{p}" for s in SIDES for p in ("Shoulder", "Arm", "ForeArm", "Hand", "UpLeg", "Leg",
                                                                 "Foot")} | {
    f"{s}Toe": f"mixamorig:{s}ToeBase" for s in SIDES}
RIGIFY = {"Hips": "DEF-spine", "Spine": "DEF-spine.001", "Spine1": "DEF-spine.002", "Spine2": "DEF-spine.003",
          "Neck": "DEF-spine.004", "Head": "DEF-spine.006"} | {
    f"{s}{p}": f"DEF-{q}.{x}" for s, x in SIDES.items() for p, q in (
        ("Shoulder", "shoulder"), ("Arm", "upper_arm"), ("ForeArm", "forearm"), ("Hand", "hand"),
        ("UpLeg", "thigh"), ("Leg", "shin"), ("Foot", "foot"), ("Toe", "toe"))}
def rigify(ik_fk, meta=False, metarig="human"):
    """A rig maker: Blender's human (or wolf) metarig, generated by its bundled Rigify unless ``meta``, the
    clip keyed onto it as Betwixt writes (on a generated rig, onto its controls, limbs in FK where ``ik_fk``
    is 1, in IK where it is 0, as Rigify generates them)."""
    def make(betwixt, clip):
        import addon_utils
        addon_utils.enable("rigify", default_set=True)
        getattr(bpy.ops.object, f"armature_{metarig}_metarig_add")()
        if not meta:
            bpy.ops.pose.rigify_generate()
            bpy.data.objects.remove(bpy.data.objects["metarig"])
        obj = bpy.context.active_object
        for bone in obj.pose.bones:
            if bone.name.startswith(("thigh_parent", "upper_arm_parent", "front_thigh_parent")):
                bone["IK_FK"] = float(ik_fk)
        bones = [e.control for e in betwixt.controls.detect(obj)] or [b.name for b in obj.pose.bones]
        for name in bones:
            pb = obj.pose.bones[name]
            for frame in (0, clip.n_frames + 1):
                pb.keyframe_insert("location", frame=frame)
                pb.keyframe_insert(betwixt.pose_io.channel_path(pb.rotation_mode), frame=frame)
        betwixt.writing.key_motion(obj, betwixt.capture_model(clip), clip, 1)
        for fc in betwixt.pose_io.Channels(obj).curves().values():   # the rest keys on either side go
            for point in [p for p in fc.keyframe_points if p.co[0] in (0, clip.n_frames + 1)][::-1]:
                fc.keyframe_points.remove(point, fast=True)
            fc.update()
        return obj
    return make


def character(via="glb", clip_names=MIXAMO):
    """A rig maker: a Mixamo-style character as a game pipeline hands it over: ``mixamorig:`` bones in
    centimetres standing in the model's natural stance (arms hanging), Blender's default bone rolls, the
    armature object scaled 0.01 under an Empty, the clip keyed on it, then written by Blender's glTF
    (``via`` "glb") or FBX ("fbx") exporter and read back by its importer with its default options (its own
    bone orientations, one key a frame; FBX adds a leaf bone at each chain's end, as Mixamo's files have)."""
    def make(betwixt, clip):
        sk = clip.skeleton
        reference = np.asarray(json.loads(_shipped_human().metadata["betwixt.reference_pose"]))
        heads = forward_kinematics(reference, sk.offsets, sk.parents)[1] @ np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]]).T
        heads[:, :2] -= heads[0, :2]
        heads[:, 2] -= heads[:, 2].min() - 8.0
        data = bpy.data.armatures.new("Armature")
        obj = bpy.data.objects.new("Armature", data)
        bpy.context.scene.collection.objects.link(obj)
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        bones = []
        for j, name in enumerate(sk.names):
            bone = data.edit_bones.new(clip_names.get(name, name))
            children = np.flatnonzero(sk.parents == j)
            bone.head = heads[j]
            if len(children) == 1:
                bone.tail = heads[children[0]]
            elif len(children):
                bone.tail = heads[j] + np.array([0.0, 0.0, 10.0])
            else:
                along = heads[j] - heads[sk.parents[j]]
                bone.tail = heads[j] + 8.0 * along / np.linalg.norm(along)
            if sk.parents[j] >= 0:
                bone.parent = bones[sk.parents[j]]
            bones.append(bone)
        bpy.ops.object.mode_set(mode="OBJECT")
        obj.scale = (0.01, 0.01, 0.01)
        holder = bpy.data.objects.new("Character", None)
        bpy.context.scene.collection.objects.link(holder)
        obj.parent = holder
        for pb in obj.pose.bones:
            for frame in (0, clip.n_frames + 1):
                pb.keyframe_insert("location", frame=frame)
                pb.keyframe_insert("rotation_quaternion", frame=frame)
        betwixt.writing.key_motion(obj, betwixt.capture_model(clip), clip, 1)
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, clip.n_frames
        path = Path(tempfile.mkdtemp()) / f"character.{via}"
        if via == "glb":
            bpy.ops.export_scene.gltf(filepath=str(path), export_format="GLB", export_animations=True,
                                      export_force_sampling=True, export_frame_range=True)
        else:
            bpy.ops.export_scene.fbx(filepath=str(path), bake_anim=True, bake_anim_use_all_actions=False,
                                     bake_anim_use_nla_strips=False)
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.context.scene.render.fps = int(round(clip.fps))
        if via == "glb":
            bpy.ops.import_scene.gltf(filepath=str(path))
        else:
            bpy.ops.import_scene.fbx(filepath=str(path))
        shutil.rmtree(path.parent)
        obj = next(o for o in bpy.data.objects if o.type == "ARMATURE")
        curves = betwixt.pose_io.Channels(obj).curves().values()
        shift = 1 - min(fc.keyframe_points[0].co[0] for fc in curves)   # glTF's time 0 is frame 0: back to 1
        for fc in curves:
            co = np.empty(2 * len(fc.keyframe_points))
            fc.keyframe_points.foreach_get("co", co)
            co[0::2] = np.round(co[0::2] + shift)
            fc.keyframe_points.foreach_set("co", co)
            fc.update()
        return obj
    return make


def onto_model(motion):
    """A motion edit: another data set's clip retargeted onto the shipped human model's skeleton (LaFAN1's),
    calibrated on the clip's own natural stance and the model's (inference/retarget.py, as training does)."""
    model = _shipped_human()
    reference = np.asarray(json.loads(model.metadata["betwixt.reference_pose"]))
    onto = Retargeting.build(motion.skeleton, model.skeleton, natural_pose([motion]), reference, name=motion.name)
    return onto(motion)


def _shipped_human():
    return open_model(ROOT / "inference" / "models" / "rtn-human.onnx")


BIOVISION = {f"{s}{old}": f"{s}{new}" for s in SIDES for old, new in (
    ("Shoulder", "Collar"), ("Arm", "Shoulder"), ("ForeArm", "Elbow"), ("Hand", "Wrist"), ("UpLeg", "Hip"),
    ("Leg", "Knee"), ("Foot", "Ankle"))} | {"LowerBack": "Chest", "Spine": "Chest2", "Spine1": "Chest3"}
BANDAI = "bandai1.zip:dataset-1_{}_001.bvh"
DOG = "dog-mann.zip:{}.bvh"     # MANN's test split (training/mann/data.py TEST_CLIPS): 60 fps, cm

CASES = [
    Case("bandai-walk", "Bandai-1 walk, 'old' style", BANDAI.format("walk_old"), 0, 285),
    Case("bandai-run", "Bandai-1 run, 'happy' style", BANDAI.format("run_happy"), 0, 140),
    Case("bandai-dance", "Bandai-1 dance (short), frames 300-600", BANDAI.format("dance-short_normal"), 300, 600),
    Case("bandai-kick", "Bandai-1 kick", BANDAI.format("kick_normal"), 29, 329),
    Case("cmu-120", "CMU 01_01 (jumps) at its own 120 fps, frames 240-1440", "cmu-01_01.bvh", 240, 1440,
         units=CMU_UNIT),
    Case("cmu-30", "CMU 01_01, the same 10 s resampled to 30 fps before import", "cmu-01_01.bvh", 240, 1440,
         units=CMU_UNIT, fps=30),
    Case("biovision", "CMU 01_01 at 30 fps as another studio's Biovision layout: LeftHip, LeftKnee, LeftAnkle, "
         "LeftCollar, LeftShoulder, LeftElbow, Chest2..., no toes", "cmu-01_01.bvh", 240, 1440, units=CMU_UNIT,
         fps=30, rig=edits(deleted(["LeftToeBase", "RightToeBase"]), renamed(BIOVISION))),
    Case("biovision-lafan1", "the LaFAN1 clip on the same toe-less Biovision layout: retargeted onto CMU 01_01's "
         "skeleton (its proportions, rest pose and units), bones renamed and toes deleted as above", CLIP, 1000,
         1300, units=CMU_UNIT, onto="cmu-01_01.bvh", rig=edits(deleted(["LeftToeBase", "RightToeBase"]),
                                                              renamed(BIOVISION))),
    Case("lafan1", "LaFAN1 obstacles1_subject5, frames 1000-1300, as imported", CLIP, 1000, 1300),
    Case("mixamo", "the LaFAN1 clip, bones renamed mixamorig:Hips, mixamorig:LeftToeBase, ...", CLIP, 1000, 1300,
         rig=renamed(MIXAMO)),
    Case("mixamo-gltf", "a Mixamo-style character (mixamorig: bones in cm, arms hanging at rest, scale 0.01 under "
         "an Empty) through Blender's glTF exporter and importer, the LaFAN1 clip", CLIP, 1000, 1300,
         make=character("glb")),
    Case("mixamo-dance", "the Mixamo-style glTF character dancing: Bandai-1's dance (short), frames 300-600, "
         "retargeted onto the model's skeleton", BANDAI.format("dance-short_normal"), 300, 600, shape=onto_model,
         make=character("glb")),
    Case("mixamo-fbx", "the same character through Blender's FBX exporter and importer (default options: "
         "bones oriented as FBX stores them, a leaf bone _end at each chain's end), the LaFAN1 clip", CLIP,
         1000, 1300, make=character("fbx")),
    Case("rigify", "name detection only: the LaFAN1 clip, bones renamed DEF-spine, DEF-thigh.L, ...", CLIP, 1000,
         1300, rig=renamed(RIGIFY)),
    Case("rigify-ik", "a rig generated by Rigify from Blender's human metarig, the LaFAN1 clip keyed on its "
         "controls, IK limbs", CLIP, 1000, 1300, make=rigify(0)),
    Case("rigify-fk", "the generated Rigify rig, the LaFAN1 clip keyed on its controls, FK limbs", CLIP, 1000,
         1300, make=rigify(1)),
    Case("rigify-cmu", "the generated Rigify rig, IK limbs, keyed on its controls with another lab's capture: CMU "
         "01_01 at 30 fps, frames 240-1440, retargeted onto the model's skeleton", "cmu-01_01.bvh", 240, 1440,
         units=CMU_UNIT, fps=30, shape=onto_model, make=rigify(0)),
    Case("rigify-blocking", "the generated Rigify rig, IK limbs, the LaFAN1 clip keyed on its controls every 5 "
         "frames (blocking) around the gap", CLIP, 1000, 1300, every=5, make=rigify(0)),
    Case("metarig", "Blender's human metarig (plain bones, its own rest pose and rolls), the LaFAN1 clip keyed "
         "on its bones", CLIP, 1000, 1300, make=rigify(1, meta=True)),
    Case("bone-names", "the LaFAN1 clip, bones renamed Bone, Bone.001, ...: Detect must fail", CLIP, 1000, 1300,
         rig=numbered),
    Case("no-toes", "the LaFAN1 clip, toe bones deleted", CLIP, 1000, 1300, rig=deleted(["LeftToe", "RightToe"])),
    Case("one-spine", "the LaFAN1 clip, Spine1 and Spine2 merged into Spine", CLIP, 1000, 1300,
         shape=merged("Spine", ["Spine1", "Spine2"])),
    Case("fbx-layout", "the LaFAN1 clip as FBX rigs come: bones Y-up in cm, object turned X 90, Z 35, scale 0.01",
         CLIP, 1000, 1300, units=1.0, y_up=True, rig=placed((90, 0, 35), (0.01, 0.01, 0.01))),
    Case("non-uniform", "the LaFAN1 clip, object scaled (1.1, 0.9, 1.2) and turned Z -40", CLIP, 1000, 1300,
         rig=placed((0, 0, -40), (1.1, 0.9, 1.2))),
    Case("fps24", "the LaFAN1 clip resampled to 24 fps, a 24 fps scene", CLIP, 1000, 1300, fps=24),
    Case("still", "the LaFAN1 clip stopping dead in a 2 s hold at clip frame 100: the gaps start at the hold, "
         "the motion runs into the first key", CLIP, 1000, 1300, shape=held(100, 60), gap_at=100),
    Case("still-context", "the LaFAN1 clip with a 3.3 s hold at clip frame 100, the gaps inside it: keys and "
         "context one still pose", CLIP, 1000, 1300, shape=held(100, 100), gap_at=112),
    Case("in-place", "the LaFAN1 clip in place: its root held over one spot on the ground, the legs stepping",
         CLIP, 1000, 1300, shape=in_place),
    Case("blocking", "the LaFAN1 clip keyed every 5 frames (blocking) around the gap", CLIP, 1000, 1300, every=5),
    Case("dog-walk", "dog D1_008_KAN01_002 (test split, a walk), frames 0-600, on its own rig",
         DOG.format("D1_008_KAN01_002"), 0, 600),
    Case("rigify-wolf", "a rig generated by Rigify from Blender's wolf metarig, dog D1_008_KAN01_002 (test split, a "
         "walk), frames 0-600, keyed on its controls, IK legs", DOG.format("D1_008_KAN01_002"), 0, 600,
         make=rigify(0, metarig="wolf")),
    Case("dog-010", "dog D1_010_KAN01_003 (test split), all 203 frames", DOG.format("D1_010_KAN01_003"), 0, 203),
    Case("dog-ex04", "dog D1_ex04_KAN02_003 (test split), all 498 frames", DOG.format("D1_ex04_KAN02_003"), 0, 498),
    Case("dog-009", "dog D1_009_KAN01_002 (test split), all 548 frames", DOG.format("D1_009_KAN01_002"), 0, 548),
    Case("dog-058", "dog D1_058_KAN01_001 (test split), frames 600-1200", DOG.format("D1_058_KAN01_001"), 600, 1200),
]


def load_clip(case, mocap):
    """The case's frames as a Motion (resampled and reshaped as the case says)."""
    archive, _, member = case.source.rpartition(":")
    if archive:
        with zipfile.ZipFile(mocap / archive) as z:
            motion = parse_bvh(z.read(member), member)
    else:
        motion = parse_bvh((mocap / member).read_bytes(), member)
    motion = motion.frames(case.start, case.stop)
    if case.fps:
        motion = motion.resample(case.fps)
    if case.onto:
        body = parse_bvh((mocap / case.onto).read_bytes(), case.onto)
        motion = Retargeting.build(motion.skeleton, body.skeleton, natural_pose([motion]), natural_pose([body]),
                                   name=motion.name)(motion)
    return case.shape(motion) if case.shape else motion


# --- Betwixt in Blender ---------------------------------------------------------------------------

@dataclass
class Betwixt:
    """The enabled add-on: its module name, how it got there, and its modules the suite calls."""

    module: str
    how: str
    plant: bool = True           # Fill Gaps' and Decompress's Plant Feet (on by default, as in the add-on)
    pose_io: object = field(init=False)
    preferences: object = field(init=False)
    plan: object = field(init=False)
    edit: object = field(init=False)
    writing: object = field(init=False)
    controls: object = field(init=False)

    def __post_init__(self):
        for name in ("pose_io", "preferences", "plan", "writing", "controls"):
            setattr(self, name, importlib.import_module(f"{self.module}.addon.{name}"))
        self.edit = importlib.import_module(f"{self.module}.inference.edit")

    def capture_model(self, clip):
        """The shipped model of ``clip``'s skeleton (LaFAN1's, the dog's): it keys the case's clip onto its rig,
        whatever model is under test (``--model`` may be of another skeleton, CMU's)."""
        modelfile = importlib.import_module(f"{self.module}.inference.modelfile")
        return modelfile.find_model(clip.skeleton, kind="rtn")


def build_zip(folder):
    """This platform's extension zip, or ``(None, why not)``."""
    import build_extension
    target = PLATFORMS.get((sys.platform, platform.machine()))
    if target is None:
        return None, f"no extension platform for {sys.platform} {platform.machine()}"
    try:
        [built] = build_extension.build([target], out=folder, log=lambda line: None)
    except (build_extension.BuildError, OSError) as e:
        return None, f"the zip could not be built: {str(e).splitlines()[0]}"
    return built, None


def isolate_user_folders(folder):
    """Blender's user folders (preferences, extensions) and HOME in ``folder``, before bpy is imported."""
    os.environ["BLENDER_USER_RESOURCES"] = str(folder / "blender")
    os.environ["HOME"] = str(folder)
    global bpy
    import bpy


def install_zip(path):
    """Install the zip with Blender's own operator and enable it, as the Install from Disk button does.

    Blender puts the zip's onnxruntime wheel in the extensions' site-packages; it goes first on the
    path, so the add-on runs the onnxruntime it ships, not one the suite's Python happens to have.
    """
    import addon_utils
    result = bpy.ops.extensions.package_install_files(filepath=str(path), repo="user_default",
                                                      enable_on_install=True)
    module = "bl_ext.user_default.betwixt"
    if result != {"FINISHED"} or addon_utils.check(module) != (True, True):
        raise SystemExit(f"installing {path.name} failed ({result}); see Blender's messages above")
    site = Path(bpy.utils.user_resource("EXTENSIONS", path=".local")) / "lib" / \
        f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    if site.is_dir() and "onnxruntime" not in sys.modules:
        sys.path.insert(0, str(site))
    return Betwixt(module, f"extension zip {path.name}, installed with extensions.package_install_files")


def enable_source(folder, why):
    """The repository as the add-on ``betwixt`` (through a symlink), as tools/main_job.py enables it."""
    import addon_utils
    os.symlink(ROOT, folder / "betwixt")
    sys.path.insert(0, str(folder))
    if addon_utils.enable("betwixt", default_set=True) is None:
        raise SystemExit("the Betwixt add-on failed to register (see above)")
    return Betwixt("betwixt", f"source folder {ROOT} enabled as an add-on ({why})")


@contextmanager
def quiet(log):
    """Blender's importer and the operators' reports print to the process's stdout: into ``log`` instead,
    so the progress bar and the table stay readable."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(log, "a") as f:
        os.dup2(f.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def import_case(case, clip, folder, betwixt):
    """The clip through Blender's BVH importer into an empty scene, in metres, and the rig edits made; or
    the case's own rig keyed with it."""
    bpy.ops.wm.read_homefile(use_empty=True)
    if case.make:
        bpy.context.scene.render.fps = int(round(clip.fps))
        obj = case.make(betwixt, clip)
        obj.name = case.name
        return obj
    path = folder / f"{case.name}.bvh"
    write_bvh(clip, path)
    axes = {"axis_forward": "Y", "axis_up": "Z"} if case.y_up else {}   # Blender's own axes: no conversion
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=case.units, update_scene_fps=True, **axes)
    obj = bpy.context.active_object
    obj.name = case.name
    if case.rig:
        case.rig(obj)
    return obj


def capture_keys(betwixt, obj):
    """{(data path, index): (n, 2) frame and value} of every curve: the capture, to start each run from."""
    out = {}
    for key, fc in betwixt.pose_io.Channels(obj).curves().items():
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        out[key] = co.reshape(-1, 2)
    return out


def set_keys(betwixt, obj, capture, keep=None, select=()):
    """The capture's keys on the frames ``keep(frames)`` allows (all by default), ``select`` selected;
    Bézier with auto-clamped handles, Blender's defaults for an animator's keys (the importer makes
    them linear)."""
    enum = bpy.types.Keyframe.bl_rna.properties
    bezier = enum["interpolation"].enum_items["BEZIER"].value
    clamped = enum["handle_left_type"].enum_items["AUTO_CLAMPED"].value
    for key, fc in betwixt.pose_io.Channels(obj).curves().items():
        co = capture[key] if keep is None else capture[key][keep(capture[key][:, 0])]
        points = fc.keyframe_points
        points.clear()
        points.add(len(co))
        points.foreach_set("co", co.reshape(-1))
        points.foreach_set("interpolation", np.full(len(co), bezier, np.int32))
        points.foreach_set("handle_left_type", np.full(len(co), clamped, np.int32))
        points.foreach_set("handle_right_type", np.full(len(co), clamped, np.int32))
        points.foreach_set("select_control_point", np.isin(co[:, 0], list(select)))
        fc.update()


def world_points(obj, frames, bones, tails=()):
    """World positions (cm) on ``frames`` of the heads of ``bones`` and then the tails of ``tails`` (pose
    bone indices; a quadruped's paws are the tails of its feet' bones, the BVH's End Sites):
    (frames, bones + tails, 3)."""
    pose = obj.pose.bones
    ends = np.empty((len(frames), 2, len(pose), 3), dtype=np.float32)
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(int(f))
        pose.foreach_get("head", ends[i, 0].reshape(-1))
        pose.foreach_get("tail", ends[i, 1].reshape(-1))
    points = np.concatenate([ends[:, 0, bones], ends[:, 1, list(tails)]], axis=1).astype(np.float64)
    world = np.array(obj.matrix_world)
    return CM * (points @ world[:3, :3].T + world[:3, 3])


# --- the runs -------------------------------------------------------------------------------------

def inside(frames, gaps):
    """Which of ``frames`` lie strictly inside one of ``gaps`` ((a, b) key pairs)."""
    out = np.zeros(len(frames), bool)
    for a, b in gaps:
        out |= (frames > a) & (frames < b)
    return out


@dataclass(frozen=True)
class Run:
    """One operator call on one set of remaining keys."""

    operator: str                # "fill_gaps" or "decompress"
    label: str                   # the gap, as the table shows it; runs with the same label make one row
    every: int                   # the keys left are on every Nth frame from frame 1 ...
    gaps: tuple                  # ... and not inside these (a, b): the stretches Betwixt generates
    select: tuple = ()           # frames whose keys are selected (Fill Gaps)
    still: bool = False          # the keys around the gap are identical: measure the hips' drift

    def keep(self, frames):
        """Which of ``frames`` keep their capture key in this run."""
        return ((frames - 1) % self.every == 0) & ~inside(frames, self.gaps)


def gap_starts(case, n_frames, n, fps):
    """Scene frames of the first key of an ``n``-frame gap: at the hold, or POSITIONS places spread over
    the clip with 0.4 s of capture kept on either side (the model's context), on the case's key grid."""
    if case.gap_at is not None:
        return [case.gap_at + 1]
    margin = int(np.ceil(0.4 * fps))
    first, last = 1 + margin, n_frames - margin - n
    starts = np.linspace(first, max(first, last), POSITIONS)
    return sorted({int(1 + case.every * np.ceil((s - 1) / case.every)) for s in starts})


def runs_of(case, n_frames, fps):
    """Fill Gaps of 0.5, 1 and 2 s (each at several places) and one Decompress, in scene frames (the
    importer keys the clip from frame 1)."""
    out = []
    for seconds in GAPS:
        n = int(round(seconds * fps))
        for a in gap_starts(case, n_frames, n, fps):
            out.append(Run("fill_gaps", f"{seconds:g} s ({n} fr)", case.every, ((a, a + n),), (a, a + n),
                           still=case.gap_at is not None))
    every = case.every if case.every > 1 else int(round(fps))
    keys = np.arange(1, n_frames + 1, every).tolist()
    label = f"1 key/s ({every} fr)" if case.every == 1 else f"key every {every} fr"
    out.append(Run("decompress", label, every, tuple(zip(keys[:-1], keys[1:], strict=True))))
    return out


def call(betwixt, operator, obj):
    """The operator on ``obj`` as a script runs it (Fill Gaps and Decompress with the suite's Plant Feet);
    (seconds, None) or (seconds, its error's first line)."""
    bpy.context.view_layer.objects.active = obj
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)
    options = {"plant_feet": betwixt.plant} if operator in ("fill_gaps", "decompress") else {}
    start = time.perf_counter()
    try:
        result = getattr(bpy.ops.betwixt, operator)(**options)
        error = None if result == {"FINISHED"} else f"{operator} returned {sorted(result)}"
    except RuntimeError as e:   # Blender turns an operator's error report into RuntimeError
        error = str(e).strip().splitlines()[0].removeprefix("Error: ")
    return time.perf_counter() - start, error


def key_change(before, after, gaps):
    """The largest change of a key value on a frame outside ``gaps`` (inf if such a key went missing)."""
    worst = 0.0
    for key, old in before.items():
        new = after.get(key)
        if new is None:
            return float("inf")
        lookup = dict(zip(new[:, 0].tolist(), new[:, 1].tolist(), strict=True))
        for f, v in old[~inside(old[:, 0], gaps)].tolist():
            worst = max(worst, abs(lookup.get(f, float("inf")) - v))
    return worst


# --- the measures ---------------------------------------------------------------------------------

@dataclass
class Capture:
    """What the measures need from a case: the capture's world points and which of them are what."""

    bones: list                  # pose bone indices of the mapped bones, whose heads are measured ...
    tails: list                  # ... and those whose tails are too (a quadruped's paws)
    truth: np.ndarray            # (frames, bones + tails, 3) cm, all scene frames from 1
    feet: list                   # indices into the points: a human's bones mapped to feet and toes, a quadruped's paws
    hips: int                    # index of the bone mapped to the model's root
    ground: np.ndarray           # per foot, cm
    height: float                # cm


def mapped_joints(obj):
    """The model joints Detect mapped on ``obj`` and their pose bone indices, in the model's order."""
    pairs = [(i.joint, obj.pose.bones.find(i.bone)) for i in obj.data.betwixt_joints if i.bone]
    return [j for j, _ in pairs], [b for _, b in pairs]


def capture_of(obj, joints, bones, model, frames):
    """The capture's points on ``frames``, with its feet and hips: a human's feet as the add-on reads the
    model's joint names (roles 'foot' and 'toe'), a quadruped's the paws, the tails of the bones mapped to
    the joints they hang from (``lab/metrics.py``'s End Sites); the hips are the model's root."""
    tails = [bones[joints.index(p)] for p in PAWS if p in joints] if is_quadruped(model.skeleton) else []
    feet = ([len(bones) + k for k in range(len(tails))] if tails else
            [k for k, j in enumerate(joints) if describe(j)[1] in ("foot", "toe")])
    truth = world_points(obj, frames, bones, tails)
    ground = np.percentile(truth[:, feet, 2], 2, axis=0)
    return Capture(bones, tails, truth, feet, joints.index(model.skeleton.names[0]), ground, height(truth, up="Z"))


def step_speeds(pos, steps):
    """The fastest joint's speed (cm per frame) on each step (frame rows t-1 to t)."""
    return np.linalg.norm(pos[steps] - pos[steps - 1], axis=-1).max(axis=-1)


def foot_skating(pos, steps, capture):
    """metrics.md foot skating (cm per frame) of each foot on each step, with the capture's ground."""
    feet = pos[:, capture.feet]
    v = np.linalg.norm(feet[steps, :, :2] - feet[steps - 1, :, :2], axis=-1)
    h = (feet[steps, :, 2] + feet[steps - 1, :, 2]) / 2 - capture.ground
    return v * np.clip(2.0 - 2.0 ** (h / SKATE_H), 0.0, 1.0)


def samples(capture, run, bezier, betwixt):
    """One run's raw numbers, pooled over the runs of a row by :func:`pooled`: per generated frame and
    joint the distance to the capture, per step (into, through and out of the gaps) the fastest joint's speed
    and the feet's skating, the hips' drift, what moved outside the gaps."""
    made = inside(np.arange(1, len(capture.truth) + 1), run.gaps)
    steps = np.flatnonzero(made[1:] | made[:-1]) + 1
    versions = {"betwixt": betwixt, "bezier": bezier, "capture": capture.truth}
    out = {"distance": {k: np.linalg.norm(p[made] - capture.truth[made], axis=-1).ravel() for k, p in versions.items()},
           "speed": {k: step_speeds(p, steps) for k, p in versions.items()},
           "skating": {k: foot_skating(p, steps, capture).ravel() for k, p in versions.items()},
           "outside_pose_cm": float(np.linalg.norm(betwixt[~made] - bezier[~made], axis=-1).max(initial=0.0))}
    if run.still:
        a = run.gaps[0][0]
        out["drift"] = {k: 100 * float(np.linalg.norm(p[made, capture.hips] - p[a - 1, capture.hips], axis=-1).max())
                        / capture.height for k, p in versions.items()}
    return out


def ratio(a, b):
    """``a / b``, or None where ``b`` is nothing (a capture standing still has no PEAK to compare with)."""
    return a / b if b > 1e-9 else None


def pooled(runs):
    """A table row's numbers from its runs' :func:`samples`."""
    def joined(name, k):
        return np.concatenate([r[name][k] for r in runs])
    versions = ("betwixt", "bezier", "capture")
    error = {k: float(joined("distance", k).mean()) for k in ("betwixt", "bezier")}
    peaks = {k: float(np.percentile(joined("speed", k), 99)) for k in versions}
    row = {"error_cm": error, "error_ratio": ratio(error["betwixt"], error["bezier"]), "peak_cm_per_frame": peaks,
           "peak_ratio": {k: ratio(peaks[k], peaks["capture"]) for k in ("betwixt", "bezier")},
           "skating_cm_per_frame": {k: float(joined("skating", k).mean()) for k in versions},
           "outside_pose_cm": max(r["outside_pose_cm"] for r in runs),
           "outside_keys": max(r["outside_keys"] for r in runs)}
    if "drift" in runs[0]:
        row["hips_drift_pct"] = {k: max(r["drift"][k] for r in runs) for k in versions}
    return row


# --- one case -------------------------------------------------------------------------------------

def run_case(case, betwixt, mocap, folder, out, bar):
    """Every run of one case, as table rows (one row with the error where Detect or an operator fails)."""
    start = time.perf_counter()
    clip = load_clip(case, mocap)
    obj = import_case(case, clip, folder, betwixt)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    runs = runs_of(case, clip.n_frames, fps)
    bar.total += len(runs) - expected_runs(case)   # a short clip has fewer places for a long gap
    bar.refresh()
    base = {"case": case.name, "frames": clip.n_frames, "fps": round(fps, 3)}
    keys = capture_keys(betwixt, obj)
    joints, bones, failed = detect(obj, runs[0], betwixt, keys)
    base["mapped"] = f"{len(joints)}/{len(obj.data.betwixt_joints)}"
    base["mapping"] = {i.joint: i.bone for i in obj.data.betwixt_joints}
    if failed:
        bar.update(len(runs))
        rows = [dict(base, operator=failed[0], gap="", runs=1, seconds=failed[1], error=failed[2])]
    else:
        rows = [dict(base, **r) for r in measured(betwixt, obj, keys, runs, clip.n_frames, joints, bones, out, bar)]
    for r in rows:
        r["case_seconds"] = time.perf_counter() - start
    return rows


def measured(betwixt, obj, keys, runs, n_frames, joints, bones, out, bar):
    """The runs, each from the capture's ``keys``, pooled into one row per operator and gap length, with
    the model that filled them (of the skeleton the rig plays, the first that reaches their gaps)."""
    model = betwixt.preferences.model_for(bpy.context, obj, "fill")
    set_keys(betwixt, obj, keys)
    capture = capture_of(obj, joints, bones, model, np.arange(1, n_frames + 1))
    view = view_angles(betwixt, obj, model, joints, capture)
    groups = {}
    for i, run in enumerate(runs):
        groups.setdefault((run.operator, run.label), []).append(one_run(betwixt, obj, keys, run, capture))
        if out:
            bpy.ops.wm.save_as_mainfile(filepath=str(out / f"{obj.name}-{i + 1:02d}-{run.operator}.blend"), copy=True)
        bar.update(1)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    filled_by = {(r.operator, r.label): betwixt.preferences.model_for(   # a dog's gaps over two seconds: MANN's
        bpy.context, obj, "fill", fits=lambda m, r=r: betwixt.edit.reaches(m, r.gaps, fps)).name for r in runs}
    return [dict(operator=op, gap=label, model=filled_by[op, label], view_deg=view, **row(results))
            for (op, label), results in groups.items()]


def view_angles(betwixt, obj, model, joints, capture):
    """``(mean, worst)`` degrees between each mapped bone as the model sees the rig (the add-on's reading and
    calibration: joint to mapped child, in the model's view of the whole clip) and as Blender shows it (the
    bones' evaluated heads): whether the model reads the pose the rig shows, whatever its rest pose,
    rolls, units, parents or up axis. A chain's bone from joint to child; a branching joint (hips, chest)
    by the line across its two sided children (its directions to each are the bodies' proportions); bones
    of some length only; the mean over frames per bone; the mean over bones, the worst and its joint;
    None where the add-on cannot read the rig."""
    reading = betwixt.plan
    try:
        rig, retarget, detected = reading.read_retarget(obj, model)
    except Exception:   # a rig the operators refuse (its row says why): no view of it
        return None
    frames = np.arange(1, len(capture.truth) + 1)
    plan = reading.plan_over(betwixt.pose_io.Channels(obj), model, rig, retarget, detected, [(1, 2)],
                             bpy.context.scene.render.fps, frames)
    seen = forward_kinematics(plan.motion.rotations, plan.motion.positions, model.skeleton.parents)[1]
    names = list(model.skeleton.names)
    angles = []
    for k, joint in enumerate(joints):
        j = names.index(joint)
        children = [names.index(n) for n in joints if model.skeleton.parents[names.index(n)] == j]
        sided = [c for c in children if describe(names[c])[0]]
        if len(children) == 1:
            a, b = j, children[0]
        elif len(sided) == 2:   # a branching joint (hips, chest): the line across its two sides
            a, b = sided
        else:
            continue
        ours = (seen[:, b] - seen[:, a]) @ retarget.axes.T
        theirs = capture.truth[:, joints.index(names[b])] - capture.truth[:, joints.index(names[a])]
        model_height = np.ptp(seen[0], axis=0).max()
        if np.linalg.norm(theirs, axis=-1).min() > 0.02 * capture.height and \
                np.linalg.norm(ours, axis=-1).min() > 0.02 * model_height:   # a bone of no length points nowhere
                                                                            # (CMU's LowerBack sits on its Hips)
            cos = np.sum(ours * theirs, -1) / np.maximum(np.linalg.norm(ours, axis=-1) *
                                                       np.linalg.norm(theirs, axis=-1), 1e-9)
            angles.append((joint, float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).mean())))
    worst = max(angles, key=lambda a: a[1], default=None)
    return (float(np.mean([a for _, a in angles])), worst[1], worst[0]) if angles else None


def detect(obj, first, betwixt, keys):
    """The add-on's Detect on ``obj``: (mapped joints, their bones, None), or where the model's root joint
    stays unmapped, the error the first run's operator gives: (..., (operator, seconds, error text))."""
    seconds, error = call(betwixt, "detect_mapping", obj)
    joints, bones = mapped_joints(obj)
    if error:
        return joints, bones, ("detect_mapping", seconds, error)
    model = betwixt.preferences.model_for(bpy.context, obj, "fill")
    if model.skeleton.names[0] in joints:
        return joints, bones, None
    set_keys(betwixt, obj, keys, first.keep, first.select)
    seconds, error = call(betwixt, first.operator, obj)
    return joints, bones, (first.operator, seconds, error or f"{model.skeleton.names[0]} is not mapped")


def expected_runs(case):
    """Runs of a case before its clip is read, for the progress bar (fewer when a long gap has fewer places)."""
    return len(GAPS) * (1 if case.gap_at is not None else POSITIONS) + 1


def row(results):
    """One table row from the results of its runs: the first error, or the pooled numbers."""
    seconds = float(np.mean([r["seconds"] for r in results]))
    failed = [r["error"] for r in results if r["error"]]
    if failed:
        return {"runs": len(results), "seconds": seconds, "error": failed[0]}
    return {"runs": len(results), "seconds": seconds, "error": None, **pooled(results)}


def one_run(betwixt, obj, keys, run, capture):
    """Cut the keys, measure Bézier, run the operator, measure Betwixt and what else it changed."""
    frames = np.arange(1, len(capture.truth) + 1)
    set_keys(betwixt, obj, keys, run.keep, run.select)
    before = capture_keys(betwixt, obj)
    bezier = world_points(obj, frames, capture.bones, capture.tails)
    seconds, error = call(betwixt, run.operator, obj)
    result = {"seconds": seconds, "error": error}
    if not error:
        result.update(samples(capture, run, bezier, world_points(obj, frames, capture.bones, capture.tails)))
        result["outside_keys"] = key_change(before, capture_keys(betwixt, obj), run.gaps)
    return result


# --- the table ------------------------------------------------------------------------------------

def fmt(value, digits=2):
    return "—" if value is None else f"{value:.{digits}f}"


def table(rows):
    """The Markdown table of every row."""
    head = ["case", "operator", "gap × places", "mapped", "error ratio Betwixt/Bézier (cm: Betwixt / Bézier)",
            "PEAK ÷ capture: Betwixt (Bézier)", "skating cm/fr: Betwixt / Bézier / capture",
            "hips drift % height: Betwixt / Bézier", "outside gaps: keys Δ / pose cm", "s per call"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        gap = f"{r['gap']} ×{r['runs']}" if r["gap"] else "—"
        cells = [r["case"], r["operator"].replace("_", " "), gap, r["mapped"]]
        if r["error"]:
            cells += [f"**failed**: {r['error']}", "", "", "", ""]
        else:
            e, p, s = r["error_cm"], r["peak_ratio"], r["skating_cm_per_frame"]
            drift = r.get("hips_drift_pct")
            cells += [f"**{fmt(r['error_ratio'])}** ({e['betwixt']:.1f} / {e['bezier']:.1f})",
                      f"{fmt(p['betwixt'])} ({fmt(p['bezier'])})",
                      f"{s['betwixt']:.3f} / {s['bezier']:.3f} / {s['capture']:.3f}",
                      f"{drift['betwixt']:.1f} / {drift['bezier']:.1f}" if drift else "",
                      f"{r['outside_keys']:.2g} / {r['outside_pose_cm']:.2f}"]
        lines.append("| " + " | ".join(str(c) for c in cells + [f"{r['seconds']:.2f}"]) + " |")
    return "\n".join(lines)


def timing_table(rows):
    """Per case: what it is, its length and rate, the model that filled it, and its wall time (import,
    Detect, every run, measures)."""
    seen = {}
    for r in rows:
        seen.setdefault(r["case"], (r["frames"], r["fps"], r.get("model", "—"), r.get("case_seconds"),
                                    r.get("view_deg")))
    lines = ["| case | about | frames | fps | model | bones in the model's view, ° off: mean / worst | seconds |",
             "|---|---|---|---|---|---|---|"]
    about = {c.name: c.about for c in CASES}
    for name, (frames, fps, model, seconds, view) in seen.items():
        angles = f"{view[0]:.1f} / {view[1]:.1f} ({view[2]})" if view else "—"
        lines.append(f"| {name} | {about[name]} | {frames} | {fps:g} | {model} | {angles} | {fmt(seconds, 1)} |")
    return "\n".join(lines)


# --- the command ----------------------------------------------------------------------------------

def parse(argv):
    parser = argparse.ArgumentParser(prog="tools/rig_suite.py", description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="the folder holding mocap/")
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--cases", help="comma-separated, of: " + ", ".join(c.name for c in CASES))
    parser.add_argument("--out", type=Path, help="keep a .blend of every run, and Blender's log, in this folder")
    parser.add_argument("--model", type=Path, help="an .onnx model file instead of the shipped default")
    parser.add_argument("--from-source", action="store_true", help="enable the source folder, not the zip")
    parser.add_argument("--no-plant", dest="plant", action="store_false",
                        help="Fill Gaps and Decompress with Plant Feet off (feet as the model made them)")
    args = parser.parse_args(argv)
    names = [c.name for c in CASES]
    chosen = args.cases.split(",") if args.cases else names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        parser.error(f"unknown case {', '.join(unknown)}; the cases are {', '.join(names)}")
    args.cases = [c for c in CASES if c.name in chosen]
    return args


def setup(args, folder):
    """Build the zip (with the real HOME: the wheel cache is there), isolate Blender, install Betwixt."""
    built, why = (None, "--from-source") if args.from_source else build_zip(folder / "dist")
    isolate_user_folders(folder)
    betwixt = install_zip(built) if built else enable_source(folder, why)
    betwixt.plant = args.plant
    if args.model:
        bpy.context.preferences.addons[betwixt.module].preferences.rtn_file = str(args.model.resolve())
    return betwixt, betwixt.preferences.load_model(bpy.context)


def main(argv=None):
    """Set up Betwixt, run the cases (Blender's own output kept in a log), print the tables."""
    args = parse(argv)
    folder = Path(tempfile.mkdtemp(prefix="betwixt-rig-suite-"))
    try:
        betwixt, model = setup(args, folder)
        import onnxruntime
        print(f"Betwixt: {betwixt.how}\nmodel {model.name} ({model.path}); onnxruntime {onnxruntime.__version__} "
              f"from {Path(onnxruntime.__file__).parent}", flush=True)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
        log = (args.out or folder) / "blender.log"
        rows, start = [], time.perf_counter()
        total = sum(expected_runs(case) for case in args.cases)
        with tqdm(total=total, unit="run", file=sys.stderr) as bar:
            for case in args.cases:
                bar.set_description(case.name)
                with quiet(log):
                    rows += run_case(case, betwixt, args.shared / "mocap", folder, args.out, bar)
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(args, rows, seconds, betwixt, model)


def report(args, rows, seconds, betwixt, model):
    planted = "" if args.plant else ", Plant Feet off"
    print(f"\nRig suite, {date.today()}, {betwixt.how}, model {model.name}{planted}: {seconds / 60:.1f} min\n")
    print(table(rows) + "\n\n" + timing_table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"date": str(date.today()), "install": betwixt.how, "model": model.name, "plant_feet": args.plant,
                "seconds": seconds,
                "cases": {c.name: c.about for c in args.cases}}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=float))
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
