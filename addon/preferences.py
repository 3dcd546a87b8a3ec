"""Which models Betwixt uses: per model kind (in-betweening, locomotion, continuations), one of the
models of that kind offered (the shipped ones, then those in the user's Model Folder), or an .onnx
file chosen in the preferences, which wins when set.

Models are loaded once and kept while their file is unchanged; a file that cannot be used is
remembered with its error, so the panel can say why on every redraw without reloading it.
"""

from pathlib import Path

import bpy

from ..inference.modelfile import KINDS, ModelError, open_model, runtime_class, shipped, use_under
from . import mapping

ROOT = __package__.rpartition(".")[0]   # "betwixt", or "bl_ext.<repository>.betwixt" as an extension

_loaded = {}
_items = {}   # kind -> enum items; Blender keeps no reference to a dynamic enum's strings


def model_folder(context=None):
    """The user's Model Folder (a Path), or None when unset."""
    prefs = preferences(context)
    chosen = prefs.model_folder.strip() if prefs is not None else ""
    return Path(bpy.path.abspath(chosen)) if chosen else None


def offered_models(kind="rtn", context=None):
    """The model files of ``kind`` offered in the preferences: the shipped ones (its default first), then
    those in the Model Folder, by name; a folder's file named as one before it is passed over."""
    files = shipped(kind)
    folder = model_folder(context)
    if folder is not None and folder.is_dir():
        names = {p.stem for p in files}
        files += [p for p in shipped(kind, folder) if p.stem not in names]
    return files


def _listing(folder):
    """What the folder's listing depends on: its path and when it last changed (None: no such folder)."""
    if folder is None:
        return None
    try:
        return str(folder), folder.stat().st_mtime_ns
    except OSError:
        return None


def _items_of(kind):
    def items(self, context):
        # asked on every redraw: listed again only when the Model Folder, or what is in it, changes
        key = (kind, _listing(model_folder(context)))
        if key not in _items:
            _items[key] = [(p.stem, p.stem, _card_summary(p)) for p in offered_models(kind, context)]
        return _items[key]
    return items


def _card_summary(path):
    """For the menu's tooltip: the model card's line saying what the model was trained on, and whether its
    data's licence allows commercial use."""
    try:
        lines = path.with_suffix(".md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return path.name
    said = {key: next((line.lstrip("- ").replace("`", "") for line in lines if line.startswith(f"- {key}")), "")
            for key in ("Trained on", "Licence of the weights")}
    summary = said["Trained on"] or path.name
    return f"{summary} ({use_under(said['Licence of the weights'])})" if said["Licence of the weights"] else summary


class BetwixtPreferences(bpy.types.AddonPreferences):
    """A Model Folder, whose models are offered beside the shipped ones, and two settings per model kind:
    ``<kind>_model``, one of those offered, and ``<kind>_file``, a file."""

    bl_idname = ROOT
    __annotations__ = {"model_folder": bpy.props.StringProperty(
        name="Model Folder", subtype="DIR_PATH",
        description="A folder of models (.onnx files exported by 'python -m training export') to offer beside the "
                    "shipped ones: models of your own, or a Motion VAE for Continue")}
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
        self.layout.prop(self, "model_folder")
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
    files = offered_models(kind, context)
    if not files:
        folder = model_folder(context)
        raise ModelError(f"no {runtime_class(kind).TITLE} model: none is shipped with this build of Betwixt"
                         + (f" and the Model Folder {str(folder)!r} holds none" if folder is not None else "")
                         + "; put one (an .onnx file made by 'python -m training export') in a folder and set it "
                         "as the Model Folder in Preferences > Add-ons > Betwixt")
    name = getattr(prefs, f"{kind}_model", "") if prefs is not None else ""
    return next((p for p in files if p.stem == name), files[0])


def load_model(context=None, kind="rtn"):
    """The active model of ``kind``, or :class:`ModelError` saying what is wrong and what to do."""
    return _opened(kind, model_file(context, kind))


def _opened(kind, path):
    """The model of ``kind`` at ``path``, opened once while the file is unchanged, or its error."""
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


DOES = {"fill": "fill gaps", "variants": "make variants", "follow-path": "follow paths",
        "continue": "make continuations", "physics": "run a Physics Pass"}
CALLS = {"fill": "fill", "variants": "variants", "follow-path": "follow", "continue": "walk",   # the model's method
         "physics": "track"}


def serves(model, request):
    """Whether ``model`` serves ``request``: it says so (``SERVES``) and has the method the add-on calls."""
    return request in model.SERVES and callable(getattr(model, CALLS.get(request, ""), None))


def model_for(context, obj, request=None, kind=None, fits=None):
    """The active model for the armature ``obj``: of the skeleton it plays (:func:`.mapping.played`: a rig
    mapped to the dog's skeleton gets the locomotion model, a human rig the in-betweening one), the first
    of that skeleton's models (and of ``kind``, when given) that serves ``request`` ("fill", "variants",
    "follow-path", "continue": :func:`serves`) and that ``fits`` accepts where one does (say, fills gaps this
    long), or :class:`ModelError`. A kind whose active model is of another skeleton is represented by its
    first offered model of this one, where it has one (:func:`_trained_on_skeleton`). A model that cannot be
    loaded is an error where it is of ``kind``, or, without ``kind``, where its kind serves ``request``;
    otherwise it is passed over (a broken in-betweening model does not stop Follow Path). A kind with no
    model at all (none shipped or in the Model Folder, no file chosen) is passed over unless it is ``kind``;
    the error names it, with where to put one, where it would serve ``request``."""
    models, failed, absent = [], [], []
    for k in KINDS:
        if k != kind and not offered_models(k, context) and not getattr(preferences(context), f"{k}_file", "").strip():
            absent.append(k)
            continue
        try:
            models.append(load_model(context, k))
        except ModelError as e:
            if k == kind or kind is None and request in runtime_class(k).SERVES:
                raise
            failed.append(e)
    if not models:
        raise failed[0] if failed else ModelError(
            "no model: none is shipped with this build of Betwixt nor in the Model Folder; set a Model Folder "
            "holding .onnx files made by 'python -m training export' in Preferences > Add-ons > Betwixt")
    played = models[mapping.played(obj, [m.skeleton for m in models])]
    models = [m if m.skeleton.same_hierarchy(played.skeleton) else _trained_on_skeleton(context, m, played.skeleton)
              for m in models]
    same = [m for m in models if m.skeleton.same_hierarchy(played.skeleton) and kind in (None, m.file.kind)]
    serving = [m for m in same if request is None or serves(m, request)]
    # where the active model of a kind does not fit, another of its kind on the skeleton may, before the next kind
    offered = serving if fits is None else [o for m in serving for o in (m, *_others_of_kind(context, m, request))]
    chosen = next((m for m in offered if fits is None or fits(m)), serving[0] if serving else same[0] if same else None)
    what = DOES.get(request, request)
    if chosen is None:
        wanted = load_model(context, kind)
        raise ModelError(f"armature {obj.name!r} plays the skeleton of model {played.name} ({played.TITLE}), and the "
                         f"{wanted.TITLE} model {wanted.name} is of another skeleton; map its bones to model "
                         f"{wanted.name}'s skeleton (Betwixt panel: the menu beside Detect, {wanted.TITLE}) or "
                         f"choose a {wanted.TITLE} model trained on this one")
    if request is None or serves(chosen, request):
        return chosen
    if kind is not None:
        raise ModelError(f"model {chosen.name} ({chosen.TITLE}) does not {what} (it serves: "
                         f"{', '.join(chosen.SERVES)}); choose a {chosen.TITLE} model that does in "
                         "Preferences > Add-ons > Betwixt")
    others = [m for m in models if serves(m, request)]
    wanting = [k for k in absent if request in runtime_class(k).SERVES]
    if wanting and not others:
        model_file(context, wanting[0])   # raises: no model of that kind, and where to put one
    hints = [f"map its bones to model {m.name}'s skeleton (Betwixt panel: the menu beside Detect, {m.TITLE})"
             for m in others[:1]]
    hints += [f"put a {runtime_class(k).TITLE} model in a folder and set it as the Model Folder in Preferences > "
              "Add-ons > Betwixt" for k in wanting]
    raise ModelError(f"armature {obj.name!r} plays the skeleton of model {chosen.name} ({chosen.TITLE}), which "
                     f"does not {what}" + (f"; to {what}, " + ", or ".join(hints) if hints else ""))


def _offered_on(context, kind, skeleton):
    """The models of ``kind`` offered (:func:`offered_models`) that were trained on ``skeleton``, in that order;
    a file that cannot be opened is passed over."""
    for path in offered_models(kind, context):
        try:
            other = _opened(kind, path)
        except ModelError:
            continue
        if other.skeleton.same_hierarchy(skeleton):
            yield other


def _others_of_kind(context, model, request):
    """The other models of ``model``'s kind on its skeleton (:func:`_offered_on`) that serve ``request``: the
    shipped transformer in-betweener, trained on gaps of up to 2 s, hands a longer gap to the RTN of its
    skeleton, trained to 4 s (docs/experiments.md, "The transformer ships as `rtn-human`")."""
    own = Path(model.file.path).resolve()
    return [other for other in _offered_on(context, model.file.kind, model.skeleton)
            if Path(other.file.path).resolve() != own and (request is None or serves(other, request))]


def _trained_on_skeleton(context, model, skeleton):
    """The first model of ``model``'s kind offered (:func:`offered_models`) that was trained on
    ``skeleton``, or ``model``: a rig of another skeleton than the active model's gets one of its own (a
    dog, the dog's in-betweening model beside the human one)."""
    return next(_offered_on(context, model.file.kind, skeleton), model)


def forget_models():
    _loaded.clear()
    _items.clear()


def draw_model(layout, context, kind="rtn", obj=None):
    """The active model of ``kind`` (of the armature ``obj``'s skeleton, when given) in a few lines, or
    why there is none."""
    try:
        model = load_model(context, kind) if obj is None else model_for(context, obj)
    except ModelError as e:
        draw_error(layout, str(e))
        return None
    sk = model.skeleton
    col = layout.column(align=True)
    col.label(text=f"Model: {model.name}", icon="MOD_ARMATURE")
    col.label(text=f"Skeleton: {len(sk)} joints, root {sk.names[0]}")
    col.label(text=f"{model.file.fps:g} fps"
              + (f", gaps up to {model.max_gap} frames" if "fill" in model.SERVES else ""))
    col.label(text=f"Licence: {model.file.use}",
              icon="CHECKMARK" if model.file.use == "commercial use allowed" else "INFO")
    return model


def draw_error(layout, text):
    """``text`` in red lines of the panel's width, an error icon on the first."""
    col = layout.column(align=True)
    col.alert = True
    for i, line in enumerate(_wrap(text)):
        col.label(text=line, icon="ERROR" if i == 0 else "BLANK1")


def _wrap(text, width=48):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines
