"""Follow Path: an armature walks along a curve over a frame range, by its model's controller: MANN's
for a four-legged rig, the Motion VAE's sampling-based control for a two-legged one (``model.follow``).

``prepare`` (main thread) reads the curve's evaluated geometry in world space (one spline: Bezier,
poly or NURBS, its modifiers applied), lays it on the ground and times it (:func:`ground_path`),
and reads the armature as Fill Gaps does; ``compute`` (worker thread) runs the model's controller
along the path (with Physics, its motion tracked by the simulated dog, as a Physics Pass tracks keys) and
samples the motion on the scene's frames; ``finish`` keys the mapped bones on every frame of the range,
as Fill Gaps keys a gap running from the frame before the range to the frame after it, so that keys
outside the range stay as they were.
"""

from dataclasses import dataclass, field, replace

import bpy
import numpy as np

from ..inference import contacts, edit
from ..inference.errors import BetwixtError
from ..inference.mann.path import GAITS, LONGEST, Path
from . import options
from .jobs import JobOperator
from .physics import falls_said, scene_frames
from .plan import Plan, plan_over, read_retarget, resolve, scene_fps
from .pose_io import Channels, active_armature
from .preferences import model_for
from .writing import write_plan

ARRIVAL = 0.75   # s: Fit the Range covers the curve this much before the range's end (ground_path)
SPEEDS = [("RANGE", "Fit the Range", "Cover the whole curve over the frame range")] + [
    (gait.upper(), gait.title(), f"At a {gait} ({speed:g} m/s), stopping where the curve ends")
    for gait, speed in GAITS.items()]
GAIT = bpy.props.EnumProperty(name="Speed", description="How fast the character moves along the curve", items=SPEEDS)
PHYSICS = bpy.props.BoolProperty(name="Physics", description="Track the motion with the simulated dog (a CARL model, "
                                 "MuJoCo installed) before keying: its paws' contacts, balance and momentum the "
                                 "physics' (Plant Feet then has nothing to do)", default=False)


class PathError(BetwixtError):
    """A curve that cannot be followed."""


@dataclass
class Route:
    """What ``compute`` and ``finish`` need: the armature read as Fill Gaps reads it (``keys``, its one
    gap from the frame before the range to the frame after it) and the path on the ground."""

    keys: Plan
    path: Path
    start: int
    end: int
    curve: str
    physics: object = None   # the CARL model that tracks the motion, or None
    assist: float = 0.0      # Nm (CARLModel.track)
    falls: list = field(default_factory=list)   # scene frames where the simulated dog fell (follow fills it)


def selected_curve(context):
    """The one curve object selected besides the active armature."""
    curves = [o for o in context.selected_objects if o.type == "CURVE"]
    if not curves:
        raise PathError("select the path, one curve object, then the armature last so that it is active")
    if len(curves) > 1:
        names = ", ".join(sorted(repr(o.name) for o in curves))
        raise PathError(f"{len(curves)} curves are selected ({names}); select only the one to follow")
    return curves[0]


def curve_points(context, obj):
    """World positions (N, 3) along the curve object ``obj`` as Blender evaluates it, in the spline's
    direction; a closed spline ends with its first point again."""
    evaluated = obj.evaluated_get(context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    try:
        co = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", co)
        edges = np.empty(2 * len(mesh.edges), dtype=np.int64)
        mesh.edges.foreach_get("vertices", edges)
        faces = len(mesh.polygons)
    finally:
        evaluated.to_mesh_clear()
    if faces:
        raise PathError(f"curve {obj.name!r} makes faces (a bevel, an extrusion or a 2D fill); Follow Path reads "
                        "a line: set its Geometry > Extrude and Bevel Depth to 0 (and Fill Mode to None)")
    order = _chain(len(co) // 3, edges.reshape(-1, 2), obj.name)
    world = np.array(obj.matrix_world, dtype=np.float64)
    return co.reshape(-1, 3)[order] @ world[:3, :3].T + world[:3, 3]


def _chain(count, edges, name):
    """The order (N,) of ``count`` vertices joined by ``edges`` (E, 2) into one line: from its end of the
    lower index (a spline's first point), or, closed, from vertex 0 round to vertex 0 again."""
    if count < 2:
        return np.arange(count)
    degree = np.bincount(edges.reshape(-1), minlength=count)
    if degree.max() > 2 or len(edges) > count:
        raise PathError(f"curve {name!r} branches; Follow Path follows one spline: separate the others "
                        "(Edit Mode > Separate) or delete them")
    ends = np.flatnonzero(degree == 1)
    at = int(ends[0]) if len(ends) else 0
    neighbours = [[] for _ in range(count)]
    for a, b in edges.tolist():
        neighbours[a].append(b)
        neighbours[b].append(a)
    order, seen = [at], {at}
    while True:
        nxt = [v for v in neighbours[order[-1]] if v not in seen]
        if not nxt:
            break
        order.append(nxt[0])
        seen.add(nxt[0])
    if len(order) < count:
        raise PathError(f"curve {name!r} has {count - len(order)} points apart from the spline it starts "
                        "with; Follow Path follows one spline: separate the others (Edit Mode > Separate) or "
                        "delete them")
    closed = not len(ends) and count > 2
    return np.array(order + order[:1] if closed else order)


def ground_path(points, scale, seconds, speed=None, source="curve"):
    """The :class:`~..inference.mann.path.Path` the controller follows along world ``points`` (N, 3).

    Blender's ground (x, y) is the model's (x, -z), in model units (``scale``: world units per model
    unit, the rig's size over the model's). The path is timed at a constant ``speed`` (model units a
    second), by default the one that covers it in ``seconds`` less ARRIVAL (at most a quarter of them):
    a dog starting from standing falls behind its path getting up to speed and eases to a stop behind
    its end, so it needs that time to arrive by the range's end. One that ends sooner is held at its end
    (the dog stops there), one that ends later is cut at ``seconds``.
    """
    ground = np.stack([points[:, 0], -points[:, 1]], axis=-1) / scale
    step = np.linalg.norm(np.diff(ground, axis=0), axis=-1)
    moves = step > 1e-9 * step.sum()
    ground = np.concatenate([ground[:1], ground[1:][moves]])
    length = np.concatenate([[0.0], np.cumsum(step[moves])])
    times = length / (speed or length[-1] / (seconds - min(ARRIVAL, seconds / 4)))
    if times[-1] < seconds - 1e-9:
        times, ground = np.append(times, seconds), np.concatenate([ground, ground[-1:]])
    elif times[-1] > seconds:
        inside = times < seconds
        end = [np.interp(seconds, times, ground[:, k]) for k in range(2)]
        times, ground = np.append(times[inside], seconds), np.concatenate([ground[inside], [end]])
    return Path(times, ground, source=source)


def read_route(context, start, end, gait="RANGE", physics=False, assist=0.0):
    """The :class:`Route` for keying scene frames ``start`` to ``end`` of the active armature along the
    selected curve, at ``gait`` (WALK, TROT or CANTER: ``GAITS``, or "RANGE": the whole curve over the range);
    with ``physics``, its motion tracked by the rig's CARL model held by ``assist`` Nm."""
    if end - start < 1:
        raise BetwixtError(f"the frame range {start}-{end} has {max(end - start + 1, 0)} frames; Follow Path "
                           "needs at least two: set its Start and End (the scene's range by default)")
    fps = scene_fps(context.scene)
    if (end - start) / fps > LONGEST:   # refused before its frames are read: ten million of them fill the memory
        raise BetwixtError(f"the frame range {start}-{end} lasts {(end - start) / fps:,.0f} s at {fps:g} fps, longer "
                           f"than the {LONGEST:,.0f} s one request follows; set a shorter Start and End")
    obj = active_armature(context)
    curve = selected_curve(context)
    model = model_for(context, obj, "follow-path")
    anim = obj.animation_data
    channels = Channels(obj) if anim is not None and anim.action is not None else None   # None: keyed afresh
    rig, retarget, detected = read_retarget(obj, model)
    points = curve_points(context, curve)
    if len(points) < 2 or np.linalg.norm(np.diff(points[:, :2], axis=0), axis=-1).sum() < 1e-6:
        raise PathError(f"curve {curve.name!r} has no length on the ground (seen from above, its points are "
                        "one); draw the path across the floor, in the X-Y plane")
    speed = GAITS[gait.lower()] * model.units_per_metre if gait != "RANGE" else None
    path = ground_path(points, retarget.scale, (end - start) / fps, speed, source=f"curve {curve.name!r}")
    keys = plan_over(channels, model, rig, retarget, detected, [(start - 1, end + 1)], fps,
                     np.arange(start - 1, end + 2), obj=obj)
    tracker = None
    if physics:
        tracker = model_for(context, obj, "physics")
        tracker.check_skeleton(model.skeleton)
    return Route(keys, path, start, end, curve.name, tracker, assist)


def follow(route, progress=None, cancelled=None):
    """The model's motion along the route's path, one frame per scene frame from the frame before the
    range to the frame after it (a :class:`~..inference.motion.Motion` of the model's skeleton).
    ``progress(done, total)`` after each step of the model; ``cancelled()`` before it reports,
    :class:`..inference.edit.Cancelled` when true. Numpy and the model only: it runs in the worker thread."""
    def step(done, total):
        if cancelled is not None and cancelled():
            raise edit.Cancelled()
        if progress is not None:
            progress(done, total)

    model, tracker = route.keys.model, route.physics
    halves = 1 if tracker is None else 2   # the controller's steps, then the simulation's
    [motion] = model.follow([route.path], progress=lambda done, total: step(done, halves * total))
    if tracker is not None:   # the simulated dog's contacts, not planted feet
        tracked = tracker.track(motion, progress=lambda done, total: step(total + done, 2 * total),
                                assist=route.assist)
        motion = tracker.motion(tracked)
        route.falls = scene_frames(tracked.falls, route.start, route.keys.fps)
    elif route.keys.plant:   # every frame but the standing start, on the rig's lengths (inference/contacts.py)
        planted = contacts.plant(route.keys.retarget.on_rig(motion), [(0, motion.n_frames)], model.layout.height)
        motion = replace(motion, rotations=planted.rotations)
    at = (np.arange(route.start - 1, route.end + 2) - route.start) * motion.fps / route.keys.fps
    return edit.sample(motion, at)


class BETWIXT_OT_follow_path(JobOperator, bpy.types.Operator):
    """Make the active armature walk along the selected curve over a frame range, with the locomotion
    model (four legs) or the Motion VAE (two)"""

    bl_idname = "betwixt.follow_path"
    bl_label = "Follow Path"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Following the path"

    frame_start: options.frame_start("key")
    frame_end: options.frame_end("key")
    gait: GAIT
    plant_feet: options.PLANT_FEET
    physics: PHYSICS
    assist: options.ASSIST

    def prepare(self, context):
        options.scene_range(self, context)
        route = read_route(context, self.frame_start, self.frame_end, self.gait, self.physics, self.assist)
        route.keys.plant = self.plant_feet
        return route

    def compute(self, route, progress, cancelled):
        return follow(route, progress, cancelled)

    def finish(self, context, route, motion):
        plan = route.keys
        obj, channels, undo = _target(plan)
        try:
            keyed = yield from write_plan(plan, channels, motion, plan.gaps, 1, False, path=route.path.points)
        except BaseException:
            if undo is not None:
                undo()
            raise
        simulated = "" if route.physics is None else (f", tracked by {route.physics.name} held by at most "
                                                      f"{route.assist:g} Nm: {falls_said(route.falls, 'the path')}")
        return (f"Betwixt: {obj.name} follows curve {route.curve!r} over frames {route.start}-{route.end} "
                f"({keyed} frames keyed) with model {plan.model.name}{simulated}")


def _target(plan):
    """``(armature, channels, undo)``: the plan's armature and action as read (:func:`.plan.resolve`),
    or, for an armature that had no action, a new one, which ``undo()`` takes away again (else None)."""
    if plan.action_name is not None:
        return (*resolve(plan), None)
    obj = bpy.data.objects.get(plan.object_name)
    anim = obj.animation_data if obj is not None else None
    if obj is None or anim is not None and anim.action is not None:
        raise BetwixtError(f"armature {plan.object_name!r} changed while Betwixt was working; nothing was written, "
                           "run it again")
    action = bpy.data.actions.new(f"{obj.name}Action")
    (anim or obj.animation_data_create()).action = action

    def undo():
        if anim is None:
            obj.animation_data_clear()
        else:
            anim.action = None
        bpy.data.actions.remove(action)
    return obj, Channels(obj), undo
