"""The operators: Fill Gaps, Decompress, Variants (and applying one, of them or of Continue's
continuations), bone mapping, training data export.

Each generating operator reads the active armature's action into the model's space (``prepare``),
runs the model over the gaps (``compute``, a worker thread in the user interface, see :mod:`.jobs`)
and writes the generated frames back as keys on the mapped bones (``finish``), all or nothing, as one
undo step. Unmapped bones, and channels the model does not drive, keep their keys.
"""

import json
from dataclasses import dataclass, replace
from pathlib import Path

import bpy
import numpy as np

from ..inference import contacts, guard, quat
from ..inference.bvh import read_bvh, write_bvh
from ..inference.check import check_result
from ..inference.errors import BetwixtError
from ..inference.mapping import describe
from ..inference.modelfile import KINDS, ModelError, runtime_class
from ..inference.motion import AXES, Motion, Skeleton
from . import controls, evaluated, mapping, transitions
from .jobs import JobOperator
from .pose_io import (Channels, KeyStyle, Snapshot, active_armature, key_frames, read_points, read_rig, sample,
                      world_matrix, write_bone_keys, write_points)
from .preferences import load_model, model_for
from .retarget import AXIS_CHANGE, MappingError, Retarget
from .rig import matrix_to_quat, quat_to_channels

VARIANT_OF = "betwixt_variant_of"
VARIANT_GAP = "betwixt_gap"
VARIANT_SLOT = "betwixt_slot"
VARIANT_INDEX = "betwixt_variant"


@dataclass
class Plan:
    """Everything ``compute`` and ``finish`` need, read from the scene by ``prepare``."""

    object_name: str
    action_name: str
    slot: str
    model: object
    rig: object
    retarget: object
    first: int                 # scene frame of row 0 of the arrays below
    gaps: list                 # (a, b) scene frames
    fps: float
    motion: Motion             # model space, one frame per scene frame
    location: np.ndarray       # rig channels (frames, bones, …)
    rotation: np.ndarray
    scale: np.ndarray
    raw: dict                  # rotation channels as keyed, per bone
    detected: dict             # a mapping found now, stored on success; None when it was stored
    options: dict = None       # for the model: variation, seed, blend (read on the main thread)
    count: int = 1             # transitions per gap (variants)
    plant: bool = True         # feet planted after the model (inference/contacts.py)
    momentum: list = None      # per gap: the velocity at both its keys is keyed (transitions.keyed_momentum)
    drive: object = None       # a control rig's controls that the keys go onto (controls.Drive)


STANCE_FRAMES = 60   # frames of an action read for the rig's natural stance (read_retarget)


def scene_fps(scene):
    return scene.render.fps / scene.render.fps_base


def read_plan(context, keys_from, serves="fill", kind=None):
    """Read the active armature for the gaps that ``keys_from(channels, bone names)`` chooses, with the
    model for its skeleton (of ``kind``, when given) that ``serves`` them (see :func:`.preferences.model_for`)."""
    obj = active_armature(context)
    channels = Channels(obj)
    model = model_for(context, obj, serves, kind)
    rig, retarget, detected = read_retarget(obj, model)
    fps = scene_fps(context.scene)
    bones = keyed_bones(obj, rig, retarget)
    gaps = keys_from(channels, bones)
    if gaps and not transitions.reaches(model, gaps, fps):
        model = model_for(context, obj, serves, kind, fits=lambda m: transitions.reaches(m, gaps, fps))
        rig, retarget, detected = read_retarget(obj, model)
    ratio = fps / model.layout.fps
    transitions.check_gaps(model, gaps, ratio)
    before, after = transitions.margins(model, ratio)
    plan = plan_over(channels, model, rig, retarget, detected, gaps, fps,
                     np.arange(gaps[0][0] - before, gaps[-1][1] + after + 1))
    plan.momentum = transitions.keyed_momentum(key_frames(channels, bones), gaps, ratio)
    return plan


def unusable(rig, frames, values):
    """Refuse ``values`` (frames, bones, …) read from the rig on scene ``frames`` where one is NaN or infinite,
    naming the first such bone and frame: a key the model cannot read."""
    bad = ~np.isfinite(values).all(axis=-1)
    if bad.any():
        row, bone = np.argwhere(bad)[0]
        raise BetwixtError(f"bone {rig.names[bone]!r} is not a number (NaN or infinite) on frame {int(frames[row])}"
                           f"{f' and {int(bad.sum()) - 1} more places' if bad.sum() > 1 else ''}; fix its key in the "
                           "Graph Editor (or delete it) and run Betwixt again")


def keyed_bones(obj, rig, retarget):
    """The bones whose keys make the gaps: the mapped ones; on a control rig, any bone (its deform bones
    are keyed through whichever controls the animator uses)."""
    if rig.source is not None:
        return [b.name for b in obj.pose.bones]
    return [rig.names[b] for b in retarget.bones]


def plan_over(channels, model, rig, retarget, detected, gaps, fps, frames, obj=None):
    """The :class:`Plan` of the ``gaps`` with the armature's channels read on the scene ``frames`` (whole,
    consecutive) and in model space: a plain rig's from its F-curves, a control rig's deform bones as
    Blender evaluates them (:mod:`.evaluated`), with the controls that drive them. ``channels`` None: the
    armature ``obj`` has no action yet, and its pose is read."""
    obj = channels.obj if channels is not None else obj
    action = channels.action.name if channels is not None else None
    drive = None
    if rig.source is None:
        location, rotation, scale, raw = sample(obj, channels, rig, frames, retarget.bones)
        unusable(rig, frames, np.concatenate([location, rotation, scale], axis=-1))
        pose = rig.pose(location, rotation, scale)
    else:
        real, bones = rig.source
        entries = controls.active(obj, channels, controls.entries_for(obj), gaps[0][0])
        index = {n: i for i, n in enumerate(real.names)}
        driving = [index[e.control] for e in entries if e.control in index]
        both = evaluated.pose_around(obj, frames, np.concatenate([bones, driving]).astype(np.int64), gaps)
        unusable(rig, frames, both[:, :len(bones)].reshape(len(frames), len(bones), -1))
        pose = both[:, :len(bones)]
        location, rotation, scale = evaluated.channels_of(rig, pose)
        raw = {}
        drive = controls.drive(real, [e for e in entries if e.control in index], rig, retarget.mapping,
                               list(model.skeleton.names), both[:, len(bones):], pose, int(frames[0]))
        if not len(drive.bones):
            raise MappingError(f"armature {obj.name!r}: its deform bones ({', '.join(rig.names[:3])}, ...) are "
                               "moved by constraints, and no control of its control map drives them; keys on "
                               "them would change nothing. Map the controls in the Betwixt panel (Control Map)")
    rotations, positions = retarget.to_model(pose)
    motion = Motion(model.skeleton, rotations, positions, model.layout.fps, name=action or obj.name)
    return Plan(obj.name, action, channels and channels.slot_identifier, model, rig, retarget, int(frames[0]),
                gaps, fps, motion, location, rotation, scale, raw, detected, drive=drive)


def read_retarget(obj, model):
    """``(rig, retarget, detected)``: the armature ``obj``'s bones, calibrated against ``model``'s skeleton
    through its bone mapping (stored, or ``detected`` now: see :func:`.mapping.mapping_for`), at rest and,
    where it is animated, in its natural stance (:meth:`.retarget.Retarget.build`). A mapping that cannot
    be used is one error naming the armature and the model whose skeleton it was mapped to."""
    rig = read_rig(obj)
    joints, detected = mapping.mapping_for(obj, model.skeleton, rig)
    place = model.layout
    try:
        if evaluated.driven(obj, rig, joints.values()):
            rig = evaluated.deform_rig(rig, joints, model.skeleton.parents)
            if rig is None:
                raise MappingError("a mapped bone comes before the bone of its joint's parent in the rig's bone "
                                   "order; re-enter Edit Mode once, or map the bones again")
            joints = {j: int(np.searchsorted(rig.source[1], b)) for j, b in joints.items()}
        retarget = Retarget.build(model.skeleton, rig, joints, world_matrix(obj), up=place.up,
                                  trajectory=place.trajectory, reference=reference_pose(model),
                                  moving=lambda: in_motion(obj, rig, sorted(joints.values())))
    except MappingError as e:
        raise MappingError(f"armature {obj.name!r} for model {model.name}: {e}") from None
    return rig, retarget, detected


def in_motion(obj, rig, bones):
    """Armature-space pose matrices (F, bones, 4, 4) of the rig on up to STANCE_FRAMES frames spread evenly
    from the first key to the last (of the ``bones``' curves; of any bone on a control rig, whose deform
    skeleton ``rig`` is then read as Blender evaluates it); None where the action has fewer than two."""
    if obj.animation_data is None or obj.animation_data.action is None:
        return None
    channels = Channels(obj)
    keys = key_frames(channels, [b.name for b in obj.pose.bones] if rig.source is not None
                      else [rig.names[b] for b in bones])
    if len(keys) < 2:
        return None
    frames = np.unique(np.round(np.linspace(keys[0], keys[-1], STANCE_FRAMES)))
    if rig.source is not None:
        return evaluated.pose_matrices(obj, frames, rig.source[1])
    location, rotation, scale, _ = sample(obj, channels, rig, frames, bones)
    return rig.pose(location, rotation, scale)


def reference_pose(model):
    """A natural pose of the model's skeleton from its metadata (local rotations), if the model has one."""
    text = model.metadata.get("betwixt.reference_pose")
    if not text:
        return None
    try:
        pose = np.asarray(json.loads(text), dtype=np.float64)
    except ValueError:
        return None
    return pose if pose.shape == (len(model.skeleton), 4) else None


def selected_gaps(channels, bones):
    keys = key_frames(channels, bones, selected=True)
    if len(keys) < 2:
        raise BetwixtError("select the keys on both sides of each gap to fill (at least two keys on "
                           "the mapped bones), in the Dope Sheet or Graph Editor")
    return transitions.gaps_between(keys)


def all_gaps(channels, bones):
    keys = key_frames(channels, bones)
    if len(keys) < 2:
        raise BetwixtError("the mapped bones have fewer than two keys; key at least a first and a last pose")
    return transitions.gaps_between(keys)


def resolve(plan):
    """The plan's armature and action, still there and unchanged in kind, on the main thread."""
    obj = bpy.data.objects.get(plan.object_name)
    if obj is None or obj.animation_data is None or obj.animation_data.action is None \
            or obj.animation_data.action.name != plan.action_name:
        raise BetwixtError(f"armature {plan.object_name!r} or its action {plan.action_name!r} changed while "
                           "Betwixt was working; nothing was written, run it again")
    return obj, Channels(obj)


def key_edits(plan, channels, motion, gaps, step):
    """``(rig, edits)``: the keys to write, (bone, channel, frames, values, ends) for
    :func:`~.pose_io.write_bone_keys`, on the mapped bones of a plain rig, or on a control rig's controls."""
    if plan.drive is None:
        return plan.rig, bone_edits(plan, motion, gaps, step)
    frames = np.concatenate([np.arange(a + step, b, step) for a, b in gaps] + [np.zeros(0, np.int64)])
    rows = frames - plan.first
    *_, pose = plan.retarget.to_rig(motion.rotations[rows], motion.positions[rows], plan.location[rows],
                                    plan.rotation[rows], plan.scale[rows])
    return plan.drive.rig, controls.edits(channels.obj, channels, plan.drive, frames, gaps, pose[:, plan.drive.follows])


def unfollowed_limbs(plan):
    """The deform bones of a control rig's hands and feet that no active control of its map follows."""
    if plan.drive is None:
        return []
    followed = set(plan.drive.follows.tolist())
    ends = {plan.retarget.mapping[j]: plan.model.skeleton.names[j] for j in plan.retarget.mapping
            if describe(plan.model.skeleton.names[j])[1] in ("hand", "foot")}
    return [f"{joint} ({plan.rig.names[b]})" for b, joint in ends.items() if b not in followed]


def bone_edits(plan, motion, gaps, step):
    """(bone, channel, frames, values, ends) for :func:`~.pose_io.write_bone_keys`."""
    frames = [np.arange(a + step, b, step) for a, b in gaps]
    counts = np.array([len(f) for f in frames])
    frames = np.concatenate(frames + [np.zeros(0, np.int64)])
    ends = np.unique([f for gap in gaps for f in gap])
    rows, end_rows = frames - plan.first, ends - plan.first
    location, rotation, _ = plan.retarget.to_rig(motion.rotations[rows], motion.positions[rows],
                                                 plan.location[rows], plan.rotation[rows], plan.scale[rows])
    bones = plan.retarget.bones.tolist()
    values = rotation_channels(plan, rotation, bones, [a for a, _ in gaps], counts)
    edits = []
    for k, b in enumerate(bones):
        edits.append((b, "rotation", frames, values[b], (ends, plan.raw[b][end_rows])))
        if int(plan.retarget.joints[k]) in plan.retarget.positional and not plan.rig.connected[b]:
            edits.append((b, "location", frames, location[:, b], (ends, plan.location[end_rows, b])))
    return edits


def rotation_channels(plan, rotation, bones, starts, counts):
    """{bone: rotation channel values (frames, 3|4)} of the quaternions ``rotation`` (frames, rig bones, 4).

    The frames are ``counts[i]`` frames of each gap in turn; in each gap every bone's channels continue
    from their keyed value on the gap's first key, ``starts[i]`` (Euler angles and quaternion signs
    have more than one value per rotation). Continuity runs frame by frame, so all gaps and all bones
    of one rotation mode go through it together: gaps side by side, padded to the longest.
    """
    gap = np.repeat(np.arange(len(counts)), counts)
    at = np.arange(len(gap)) - np.repeat(np.cumsum(counts) - counts, counts)   # frame within its gap
    padded = np.tile([1.0, 0.0, 0.0, 0.0], (max(counts, default=0), len(counts), len(bones), 1))
    padded[at, gap] = rotation[:, bones]
    out = {}
    for mode in set(plan.rig.rotation_modes[b] for b in bones):
        group = [k for k, b in enumerate(bones) if plan.rig.rotation_modes[b] == mode]
        previous = np.stack([plan.raw[bones[k]][np.asarray(starts) - plan.first] for k in group], axis=1)
        channels = quat_to_channels(padded[:, :, group], mode, previous)[at, gap]
        out.update((bones[k], channels[:, i]) for i, k in enumerate(group))
    return out


def planted(plan, motion):
    """``motion`` with its feet planted in the plan's gaps (inference/contacts.py) where the plan asks for it,
    on the rig's bone lengths (:meth:`.retarget.Retarget.on_rig`); speeds are judged at the scene's frame
    rate, one frame of ``motion`` per scene frame."""
    if not plan.plant:
        return motion
    gaps = [(a - plan.first, b - plan.first) for a, b in plan.gaps]
    out = contacts.plant(replace(plan.retarget.on_rig(motion), fps=plan.fps), gaps, plan.model.layout.height)
    return replace(motion, rotations=out.rotations)


def checked(plan, motion, gaps, path=None):
    """``motion`` (model space, one frame per scene frame from the plan's first) once the result check has
    passed it (:func:`..inference.check.check_result`): finite, its root within reach of the keys around
    ``gaps`` (scene frames) or of ``path`` (model ground points), no joint faster than any body moves.
    A result that fails is refused with the scene frames and joints, before anything is written."""
    rows = [(a - plan.first, b - plan.first) for a, b in gaps]
    generated = np.zeros(motion.n_frames, dtype=bool)
    for a, b in rows:
        generated[a + 1:b] = True
    place = plan.model.layout
    check_result(motion, place.height, AXES[place.up], generated=generated, gaps=rows if path is None else (),
                 path=path, frame=lambda f: f + plan.first, units_per_metre=getattr(plan.model, "units_per_metre", None),
                 fix="undo any odd keys around the gap, or try Plant Feet off or another model")
    return motion


def write_plan(plan, channels, motion, gaps, step, breakdown, path=None):
    """Key the generated frames, once the result check passed them; the number of frames keyed."""
    checked(plan, motion, gaps, path)
    rig, edits = key_edits(plan, channels, motion, gaps, step)
    write_bone_keys(channels, rig, edits, gaps, KeyStyle(breakdown=breakdown), pin=plan.drive is not None)
    if plan.detected is not None:
        mapping.store(channels.obj.data, plan.model.skeleton.names, plan.detected)
    return len(edits[0][2]) if edits else 0


class _Generate(JobOperator):
    step: bpy.props.IntProperty(name="Key Every", description="Key every frame (1) or every Nth frame of "
                                "each gap", default=1, min=1, soft_max=10)
    breakdown: bpy.props.BoolProperty(name="As Breakdowns", description="Mark the generated keys as "
                                      "Breakdown keys rather than Keyframes", default=False)
    blend: bpy.props.IntProperty(name="Target Blend", description="Frames over which the motion is pulled "
                                 "onto the next key (the whole gap when it is shorter; 0: the model's own, 10 "
                                 "frames for a human model, the whole gap for the dog's)", default=0, min=0,
                                 soft_max=60)
    variation: bpy.props.FloatProperty(name="Variation", description="How far the motion may stray from "
                                       "the most likely one (0: always the same)", default=0.0, min=0.0,
                                       soft_max=2.0)
    seed: bpy.props.IntProperty(name="Seed", description="Which variation (with Variation above 0)",
                                default=0, min=0)
    plant_feet: bpy.props.BoolProperty(name="Plant Feet", description="Hold feet that touch the ground where "
                                       "they stand (foot IK after the model)", default=True)

    serves = "fill"   # what the model must serve (see preferences.model_for)

    def read(self, context, keys_from, kind=None):
        """The plan, with this operator's options copied in: the worker thread never touches ``self``."""
        plan = read_plan(context, keys_from, self.serves, kind)
        plan.options = {"variation": self.variation, "seed": self.seed, "blend": self.blend or None}
        plan.plant = self.plant_feet
        return plan

    def compute(self, plan, progress, cancelled):
        return planted(plan, transitions.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps, progress,
                                              cancelled, plan.momentum, **plan.options))

    def finish(self, context, plan, result):
        obj, channels = resolve(plan)
        keyed = write_plan(plan, channels, result, plan.gaps, self.step, self.breakdown)
        place = plan.model.layout
        height = place.height
        findings = guard.check(result, [(a - plan.first, b - plan.first) for a, b in plan.gaps], height,
                               AXES[place.up])
        if findings:
            self.report({"WARNING"}, "Betwixt: " + guard.summary(findings, height, lambda f: f + plan.first))
        limbs = unfollowed_limbs(plan)
        if limbs:
            self.report({"WARNING"}, f"Betwixt: no control of the control map moves {', '.join(limbs)}, which keep "
                        "their keys' motion; add the limb's controls to the Control Map in the Betwixt panel")
        missing = plan.drive.missing() if plan.drive is not None else []
        if missing:
            shown = ", ".join(f"{bone} by {100 * cm:.0f} cm on frame {f}" for bone, f, cm in
                              sorted(set(missing), key=lambda m: -m[2])[:3])
            self.report({"WARNING"}, f"Betwixt: the rig's deform bones end off the generated motion ({shown}): "
                        "keys on bones the control map does not key (tweaks, foot roll) move them, or the map "
                        "misses a control; check the Control Map in the Betwixt panel")
        unplanted = plan.plant and not contacts.legs(plan.model.skeleton)
        return (f"Betwixt: filled {len(plan.gaps)} gap{'s' * (len(plan.gaps) != 1)} ({keyed} frames keyed) "
                f"with model {plan.model.name}" + ("; feet not planted: the model's joints have no legs" * unplanted))


class BETWIXT_OT_fill_gaps(_Generate, bpy.types.Operator):
    """Fill every gap between consecutive selected keys of the active armature with the model's motion"""

    bl_idname = "betwixt.fill_gaps"
    bl_label = "Fill Gaps"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Filling gaps"

    def prepare(self, context):
        return self.read(context, selected_gaps)


class BETWIXT_OT_decompress(_Generate, bpy.types.Operator):
    """Treat the action's keys as sparse and fill every gap between them in order, each from the motion
    generated before it"""

    bl_idname = "betwixt.decompress"
    bl_label = "Decompress"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Decompressing"

    def prepare(self, context):
        return self.read(context, all_gaps)


def variants_of(name):
    """The variant actions made from action ``name``, in order."""
    found = [a for a in bpy.data.actions if a.get(VARIANT_OF) == name]
    return sorted(found, key=lambda a: int(a.get(VARIANT_INDEX, 0)))


def original_of(action):
    """The action a variant was made from (the action itself if it is none)."""
    name = action.get(VARIANT_OF) if action is not None else None
    return bpy.data.actions.get(name) if name else action


def assign(obj, action, slot_identifier):
    anim = obj.animation_data
    anim.action = action
    if hasattr(anim, "action_slot") and slot_identifier:
        slot = next((s for s in action.slots if s.identifier == slot_identifier), None)
        if slot is not None:
            anim.action_slot = slot


def check_original(plan):
    """Refuse to make variants of an action that is itself one."""
    if original_of(bpy.data.actions[plan.action_name]).name != plan.action_name:
        raise BetwixtError(f"action {plan.action_name!r} is itself a variant; apply it or go back to the "
                           "original before making new variants")


def keep_variants(plan, motions, step=1, breakdown=False, label="variant"):
    """Each of ``motions`` (model space, as :func:`bone_edits` reads them) keyed into its own copy of the
    plan's action, inside the plan's one gap, in place of the action's variants made before: the copies
    ('<action> <label> <i>'), all or none. Variants and Continue's continuations alike: they are
    previewed, applied (the keys inside the gap) and discarded by the operators below."""
    obj, channels = resolve(plan)
    action = channels.action
    old = variants_of(action.name)
    made = []
    for motion in motions:
        checked(plan, motion, plan.gaps)
    try:
        for i, motion in enumerate(motions):
            copy = action.copy()
            made.append(copy)
            copy.use_fake_user = True
            copy[VARIANT_OF] = action.name
            copy[VARIANT_GAP] = list(plan.gaps[0])
            copy[VARIANT_INDEX] = i + 1
            copy[VARIANT_SLOT] = plan.slot or ""
            target = Channels(obj, action=copy, slot=channels.slot_in(copy))
            rig, edits = key_edits(plan, channels, motion, plan.gaps, step)
            write_bone_keys(target, rig, edits, plan.gaps, KeyStyle(breakdown=breakdown), pin=plan.drive is not None)
    except BaseException:
        for copy in made:
            bpy.data.actions.remove(copy)
        raise
    for a in old:
        bpy.data.actions.remove(a)
    for i, copy in enumerate(made):
        copy.name = f"{action.name} {label} {i + 1}"
    if plan.detected is not None:
        mapping.store(obj.data, plan.model.skeleton.names, plan.detected)
    return made


SOURCES = {"NOISE": "rtn", "MVAE": "mvae"}   # the Variants operator's Source -> the kind of model it uses


class BETWIXT_OT_variants(_Generate, bpy.types.Operator):
    """Make several different transitions for the selected gap, each in its own action, to compare"""

    bl_idname = "betwixt.variants"
    bl_label = "Variants"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Making variants"
    serves = "variants"

    count: bpy.props.IntProperty(name="Variants", description="How many transitions to make", default=4,
                                 min=2, max=16)
    variation: bpy.props.FloatProperty(name="Variation", description="How different the variants are",
                                       default=1.0, min=0.0, soft_max=2.0)
    source: bpy.props.EnumProperty(
        name="Source", description="Where the variety comes from",
        items=[("NOISE", "Noise (RTN)", "The in-betweening model's noise input, drawn anew for each variant"),
               ("MVAE", "Motion VAE", "The Motion VAE's latent space: transitions sampled toward the key "
                "(needs a Motion VAE model that makes variants)")])

    def prepare(self, context):
        frame = context.scene.frame_current

        def one_gap(channels, bones):
            chosen = transitions.gaps_between(key_frames(channels, bones, selected=True))
            if len(chosen) != 1:
                around = [(a, b) for a, b in transitions.gaps_between(key_frames(channels, bones)) if a < frame < b]
                chosen = around or chosen
            if len(chosen) != 1:
                raise BetwixtError("select the two keys around one gap (or put the current frame inside a gap) "
                                   "to make variants of it")
            return chosen
        try:
            plan = self.read(context, one_gap, SOURCES[self.source])
        except ModelError as e:
            if self.source != "MVAE":
                raise
            raise ModelError(f"{e}; or make variants with Source: Noise (RTN)") from None
        plan.count = self.count
        check_original(plan)
        return plan

    def compute(self, plan, progress, cancelled):
        made = transitions.variants(plan.model, plan.motion, plan.first, plan.gaps[0], plan.fps, plan.count,
                                    **plan.options)
        out = []
        for i, motion in enumerate(made):
            if cancelled():
                raise transitions.Cancelled()
            out.append(planted(plan, motion))
            progress(i + 1, plan.count)
        return out

    def finish(self, context, plan, result):
        made = keep_variants(plan, result, self.step, self.breakdown)
        a, b = plan.gaps[0]
        return (f"Betwixt: {len(made)} variants of frames {a}–{b} by model {plan.model.name} in actions "
                f"'{made[0].name}' … '{made[-1].name}'; preview and apply one in the Betwixt panel")


class BETWIXT_OT_preview_variant(bpy.types.Operator):
    """Show this action (a variant, or the original) on the armature"""

    bl_idname = "betwixt.preview_variant"
    bl_label = "Preview Variant"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.StringProperty(name="Action")

    def execute(self, context):
        try:
            obj = active_armature(context)
            action = bpy.data.actions.get(self.action)
            if action is None:
                raise BetwixtError(f"there is no action {self.action!r}")
            current = obj.animation_data.action if obj.animation_data else None
            slot = action.get(VARIANT_SLOT) or getattr(getattr(obj.animation_data, "action_slot", None),
                                                      "identifier", None)
            if original_of(action) != original_of(current):
                raise BetwixtError(f"action {action.name!r} is not a variant of the armature's action")
            assign(obj, action, slot)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        return {"FINISHED"}


class BETWIXT_OT_apply_variant(bpy.types.Operator):
    """Copy this variant's transition into the original action, go back to it and remove the variants"""

    bl_idname = "betwixt.apply_variant"
    bl_label = "Apply Variant"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.StringProperty(name="Action")

    def execute(self, context):
        try:
            obj = active_armature(context)
            variant = bpy.data.actions.get(self.action)
            original = original_of(variant) if variant is not None else None
            if variant is None or original is None or original == variant:
                raise BetwixtError(f"{self.action!r} is not a variant made by Betwixt (or its original action "
                                   "was deleted)")
            a, b = (int(v) for v in variant[VARIANT_GAP])
            identifier = variant.get(VARIANT_SLOT) or None
            source = Channels(obj, action=variant, slot=_slot(variant, identifier))
            target = Channels(obj, action=original, slot=_slot(original, identifier))
            copy_inside(source, target, a, b)
            assign(obj, original, identifier)
            for other in variants_of(original.name):
                bpy.data.actions.remove(other)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Betwixt: applied {self.action} to {original.name}")
        return {"FINISHED"}


def _slot(action, identifier):
    if not hasattr(action, "slots"):
        return None
    return next((s for s in action.slots if s.identifier == identifier), None) or \
        next((s for s in action.slots if s.target_id_type == "OBJECT"), None)


def copy_inside(source, target, a, b):
    """The keys strictly between frames ``a`` and ``b`` of the bone curves of ``source``, into ``target``."""
    snapshot = Snapshot(target)
    try:
        for (path, index), fc in source.curves().items():
            if not path.startswith("pose.bones["):
                continue
            data = read_points(fc)
            dst = snapshot.keep(path, index)
            if dst is None:
                dst = target.new(path, index, fc.group.name if fc.group else None)
                snapshot.created_curve(path, index)
                write_points(dst, data)
                continue
            old = read_points(dst)
            t_src, t_old = data["co"][0::2], old["co"][0::2]
            take = (t_src > a + 1e-4) & (t_src < b - 1e-4)
            keep = ~((t_old > a + 1e-4) & (t_old < b - 1e-4))
            order = np.argsort(np.concatenate([t_old[keep], t_src[take]]), kind="stable")
            merged = {}
            for name, array in old.items():
                width = 2 if name in ("co", "handle_left", "handle_right") else 1
                both = np.concatenate([array.reshape(-1, width)[keep], data[name].reshape(-1, width)[take]])
                merged[name] = both[order].reshape(-1)
            write_points(dst, merged)
    except BaseException:
        snapshot.restore()
        raise


class BETWIXT_OT_discard_variants(bpy.types.Operator):
    """Remove the variants of the armature's action and go back to the original"""

    bl_idname = "betwixt.discard_variants"
    bl_label = "Discard Variants"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            obj = active_armature(context)
            current = obj.animation_data.action if obj.animation_data else None
            original = original_of(current)
            if original is None:
                raise BetwixtError("the armature has no action")
            if original != current:
                assign(obj, original, current.get(VARIANT_SLOT) or None)
            for other in variants_of(original.name):
                bpy.data.actions.remove(other)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        return {"FINISHED"}


class BETWIXT_OT_detect_mapping(bpy.types.Operator):
    """Map the model's joints to the active armature's bones from their names and hierarchy"""

    bl_idname = "betwixt.detect_mapping"
    bl_label = "Detect Bone Mapping"
    bl_options = {"REGISTER", "UNDO"}

    skeleton: bpy.props.EnumProperty(
        name="Skeleton", description="Whose skeleton to map the rig to: the model's whose joints its bones "
        "fit best, or a kind's (a four-legged rig without a tail fits the human skeleton as well)",
        items=[("AUTO", "Best Fit", "The skeleton the bone names fit best, or the one already mapped")]
        + [(kind, runtime_class(kind).TITLE, f"The skeleton of the active {kind} model") for kind in KINDS],
        options={"SKIP_SAVE"})   # a plain Detect after the menu's is a plain one again

    def execute(self, context):
        try:
            obj = active_armature(context)
            model = model_for(context, obj) if self.skeleton == "AUTO" else load_model(context, self.skeleton)
            skeleton = model.skeleton
            found = mapping.detected(obj, skeleton)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        mapping.store(obj.data, skeleton.names, found)
        controls.store(obj.data, controls.detect(obj))
        missing = [j for j in skeleton.names if j not in found]
        level = {"INFO"} if not missing else {"WARNING"}
        driving = [e.control for e in controls.entries_for(obj)]
        self.report(level, f"Betwixt: mapped {len(found)} of {len(skeleton)} joints of model {model.name}" +
                    (f"; not found: {', '.join(missing[:6])}{' …' if len(missing) > 6 else ''} "
                     "(pick their bones in the list or leave them unmapped)" if missing else "") +
                    (f"; reads the deform bones ({next(iter(found.values()), '')}, …) as Blender evaluates them and "
                     f"keys {len(driving)} controls ({', '.join(driving[:4])}, …) as each limb's IK/FK switch says"
                     if driving else ""))
        return {"FINISHED"}


class BETWIXT_OT_clear_mapping(bpy.types.Operator):
    """Forget the bone mapping and the control map stored on the active armature"""

    bl_idname = "betwixt.clear_mapping"
    bl_label = "Clear Bone Mapping"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        try:
            obj = active_armature(context)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        obj.data.betwixt_joints.clear()
        obj.data.betwixt_controls.clear()
        return {"FINISHED"}


class BETWIXT_PG_action_choice(bpy.types.PropertyGroup):
    use: bpy.props.BoolProperty(name="Export", default=True)


def armature_actions(obj):
    """Actions that animate bones of an armature like ``obj`` (variants left out)."""
    out = []
    for action in bpy.data.actions:
        if action.get(VARIANT_OF):
            continue
        slot = _slot(action, getattr(getattr(obj.animation_data, "action_slot", None), "identifier", None))
        try:
            curves = Channels(obj, action=action, slot=slot).curves()
        except BetwixtError:
            continue
        if any(path.startswith("pose.bones[") and obj.pose.bones.get(path.split('"')[1]) is not None
               for path, _ in curves):
            out.append(action)
    return out


def y_up(motion):
    """A BVH motion written in Blender's Z-up axes, turned to BVH's usual Y-up (``C`` undone)."""
    c = AXIS_CHANGE[1]
    turn = matrix_to_quat(c.T)
    sk = motion.skeleton
    skeleton = Skeleton(sk.names, sk.parents, sk.offsets @ c, sk.channels,
                        tuple((j, tuple(np.asarray(o) @ c)) for j, o in sk.end_sites))
    rotations = quat.mul(quat.mul(turn, motion.rotations), quat.inv(turn))
    return Motion(skeleton, rotations, motion.positions @ c, motion.fps, up="Y", name=motion.name)


class BETWIXT_OT_export_training_data(bpy.types.Operator):
    """Write the chosen actions of the active armature as BVH files (Y-up) for Betwixt's training module"""

    bl_idname = "betwixt.export_training_data"
    bl_label = "Export Training Data"
    bl_options = {"REGISTER"}

    directory: bpy.props.StringProperty(name="Folder", subtype="DIR_PATH")
    actions: bpy.props.CollectionProperty(type=BETWIXT_PG_action_choice)
    root_only: bpy.props.BoolProperty(name="Root Translation Only", default=True,
                                      description="Write translation channels for the root bone only")

    def invoke(self, context, event):
        try:
            obj = active_armature(context)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        self.actions.clear()
        for action in armature_actions(obj):
            item = self.actions.add()
            item.name = action.name
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "root_only")
        layout.label(text="Actions:")
        for item in self.actions:
            layout.prop(item, "use", text=item.name)

    def execute(self, context):
        try:
            obj = active_armature(context)
            names = [item.name for item in self.actions if item.use] if len(self.actions) else \
                [a.name for a in armature_actions(obj)]
            if not names:
                raise BetwixtError("no action chosen; tick at least one action to export")
            folder = Path(bpy.path.abspath(self.directory or "//"))
            folder.mkdir(parents=True, exist_ok=True)
            written = [export_action(context, obj, name, folder, self.root_only) for name in names]
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        except OSError as e:
            where = e.filename or folder
            self.report({"ERROR"}, f"Betwixt: cannot write the BVH files in {where} ({e.strerror or e}); choose "
                        "a folder you can write to")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Betwixt: wrote {len(written)} BVH file{'s' * (len(written) != 1)} to {folder}; "
                    f"train with: python -m training rtn --data {folder}")
        return {"FINISHED"}


def export_action(context, obj, name, folder, root_only):
    """One action through Blender's BVH exporter, then turned Y-up; the armature keeps its own action."""
    action = bpy.data.actions.get(name)
    if action is None:
        raise BetwixtError(f"there is no action {name!r}")
    anim = obj.animation_data or obj.animation_data_create()
    saved = anim.action, getattr(anim, "action_slot", None)
    active = context.view_layer.objects.active
    path = folder / f"{bpy.path.clean_name(name)}.bvh"
    start, end = (int(round(f)) for f in action.frame_range)
    try:
        context.view_layer.objects.active = obj
        slot = _slot(action, saved[1].identifier if saved[1] is not None else None)
        assign(obj, action, slot.identifier if slot is not None else None)
        bpy.ops.export_anim.bvh(filepath=str(path), check_existing=False, frame_start=start, frame_end=end,
                                rotate_mode="NATIVE", root_transform_only=root_only)
    finally:
        anim.action = saved[0]
        if saved[1] is not None:
            anim.action_slot = saved[1]
        context.view_layer.objects.active = active
    write_bvh(y_up(read_bvh(path)), path)
    return path


def key_motion(obj, model, motion, first):
    """Key ``motion`` (``model``'s skeleton, one frame per scene frame) onto the armature ``obj`` from scene
    frame ``first`` on, through its bone mapping and, on a control rig, its controls: a capture put onto a
    rig as the operators write their fills (the rig suite's and the tests' clips). The action must hold a
    key on the frames just before and after."""
    channels = Channels(obj)
    rig, retarget, detected = read_retarget(obj, model)
    gaps = [(first - 1, first + motion.n_frames)]
    plan = plan_over(channels, model, rig, retarget, detected, gaps, scene_fps(bpy.context.scene),
                     np.arange(first - 1, first + motion.n_frames + 1))
    pad = np.r_[0, np.arange(motion.n_frames), motion.n_frames - 1]
    padded = replace(motion, rotations=motion.rotations[pad], positions=motion.positions[pad])
    rig, edits = key_edits(plan, channels, padded, gaps, 1)
    write_bone_keys(channels, rig, edits, gaps, KeyStyle(), pin=plan.drive is not None)
