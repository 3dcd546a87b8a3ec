"""The control map: which controls an animator keys drive which of the model's joints, and keys written
onto them so that the deform bones Blender evaluates follow the generated motion.

A control rig's deform bones follow controls through constraints, FK chains and IK. Betwixt never keys a
deform bone there (a constraint overrides it); it keys the controls. Each control follows one model joint:
on every frame it keeps the place it has relative to that joint's deform bone under the animator's
current keys (an FK control lies on its bone; an IK foot, a pole or a torso keeps its offset), so its
target is the generated deform pose times that offset. Blender's own machinery turns the targets into
keys: a Copy Transforms constraint per control onto an Empty carrying its target, each frame evaluated,
and the control's visual transform read back in its own local space (``Object.convert_space``), as
visual keying does; the constraints and Empties are removed again before anything is keyed.

Which controls a limb uses follows the rig's IK/FK switch at the gap (Rigify's ``IK_FK`` on the limb's
parent control, 0 for IK; ``pole_vector`` for a pole target instead of the IK control's twist).
"""

from dataclasses import dataclass, replace

import bpy
import numpy as np

from ..inference import quat
from . import rigify
from .evaluated import interpolated
from .pose_io import Channels, bone_path, sample
from .rig import affine_inverse, matrix_to_quat, quat_to_channels, rotation_part

CHANNELS = [("BOTH", "Location and Rotation", "A root, torso or IK control: where it is and how it turns"),
            ("ROTATION", "Rotation", "An FK control: how it turns"),
            ("LOCATION", "Location", "A pole target: where it is")]
WHEN = [("ALWAYS", "Always", "Whatever the limb's IK/FK switch says"),
        ("FK", "FK", "While the limb is in FK"), ("IK", "IK", "While the limb is in IK"),
        ("POLE", "IK with Pole", "While the limb is in IK with a pole target")]
BAKE = "Betwixt bake"   # the temporary constraints' name
MISSED = 0.02           # of the rig's height: a deform bone further from its generated pose is reported


class BETWIXT_PG_control(bpy.types.PropertyGroup):
    """One control and the model joint it follows (stored on the armature data, ``betwixt_controls``)."""

    control: bpy.props.StringProperty(name="Control", description="A bone the animator keys")
    joint: bpy.props.StringProperty(name="Joint", description="The model joint whose deform bone the control "
                                    "drives")
    channels: bpy.props.EnumProperty(name="Channels", items=CHANNELS, default="ROTATION")
    when: bpy.props.EnumProperty(name="When", items=WHEN, default="ALWAYS")
    switch: bpy.props.StringProperty(name="Switch", description="The bone holding the limb's IK_FK (and "
                                     "pole_vector) property")


class BETWIXT_UL_controls(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.prop_search(item, "control", context.active_object.pose, "bones", text="")
        row.prop(item, "joint", text="")
        row.prop(item, "channels", text="")
        row.prop(item, "when", text="")


class BETWIXT_OT_control_add(bpy.types.Operator):
    """Add a control to the armature's control map (then pick the control and the joint it follows)"""

    bl_idname = "betwixt.control_add"
    bl_label = "Add Control"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            self.report({"ERROR"}, "no armature is active")
            return {"CANCELLED"}
        if not len(obj.data.betwixt_controls):
            store(obj.data, detect(obj))
        item = obj.data.betwixt_controls.add()
        bone = context.active_pose_bone
        item.control = bone.name if bone is not None else ""
        obj.data.betwixt_control_index = len(obj.data.betwixt_controls) - 1
        return {"FINISHED"}


class BETWIXT_OT_control_remove(bpy.types.Operator):
    """Remove the chosen control from the armature's control map"""

    bl_idname = "betwixt.control_remove"
    bl_label = "Remove Control"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        obj = context.active_object
        items = obj.data.betwixt_controls if obj is not None and obj.type == "ARMATURE" else None
        if not items:
            self.report({"ERROR"}, "the armature has no stored control map")
            return {"CANCELLED"}
        items.remove(min(obj.data.betwixt_control_index, len(items) - 1))
        obj.data.betwixt_control_index = max(0, obj.data.betwixt_control_index - 1)
        return {"FINISHED"}


@dataclass(frozen=True)
class Entry:
    control: str
    joint: str
    channels: str      # "both", "rotation" or "location"
    when: str          # "", "FK", "IK" or "POLE"
    switch: str        # the limb's switch bone, or ""


def stored(armature):
    return [Entry(i.control, i.joint, i.channels.lower(), "" if i.when == "ALWAYS" else i.when, i.switch)
            for i in armature.betwixt_controls]


def store(armature, entries):
    items = armature.betwixt_controls
    items.clear()
    for e in entries:
        item = items.add()
        item.control, item.joint, item.switch = e.control, e.joint, e.switch
        item.channels, item.when = e.channels.upper(), e.when or "ALWAYS"


def detect(obj):
    """The control map found for the armature ``obj``: a Rigify human or wolf rig's (:mod:`.rigify`), else none."""
    layout = rigify.layout_of(obj)
    if layout is None:
        return []
    return [Entry(*e) for e in rigify.control_entries(layout, obj.pose.bones)]


def on_skeleton(obj, entries, skeleton):
    """``entries`` with their joints named as ``skeleton`` names them: a Rigify rig's are named as LaFAN1's
    skeleton names them (:func:`.rigify.on_skeleton` finds them on another)."""
    layout = rigify.layout_of(obj)
    if layout is None:
        return entries
    names = rigify.on_skeleton(layout, skeleton)
    return [replace(e, joint=names.get(e.joint, e.joint)) for e in entries]


def entries_for(obj):
    """The stored control map, else the detected one."""
    return stored(obj.data) or detect(obj)


def _state(obj, channels, switch, prop, frame, default):
    """A switch bone's custom property on ``frame``: its F-curve's value where it is animated."""
    pb = obj.pose.bones.get(switch)
    if pb is None or prop not in pb.keys():
        return default
    fc = channels.find(bone_path(switch, f'["{prop}"]'), 0) if channels is not None else None
    return float(fc.evaluate(frame)) if fc is not None else float(pb[prop])


def active(obj, channels, entries, frame):
    """The entries that drive their joint on ``frame``, as each limb's IK/FK switch says then."""
    out = []
    for e in entries:
        fk = _state(obj, channels, e.switch, "IK_FK", frame, 1.0) >= 0.5 if e.switch else True
        pole = _state(obj, channels, e.switch, "pole_vector", frame, 0.0) >= 0.5 if e.switch else False
        if e.when == "" or (e.when == "FK" and fk) or (e.when == "IK" and not fk) or \
                (e.when == "POLE" and not fk and pole):
            out.append(e)
    return out


@dataclass
class Drive:
    """The controls a plan writes: ``bones`` (indices in ``rig``, the armature's own bones), the deform bone
    each follows (``follows``: indices in the plan's deform skeleton) and, on every frame the plan read,
    its offset from that bone as Blender evaluated them (``offsets`` (frames, controls, 4, 4))."""

    rig: object
    entries: list
    bones: np.ndarray
    follows: np.ndarray
    offsets: np.ndarray
    deform: np.ndarray      # (controls,) the followed deform bones' indices in ``rig``
    first: int              # the scene frame of ``offsets``' first row
    missed: list = None     # after :func:`edits`: (deform bone, scene frame, distance) where one stays off

    def missing(self, share=MISSED):
        """The :attr:`missed` deform bones that end further than ``share`` of the rig's height from the
        generated motion: what no keys on these controls could reach (keys on other bones in the way, a
        control map that misses a limb)."""
        heads = self.rig.rest[self.deform, :3, 3]
        height = np.ptp(heads[:, 2]) if len(heads) else 0.0
        return [m for m in self.missed or () if m[2] > share * height]

    def chain_ends(self):
        """(n, 2) control indices: each IK chain's root control (an IK entry keying rotation alone) and the
        control at the chain's end (the limb's IK entry keying both)."""
        ends = {e.switch: c for c, e in enumerate(self.entries) if e.when == "IK" and e.channels == "both"}
        return np.array([(c, ends[e.switch]) for c, e in enumerate(self.entries)
                         if e.when == "IK" and e.channels == "rotation" and e.switch in ends
                         and self.follows[c] != self.follows[ends[e.switch]]], dtype=np.int64).reshape(-1, 2)

    def offsets_at(self, frames):
        return self.offsets[np.asarray(frames, dtype=np.int64) - self.first]


def drive(rig, entries, deform, mapped, joint_names, control_pose, deform_pose, first):
    """The :class:`Drive` of ``entries`` whose joint is mapped (``mapped`` {joint index: deform index},
    ``deform``: the deform skeleton's :class:`..rig.Rig`), from the evaluated armature-space matrices of
    the controls ``control_pose`` (frames, entries, 4, 4) and of the deform skeleton ``deform_pose``, the
    first of them on scene frame ``first``."""
    index = {n: i for i, n in enumerate(rig.names)}
    keep = [k for k, e in enumerate(entries) if e.control in index and e.joint in joint_names
            and joint_names.index(e.joint) in mapped]
    follows = np.array([mapped[joint_names.index(entries[k].joint)] for k in keep], dtype=np.int64)
    bones = np.array([index[entries[k].control] for k in keep], dtype=np.int64)
    rigid = deform_pose[:, follows].copy()
    rigid[..., :3, :3] = rotation_part(rigid)
    offsets = affine_inverse(rigid) @ control_pose[:, keep]
    return Drive(rig, [entries[k] for k in keep], bones, follows, offsets, deform.source[1][follows], first)


KINDS = {"both": "COPY_TRANSFORMS", "rotation": "COPY_ROTATION", "location": "COPY_LOCATION"}
PASSES = 4          # at most: each pass moves every control by what its deform bone still misses
CLOSE = 0.002       # armature units: deform heads this near end the passes (as does a pass that gains < 10 %)
REACH = 0.1         # armature units along a deform bone where its direction is judged
SPARSE = 4          # the passes evaluate every SPARSE-th frame; corrections are smooth in time


def bake(obj, drive, frames, targets, wanted):
    """Steps (see :mod:`.jobs`) that return the controls' local channels that put the deform bones on ``wanted``
    (frames, controls, 4, 4: each control's deform bone), armature space, on scene ``frames``, starting from the
    controls' ``targets`` (frames, controls, 4, 4): location (frames, controls, 3), rotation quaternions
    (frames, controls, 4) and how far each deform bone's head ends from where it was wanted (frames, controls).

    Each pass evaluates every SPARSE-th frame with the controls constrained onto their targets, Blender
    solving every constraint and IK on the way, then moves each control's target by the rigid turn and
    shift that would carry its deform bone from where it went onto where it was wanted (exact for an FK
    bone on its control; a few passes for a bone that IK or a spine's interpolation places), the moves
    interpolated over the frames between. A last evaluation of every frame reads the channels. Nothing of
    the rig is changed when this returns, or when the steps are closed (Esc) between two frames."""
    scene = bpy.context.scene
    current, sub = scene.frame_current, scene.frame_subframe
    world = np.array(obj.matrix_world)
    empties, curves, constraints = [], [], []
    try:
        for c, (bone, entry) in enumerate(zip(drive.bones, drive.entries)):
            empty, keyed = _keyed_empty(scene, frames, world @ targets[:, c])
            empties.append(empty)
            curves.append(keyed)
            pb = obj.pose.bones[drive.rig.names[bone]]
            con = pb.constraints.new(KINDS[entry.channels])
            con.name, con.target = BAKE, empty
            constraints.append((pb, con))
        rows = np.unique(np.r_[np.arange(0, len(frames), SPARSE), len(frames) - 1]) if len(frames) else []
        last, done = np.inf, 0
        for _ in range(PASSES):
            got, placed, _ = yield from _evaluated(obj, drive, np.asarray(frames)[rows],
                                                   (done, PASSES * len(rows) + len(frames)))
            done += len(rows)
            apart = got - wanted[rows]   # heads, and the bones' directions over a REACH of their length
            miss = np.max(np.linalg.norm(apart[..., :3, 3], axis=-1)
                          + REACH * np.linalg.norm(apart[..., :3, 1], axis=-1), initial=0.0)
            if miss < CLOSE or miss > 0.9 * last:
                break
            last = miss
            moved = wanted[rows] @ affine_inverse(got) @ placed
            chain = drive.chain_ends()
            if len(chain):
                roots, ends = chain.T
                moved[:, roots] = _twisted(placed[:, roots], got[:, roots], wanted[rows][:, roots],
                                           wanted[rows][:, ends])
            targets = interpolated(moved @ affine_inverse(targets[rows]), rows, len(frames)) @ targets
            for c, keyed in enumerate(curves):
                _rekey(keyed, frames, world @ targets[:, c])
        got, _, channels = yield from _evaluated(obj, drive, frames, (done, done + len(frames)), local=True)
        return channels + (np.linalg.norm(got[..., :3, 3] - wanted[..., :3, 3], axis=-1),)
    finally:
        for pb, con in constraints:
            pb.constraints.remove(con)
        for empty in empties:
            action = empty.animation_data.action if empty.animation_data else None
            bpy.data.objects.remove(empty)
            if action is not None:
                bpy.data.actions.remove(action)
        scene.frame_set(current, subframe=sub)


def _evaluated(obj, drive, frames, share, local=False):
    """Steps that return, on each of ``frames``, evaluated: the followed deform bones (rigid) and the controls,
    armature-space (frames, controls, 4, 4), and with ``local`` the controls' local channels ``(location,
    quaternion)``. After each frame they yield the share of the bake done, ``(done + frames so far) / total``
    for ``share`` ``(done, total)``."""
    scene = bpy.context.scene
    flat = np.empty(len(obj.pose.bones) * 16, dtype=np.float32)
    pose = [obj.pose.bones[drive.rig.names[b]] for b in drive.bones]
    shape = (len(frames), len(pose))
    got, placed, basis = np.empty(shape + (4, 4)), np.empty(shape + (4, 4)), np.empty(shape + (4, 4))
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        obj.pose.bones.foreach_get("matrix", flat)
        matrices = np.swapaxes(flat.reshape(-1, 4, 4), -1, -2)
        got[i], placed[i] = matrices[drive.deform], matrices[drive.bones]
        if local:
            for c, pb in enumerate(pose):
                basis[i, c] = obj.convert_space(pose_bone=pb, matrix=pb.matrix, from_space="POSE", to_space="LOCAL")
        yield (share[0] + i + 1) / share[1]
    got[..., :3, :3] = rotation_part(got)
    return got, placed, (basis[..., :3, 3], matrix_to_quat(rotation_part(basis))) if local else None


def _twisted(placed, got, wanted, end):
    """IK chains' root controls (frames, chains, 4, 4) ``placed`` turned about the line from their deform
    bone's head to the chain's end (``end``'s head) by as much as the bone's direction ``got`` is off
    ``wanted`` about it: an IK solver keeps that line where its target is and only the twist about it, the
    plane the knee or elbow bends in, follows the control."""
    axis = end[..., :3, 3] - wanted[..., :3, 3]
    axis /= np.maximum(np.linalg.norm(axis, axis=-1, keepdims=True), 1e-9)

    def across(m):   # the bone's direction, less its part along the axis
        y = m[..., :3, 1]
        return y - np.sum(y * axis, -1, keepdims=True) * axis
    a, b = across(got), across(wanted)
    angle = np.arctan2(np.sum(np.cross(a, b) * axis, -1), np.sum(a * b, -1))
    turn = quat.to_matrix(quat.from_angle_axis(angle, axis))
    out = placed.copy()
    pivot = wanted[..., :3, 3]
    out[..., :3, :3] = turn @ placed[..., :3, :3]
    out[..., :3, 3] = (turn @ (placed[..., :3, 3] - pivot)[..., None])[..., 0] + pivot
    return out


def _values(matrices):
    """An Empty's channels (location, quaternion, scale) for world ``matrices`` (frames, 4, 4)."""
    return {"location": matrices[:, :3, 3], "rotation_quaternion": matrix_to_quat(rotation_part(matrices)),
            "scale": np.linalg.norm(matrices[:, :3, :3], axis=-2)}


def _rekey(curves, frames, matrices):
    """An Empty's ``curves`` (see :func:`_keyed_empty`) keyed on ``frames`` to the world ``matrices``."""
    values = _values(matrices)
    at = np.asarray(frames, dtype=np.float64)
    for fc in curves:
        fc.keyframe_points.foreach_set("co", np.stack([at, values[fc.data_path][:, fc.array_index]], -1).reshape(-1))
        fc.update()


def _keyed_empty(scene, frames, matrices):
    """``(empty, curves)``: an Empty in ``scene`` keyed on ``frames`` to the world ``matrices`` (frames, 4, 4),
    linear between, its curves made as the add-on makes any (:class:`.pose_io.Channels`)."""
    empty = bpy.data.objects.new(BAKE, None)
    scene.collection.objects.link(empty)
    empty.rotation_mode = "QUATERNION"
    empty.animation_data_create().action = bpy.data.actions.new(BAKE)
    channels = Channels(empty)
    curves = [channels.new(path, i, None)
              for path, count in (("location", 3), ("rotation_quaternion", 4), ("scale", 3)) for i in range(count)]
    linear = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
    for fc in curves:
        fc.keyframe_points.add(len(frames))
        fc.keyframe_points.foreach_set("interpolation", np.full(len(frames), linear, np.int32))
    _rekey(curves, frames, matrices)
    return empty, curves


def edits(obj, channels, drive, frames, gaps, wanted):
    """Steps (:func:`bake`'s) that return (bone, channel, frames, values, ends) for
    :func:`.pose_io.write_bone_keys`: the controls' keys on
    ``frames`` (inside ``gaps``) that put their deform bones on ``wanted`` (frames, controls, 4, 4); a
    control's new curve gets keys on the gaps' ends with its values there, so nothing outside the gaps
    moves. Sets ``drive.missed``."""
    location, rotation, apart = yield from bake(obj, drive, frames, wanted @ drive.offsets_at(frames), wanted)
    worst = np.argmax(apart, axis=0) if len(frames) else []
    drive.missed = [(drive.rig.names[d], int(frames[w]), float(apart[w, c]))
                    for c, (d, w) in enumerate(zip(drive.deform, worst))]
    ends = np.unique([f for gap in gaps for f in gap])
    starts = np.array([a for a, _ in gaps])
    need = np.unique(np.concatenate([ends, starts]))
    loc_at, _, _, raw = sample(obj, channels, drive.rig, need, drive.bones)
    row = {int(f): i for i, f in enumerate(need)}
    gap_of = np.searchsorted(starts, frames, side="right") - 1
    out = []
    for c, (bone, entry) in enumerate(zip(drive.bones.tolist(), drive.entries)):
        mode = drive.rig.rotation_modes[bone]
        if entry.channels in ("both", "rotation"):
            values = np.concatenate([
                quat_to_channels(rotation[gap_of == g, c][:, None], mode, raw[bone][[row[int(a)]]])[:, 0]
                for g, a in enumerate(starts)]) if len(frames) else np.zeros((0, raw[bone].shape[1]))
            out.append((bone, "rotation", frames, values, (ends, raw[bone][[row[int(f)] for f in ends]])))
        if entry.channels in ("both", "location"):
            out.append((bone, "location", frames, location[:, c], (ends, loc_at[[row[int(f)] for f in ends], bone])))
    return out
