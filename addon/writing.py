"""Writing keys: the generated motion checked, its feet planted on the rig, keyed onto the mapped bones of
a plain rig or onto a control rig's controls (:mod:`.controls`), all or nothing (:func:`.pose_io.write_bone_keys`).

Keying a control rig bakes its controls on the main thread (Blender evaluates every constraint); those
steps are generators that yield the share done (:mod:`.jobs` drives them, Esc stops them between frames
with nothing written), as :func:`write_plan` and :func:`key_edits` are.
"""

from dataclasses import replace

import bpy
import numpy as np

from ..inference import contacts
from ..inference.check import check_result
from ..inference.mapping import describe
from ..inference.motion import AXES
from . import controls, mapping
from .steps import drained
from .plan import CHUNK, plan_over, read_retarget, scene_fps
from .pose_io import Channels, KeyStyle, write_bone_keys
from .retarget import to_rig
from .rig import quat_to_channels


def key_edits(plan, channels, motion, gaps, step):
    """Steps that return ``(rig, edits)``: the keys to write, (bone, channel, frames, values, ends) for
    :func:`~.pose_io.write_bone_keys`, on the mapped bones of a plain rig (at once), or on a control rig's
    controls (baked, frame by frame: :func:`.controls.bake`)."""
    if plan.drive is None:
        return plan.rig, (yield from bone_edits(plan, motion, gaps, step))
    frames = np.concatenate([np.arange(a + step, b, step) for a, b in gaps] + [np.zeros(0, np.int64)])
    rows = frames - plan.first
    # the joints' heads in the model's own turns on the rig's lengths: a split chain's end lies along its chord
    _, heads = plan.retarget.to_world(motion.rotations[rows], on_rig(plan, motion).positions[rows])
    *_, pose = to_rig(plan.retarget, *as_read(plan, motion, rows), plan.location[rows], plan.rotation[rows],
                      plan.scale[rows], heads)
    edits = yield from controls.edits(channels.obj, channels, plan.drive, frames, gaps, pose[:, plan.drive.follows])
    return plan.drive.rig, edits


def as_read(plan, motion, rows):
    """``motion``'s local rotations and translations on ``rows`` with the bones turned as the rig had them where
    the plan read it (the reading's turns undone, last first: :class:`..inference.twist.Twists`,
    :class:`..inference.chords.Chords`), so that what is written meets the keys around it."""
    rotations, positions = motion.rotations[rows], motion.positions[rows]
    for turn in reversed(plan.turns):
        rotations = turn.undone(rotations, positions, rows)
    return rotations, positions


def unfollowed_limbs(plan):
    """The deform bones of a control rig's hands and feet that no active control of its map follows."""
    if plan.drive is None:
        return []
    followed = set(plan.drive.follows.tolist())
    ends = {plan.retarget.mapping[j]: plan.model.skeleton.names[j] for j in plan.retarget.mapping
            if describe(plan.model.skeleton.names[j])[1] in ("hand", "foot")}
    return [f"{joint} ({plan.rig.names[b]})" for b, joint in ends.items() if b not in followed]


def bone_edits(plan, motion, gaps, step):
    """Steps that return (bone, channel, frames, values, ends) for :func:`~.pose_io.write_bone_keys`,
    CHUNK frames of the rig's pose at a time."""
    frames = [np.arange(a + step, b, step) for a, b in gaps]
    counts = np.array([len(f) for f in frames])
    frames = np.concatenate(frames + [np.zeros(0, np.int64)])
    ends = np.unique([f for gap in gaps for f in gap])
    rows, end_rows = frames - plan.first, ends - plan.first
    parts = []
    for start in range(0, max(len(rows), 1), CHUNK):
        r = rows[start:start + CHUNK]
        parts.append(to_rig(plan.retarget, *as_read(plan, motion, r), plan.location[r], plan.rotation[r],
                            plan.scale[r])[:2])
        yield 0.0
    location, rotation = (np.concatenate([p[k] for p in parts]) for k in (0, 1))
    bones = plan.retarget.bones.tolist()
    values = rotation_channels(plan, rotation, bones, [a for a, _ in gaps], counts)
    edits = []
    for k, b in enumerate(bones):
        edits.append((b, "rotation", frames, values[b], (ends, plan.raw[b][end_rows])))
        if int(plan.retarget.joints[k]) in plan.retarget.positional and not plan.rig.connected[b]:
            edits.append((b, "location", frames, location[:, b], (ends, plan.location[end_rows, b])))
    return edits


GAPS_AT_ONCE = 64   # rotation_channels' gaps side by side: a long Decompress's all at once are tens of megabytes


def rotation_channels(plan, rotation, bones, starts, counts):
    """{bone: rotation channel values (frames, 3|4)} of the quaternions ``rotation`` (frames, rig bones, 4).

    The frames are ``counts[i]`` frames of each gap in turn; in each gap every bone's channels continue
    from their keyed value on the gap's first key, ``starts[i]`` (Euler angles and quaternion signs
    have more than one value per rotation). Continuity runs frame by frame, so all gaps and all bones
    of one rotation mode go through it together: gaps side by side, padded to the longest, GAPS_AT_ONCE at a time.
    """
    if len(counts) > GAPS_AT_ONCE:   # in parts (each gap's channels are its own): large temporaries cost page faults
        cut = np.r_[0, np.cumsum(counts)]
        parts = [rotation_channels(plan, rotation[cut[i]:cut[min(i + GAPS_AT_ONCE, len(counts))]], bones,
                                   starts[i:i + GAPS_AT_ONCE], counts[i:i + GAPS_AT_ONCE])
                 for i in range(0, len(counts), GAPS_AT_ONCE)]
        return {b: np.concatenate([p[b] for p in parts]) for b in parts[0]}
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


def on_rig(plan, motion):
    """``motion`` (one frame per scene frame from the plan's first) on the rig's bone lengths
    (:meth:`..inference.retarget.Retargeting.on_rig`), a control rig's as the plan read them frame by frame
    (:func:`.plan.read_lengths`)."""
    if plan.lengths is None:
        return plan.retarget.on_rig(motion)
    return plan.retarget.on_rig(motion, plan.lengths[np.minimum(np.arange(motion.n_frames), len(plan.lengths) - 1)])


def planted(plan, motion):
    """``motion`` with its feet planted in the plan's gaps (inference/contacts.py) where the plan asks for it,
    on the rig's bone lengths (:meth:`..inference.retarget.Retargeting.on_rig`); speeds are judged at the
    scene's frame rate, one frame of ``motion`` per scene frame."""
    if not plan.plant:
        return motion
    gaps = [(a - plan.first, b - plan.first) for a, b in plan.gaps]
    out = contacts.plant(replace(on_rig(plan, motion), fps=plan.fps), gaps, plan.model.layout.height,
                         plan.model.floored)
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
                 path=path, frame=lambda f: f + plan.first,
                 units_per_metre=getattr(plan.model, "units_per_metre", None),
                 fix="undo any odd keys around the gap, or try Plant Feet off or another model")
    return motion


def write_plan(plan, channels, motion, gaps, step, breakdown, path=None):
    """Steps that key the generated frames, once the result check passed them, and return the number of
    frames keyed."""
    checked(plan, motion, gaps, path)
    yield 0.0
    rig, edits = yield from key_edits(plan, channels, motion, gaps, step)
    yield 0.0
    yield from write_bone_keys(channels, rig, edits, gaps, KeyStyle(breakdown=breakdown), pin=plan.drive is not None)
    if plan.detected is not None:
        mapping.store(channels.obj.data, plan.model.skeleton.names, plan.detected)
    return len(edits[0][2]) if edits else 0


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
    plan.turns = ()   # the motion is the caller's, not one read from this rig: its bones turn as they do
    pad = np.r_[0, np.arange(motion.n_frames), motion.n_frames - 1]
    padded = replace(motion, rotations=motion.rotations[pad], positions=motion.positions[pad])
    rig, edits = drained(key_edits(plan, channels, padded, gaps, 1))
    drained(write_bone_keys(channels, rig, edits, gaps, KeyStyle(), pin=plan.drive is not None))
