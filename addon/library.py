"""Transitions: a library of K variants of a transition from every chosen action to every other, in Blender.

A game's locomotion needs a transition from each of its states to each other (issue 44). ``prepare`` reads
each chosen action into the model's space as the other operators read a gap (assigned to the armature for
the time of its reading, :func:`.plan.plan_over` over its keys and the transition's length after them);
``compute`` is :func:`..inference.library.generate` and its report (numpy and the model only); ``finish``
keys each take's transition, from the source's leave frame to the target's enter frame, into an action of
its own named "<source> -> <target> <i>" through :func:`.writing.key_edits` and
:func:`.pose_io.write_bone_keys`, so that a control rig gets keys on its controls, and lays them out in the
NLA, a muted track a pair, and draws its contact sheet into an image (in numpy: Blender has no matplotlib).
A scene at another frame rate than the model's is read, and written back, on its own frames (the actions
resampled to the model's rate, each transition to the scene's). All or nothing, one undo step; the actions
are listed in the panel for preview (the flagged ones marked, their poor measures named), discarded
together (with their tracks and sheet), and exported as one FBX file with a take each (Blender's own
exporter).
"""

from dataclasses import dataclass, replace

import bpy
import numpy as np

from ..inference import library, quat
from ..inference.edit import SAME_RATE, Cancelled, model_frames
from ..inference.errors import BetwixtError
from . import mapping, options
from .export import armature_actions
from .jobs import JobOperator, refusing
from .plan import keyed_bones, plan_over, read_retarget, scene_fps
from .pose_io import Channels, KeyStyle, active_armature, key_frames, write_bone_keys
from .preferences import model_for
from .steps import share
from .writing import key_edits

LIBRARY = "betwixt_library"      # on a transition's action: the armature it was made for
RETURN = "betwixt_library_back"  # ... and the action the armature had, to go back to on Discard
FLAGS = "betwixt_flags"          # ... and its report's flags: the measures past its clips' own, comma-separated
TRACK = "Betwixt: "              # the NLA tracks of a library's pairs and their strips: this and their names
SHEET = "Betwixt sheet: "        # the image of an armature's library's contact sheet: this and its name
SPACING = 10                     # frames between one variant's strip and the next in a pair's track
LEAVES = [("AUTO", "Best Match", "The frame within a second of the end whose pose and velocity fit the other "
           "action's best (as motion graphs choose)"),
          ("EDGE", "Last Frame", "The source's last key"),
          ("MARKER", "Marker", "The action's pose marker named 'leave'")]
ENTERS = [("AUTO", "Best Match", "The frame within a second of the start whose pose and velocity fit the other "
           "action's best"),
          ("EDGE", "First Frame", "The target's first key"),
          ("MARKER", "Marker", "The action's pose marker named 'enter'")]


@dataclass
class Source:
    """One chosen action read in model space: its scene frames from ``start`` (its first key), the clip (its
    keys' range, at the model's frame rate), and the :class:`.plan.Plan` the transitions leaving it are written
    through (its scene frames run on past its last key by the transition's length, the channels there as
    Blender extrapolates them)."""

    action: str
    start: int
    clip: object
    plan: object


@dataclass
class Library:
    """Everything ``compute`` and ``finish`` need, read on the main thread; ``back`` the action to return to
    (the armature's own, where it was previewing a transition: that transition's)."""

    object_name: str
    back: str
    model: object
    detected: dict
    sources: list
    leave: list            # per action: "auto", "last" or a frame of its clip
    enter: list
    length: int            # model frames
    count: int
    variation: float
    seed: int
    plant: bool
    ratio: float           # scene frames a model frame


def slot_of(action, obj):
    """The slot of ``action`` the armature ``obj`` plays (its current slot's counterpart, else the first
    object slot), or None (no slots: Blender before 4.4)."""
    if not hasattr(action, "slots"):
        return None
    current = getattr(getattr(obj.animation_data, "action_slot", None), "identifier", None)
    return next((s for s in action.slots if s.identifier == current), None) or \
        next((s for s in action.slots if s.target_id_type == "OBJECT"), None)


def play(obj, action):
    """Assign ``action`` (or None) to the armature, in the slot it plays."""
    anim = obj.animation_data or obj.animation_data_create()
    anim.action = action
    slot = slot_of(action, obj) if action is not None else None
    if slot is not None:
        anim.action_slot = slot


def choices(obj):
    """The armature's actions that Transitions may choose: its own, not variants nor transitions."""
    return [a for a in armature_actions(obj) if LIBRARY not in a]


def transitions_of(obj):
    """The transition actions made for the armature ``obj``, by name."""
    return sorted((a for a in bpy.data.actions if a.get(LIBRARY) == obj.name), key=lambda a: a.name)


def _marker(action, name, source, ratio):
    """The frame of ``source``'s clip (model frames, ``ratio`` scene frames each) at the action's pose marker
    ``name``."""
    marker = next((m for m in action.pose_markers if m.name == name), None)
    if marker is None:
        raise BetwixtError(f"action {action.name!r} has no pose marker named {name!r}; add one in the Action "
                           "Editor (Marker > Add Marker, with Show Pose Markers) or choose Best Match")
    last = source.start + source.clip.n_frames - 1
    if not source.start <= marker.frame <= last:
        raise BetwixtError(f"action {action.name!r}: its pose marker {name!r} is on frame {marker.frame}, outside its "
                           f"keys (frames {source.start} to {last})")
    return min(int(round((marker.frame - source.start) / ratio)), source.clip.n_frames - 1)


def read_source(obj, action, model, rig, retarget, detected, length, fps):
    """:class:`Source` of ``action``, assigned to ``obj`` while it is read (put back by the caller): ``length``
    scene frames read past its last key, its clip at the model's frame rate (resampled from the scene's
    ``fps``)."""
    play(obj, action)
    channels = Channels(obj, action=action, slot=slot_of(action, obj))
    keys = key_frames(channels, keyed_bones(obj, rig, retarget))
    if len(keys) < 2:
        raise BetwixtError(f"action {action.name!r} has fewer than two keys on the mapped bones; key it or untick it")
    start, end = int(keys[0]), int(keys[-1])
    frames = np.arange(start - 1, end + length + 3)
    plan = plan_over(channels, model, rig, retarget, detected, [(end, int(frames[-1]))], fps, frames)
    clip = replace(plan.motion.frames(1, end - start + 2), name=action.name, fps=fps)
    if abs(fps / model.layout.fps - 1.0) >= SAME_RATE:
        clip = clip.resample(model.layout.fps)
    return Source(action.name, start, replace(clip, fps=model.layout.fps), plan)


class BETWIXT_OT_transitions(JobOperator, bpy.types.Operator):
    """K transitions from every ticked action of the active armature to every other, each in its own action"""

    bl_idname = "betwixt.transitions"
    bl_label = "Transitions"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Making transitions"

    length: bpy.props.IntProperty(name="Length", description="Frames of each transition, strictly between the "
                                  "leave and the enter frame", default=30, min=0, soft_min=1, soft_max=120)
    count: options.count("Variants", "Transitions per pair of actions", 1)
    leave: bpy.props.EnumProperty(name="Leave", description="Where the source action is left", items=LEAVES)
    enter: bpy.props.EnumProperty(name="Enter", description="Where the target action is entered", items=ENTERS)
    variation: options.variation(1.0)
    seed: options.seed("Which variants")
    plant_feet: options.PLANT_FEET

    def prepare(self, context):
        obj = active_armature(context)
        chosen = [a for a in choices(obj) if a.betwixt_pick]
        if len(chosen) < 2:
            raise BetwixtError("tick at least two actions in the Transitions list (a transition goes from one to "
                               "another)")
        fps = scene_fps(context.scene)

        def between(model):   # model frames strictly between the keys
            return model_frames(0, self.length + 1, fps / model.layout.fps) - 1

        def reaches(model):
            return between(model) <= model.max_gap

        model = model_for(context, obj, "variants", "rtn")
        if not reaches(model):   # longer than the active model fills: another of the skeleton may
            model = model_for(context, obj, "variants", "rtn", fits=reaches)
        ratio, length = fps / model.layout.fps, between(model)
        if self.length < 1 or length > model.max_gap:
            most = int(model.max_gap * ratio)
            raise BetwixtError(f"a transition's length must be 1 to {most} frames at {fps:g} fps (it is {self.length})")
        anim = obj.animation_data
        back = (anim.action, getattr(anim, "action_slot", None)) if anim is not None else (None, None)
        sources = []
        try:
            rig, retarget, detected = read_retarget(obj, model)
            for action in chosen:
                sources.append(read_source(obj, action, model, rig, retarget, detected, self.length, fps))
        finally:
            _put_back(obj, *back)
        leave = [_marker(a, "leave", s, ratio) if self.leave == "MARKER" else
                 {"AUTO": "auto", "EDGE": "last"}[self.leave] for a, s in zip(chosen, sources)]
        enter = [_marker(a, "enter", s, ratio) if self.enter == "MARKER" else
                 {"AUTO": "auto", "EDGE": "first"}[self.enter] for a, s in zip(chosen, sources)]
        home = back[0].get(RETURN, back[0].name) if back[0] is not None else ""
        return Library(obj.name, home, model, detected, sources, leave, enter, length, self.count,
                       self.variation, self.seed, self.plant_feet, ratio)

    def compute(self, plan, progress, cancelled):
        if cancelled():
            raise Cancelled()
        clips = [s.clip for s in plan.sources]
        joins = [replace(library.joins([clips[s], clips[t]], [(0, 1)], plan.model.layout, plan.leave[s],
                                       plan.enter[t])[0], source=s, target=t)
                 for s, t in library.all_pairs(len(clips))]

        def step(done, total):
            if cancelled():
                raise Cancelled()
            progress(done, total)
        takes = library.generate(plan.model, clips, joins, plan.length, plan.count, plan.variation, plan.seed,
                                 plan.plant, step)
        lay = plan.model.layout
        flags = [row["flags"] for row in library.report(takes, clips, lay.height, lay.up)["transitions"]]
        return takes, flags, library.sheet_pixels(takes, lay.height, lay.up, flags)

    def finish(self, context, plan, result):
        obj = bpy.data.objects.get(plan.object_name)
        if obj is None:
            raise BetwixtError(f"armature {plan.object_name!r} was removed while Betwixt was working")
        takes, flags, pixels = result
        made = yield from write_library(obj, plan, takes, flags)
        sheet_image(obj, pixels)
        flagged = sum(bool(f) for f in flags)
        return (f"Betwixt: {len(made)} transitions ({len(plan.sources) * (len(plan.sources) - 1)} pairs x "
                f"{plan.count}) by model {plan.model.name}, in actions '{made[0].name}' … '{made[-1].name}'"
                + (f", {flagged} flagged (their measures past the clips' own, named in the list)" if flagged else "")
                + "; preview them in the Betwixt panel")


def _put_back(obj, action, slot):
    anim = obj.animation_data
    if anim is None:
        return
    anim.action = action
    if slot is not None and action is not None:
        anim.action_slot = slot


def write_library(obj, plan, takes, flags):
    """Steps (:mod:`.steps`, a share after each curve of each take) that key each take's transition into a
    new action, all or none (Esc between two steps leaves none), its ``flags``
    (:func:`..inference.library.flags`, a list a take) stored on it for the panel's list, the armature's
    earlier library replaced; they return the actions."""
    anim = obj.animation_data
    back = (anim.action, getattr(anim, "action_slot", None))
    old = transitions_of(obj)
    made = []
    try:
        for s, source in enumerate(plan.sources):
            action = bpy.data.actions.get(source.action)
            if action is None:
                raise BetwixtError(f"action {source.action!r} was removed while Betwixt was working; run it again")
            play(obj, action)
            channels = Channels(obj, action=action, slot=slot_of(action, obj))
            for take, flagged in ((t, f) for t, f in zip(takes, flags) if t.join.source == s):
                steps = write_take(obj, plan, source, channels, take, flagged)
                made.append(((yield from share(steps, len(made), len(takes))), take.motion.name))
    except BaseException:
        for action, _ in made:
            bpy.data.actions.remove(action)
        raise
    finally:
        _put_back(obj, *back)
    if anim.action in old:
        play(obj, bpy.data.actions.get(plan.back))
    clear_tracks(obj)
    for action in old:
        bpy.data.actions.remove(action)
    for action, name in made:
        action.name = name
    lay_out(obj, [action for action, _ in made])
    if plan.detected is not None:
        mapping.store(obj.data, plan.model.skeleton.names, plan.detected)
    return [action for action, _ in made]


def write_take(obj, plan, source, channels, take, flags=()):
    """Steps that return one take's transition, from the source's leave frame to the target's enter frame
    (scene frames from the source's), keyed into a new action through the source's plan: the keys the plan's
    gap around those frames puts on its ends are taken off again, so that the action holds the transition
    alone. ``flags``: the names of its poor measures, kept on the action (``betwixt_flags``, comma-separated)."""
    p = source.plan
    a, b = take.gap
    first = source.start + int(round(take.join.leave * plan.ratio))
    last = first + int(round((b - a) * plan.ratio))
    rows = np.arange(first, last + 1) - p.first
    rotations, positions = p.motion.rotations.copy(), p.motion.positions.copy()
    rotations[rows], positions[rows] = retimed(take.motion, a, b, last - first)
    motion = replace(p.motion, rotations=rotations, positions=positions)
    gaps = [(first - 1, last + 1)]
    rig, edits = yield from key_edits(p, channels, motion, gaps, 1)
    action = bpy.data.actions.new("betwixt transition")
    action.use_fake_user = True
    action[LIBRARY] = plan.object_name
    action[RETURN] = plan.back
    action["betwixt_source"], action["betwixt_target"] = source.action, plan.sources[take.join.target].action
    action["betwixt_enter"] = plan.sources[take.join.target].start + int(round(take.join.enter * plan.ratio))
    action[FLAGS] = ", ".join(flags)
    target = Channels(obj, action=action)
    try:
        yield from write_bone_keys(target, rig, edits, gaps, KeyStyle(), pin=p.drive is not None)
    except BaseException:
        bpy.data.actions.remove(action)
        raise
    for fc in target.curves().values():
        points = fc.keyframe_points
        for point in [k for k in points if k.co[0] < first - 0.5 or k.co[0] > last + 0.5][::-1]:
            points.remove(point, fast=True)
        fc.update()
    return action


def retimed(motion, a, b, steps):
    """``(rotations, positions)`` of ``motion``'s frames ``a`` to ``b`` (model frames) at ``steps`` + 1 evenly
    spaced times from ``a`` to ``b``: the scene's frames, where they run at another rate than the model's (the
    transition at most half a scene frame longer or shorter, its ends kept); the frames themselves at the same
    rate."""
    t = np.linspace(a, b, steps + 1)
    i0 = np.minimum(np.floor(t).astype(np.int64), max(b - 1, a))
    i1 = np.minimum(i0 + 1, b)
    w = (t - i0)[:, None]
    rotations = quat.slerp(motion.rotations[i0], motion.rotations[i1], w)
    positions = motion.positions[i0] * (1.0 - w[..., None]) + motion.positions[i1] * w[..., None]
    return quat.unroll(rotations), positions


def sheet_image(obj, pixels):
    """The library's contact sheet (:func:`..inference.library.sheet_pixels`, RGBA (H, W, 4)) as the image
    "Betwixt sheet: <armature>", packed into the file, in place of the armature's earlier one."""
    name = f"{SHEET}{obj.name}"
    old = bpy.data.images.get(name)
    if old is not None:
        bpy.data.images.remove(old)
    image = bpy.data.images.new(name, pixels.shape[1], pixels.shape[0], alpha=True)
    image.pixels.foreach_set(pixels.astype(np.float32).ravel())
    image.pack()
    return image


def lay_out(obj, actions):
    """The transitions ``actions`` in the armature's NLA, muted (the armature plays its action as before): a
    track a pair of actions, named "Betwixt: <source> -> <target>", its variants one after another from the
    first's own frames, :data:`SPACING` frames apart, so that soloing a track plays a pair's variants in turn."""
    anim = obj.animation_data or obj.animation_data_create()
    pairs = {}
    for action in actions:
        pairs.setdefault((action["betwixt_source"], action["betwixt_target"]), []).append(action)
    for (source, target), variants in pairs.items():
        track = anim.nla_tracks.new()
        track.name, track.mute = f"{TRACK}{source} -> {target}", True
        frame = variants[0].frame_range[0]
        for action in variants:
            strip = track.strips.new(f"{TRACK}{action.name}", int(frame), action)   # the FBX takes keep the names
            slot = slot_of(action, obj)
            if slot is not None and hasattr(strip, "action_slot"):
                strip.action_slot = slot
            frame = strip.frame_end + SPACING


def clear_tracks(obj):
    """The armature's NLA tracks that :func:`lay_out` made, removed."""
    anim = obj.animation_data
    for track in [t for t in (anim.nla_tracks if anim is not None else ()) if t.name.startswith(TRACK)]:
        anim.nla_tracks.remove(track)


class BETWIXT_OT_preview_transition(bpy.types.Operator):
    """Show this transition (or the action Transitions started from) on the armature"""

    bl_idname = "betwixt.preview_transition"
    bl_label = "Preview Transition"
    bl_options = {"REGISTER", "UNDO"}

    action: bpy.props.StringProperty(name="Action")

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        action = bpy.data.actions.get(self.action)
        if action is None:
            raise BetwixtError(f"there is no action {self.action!r}")
        play(obj, action)
        if LIBRARY in action:
            context.scene.frame_current = int(action.frame_range[0])
        return {"FINISHED"}


class BETWIXT_OT_discard_transitions(bpy.types.Operator):
    """Remove the armature's transitions and go back to the action it had before"""

    bl_idname = "betwixt.discard_transitions"
    bl_label = "Discard Transitions"
    bl_options = {"REGISTER", "UNDO"}

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        made = transitions_of(obj)
        if not made:
            raise BetwixtError(f"armature {obj.name!r} has no transitions")
        back = bpy.data.actions.get(made[0].get(RETURN, ""))
        current = obj.animation_data.action if obj.animation_data else None
        if current in made:
            play(obj, back)
        clear_tracks(obj)
        for action in made:
            bpy.data.actions.remove(action)
        image = bpy.data.images.get(f"{SHEET}{obj.name}")
        if image is not None:
            bpy.data.images.remove(image)
        return {"FINISHED"}


class BETWIXT_OT_show_contact_sheet(bpy.types.Operator):
    """Open the library's contact sheet (a filmstrip a transition, the flagged ones' floor red) in a new window"""

    bl_idname = "betwixt.show_contact_sheet"
    bl_label = "Contact Sheet"
    bl_options = {"REGISTER"}

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        image = bpy.data.images.get(f"{SHEET}{obj.name}")
        if image is None:
            raise BetwixtError(f"armature {obj.name!r} has no contact sheet; make its transitions first")
        if not bpy.ops.wm.window_new.poll():
            raise BetwixtError("the contact sheet opens in a window of its own, which needs Blender's interface")
        bpy.ops.wm.window_new()
        area = context.window_manager.windows[-1].screen.areas[0]
        area.type = "IMAGE_EDITOR"
        area.spaces.active.image = image
        return {"FINISHED"}


class BETWIXT_OT_export_transitions(bpy.types.Operator):
    """Write the armature's transitions to one FBX file, a take each, through Blender's FBX exporter"""

    bl_idname = "betwixt.export_transitions"
    bl_label = "Export Transitions (FBX)"
    bl_options = {"REGISTER"}

    filepath: bpy.props.StringProperty(name="File", subtype="FILE_PATH")
    filter_glob: bpy.props.StringProperty(default="*.fbx", options={"HIDDEN"})

    def invoke(self, context, event):
        if not self.filepath:
            self.filepath = bpy.path.ensure_ext(bpy.path.abspath("//transitions"), ".fbx")
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    @refusing
    def execute(self, context):
        obj = active_armature(context)
        made = transitions_of(obj)
        if not made:
            raise BetwixtError(f"armature {obj.name!r} has no transitions; make them with Transitions first")
        path = bpy.path.ensure_ext(bpy.path.abspath(self.filepath or "//transitions"), ".fbx")
        try:
            export_fbx(context, obj, made, path)
        except RuntimeError as e:   # Blender's FBX exporter's
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Betwixt: wrote {len(made)} transitions as takes to {path}")
        return {"FINISHED"}


def export_fbx(context, obj, actions, path):
    """The armature (and its meshes) with ``actions`` as one FBX take each: the exporter's NLA Strips mode
    over a temporary track a strip (each strip is its own take, named for it), the armature's action, NLA
    and the selection put back after."""
    anim = obj.animation_data or obj.animation_data_create()
    saved = (anim.action, getattr(anim, "action_slot", None), [t.mute for t in anim.nla_tracks],
             context.view_layer.objects.active, [o for o in context.view_layer.objects if o.select_get()])
    tracks = []
    try:
        for t in anim.nla_tracks:
            t.mute = True
        for action in actions:
            track = anim.nla_tracks.new()
            tracks.append(track)
            track.name = action.name
            strip = track.strips.new(action.name, int(action.frame_range[0]), action)
            strip.name = action.name
        for o in saved[4]:
            o.select_set(False)
        for o in [obj] + [c for c in obj.children_recursive if c.type == "MESH"]:
            o.select_set(True)
        context.view_layer.objects.active = obj
        bpy.ops.export_scene.fbx(filepath=path, check_existing=False, use_selection=True,
                                 object_types={"ARMATURE", "MESH"}, bake_anim=True, bake_anim_use_nla_strips=True,
                                 bake_anim_use_all_actions=False, bake_anim_force_startend_keying=True,
                                 use_armature_deform_only=True, add_leaf_bones=False)
    finally:
        for track in tracks:
            anim.nla_tracks.remove(track)
        for t, mute in zip(anim.nla_tracks, saved[2]):
            t.mute = mute
        _put_back(obj, saved[0], saved[1])
        for o in context.view_layer.objects:
            o.select_set(o in saved[4])
        context.view_layer.objects.active = saved[3]


class BETWIXT_UL_transitions(bpy.types.UIList):
    """The active armature's transitions among the file's actions, each a button that previews it, the flagged
    ones (their report's measures past their clips' own) marked and their flags named."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        current = context.active_object.animation_data.action if context.active_object.animation_data else None
        flags = item.get(FLAGS, "")
        layout.operator("betwixt.preview_transition", text=f"{item.name}  ({flags})" if flags else item.name,
                        emboss=False, icon="PLAY" if item == current else "ERROR" if flags else "ACTION"
                        ).action = item.name

    def filter_items(self, context, data, propname):
        obj = context.active_object
        name = obj.name if obj is not None else None
        actions = getattr(data, propname)
        flags = [self.bitflag_filter_item if a.get(LIBRARY) == name else 0 for a in actions]
        return flags, []
