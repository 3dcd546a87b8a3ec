"""Which model Betwixt uses: one of the shipped models (LaFAN1's by default), or an .onnx file
chosen in the preferences, which wins when set.

Models are loaded once and kept while their file is unchanged; a file that cannot be used is
remembered with its error, so the panel can say why on every redraw without reloading it.
"""

from pathlib import Path

import bpy

from ..inference.runtime import MODELS, ModelError, TransitionModel

ROOT = __package__.rpartition(".")[0]   # "betwixt", or "bl_ext.<repository>.betwixt" as an extension
DEFAULT = "rtn-lafan1.onnx"

_loaded = {}
_items = []   # Blender keeps no reference to a dynamic enum's strings: they must outlive the call


def shipped_models():
    """The model files shipped in inference/models, the default first."""
    return sorted(MODELS.glob("*.onnx"), key=lambda p: (p.name != DEFAULT, p.name))


def _shipped_items(self, context):
    if not _items:   # Blender asks on every redraw; the shipped files do not change while it runs
        _items[:] = [(p.stem, p.stem, _trained_on(p)) for p in shipped_models()]
    return _items


def _trained_on(path):
    """The model card's line saying what the model was trained on, for the menu's tooltip."""
    try:
        lines = path.with_suffix(".md").read_text(encoding="utf-8").splitlines()
    except OSError:
        return path.name
    return next((line.lstrip("- ").replace("`", "") for line in lines if line.startswith("- Trained on")), path.name)


class BetwixtPreferences(bpy.types.AddonPreferences):
    bl_idname = ROOT

    shipped_model: bpy.props.EnumProperty(
        name="Shipped Model",
        description="Which of the models shipped with Betwixt fills the gaps",
        items=_shipped_items,
    )
    model_path: bpy.props.StringProperty(
        name="Model File",
        description="A transition model (.onnx) exported by 'python -m training export'; when set, "
                    "it is used instead of the shipped model",
        subtype="FILE_PATH",
    )

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "shipped_model")
        layout.prop(self, "model_path")
        draw_model(layout, context)


def preferences(context=None):
    addon = (context or bpy.context).preferences.addons.get(ROOT)
    return addon.preferences if addon is not None else None


def model_file(context=None):
    prefs = preferences(context)
    if prefs is not None and prefs.model_path.strip():
        return Path(bpy.path.abspath(prefs.model_path.strip()))
    shipped = shipped_models()
    if not shipped:
        raise ModelError("no model is shipped with this build of Betwixt; choose an .onnx model file in "
                         "Preferences > Add-ons > Betwixt > Model File")
    chosen = prefs.shipped_model if prefs is not None else ""
    return next((p for p in shipped if p.stem == chosen), shipped[0])


def load_model(context=None):
    """The active :class:`TransitionModel`, or :class:`ModelError` saying what is wrong and what to do."""
    path = model_file(context)
    try:
        stamp = path.stat().st_mtime_ns, path.stat().st_size
    except OSError:
        stamp = None
    cached = _loaded.get(str(path))
    if cached is None or cached[0] != stamp:
        try:
            cached = (stamp, TransitionModel(path), None)
        except ModelError as e:
            cached = (stamp, None, e)
        _loaded[str(path)] = cached
    if cached[2] is not None:
        raise cached[2]
    return cached[1]


def forget_models():
    _loaded.clear()


def draw_model(layout, context):
    """The active model in a few lines, or why there is none."""
    try:
        model = load_model(context)
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
    col.label(text=f"{model.layout.fps:g} fps, gaps up to {model.max_gap} frames")
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
