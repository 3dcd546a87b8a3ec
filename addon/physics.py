"""Physics Pass: a four-legged rig's motion over a frame range tracked by CARL's simulated dog (MuJoCo), kept as
a variant of its action (Preview, Apply and Discard are the Variants'), with the frames where the dog fell and
its paws' slide and depth in the floor before and after. With Push, the dog is shoved at a frame, on its torso,
hips, head, a leg or all of it (its speed changed by so many metres a second toward a direction on the ground),
and reacts as the policy makes it. Assist holds the hips' tilt, heading and place near the keys' with a torque of at
most so many Nm and a force of four times as many N (a hidden hand: the dog stays up and on the keys' course, its
legs and their contacts the physics'; 0 leaves it all to the policy).

``prepare`` (main thread) reads every frame of the range, and the frames either side of it, as the motion to
track (not as a gap to fill: the frames inside are the input); ``compute`` (worker thread) tracks it
(:meth:`..inference.carl.runtime.CARLModel.track`, progress and Esc each frame), samples the simulated dog on
the scene's frames and eases it back onto the keys after the range (the simulation starts on the first frame's
keys but ends where physics took the dog: ``JOIN`` seconds of :func:`..inference.inertialize.eased`);
``finish`` keys it into a copy of the action over the range, as Variants keys a gap from the frame before the
range to the frame after it, so that keys outside the range stay as they were.
"""

from dataclasses import dataclass, replace

import bpy
import numpy as np

from ..inference import edit
from ..inference.carl.reference import slide
from ..inference.carl.runtime import SUNK
from ..inference.carl.simulation import POLICY_RATE, TORSO
from ..inference.errors import BetwixtError
from ..inference.inertialize import eased
from . import options
from .jobs import JobOperator
from .plan import Plan, plan_over, read_retarget, scene_fps
from .pose_io import Channels, active_armature
from .preferences import model_for
from .variants import check_original, keep_variants

JOIN = 0.5    # s over which the simulated dog is eased back onto the keys after the range (at most the range)
WHOLE = "WHOLE"
PARTS = [(TORSO, "Torso", "The middle of the back"), ("Hips", "Hips", ""), ("Head", "Head", ""),
         ("LeftForeArm", "Front Left Leg", ""), ("RightForeArm", "Front Right Leg", ""),
         ("LeftLeg", "Hind Left Leg", ""), ("RightLeg", "Hind Right Leg", ""),
         (WHOLE, "Whole Dog", "Every part at once: the dog moved, not turned")]   # the dog skeleton's joints


@dataclass
class Pass:
    """What ``compute`` and ``finish`` need: the armature read over the range, and the range."""

    keys: Plan
    start: int
    end: int
    push: tuple = None   # (scene frame, (vx, vy) m/s in the world's ground plane, part or None: whole), or None
    assist: float = 0.0  # Nm


@dataclass
class Result:
    motion: object      # model space, one frame per scene frame from the frame before the range
    falls: list         # scene frames where the dog fell
    before: tuple       # (share of frames with a paw in the floor, slide cm a frame) of the motion as keyed
    after: tuple        # the same of the simulated dog


def read_pass(context, start, end, push=None, assist=0.0):
    """The :class:`Pass` of the active armature over scene frames ``start`` to ``end``; ``push``: (scene frame,
    direction in degrees on the ground from the world's X axis toward its Y, m/s, the part: a joint of the dog's
    skeleton, or None for the whole dog), or None; ``assist``: Nm (``CARLModel.track``)."""
    if end - start < 2:
        raise BetwixtError(f"frames {start}-{end}: a Physics Pass needs a range of three frames or more; set the "
                           "scene's start and end, or the operator's")
    obj = active_armature(context)
    anim = obj.animation_data
    if anim is None or anim.action is None:
        raise BetwixtError(f"armature {obj.name!r} has no action: a Physics Pass tracks the motion it is keyed with")
    channels = Channels(obj)
    model = model_for(context, obj, "physics")
    rig, retarget, detected = read_retarget(obj, model)
    fps = scene_fps(context.scene)
    keys = plan_over(channels, model, rig, retarget, detected, [], fps, np.arange(start - 1, end + 3))
    keys.gaps = [(start - 1, end + 1)]
    check_original(keys)
    if push is None:
        return Pass(keys, start, end, assist=assist)
    frame, degrees, speed, part = push
    if not start <= frame < end:
        raise BetwixtError(f"the push at frame {frame} is outside frames {start}-{end - 1}, where the dog can react "
                           "to it; set the Push frame inside the range")
    angle = np.radians(degrees)
    return Pass(keys, start, end, (frame, speed * np.array([np.cos(angle), np.sin(angle)]), part), assist)


def tracked(route, progress=None, cancelled=None):
    """The simulated dog over the pass's range (a :class:`Result`). Numpy, onnxruntime and MuJoCo only: it runs in
    the worker thread; ``cancelled()`` after each frame raises :class:`..inference.edit.Cancelled` when true."""
    def step(done, total):
        if cancelled is not None and cancelled():
            raise edit.Cancelled()
        if progress is not None:
            progress(done, total)

    plan, model = route.keys, route.keys.model
    # the range, rows 1 .. n-3 (then the two keyed frames after it), at the scene's rate (a plan's motion has a
    # frame per scene frame, whatever rate it says)
    n = plan.motion.n_frames
    source = replace(plan.motion.frames(1, n - 2), fps=plan.fps)
    pushes = None
    if route.push is not None:   # the world's ground axes are the simulator's (both Z up)
        frame, velocity, part = route.push
        pushes = {int(round((frame - route.start) * POLICY_RATE / plan.fps)): (velocity, part)}
    out = model.track(source, pushes=pushes, progress=step, assist=route.assist)
    made = edit.sample(model.motion(out), np.arange(source.n_frames) * POLICY_RATE / plan.fps)
    rotations, positions = plan.motion.rotations.copy(), plan.motion.positions.copy()
    after = rotations[n - 2:], positions[n - 2:]
    rotations[1:n - 2], positions[1:n - 2] = eased(made.rotations, made.positions, None, after,
                                                   int(round(JOIN * plan.fps)))
    return Result(replace(plan.motion, rotations=rotations, positions=positions),
                  scene_frames(out.falls, route.start, plan.fps),
                  _paws(out.reference.paws, out.reference.contacts, out.sunk_reference),
                  _paws(out.paws, out.contacts, out.sunk))


def _paws(paws, contacts, sunk):
    """(share of frames with a paw more than SUNK in the floor, the standing paws' slide in cm a frame)."""
    travel, steps = slide(paws, contacts)
    return float(np.mean(sunk > SUNK)), 100.0 * travel / max(steps, 1)


def scene_frames(falls, start, fps):
    """The scene frames (a list) of a simulation's ``falls`` (frames at POLICY_RATE from scene frame ``start``,
    the scene at ``fps``)."""
    return np.round(start + np.asarray(falls, float) * fps / POLICY_RATE).astype(int).tolist()


def falls_said(frames, where):
    """How a report says the scene ``frames`` where the simulated dog fell and was set back on ``where``."""
    if not frames:
        return "it did not fall"
    return (f"it fell on frame{'s' * (len(frames) > 1)} {', '.join(map(str, frames[:8]))}"
            f"{' …' if len(frames) > 8 else ''} (set back on {where} there)")


def _part_name(part):
    """The Push menu's name of ``part`` (None: the whole dog), as a report says it."""
    return next(label for key, label, _ in PARTS if key == (part or WHOLE)).lower()


class BETWIXT_OT_physics_pass(JobOperator, bpy.types.Operator):
    """Track the active four-legged armature's motion over a frame range with a simulated dog (CARL), kept as a
    variant to preview and apply: it keeps contact and balance where the keys slide, float or sink"""

    bl_idname = "betwixt.physics_pass"
    bl_label = "Physics Pass"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Simulating"

    frame_start: options.frame_start("simulate")
    frame_end: options.frame_end("simulate")
    push: bpy.props.BoolProperty(name="Push", description="Shove the dog at a frame and let it react", default=False)
    push_frame: bpy.props.IntProperty(name="Push Frame", description="The frame of the push (the current frame by "
                                      "default)", options={"SKIP_SAVE"})
    push_direction: bpy.props.FloatProperty(name="Direction", description="Which way the push goes on the ground: "
                                            "degrees from the world's X axis toward its Y", default=90.0,
                                            min=-360.0, max=360.0)
    push_speed: bpy.props.FloatProperty(name="Strength", description="How much the push changes the dog's speed "
                                        "(m/s)", default=0.5, min=0.0, soft_max=2.0, max=5.0)
    push_part: bpy.props.EnumProperty(name="On", description="Where the push lands: a part turns the dog as it "
                                      "moves it", items=PARTS, default=TORSO)
    assist: options.ASSIST

    def prepare(self, context):
        options.scene_range(self, context)
        if not self.properties.is_property_set("push_frame"):
            self.push_frame = context.scene.frame_current
        part = None if self.push_part == WHOLE else self.push_part
        push = (self.push_frame, self.push_direction, self.push_speed, part) if self.push else None
        return read_pass(context, self.frame_start, self.frame_end, push, self.assist)

    def compute(self, route, progress, cancelled):
        return tracked(route, progress, cancelled)

    def finish(self, context, route, result):
        [made] = yield from keep_variants(route.keys, [result.motion], label="physics")
        falls = falls_said(result.falls, "the keys")
        (sunk0, slide0), (sunk1, slide1) = result.before, result.after
        pushed = (f", pushed on the {_part_name(route.push[2])} at frame {route.push[0]} by "
                  f"{np.linalg.norm(route.push[1]):.2g} m/s" if route.push else "")
        held = f", held by at most {route.assist:g} Nm (Assist)" if route.assist else ""
        return (f"Betwixt: Physics Pass of frames {route.start}-{route.end}{pushed}{held} by model "
                f"{route.keys.model.name} in action '{made.name}': {falls}; paws in the floor on {sunk0:.0%} -> "
                f"{sunk1:.0%} of frames, standing paws slide {slide0:.2f} -> {slide1:.2f} cm a frame; preview and "
                "apply it in the Betwixt panel")
