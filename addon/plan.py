"""Reading the scene: the active armature's keys, in the model's space, as a :class:`Plan`.

A plain rig is read from its F-curves; a control rig's deform bones as Blender evaluates them
(:mod:`.evaluated`), with the controls that drive them (:mod:`.controls`). Everything the worker thread
and the writing need is read here, on the main thread, and checked: keys that are not numbers, a mapping
that cannot be used, gaps the model cannot reach, each refused with what to do.
"""

import json
from dataclasses import dataclass, replace

import bpy
import numpy as np

from ..inference import edit, keyspline, quat
from ..inference.errors import BetwixtError
from ..inference.motion import Motion, forward_kinematics
from ..inference.chords import aimed
from ..inference.twist import untwisted
from . import controls, evaluated, mapping
from .pose_io import Channels, KeyFrames, active_armature, key_frames, read_rig, sample, world_matrix
from .preferences import model_for
from .retarget import MappingError, rig_retargeting
from .steps import drained


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
    momentum: list = None      # per gap: the velocity at both its keys is keyed (edit.keyed_momentum)
    drive: object = None       # a control rig's controls that the keys go onto (controls.Drive)
    turns: tuple = ()          # what the reading turned, in order: chords, twists (inference/chords.py, twist.py)
    parting: dict = None       # per gap index: how far the model's views of it parted (edit.fill; guard.unsure)
    around: tuple = None       # (motion, first): the frames Fill Gaps' probes are cut from (edit.fill)
    lengths: np.ndarray = None  # a control rig's joint offsets as read, frame by frame (read_lengths)


STANCE_FRAMES = 60   # frames of an action read for the rig's natural stance (read_retarget)
CHUNK = 2000         # a plain rig's frames read at once: a tenth of a second or so, between two looks at Esc


def scene_fps(scene):
    return scene.render.fps / scene.render.fps_base


def read_plan(context, keys_from, serves="fill", kind=None):
    """Read the active armature for the gaps that ``keys_from(keys)`` chooses (``keys``: the
    :class:`.pose_io.KeyFrames` of the bones whose keys make gaps: :func:`keyed_bones`), with the
    model for its skeleton (of ``kind``, when given) that ``serves`` them (see :func:`.preferences.model_for`)."""
    return drained(read_plan_steps(context, keys_from, serves, kind))


def read_plan_steps(context, keys_from, serves="fill", kind=None):
    """:func:`read_plan` as steps (:mod:`.steps`): a control rig's long action takes seconds to evaluate."""
    obj = active_armature(context)
    channels = Channels(obj)
    model = model_for(context, obj, serves, kind)
    rig, retarget, detected = read_retarget(obj, model)
    fps = scene_fps(context.scene)
    keys = KeyFrames(channels, keyed_bones(obj, rig, retarget))
    gaps = keys_from(keys)
    if gaps and not edit.reaches(model, gaps, fps):
        model = model_for(context, obj, serves, kind, fits=lambda m: edit.reaches(m, gaps, fps))
        rig, retarget, detected = read_retarget(obj, model)
    ratio = fps / model.layout.fps
    edit.check_gaps(model, gaps, ratio)
    first, last = edit.window(model, gaps, fps)
    keyed = keys.all()
    momentum = edit.keyed_momentum(keyed, gaps, ratio)
    leaning = keyspline.leaning(gaps, momentum, first, last - first + 1, fps) if serves == "fill" else []
    span = around_span(model, [gaps[i] for i in leaning], fps, keyed, first, last) if leaning else None
    plan = yield from plan_over_steps(channels, model, rig, retarget, detected, gaps, fps, np.arange(first, last + 1),
                                      around=None if rig.source is None else span)
    plan.momentum = momentum
    if span is not None and rig.source is None:
        plan.around = read_around(plan, channels, span)
    return plan


def around_span(model, gaps, fps, keys, first, last):
    """``(near, far)``: the scene frames :func:`.edit.surround` gives for the ``gaps`` that lean, within the
    action's ``keys`` (sorted scene frames) and around the window ``first``-``last``, where Fill Gaps tries the
    keys' own spline (:mod:`..inference.keyspline`); None where the window is all of them: no room for a probe."""
    near, far = edit.surround(model, gaps, fps)
    near, far = min(max(near, keys[0]), first), max(min(far, keys[-1]), last)
    return None if (near, far) == (first, last) else (int(near), int(far))


def read_around(plan, channels, span):
    """``(motion, first)``: a plain rig's action in the model's space over the scene frames ``span`` (near, far):
    those of the ``plan``'s window as it read them, the others read now; None where a channel there is not a
    number. (A control rig's are read with its window: :func:`plan_over_steps`.)"""
    window = plan.motion
    near, far = span
    frames = np.r_[near:plan.first, plan.first + window.n_frames:far + 1]
    location, rotation, scale, _ = sample(channels.obj, channels, plan.rig, frames, plan.retarget.bones)
    if not all(np.isfinite(x).all() for x in (location, rotation, scale)):
        return None
    rotations, positions = plan.retarget.to_model(plan.rig.pose(location, rotation, scale))
    before = plan.first - near
    rotations = np.concatenate([rotations[:before], window.rotations, rotations[before:]])
    positions = np.concatenate([positions[:before], window.positions, positions[before:]])
    return Motion(plan.model.skeleton, quat.unroll(rotations), positions, window.fps, name=window.name), int(near)


def unusable(rig, frames, values, channels=None):
    """Refuse ``values`` (frames, bones, …) read from the rig on scene ``frames`` where one is NaN or infinite,
    naming the first such bone and the frame of its key that is not a number (from ``channels``; between
    sparse keys one bad key spoils every frame around it), or the first such frame."""
    bad = ~np.isfinite(values).all(axis=-1)
    if bad.any():
        row, bone = np.argwhere(bad)[0]
        name = rig.names[bone]
        keys = bad_keys(channels, name) if channels is not None else []
        where = f"{keys[0]}{f' and {len(keys) - 1} more keys' if len(keys) > 1 else ''}" if keys else \
            f"{int(frames[row])}{f' and {int(bad.sum()) - 1} more places' if bad.sum() > 1 else ''}"
        raise BetwixtError(f"bone {name!r} is not a number (NaN or infinite) on frame {where}; fix its key in the "
                           "Graph Editor (or delete it) and run Betwixt again")


def bad_keys(channels, bone):
    """Sorted whole frames of the ``bone``'s keys whose value is NaN or infinite."""
    found = set()
    for fc in channels.bone_curves([bone]):
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        found.update(np.round(co[0::2][~np.isfinite(co[1::2])]).astype(np.int64).tolist())
    return sorted(found)


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
    return drained(plan_over_steps(channels, model, rig, retarget, detected, gaps, fps, frames, obj))


def plan_over_steps(channels, model, rig, retarget, detected, gaps, fps, frames, obj=None, around=None):
    """:func:`plan_over` as steps (:mod:`.steps`): a share after each frame Blender evaluates, or after
    each CHUNK frames of F-curves. ``around`` (near, far): scene frames about ``frames`` that a control rig
    evaluates with them, read as one take (its turns smoothed over all of it), for the plan's ``around``."""
    obj = channels.obj if channels is not None else obj
    action = channels.action.name if channels is not None else None
    drive, turns, whole, lengths = None, (), None, None
    if rig.source is None:
        read = yield from _read_curves(obj, channels, rig, retarget, gaps, frames)
        location, rotation, scale, raw, rotations, positions = read
    else:
        real, bones = rig.source
        entries = controls.active(obj, channels, controls.on_skeleton(obj, controls.entries_for(obj), model.skeleton),
                                  gaps[0][0] if gaps else frames[0])   # IK or FK as at the first gap, or frame
        index = {n: i for i, n in enumerate(real.names)}
        driving = [index[e.control] for e in entries if e.control in index]
        near = int(frames[0]) if around is None else around[0]
        span = np.arange(near, int(frames[-1]) + 1 if around is None else around[1] + 1)
        rows = slice(int(frames[0]) - near, int(frames[0]) - near + len(frames))
        both = yield from evaluated.pose_around(obj, span, np.concatenate([bones, driving]).astype(np.int64), gaps)
        unusable(rig, frames, both[rows, :len(bones)].reshape(len(frames), len(bones), -1))
        if not np.isfinite(both).all():   # a bad key beside the window: no probes, and the window read alone
            both, near, rows, around = both[rows], int(frames[0]), slice(0, len(frames)), None
        taken = both[:, :len(bones)]
        pose = taken[rows]
        location, rotation, scale = evaluated.channels_of(rig, pose)
        raw = {}
        drive = controls.drive(real, [e for e in entries if e.control in index], rig, retarget.mapping,
                               list(model.skeleton.names), both[rows, len(bones):], pose, int(frames[0]))
        if not len(drive.bones):
            raise MappingError(f"armature {obj.name!r}: its deform bones ({', '.join(rig.names[:3])}, ...) are "
                               "moved by constraints, and no control of its control map drives them; keys on "
                               "them would change nothing. Map the controls in the Betwixt panel (Control Map)")
        rotations, positions = retarget.to_model(taken)
        # a control rig's chains are split where the model has one bone, its twists are its solvers' and
        # constraints', not the motion's
        heads = retarget.heads(taken)
        rotations, chords = aimed(rotations, positions, model.skeleton, split_chains(model.skeleton, retarget, rig),
                                  heads)
        rotations, twists = untwisted(rotations, positions, model.skeleton, retarget.pose, fps)
        lengths = read_lengths(retarget, rotations, positions, heads, gaps, near)[rows]
        turns = (replace(chords, swings=chords.swings[rows]), replace(twists, angles=twists.angles[rows]))
        if around is not None:
            whole = (Motion(model.skeleton, quat.unroll(rotations), positions, model.layout.fps,
                            name=action or obj.name), near)
        rotations, positions = rotations[rows], positions[rows]
    motion = Motion(model.skeleton, rotations, positions, model.layout.fps, name=action or obj.name)
    return Plan(obj.name, action, channels and channels.slot_identifier, model, rig, retarget, int(frames[0]),
                gaps, fps, motion, location, rotation, scale, raw, detected, drive=drive, turns=turns, around=whole,
                lengths=lengths)


def read_lengths(retarget, rotations, positions, heads, gaps, first):
    """(F, J, 3): where each joint of ``retarget``'s skeleton hangs from its parent, in the parent's turn, as a
    control rig's deform bones were evaluated (``heads`` {joint: (F, 3)}: :meth:`~..inference.retarget.
    Retargeting.heads`; ``rotations`` and ``positions`` the read), frame by frame, straight between the keys of
    the ``gaps`` (scene frames, ``first`` that of row 0) inside them; the rig's rest lengths
    (:meth:`~..inference.retarget.Retargeting.on_rig`) where the joint or its parent is unmapped. A control
    rig's chains stretch and shrink as they bend (Rigify's spine and legs by a centimetre), so a pose built on
    rest lengths puts its feet and hands where the rig did not have them."""
    sk = retarget.skeleton
    out = np.repeat(retarget.rig_offsets[None], len(rotations), axis=0)
    grot = forward_kinematics(rotations, positions, sk.parents)[0]
    for j, p in enumerate(sk.parents.tolist()):
        if p >= 0 and j in heads and p in heads:
            out[:, j] = quat.rotate(quat.inv(grot[:, p]), heads[j] - heads[p])
    for a, b in gaps:
        i, k = a - first, b - first
        if 0 <= i < k < len(out):
            w = np.linspace(0.0, 1.0, k - i + 1)[1:-1, None, None]
            out[i + 1:k] = (1.0 - w) * out[i] + w * out[k]
    return out


def _read_curves(obj, channels, rig, retarget, gaps, frames):
    """Steps that return a plain rig's channels on ``frames`` (location, rotation, scale, raw: see
    :func:`.pose_io.sample`) and its motion in the model's space (rotations, positions), CHUNK frames at a time.

    The frames strictly inside the ``gaps`` are the model's to make, and nothing reads its skeleton's pose there:
    the mapped bones' turns (their rotation channels) are read only on the other frames, the keys and their
    context, and each frame of a gap holds them as the last frame before it (its first key) has them (on
    Decompress, a key every second, that is one frame in 30). Every other channel is read on every frame: the
    writing keeps them."""
    made = np.zeros(len(frames), dtype=bool)
    for a, b in gaps:
        made |= (frames > a) & (frames < b)
    n, rows = len(frames), [np.flatnonzero(~made), np.flatnonzero(made)]
    location, rotation, scale = np.empty((n, len(rig), 3)), np.empty((n, len(rig), 4)), np.empty((n, len(rig), 3))
    raw, motion, done = {}, [], 0
    for turned, kept in zip((True, False), rows):
        for start in range(0, len(kept), CHUNK):
            r = kept[start:start + CHUNK]
            part = sample(obj, channels, rig, frames[r], retarget.bones, turned)
            unusable(rig, frames[r], np.concatenate(part[:3], axis=-1), channels)
            location[r], rotation[r], scale[r] = part[:3]
            for b, values in part[3].items():
                raw.setdefault(b, np.empty((n, values.shape[1])))[r] = values
            if turned:
                motion.append(retarget.to_model(rig.pose(*part[:3])))
            done += len(r)
            yield done / n
    last = np.maximum(np.cumsum(~made) - 1, 0)   # each frame's last read frame, as an index into rows[0]
    held = rows[0][last[made]]
    for b in retarget.bones.tolist():
        rotation[made, b] = rotation[held, b]
        raw[b][made] = raw[b][held]
    rotations = quat.unroll(np.concatenate([m[0] for m in motion]))   # signs continuous across the parts
    positions = np.concatenate([m[1] for m in motion])
    return location, rotation, scale, raw, rotations[last], positions[last]


def split_chains(skeleton, retarget, rig):
    """(joint, child) of the model's joints whose one child is mapped to a bone further down the armature than
    the child of their own bone (a chain the rig splits where the model has one bone: Rigify's neck of three,
    its limbs' two segments each); ``rig`` a control rig's deform skeleton (its ``source`` the armature)."""
    real, bones = rig.source
    mapping = retarget.mapping
    out = []
    for j, d in mapping.items():
        children = np.flatnonzero(skeleton.parents == j)
        if len(children) == 1 and int(children[0]) in mapping \
                and real.parents[bones[mapping[int(children[0])]]] != bones[d]:
            out.append((j, int(children[0])))
    return out


def read_retarget(obj, model):
    """``(rig, retarget, detected)``: the armature ``obj``'s bones, calibrated against ``model``'s skeleton
    through its bone mapping (stored, or ``detected`` now: see :func:`.mapping.mapping_for`), at rest and,
    where it is animated, in its natural stance (:func:`.retarget.rig_retargeting`). A mapping that cannot
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
        retarget = rig_retargeting(model.skeleton, rig, joints, world_matrix(obj), up=place.up,
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


def selected_gaps(keys):
    keys = keys.selected()
    if len(keys) < 2:
        raise BetwixtError("select the keys on both sides of each gap to fill (at least two keys on "
                           "the mapped bones), in the Dope Sheet or Graph Editor")
    return edit.gaps_between(keys)


def all_gaps(keys):
    keys = keys.all()
    if len(keys) < 2:
        raise BetwixtError("the mapped bones have fewer than two keys; key at least a first and a last pose")
    return edit.gaps_between(keys)


def resolve(plan):
    """The plan's armature and action, still there and unchanged in kind, on the main thread."""
    obj = bpy.data.objects.get(plan.object_name)
    if obj is None or obj.animation_data is None or obj.animation_data.action is None \
            or obj.animation_data.action.name != plan.action_name:
        raise BetwixtError(f"armature {plan.object_name!r} or its action {plan.action_name!r} changed while "
                           "Betwixt was working; nothing was written, run it again")
    return obj, Channels(obj)
