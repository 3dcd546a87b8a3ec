"""Blender's side of the data flow: bones and F-curves in, keys out, and the way back on failure.

Reading evaluates the bone channels' F-curves (or the pose's values where a channel has none) at
whole frames into numpy arrays; :mod:`.rig` and :mod:`.retarget` do the rest. Writing replaces the
keys strictly inside each gap on the curves it touches, all points of a curve at once with
``keyframe_points.foreach_set``; a :class:`Snapshot` taken first puts every touched curve back
exactly as it was if anything fails half way.

Actions are Blender 4.4+'s layered, slotted ones (the channelbag of the armature's slot) or the
legacy actions of 4.2 and 4.3 (``action.fcurves``): :class:`Channels` hides which.
"""

import functools
from collections.abc import Mapping

import bpy
import numpy as np

from ..inference.errors import BetwixtError
from .rig import Rig, channel_count, channel_path, channels_to_quat

try:
    from bpy_extras.anim_utils import action_get_channelbag_for_slot
except ImportError:   # 4.4 without the helper: the same search
    def action_get_channelbag_for_slot(action, slot):
        bags = (strip.channelbag(slot) for layer in action.layers for strip in layer.strips)
        return next((b for b in bags if b), None) if slot is not None else None

POINT_FLOATS = ("co", "handle_left", "handle_right")
POINT_ENUMS = ("interpolation", "handle_left_type", "handle_right_type", "type", "easing")
POINT_SCALARS = ("back", "amplitude", "period")
POINT_BOOLS = ("select_control_point", "select_left_handle", "select_right_handle")
FEW_HANDLES = 16   # keys whose handles are written one by one rather than the curve's whole arrays
MERGED_KEYS = 200_000   # keys of curves alike merged at once: a long Decompress's 69 curves are tens of megabytes


def active_armature(context):
    obj = context.active_object if context.active_object is not None else getattr(context, "object", None)
    if obj is None or obj.type != "ARMATURE":
        raise BetwixtError("no armature is active; click the character's armature (or one of its bones) first")
    return obj


def bone_path(name, prop):
    return f'pose.bones["{bpy.utils.escape_identifier(name)}"].{prop}'


class Channels:
    """The F-curves an object's action holds for it: its slot's channelbag (Blender 4.4 and later), or a
    legacy action's own ``fcurves`` (4.2, 4.3, and legacy actions still unconverted in 4.4 and 4.5)."""

    def __init__(self, obj, action=None, slot=None):
        anim = obj.animation_data
        self.obj = obj
        self.action = action if action is not None else anim.action if anim is not None else None
        if self.action is None:
            raise BetwixtError(f"armature {obj.name!r} has no action; key a few poses first")
        legacy_api = hasattr(self.action, "fcurves")       # gone in 5.0
        # 4.4 and 4.5 count an empty action as both legacy and layered: key it the layered way, in a
        # slot the object uses, or its new curves would animate nothing
        self.layered = hasattr(self.action, "slots") and (not legacy_api or self.action.is_action_layered)
        self.slot = getattr(anim, "action_slot", None) if action is None else slot
        self._curves = None

    @property
    def slot_identifier(self):
        return self.slot.identifier if self.slot is not None else None

    def slot_in(self, action):
        """This slot's counterpart in another action (a copy of this one), or None."""
        if not self.layered or self.slot is None:
            return None
        return next((s for s in action.slots if s.identifier == self.slot.identifier), None)

    @property
    def bag(self):
        if not self.layered:
            return self.action
        return action_get_channelbag_for_slot(self.action, self.slot)

    def ensure_bag(self):
        if not self.layered:
            return self.action
        if self.slot is None:
            self.slot = self.action.slots.new(id_type="OBJECT", name=self.obj.name)
            if self.obj.animation_data.action == self.action:
                self.obj.animation_data.action_slot = self.slot
        bag = self.bag
        if bag is None:
            layer = self.action.layers[0] if len(self.action.layers) else self.action.layers.new("Layer")
            strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
            bag = strip.channelbag(self.slot, ensure=True)
        return bag

    def curves(self):
        """{(data_path, index): fcurve} of the slot's curves."""
        if self._curves is None:
            bag = self.bag
            self._curves = {} if bag is None else {(fc.data_path, fc.array_index): fc for fc in bag.fcurves}
        return self._curves

    def find(self, path, index):
        return self.curves().get((path, index))

    def new(self, path, index, group):
        bag = self.ensure_bag()
        if not self.layered:
            fc = bag.fcurves.new(path, index=index, action_group=group or "")
        else:
            try:
                fc = bag.fcurves.new(path, index=index, group_name=group or "")
            except TypeError:   # a channelbag without group_name (4.4): group it by hand, if it can be
                fc = bag.fcurves.new(path, index=index)
                if group:
                    try:
                        fc.group = bag.groups.get(group) or bag.groups.new(group)
                    except (AttributeError, TypeError, RuntimeError):
                        pass
        self.curves()[(path, index)] = fc
        return fc

    def remove(self, path, index):
        fc = self.curves().pop((path, index), None)
        if fc is not None:
            bag = self.bag
            name = fc.group.name if fc.group is not None else None
            bag.fcurves.remove(fc)
            group = bag.groups.get(name) if name is not None else None   # 5.0 drops empty groups itself
            if group is not None and not group.channels:
                bag.groups.remove(group)

    def bone_curves(self, names):
        """Curves that animate any channel of the named bones."""
        prefixes = tuple(f'pose.bones["{bpy.utils.escape_identifier(n)}"].' for n in names)
        return [fc for (path, _), fc in self.curves().items() if path.startswith(prefixes)]


def read_rig(obj):
    """The armature's bones as a :class:`~.rig.Rig` (parents first), in Blender's own bone order."""
    bones = obj.data.bones
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = [index[b.parent.name] if b.parent else -1 for b in bones]
    if any(p >= i for i, p in enumerate(parents)):
        raise BetwixtError(f"armature {obj.name!r}: bones are not stored parents first; "
                           "re-enter Edit Mode once to let Blender sort them")
    rest = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_local", rest)
    rest = np.swapaxes(rest.reshape(-1, 4, 4), -1, -2).astype(np.float64)   # foreach_get: column by column
    modes = tuple(obj.pose.bones[n].rotation_mode for n in names)
    plain = [b.use_inherit_rotation and b.use_local_location for b in bones]
    lengths = np.empty(len(bones), dtype=np.float32)
    bones.foreach_get("length", lengths)
    return Rig(tuple(names), np.array(parents), rest, np.array([b.use_connect for b in bones]), modes, np.array(plain),
               lengths.astype(np.float64))


def world_matrix(obj):
    return np.array(obj.matrix_world, dtype=np.float64)


def sample(obj, channels, rig, frames, bones=None, turned=True):
    """Bone channels on ``frames``: location, rotation (quaternions), scale ``(frames, bones, …)`` and
    the rotation channels as keyed ``{bone: (frames, 3|4)}``.

    Animated channels are their F-curves' values, the others the pose's current values (all of them
    with ``channels`` None: an armature without an action). Only ``bones`` and their ancestors are
    read (the rest stay at rest): nothing else moves them. Without ``turned``, the rotation channels of
    ``bones`` themselves are not read (at rest, zero): where the model makes their turns.
    """
    frames = np.asarray(frames, dtype=np.float64).tolist()   # Python floats, made once for every curve
    n = len(frames)
    location = np.zeros((n, len(rig), 3))
    rotation = np.tile([1.0, 0.0, 0.0, 0.0], (n, len(rig), 1))
    scale = np.ones((n, len(rig), 3))
    raw = {}
    unread = set() if turned or bones is None else set(np.asarray(bones).tolist())
    for b in _with_ancestors(rig, range(len(rig)) if bones is None else bones):
        name = rig.names[b]
        pb = obj.pose.bones[name]
        mode = rig.rotation_modes[b]
        rot_prop = channel_path(mode)
        location[:, b] = _channel(channels, name, "location", 3, pb.location, frames)
        if b in unread:
            raw[b] = np.zeros((n, channel_count(mode)))
        else:
            raw[b] = _channel(channels, name, rot_prop, channel_count(mode), getattr(pb, rot_prop), frames)
            rotation[:, b] = channels_to_quat(raw[b], mode)
        scale[:, b] = _channel(channels, name, "scale", 3, pb.scale, frames)
    return location, rotation, scale, raw


def _with_ancestors(rig, bones):
    out = set()
    for b in bones:
        while b >= 0 and b not in out:
            out.add(int(b))
            b = rig.parents[b]
    return sorted(out)


def _channel(channels, bone, prop, count, current, frames):
    out = np.empty((len(frames), count))
    path = bone_path(bone, prop)
    for i in range(count):
        fc = channels.find(path, i) if channels is not None else None
        if fc is None:
            out[:, i] = current[i]
        else:   # one C call per frame: map over Python floats is the quickest way to make them
            out[:, i] = np.fromiter(map(fc.evaluate, frames), np.float64, len(frames))
    return out


class KeyFrames:
    """The whole frames holding a key on the named bones' curves, read once for both questions an operator
    asks: where any key is, and where a selected one is (the selection read only when asked)."""

    def __init__(self, channels, bone_names):
        self.curves = channels.bone_curves(bone_names)
        self.times = []
        for fc in self.curves:
            co = np.empty(2 * len(fc.keyframe_points), np.float32)   # Blender's type: a third of doubles' cost
            fc.keyframe_points.foreach_get("co", co)
            self.times.append(co[0::2])

    def all(self):
        """Sorted whole frames holding a key."""
        return _whole(self.times)

    def selected(self):
        """Sorted whole frames holding a selected key."""
        chosen = []
        for fc, times in zip(self.curves, self.times):
            picked = np.zeros(len(times), dtype=bool)
            fc.keyframe_points.foreach_get("select_control_point", picked)
            chosen.append(times[picked])
        return _whole(chosen)


def _whole(times):
    return np.unique(np.round(np.concatenate([np.empty(0, np.float32), *times])).astype(np.int64)).tolist()


def key_frames(channels, bone_names, selected=False):
    """Sorted whole frames holding a key (a selected one, if ``selected``) on the named bones' curves."""
    keys = KeyFrames(channels, bone_names)
    return keys.selected() if selected else keys.all()


@functools.cache
def _enum(prop, identifier):
    return bpy.types.Keyframe.bl_rna.properties[prop].enum_items[identifier].value


class Points(Mapping):
    """Every property of a curve's keyframes (``keyframe_points.foreach_get``'s arrays by name), held in one
    array per kind of property, (properties, keys, width): two floats, an enum, a scalar, a flag. Merging
    keys is then a gather per kind rather than per property, and curves alike (:meth:`stacked`) merge as one.
    Enums are bytes, as Blender stores them: ``foreach`` then copies them whole, not key by key.
    """

    KINDS = ((POINT_FLOATS, np.float32, 2), (POINT_ENUMS, np.uint8, 1), (POINT_SCALARS, np.float32, 1),
             (POINT_BOOLS, bool, 1))
    WHERE = {name: (k, row) for k, (names, *_) in enumerate(KINDS) for row, name in enumerate(names)}

    def __init__(self, blocks):
        self.blocks = blocks

    @classmethod
    def empty(cls, n):
        return cls([np.empty((len(names), n, width), dtype) for names, dtype, width in cls.KINDS])

    @classmethod
    def read(cls, fc):
        points = fc.keyframe_points
        out = cls.empty(len(points))
        for (names, *_), block in zip(cls.KINDS, out.blocks):
            for name, row in zip(names, block):
                points.foreach_get(name, row.reshape(-1))
        return out

    @classmethod
    def of(cls, data):
        """``data`` (a mapping of the properties' flat arrays) as Points."""
        if isinstance(data, Points):
            return data
        n = len(data["type"])
        return cls([np.stack([np.asarray(data[name], dtype).reshape(n, width) for name in names])
                    for names, dtype, width in cls.KINDS])

    @classmethod
    def stacked(cls, many):
        return cls([np.stack(blocks) for blocks in zip(*(p.blocks for p in many))])

    def __getitem__(self, name):
        kind, row = self.WHERE[name]
        return self.blocks[kind][..., row, :, :].reshape(*self.blocks[kind].shape[:-3], -1)

    def __iter__(self):
        return iter(self.WHERE)

    def __len__(self):
        return len(self.WHERE)

    @property
    def count(self):
        return self.blocks[0].shape[-2]

    def joined(self, other, take):
        """These keys and ``other``'s after them (its arrays broadcast to these curves), in the order ``take``
        (indices into both)."""
        both = (np.concatenate([a, np.broadcast_to(b, a.shape[:-2] + b.shape[-2:])], axis=-2)
                for a, b in zip(self.blocks, other.blocks))
        return Points([block.take(take, axis=-2) for block in both])   # take: a C-ordered copy, as foreach wants

    def curve(self, i):
        """The ``i``-th curve of stacked Points."""
        return Points([block[i] for block in self.blocks])


def read_points(fc):
    """All of a curve's keyframe data as arrays by property, enough to rebuild it exactly."""
    return dict(Points.read(fc).items())


@functools.cache
def _added_enums():
    """The enums of a key that ``keyframe_points.add`` makes (Bézier, auto clamped handles, a keyframe, automatic
    easing; it is selected too): a property that holds them on every key need not be written."""
    added = ("BEZIER", "AUTO_CLAMPED", "AUTO_CLAMPED", "KEYFRAME", "AUTO")
    return np.array([_enum(name, value) for name, value in zip(POINT_ENUMS, added)], np.uint8)[:, None, None]


@functools.cache
def _placed_handles():
    """By handle type (a byte): whether Blender places the handle itself when the curve updates (automatic,
    vector). A table to index, where ``np.isin`` would cost tens of microseconds a curve."""
    placed = np.zeros(256, bool)
    placed[[_enum("handle_left_type", t) for t in ("AUTO", "AUTO_CLAMPED", "VECTOR")]] = True
    return placed


def write_points(fc, data):
    """Replace a curve's keyframes with ``data`` (:class:`Points`, or a mapping of the same arrays), in one bulk
    write: a property that holds on every key what Blender gives a new key is left as it gives it, and handles
    that Blender places itself are left to it (the few that are the keys' own, freed beside a fill's gaps, are
    set one by one)."""
    data = Points.of(data)
    points = fc.keyframe_points
    n = data.count
    if hasattr(points, "clear"):
        points.clear()
    else:
        while len(points):
            points.remove(points[-1], fast=True)
    if n:
        points.add(n)
        floats, enums, _, flags = data.blocks
        own = np.flatnonzero(~_placed_handles()[enums[1:3, :, 0]].all(axis=0))
        whole = len(own) > FEW_HANDLES
        written = ((True, whole, whole), ~(enums == _added_enums()).all(axis=(1, 2)),
                   np.ones(len(POINT_SCALARS), bool), ~flags.all(axis=(1, 2)))   # added keys are selected
        for (names, *_), block, write in zip(Points.KINDS, data.blocks, written):
            for name, row, w in zip(names, block, write):
                if w:
                    points.foreach_set(name, np.ascontiguousarray(row).reshape(-1))   # else one item at a time
        if not whole:
            for i, left, right in zip(own.tolist(), floats[1, own].tolist(), floats[2, own].tolist()):
                points[i].handle_left, points[i].handle_right = left, right
    fc.update()


class Snapshot:
    """Touched curves as they were, to put back exactly if a write fails half way."""

    def __init__(self, channels):
        self.channels = channels
        self.saved = {}
        self.created = []

    def keep(self, path, index):
        key = (path, index)
        fc = self.channels.find(path, index)
        if fc is not None and key not in self.saved and key not in self.created:
            self.saved[key] = Points.read(fc)
        return fc

    def created_curve(self, path, index):
        self.created.append((path, index))

    def restore(self):
        for key in reversed(self.created):
            self.channels.remove(*key)
        for (path, index), data in self.saved.items():
            fc = self.channels.find(path, index)
            if fc is not None:
                write_points(fc, data)


class KeyStyle:
    """What the new keys look like: key type, interpolation and handles (the user's preferences)."""

    def __init__(self, breakdown=False, interpolation=None, handle=None):
        edit = bpy.context.preferences.edit
        self.type = _enum("type", "BREAKDOWN" if breakdown else "KEYFRAME")
        self.interpolation = _enum("interpolation", interpolation or edit.keyframe_new_interpolation_type)
        self.handle = _enum("handle_left_type", handle or edit.keyframe_new_handle_type)
        self.easing = _enum("easing", "AUTO")


def _handle_sides(at, gaps, frames):
    """Per side of the gaps, the keys nearest each gap (its end keys, where the curve has them, at times
    ``at``) whose handle facing away from the gap is kept, with their distance to the nearest new key
    (``frames``): ``[(outer, inner, keys, nearest)]``. Searched in bulk: a long action keyed once a second
    has thousands of gaps."""
    new = np.sort(frames)
    if not len(new) or not len(at):
        return []
    order = np.argsort(at, kind="stable")
    ranked = at[order]
    last = np.searchsorted(ranked, np.array([a for a, _ in gaps]) + 1e-4, side="left") - 1   # up to a gap
    first = np.searchsorted(ranked, np.array([b for _, b in gaps]) - 1e-4, side="right")     # from its end
    sides = []
    for outer, inner, keys in (("left", "right", np.unique(order[last[last >= 0]])),
                               ("right", "left", np.unique(order[first[first < len(at)]]))):
        if outer == "left":   # new keys follow it
            k = np.searchsorted(new, at[keys], side="right")
            nearest, found = new[np.minimum(k, len(new) - 1)] - at[keys], k < len(new)
        else:
            k = np.searchsorted(new, at[keys], side="left") - 1
            nearest, found = at[keys] - new[np.maximum(k, 0)], k >= 0
        sides.append((outer, inner, keys[found], np.abs(nearest[found])))
    return sides


def _outer_handles_kept(points, sides):
    """Keys of ``sides`` (:func:`_handle_sides`, their indices into the keys of ``points``, stacked
    :class:`Points`, changed in place) keeping the handle that faces away from the gap where it was automatic:
    new keys beside a key move its automatic handles, and with them the curve outside the gap. Both handles
    are freed (Blender realigns a free handle to an automatic one), the inner one pointing the way the outer
    one does, a third of the way to the nearest new key. The sides in turn, every curve at once: a key
    between two gaps is freed by the first."""
    automatic = [_enum("handle_left_type", t) for t in ("AUTO", "AUTO_CLAMPED")]
    free = _enum("handle_left_type", "FREE")
    floats, enums = points.blocks[0], points.blocks[1]   # (curves, properties, keys, width)
    for outer, inner, keys, nearest in sides:
        handle, facing = POINT_FLOATS.index(f"handle_{outer}"), POINT_FLOATS.index(f"handle_{inner}")
        kind, other = POINT_ENUMS.index(f"handle_{outer}_type"), POINT_ENUMS.index(f"handle_{inner}_type")
        found = enums[:, kind, keys, 0]
        curve, at = np.nonzero((found == automatic[0]) | (found == automatic[1]))   # a key freed already stays
        keys, nearest = keys[at], nearest[at]
        co = floats[curve, 0, keys]
        keep = floats[curve, handle, keys] - co
        flat = np.abs(keep[:, 0]) < 1e-6   # a handle of no length: flat
        keep[flat] = [1.0 if outer == "right" else -1.0, 0.0]
        floats[curve, facing, keys] = co - keep / np.abs(keep[:, :1]) * nearest[:, None] / 3
        enums[curve, kind, keys, 0] = free
        enums[curve, other, keys, 0] = free


def _among(values, frames):
    """Which of ``values`` are in ``frames`` (whole frame numbers), by a sorted search: ``np.isin`` costs tens
    of microseconds a call, and a fill calls it for every curve."""
    ranked = np.sort(np.asarray(frames, dtype=np.float64))
    if not len(ranked):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ranked, values), len(ranked) - 1)
    return ranked[at] == values


class Merges:
    """How new keys at given frames merge into a curve whose gaps' insides they replace: which old keys
    stay, the order of all of them in time, the handles kept beside the gaps, and the new keys' style.
    Worked out once for every curve holding keys on the same frames (a fill's curves mostly do), so that
    each curve costs a gather per keyframe property."""

    def __init__(self, gaps, style):
        self.gaps, self.style = gaps, style
        self._plans = {}

    def plan(self, at, frames):
        """``(take, sides)`` for a curve with keys at ``at`` and new keys at ``frames``: the merged keys, in
        time, as indices into the old keys followed by the new; the handles kept (:func:`_handle_sides`), as
        indices into the merged keys."""
        key = (at.tobytes(), frames.tobytes())
        if key not in self._plans:
            inside = np.zeros(len(at), dtype=bool)
            for a, b in self.gaps:
                inside |= (at > a + 1e-4) & (at < b - 1e-4)
            clash = _among(np.round(at[~inside]), frames)
            keep = np.flatnonzero(~inside)[~clash]   # a frame keyed anew (a curve's first gap end) replaces the old key
            order = np.argsort(np.concatenate([at[keep], frames]), kind="stable")
            take = np.concatenate([keep, len(at) + np.arange(len(frames))])[order]   # into old keys, then new
            merged = np.full(len(at), -1)
            merged[take[take < len(at)]] = np.flatnonzero(take < len(at))
            sides = [(outer, inner, merged[keys][merged[keys] >= 0], nearest[merged[keys] >= 0])
                     for outer, inner, keys, nearest in _handle_sides(at, self.gaps, frames)]
            self._plans[key] = take, sides
        return self._plans[key]

    def fresh(self, frames, values):
        """New keys at ``frames`` (n,) with ``values`` (curves, n), as stacked :class:`Points`: the style's,
        unselected, their handles on them."""
        s, n = self.style, len(frames)
        co = np.empty((*values.shape, 2), np.float32)
        co[..., 0], co[..., 1] = frames, values
        alike = (np.array([s.interpolation, s.handle, s.handle, s.type, s.easing], np.uint8),
                 np.array([1.70158, 0.8, 4.1], np.float32),   # Blender's own for new keys
                 np.zeros(len(POINT_BOOLS), bool))
        return Points([np.broadcast_to(co[:, None], (len(values), len(POINT_FLOATS), n, 2)),
                       *(np.broadcast_to(v[:, None, None], (len(v), n, 1)) for v in alike)])

    def merged(self, curves):
        """Each of ``curves`` (frames (n,), values (n,), its keys as :class:`Points`) with the new keys in: its
        Points, in their order. Curves with keys on the same frames and new keys on the same merge as one."""
        alike = {}
        for i, (frames, _, old) in enumerate(curves):
            alike.setdefault((old["co"][0::2].tobytes(), np.asarray(frames, np.float64).tobytes()), []).append(i)
        out = [None] * len(curves)
        for members in alike.values():
            frames, _, old = curves[members[0]]
            frames = np.asarray(frames, np.float64)
            take, sides = self.plan(old["co"][0::2].astype(np.float64), frames)
            step = max(1, MERGED_KEYS // max(len(take), 1))
            for part in (members[k:k + step] for k in range(0, len(members), step)):
                values = np.stack([curves[i][1] for i in part])
                merged = Points.stacked([curves[i][2] for i in part]).joined(self.fresh(frames, values), take)
                _outer_handles_kept(merged, sides)
                for k, i in enumerate(part):
                    out[i] = merged.curve(k)
        return out


def write_bone_keys(channels, rig, edits, gaps, style, pin=False):
    """Steps (:mod:`.steps`: a share after each curve read, then after each written) that write generated
    channels as keys, all or nothing (closed half way, they put every curve back), and return the
    :class:`Snapshot` of before. Every curve is read before any is written, and curves alike merge their keys
    together (:meth:`Merges.merged`).

    ``edits``: (bone index, channel name ('rotation' or 'location'), frames (n,), values (n, c), ends) with
    values already in the bone's rotation mode; ``gaps``: the (a, b) key pairs whose inside is replaced.
    New curves also get keys on the gaps' ends, ``ends`` (frames, values), so that the pose outside the
    gaps stays as it was; with ``pin``, so do curves that lack a key there (a control rig's controls,
    which the animator may have keyed elsewhere than on the gap's keys).
    """
    snapshot, merges = Snapshot(channels), Merges(gaps, style)
    total = sum(values.shape[1] for *_, values, _ in edits)
    curves, written = [], []
    try:
        for b, channel, frames, values, ends in edits:
            name = rig.names[b]
            prop = channel_path(rig.rotation_modes[b]) if channel == "rotation" else "location"
            path = bone_path(name, prop)
            for i in range(values.shape[1]):
                fc = snapshot.keep(path, i)
                f, v, old = frames, values[:, i], snapshot.saved.get((path, i))
                if fc is None:
                    fc = channels.new(path, i, name)
                    snapshot.created_curve(path, i)
                    old = Points.empty(0)
                    lacking = np.ones(len(ends[0]), dtype=bool)
                else:
                    old = Points.read(fc) if old is None else old
                    lacking = ~_among(ends[0], np.round(old["co"][0::2])) if pin else np.zeros(len(ends[0]), bool)
                if lacking.any():
                    f = np.concatenate([frames, ends[0][lacking]])
                    v = np.concatenate([values[:, i], ends[1][lacking, i]])
                    order = np.argsort(f)
                    f, v = f[order], v[order]
                curves.append((f, v, old))
                written.append(fc)
                yield len(curves) / (2 * total)
        for done, (fc, points) in enumerate(zip(written, merges.merged(curves)), 1):
            write_points(fc, points)
            yield (total + done) / (2 * total)
    except BaseException:
        snapshot.restore()
        raise
    return snapshot
