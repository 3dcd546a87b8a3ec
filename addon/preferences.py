"""Which models Betwixt uses: per model kind (in-betweening, and the kinds to come), one of the
shipped models of that kind, or an .onnx file chosen in the preferences, which wins when set.

Models are loaded once and kept while their file is unchanged; a file that cannot be used is
remembered with its error, so the panel can say why on every redraw without reloading it.
"""

from pathlib import Path

import bpy

from ..inference.modelfile import KINDS, ModelError, open_model, runtime_class, shipped
from . import mapping

ROOT = __package__.rpartition(".")[0]   # "betwixt", or "bl_ext.<repository>.betwixt" as an extension
DEFAULTS = {"rtn": "rtn-lafan1"}        # the shipped model each kind starts with

_loaded = {}
_items = {}   # kind -> enum items; Blender keeps no reference to a dynamic enum's strings


def shipped_models(kind="rtn"):
    """The shipped model files of ``kind``, its default first."""
    return sorted(shipped(kind), key=lambda p: (p.stem != DEFAULTS.get(kind), p.name))


def _items_of(kind):
    def items(self, context):
        if kind not in _items:   # asked on every redraw; the shipped files do not change while Blender runs
            _items[kind] = [(p.stem, p.stem, _trained_on(p)) for p in shipped_models(kind)]
        return _items[kind]
    return items


def _trained_on(path):
    """The model card's line saying what the model was trained on, for the menu's tooltip."""
    try:
        lines = path.with_suffix(".md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return path.name
    return next((line.lstrip("- ").replace("`", "") for line in lines if line.startswith("- Trained on")), path.name)


class BetwixtPreferences(bpy.types.AddonPreferences):
    """Two settings per model kind: ``<kind>_model``, a shipped model, and ``<kind>_file``, a file."""

    bl_idname = ROOT
    __annotations__ = {}
    for kind in KINDS:
        title = runtime_class(kind).TITLE
        __annotations__[f"{kind}_model"] = bpy.props.EnumProperty(
            name=title, description=f"Which of the {title} models shipped with Betwixt to use",
            items=_items_of(kind))
        __annotations__[f"{kind}_file"] = bpy.props.StringProperty(
            name=f"{title} File", subtype="FILE_PATH",
            description=f"A {kind} model (.onnx) exported by 'python -m training export'; when set, it is "
                        "used instead of the shipped one")
    del kind, title

    def draw(self, context):
        for kind in KINDS:
            box = self.layout.box()
            box.prop(self, f"{kind}_model")
            box.prop(self, f"{kind}_file")
            draw_model(box, context, kind)


def preferences(context=None):
    addon = (context or bpy.context).preferences.addons.get(ROOT)
    return addon.preferences if addon is not None else None


def model_file(context=None, kind="rtn"):
    prefs = preferences(context)
    chosen = getattr(prefs, f"{kind}_file", "").strip() if prefs is not None else ""
    if chosen:
        return Path(bpy.path.abspath(chosen))
    files = shipped_models(kind)
    if not files:
        raise ModelError(f"no {kind} model is shipped with this build of Betwixt; choose an .onnx model file "
                         f"in Preferences > Add-ons > Betwixt")
    name = getattr(prefs, f"{kind}_model", "") if prefs is not None else ""
    return next((p for p in files if p.stem == name), files[0])


def load_model(context=None, kind="rtn"):
    """The active model of ``kind``, or :class:`ModelError` saying what is wrong and what to do."""
    path = model_file(context, kind)
    try:
        stamp = path.stat().st_mtime_ns, path.stat().st_size
    except OSError:
        stamp = None
    cached = _loaded.get((kind, str(path)))
    if cached is None or cached[0] != stamp:
        try:
            cached = (stamp, open_model(path, kind), None)
        except ModelError as e:
            cached = (stamp, None, e)
        _loaded[kind, str(path)] = cached
    if cached[2] is not None:
        raise cached[2]
    return cached[1]


DOES = {"fill": "fill gaps", "variants": "make variants", "follow-path": "follow paths"}


def model_for(context, obj, serves=None):
    """The active model of the kind whose skeleton the armature ``obj`` plays (:func:`.mapping.played`:
    a rig mapped to the dog's skeleton gets the locomotion model, a human rig the in-betweening one),
    or :class:`ModelError`. With ``serves`` ("fill", "variants", "follow-path"), that model must serve
    it. A model that cannot be loaded is an error where its kind serves ``serves``; otherwise it is
    passed over (a broken in-betweening model does not stop Follow Path). A kind with no model at all
    (none shipped, no file chosen: the Motion VAE, until one is) is passed over whatever it serves."""
    models, failed = [], []
    for kind in KINDS:
        if not shipped_models(kind) and not getattr(preferences(context), f"{kind}_file", "").strip():
            continue
        try:
            models.append(load_model(context, kind))
        except ModelError as e:
            if serves is not None and serves in runtime_class(kind).SERVES:
                raise
            failed.append(e)
    if not models:
        raise failed[0]
    chosen = models[mapping.played(obj, [m.skeleton for m in models])]
    if serves is None or serves in chosen.SERVES:
        return chosen
    others = [m for m in models if serves in m.SERVES]
    what = DOES.get(serves, serves)
    raise ModelError(f"armature {obj.name!r} plays the skeleton of model {chosen.name} ({chosen.TITLE}), which "
                     f"does not {what}" + (f"; to {what}, map its bones to model {others[0].name}'s skeleton "
                                           f"(Betwixt panel: the menu beside Detect, {others[0].TITLE})" if others else ""))


def forget_models():
    _loaded.clear()
    _items.clear()


def draw_model(layout, context, kind="rtn", obj=None):
    """The active model of ``kind`` (of the armature ``obj``'s skeleton, when given) in a few lines, or
    why there is none."""
    try:
        model = load_model(context, kind) if obj is None else model_for(context, obj)
    except ModelError as e:
        col = layout.column(align=True)
        col.alert = True
        for i, line in enumerate(_wrap(str(e))):
            col.label(text=line, icon="ERROR" if i == 0 else "BLANK1")
        return None
    sk = model.skeleton
    col = layout.column(align=True)
    col.label(text=f"Model: {model.name}", icon="MOD_ARMATURE")
    col.label(text=f"Skeleton: {len(sk)} joints, root {sk.names[0]}")
    col.label(text=f"{model.file.fps:g} fps" + (f", gaps up to {model.max_gap} frames" if "fill" in model.SERVES else ""))
    return model


def _wrap(text, width=48):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines
