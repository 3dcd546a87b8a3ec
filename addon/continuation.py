"""Continue: K continuations of N frames after the current frame of the active armature, each a random
walk of a Motion VAE (:meth:`..inference.mvae.runtime.MVAEModel.walk`), kept as variants of its action.

``prepare`` (main thread) reads the armature as Fill Gaps does, from a second before the current frame
(the start pose, the one before it, and the floor under the feet) to the frames to key; ``compute``
(worker thread) walks the model from the current frame, one continuation after another (progress and
Esc between them), samples each walk on the scene's frames and, with Plant Feet, plants its feet
(:func:`.writing.planted`: the second before the current frame is their context, so a foot standing
there stays where it stood, and nothing after the continuation is); ``finish`` keys each into its own copy
of the action as Variants does (:func:`.variants.keep_variants`): up to N keys after the current
frame are replaced, the keys up to it stay as they were. Preview, Apply and Discard are the Variants'.
"""

import math
from dataclasses import replace

import bpy
import numpy as np

from ..inference import edit, quat
from ..inference.errors import BetwixtError
from ..inference.inbetween import floor
from . import options
from .jobs import JobOperator
from .plan import keyed_bones, plan_over, read_retarget, scene_fps
from .pose_io import Channels, active_armature, key_frames
from .preferences import model_for
from .variants import check_original, keep_variants
from .writing import planted


def frames_per_step(fps, model):
    """Scene frames (at ``fps``) per model frame: 1 where the rates agree (a BVH importer's 30.000003 fps)."""
    ratio = fps / model.fps
    return 1.0 if abs(ratio - 1.0) < edit.SAME_RATE else ratio


def read_start(context, count, frames, seed, plant=True):
    """The plan of ``count`` continuations of ``frames`` scene frames after the current frame (its one
    gap: from the current frame to the frame after the last generated one), read from a second before
    it; ``seed`` in its options, ``plant``: Plant Feet."""
    obj = active_armature(context)
    channels = Channels(obj)
    model = model_for(context, obj, "continue")
    rig, retarget, detected = read_retarget(obj, model)
    fps = scene_fps(context.scene)
    ratio = frames_per_step(fps, model)
    frame = context.scene.frame_current
    keys = key_frames(channels, keyed_bones(obj, rig, retarget))
    if not keys:
        raise BetwixtError(f"action {channels.action.name!r} has no keys on the bones mapped to model "
                           f"{model.name}'s joints; key a few poses to continue from")
    if frame - ratio < keys[0] - 1e-6:
        raise BetwixtError(f"the current frame ({frame}) is not {ratio:g} frame{'s' * (ratio != 1)} after the "
                           f"action's first key (frame {keys[0]}): a continuation starts from a pose and the one "
                           f"before it; go to frame {math.ceil(keys[0] + ratio - 1e-6)} or later")
    first = max(keys[0], frame - math.ceil(fps))
    plan = plan_over(channels, model, rig, retarget, detected, [(frame, frame + frames + 1)], fps,
                     np.arange(first, frame + frames + 2))
    plan.options, plan.count, plan.plant = {"seed": seed, "frames": frames, "last_key": keys[-1]}, count, plant
    check_original(plan)
    return plan


def walks(plan, progress=None, cancelled=None):
    """The plan's continuations: motions of the plan's frames (model space, one frame per scene frame
    from ``plan.first``), each the plan's own up to the current frame and then the model's walk number
    i, drawn from seed + i (so more continuations keep the first ones), sampled on the scene's frames,
    its feet planted where the plan asks for it (cut after the last generated frame, so that the gap's
    closing frame, the action's, holds no foot). The model reads the motion on its own floor (its
    training data's), as a fill does: the rig's floor is where its feet were lowest over the second
    before. ``progress(done, total)`` after each walk; ``cancelled()`` before each raises
    :class:`..inference.edit.Cancelled` when true. Numpy and the model only: it runs in the worker thread."""
    model = plan.model
    up = model.layout.up
    frame, frames = plan.gaps[0][0], plan.options["frames"]
    ratio = frames_per_step(plan.fps, model)
    at = frame - plan.first
    level = floor(plan.motion.frames(0, at + 1), [], plan.motion.up) - model.floor
    start = edit.sample(plan.motion, [at - ratio, at])   # the pose and the one a model frame before
    start.positions[:, 0, up] -= level
    out = []
    for i in range(plan.count):
        if cancelled is not None and cancelled():
            raise edit.Cancelled()
        [walk] = model.walk(start, 1, math.ceil(frames / ratio - 1e-9), 1, plan.options["seed"] + i)
        new = edit.sample(walk, 1 + np.arange(1, frames + 1) / ratio)
        rotations, positions = plan.motion.rotations.copy(), plan.motion.positions.copy()
        rotations[at + 1:at + frames + 1], positions[at + 1:at + frames + 1] = new.rotations, new.positions
        positions[at + 1:at + frames + 1, 0, up] += level
        if frame + frames >= plan.options["last_key"]:   # no key after: Blender holds its own last pose
            rotations[at + frames + 1:], positions[at + frames + 1:] = rotations[at + frames], positions[at + frames]
        motion = replace(plan.motion, rotations=quat.unroll(rotations), positions=positions)
        made = planted(plan, motion.frames(0, at + frames + 1))
        out.append(replace(motion, rotations=np.concatenate([made.rotations, motion.rotations[at + frames + 1:]])))
        if progress is not None:
            progress(i + 1, plan.count)
    return out


class BETWIXT_OT_continue_motion(JobOperator, bpy.types.Operator):
    """Make several continuations of the active armature's motion after the current frame with the
    Motion VAE, each in its own action, to compare"""

    bl_idname = "betwixt.continue_motion"
    bl_label = "Continue"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Continuing"

    count: options.count("Continuations", "How many continuations to make", 1)
    frames: options.FRAMES
    seed: options.seed("Which continuations (continuation i is walk seed + i)")
    plant_feet: options.PLANT_FEET

    def prepare(self, context):
        return read_start(context, self.count, self.frames, self.seed, self.plant_feet)

    def compute(self, plan, progress, cancelled):
        return walks(plan, progress, cancelled)

    def finish(self, context, plan, result):
        made = yield from keep_variants(plan, result, label="continuation")
        a, b = plan.gaps[0]
        return (f"Betwixt: {len(made)} continuation{'s' * (len(made) != 1)} of frames {a + 1}–{b - 1} by model "
                f"{plan.model.name} in actions '{made[0].name}' … '{made[-1].name}'; preview and apply one in "
                "the Betwixt panel")
