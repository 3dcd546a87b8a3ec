"""Model files: one ONNX file a model, opened by its kind.

Every model file carries the same common metadata (kind, format version, skeleton, frame rate,
normalisation, training data, licence), checked here once; the runtime class registered for its
kind (``KINDS``) then reads its own keys. So a command, the add-on or a test asks for "the shipped
model of kind K for this skeleton" and never trips over a file of another kind lying beside it.
"""

import json
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import numpy as np

from .errors import BetwixtError
from .motion import Skeleton

FORMAT = 2   # the metadata layout this version writes and reads
MODELS = Path(__file__).parent / "models"
DEFAULTS = {"rtn": "rtn-human"}   # the shipped model of a kind that fills when none is chosen (docs/experiments.md)
# kind -> the module (relative to this package) and class of its runtime; a family plugs in here
KINDS = {"rtn": ("rtn.runtime", "RTNModel"), "mann": ("mann.runtime", "MANNModel"),
         "mvae": ("mvae.runtime", "MVAEModel"), "carl": ("carl.runtime", "CARLModel")}
COMMON = ("betwixt.kind", "betwixt.version", "betwixt.skeleton", "betwixt.fps", "betwixt.normalisation",
          "betwixt.data", "betwixt.licence")


class ModelError(BetwixtError):
    """A model file that cannot be used, or a request it cannot serve."""


def missing_runtime_hint(platform):
    """What to do when onnxruntime's library will not load on ``platform`` (``sys.platform``)."""
    if platform == "win32":
        return "install the Microsoft Visual C++ 2015-2022 redistributable (x64) and restart Blender"
    if platform == "darwin":
        return "the onnxruntime bundled with Betwixt needs macOS 13 (Ventura) or later"
    return "reinstall the Betwixt extension for this platform (Linux x64 needs glibc 2.27 or later)"


def session(path, threads=1):
    """An onnxruntime session of the file at ``path`` (or of a serialized model, bytes), on the CPU."""
    try:
        import onnxruntime
    except (ImportError, OSError) as e:
        raise ModelError(f"onnxruntime could not be loaded ({e}); {missing_runtime_hint(sys.platform)}") from None
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    # One thread unless asked: a transition is some 1,700 small operators one after another, and
    # splitting each across a thread pool costs more than it gains (see docs/experiments.md).
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        model = path if isinstance(path, bytes) else str(path)
        return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own untyped errors for unreadable files
        raise ModelError(f"{path}: not an ONNX model file ({str(e).splitlines()[0][:200]})") from None


@dataclass(frozen=True, eq=False)
class ModelFile:
    """A model file's common metadata, checked; ``metadata`` holds every key as written."""

    path: Path
    kind: str
    skeleton: Skeleton
    fps: float
    normalisation: dict       # name -> float32 array
    data: dict                # {"source", "files", "subjects", "held_out"}
    licence: str
    metadata: dict

    @property
    def name(self):
        return self.path.stem

    @property
    def use(self):
        """Whether a studio may use the model in its products, as its data's licence says: "commercial use
        allowed", "non-commercial use only" or, for a licence this version cannot read, "unknown"."""
        return use_under(self.licence)

    def json(self, key):
        """The metadata ``key`` read as JSON, or an error that says the file is incomplete."""
        try:
            return json.loads(self.metadata[key])
        except (KeyError, ValueError) as e:
            raise ModelError(f"{self.path}: incomplete model metadata ({key}: {e}); export it again") from None


@dataclass(frozen=True)
class Placement:
    """Where a model's skeleton stands, as whatever moves motion into and out of the model's space (the
    add-on's retargeting, feet planting) reads it; the RTN's feature ``Layout`` has these fields too."""

    trajectory: int        # the joint whose translation carries the character through the world
    up: int                # world up axis (0, 1, 2)
    height: float          # the body's scale in the model's units
    fps: float


class Model:
    """A model file opened, of any kind: each kind's runtime class (``KINDS``) builds on this, reads its
    own metadata, and says what it is (``TITLE``) and what it serves (``SERVES``)."""

    TITLE = None
    SERVES = ()
    spline = 0.0    # the share of a plain fill's root ground path taken from the keys' spline (fill_gaps)
    key_spline = 0.0   # the same between sparse keys (Decompress), the spline through the keys alone
    floored = False    # whether it keeps its motion on a floor of its own: planting's grounds (contacts.plant)

    def __init__(self, file, session):
        self.file, self.session = file, session
        self.skeleton = file.skeleton

    @property
    def name(self):
        return self.file.name

    @property
    def path(self):
        return self.file.path

    @property
    def metadata(self):
        return self.file.metadata

    @property
    def floor(self):
        """The height of the floor under its training data's feet (``betwixt.floor``, see
        :func:`.inbetween.data_floor`), 0 where the file does not say."""
        return float(self.metadata.get("betwixt.floor", 0.0))

    def check_skeleton(self, skeleton):
        """Refuse a skeleton this model was not trained on, naming the joints that differ."""
        if skeleton.same_hierarchy(self.skeleton):
            return
        missing = [n for n in self.skeleton.names if n not in skeleton.names]
        extra = [n for n in skeleton.names if n not in self.skeleton.names]
        detail = (f"missing joints {missing[:5]}" if missing else "") + \
                 (f"{', ' if missing else ''}unknown joints {extra[:5]}" if extra else "")
        raise ModelError(f"the skeleton ({len(skeleton)} joints, root {skeleton.names[0]!r}) does not match model "
                         f"{self.name} ({detail or 'same joints, different hierarchy or order'}); "
                         "choose a model trained on this skeleton or map the bones first")


def read(path, threads=1):
    """``(ModelFile, session)`` for the file at ``path``: its common metadata checked, whatever its kind."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file")
    ort = session(path, threads)
    meta = ort.get_modelmeta().custom_metadata_map
    if "betwixt.kind" not in meta:
        raise ModelError(f"{path}: not a Betwixt model file (its metadata has no betwixt.kind); choose a "
                         "model exported by 'python -m training export'")
    version = meta.get("betwixt.version", "?")
    if version != str(FORMAT):
        newer = version.isdigit() and int(version) > FORMAT
        raise ModelError(
            f"{path}: a {meta['betwixt.kind']!r} model in format version {version}, and this Betwixt reads "
            f"version {FORMAT}; " + ("update Betwixt to use it" if newer else
                                     f"convert it once with 'python -m training convert {path.name} -o NEW.onnx'"))
    missing = [key for key in COMMON if key not in meta]
    if missing:
        raise ModelError(f"{path}: incomplete model metadata (no {', '.join(missing)}); export it again")
    try:
        sk = json.loads(meta["betwixt.skeleton"])
        file = ModelFile(path, meta["betwixt.kind"], Skeleton.from_json(sk),
                         float(meta["betwixt.fps"]),
                         {k: np.asarray(v, dtype=np.float32) for k, v in json.loads(meta["betwixt.normalisation"]).items()},
                         json.loads(meta["betwixt.data"]), meta["betwixt.licence"], meta)
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError(f"{path}: incomplete model metadata ({e}); export it again") from None
    return file, ort


def runtime_class(kind, path=""):
    """The runtime class of ``kind``, or an error naming the kind and the ones this version knows."""
    if kind not in KINDS:
        raise ModelError(f"{path}{': ' if path else ''}a model of kind {kind!r}, which this version of Betwixt "
                         f"does not know (it knows {', '.join(sorted(KINDS))}); update Betwixt to use it")
    module, name = KINDS[kind]
    return getattr(import_module(f".{module}", __package__), name)


def open_model(path, kind=None, threads=1, **options):
    """The runtime object for the model file at ``path`` (``options`` go to its kind's class);
    ``kind``, when given, is the kind the caller needs."""
    file, ort = read(path, threads)
    if kind is not None and file.kind != kind:
        raise ModelError(f"{file.path}: a {file.kind!r} model where a {kind!r} model is needed; choose a {kind} model")
    return runtime_class(file.kind, file.path)(file, ort, **options)


def shipped(kind=None, folder=None):
    """The model files in ``folder`` (default: the shipped ones), of ``kind`` when given: the defaults
    first (what Blender and a command without ``--model`` start with), then by kind in KINDS' order, then
    by name. So on a skeleton with both, an in-betweening model fills before a locomotion model: on the
    dog, rtn-dog errs about 40 % less than mann-dog (docs/experiments.md)."""
    rank = {k: i for i, k in enumerate(KINDS)}
    kinds = {path: _kind_of(path) for path in Path(folder or MODELS).glob("*.onnx")}
    return [path for path in sorted(kinds, key=lambda p: (p.stem not in DEFAULTS.values(),
                                                          rank.get(kinds[p], len(rank)), p.name))
            if kind is None or kinds[path] == kind]


_kinds = {}   # (path, modified, size) -> kind: reading a file's metadata opens a session


def _kind_of(path):
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _kinds:
        try:
            _kinds[key] = read(path)[0].kind
        except ModelError:
            _kinds[key] = None
    return _kinds[key]


def find_model(skeleton, kind=None, serves=None, folder=None, gap=None, **options):
    """The shipped model trained on ``skeleton`` (None: on any), of ``kind`` or serving ``serves`` (say
    "fill"), opened, the first that fills a gap of ``gap`` seconds where one does (a dog's longest go to its
    locomotion model); or an error that says how to choose one."""
    longest = None
    for path in shipped(folder=folder):
        file, ort = read(path)
        if kind not in (None, file.kind) or file.kind not in KINDS \
                or not (skeleton is None or skeleton.same_hierarchy(file.skeleton)):
            continue
        runtime = runtime_class(file.kind, path)
        if serves is None or serves in runtime.SERVES:
            model = runtime(file, ort, **options)
            if gap is None or round(gap * file.fps) <= getattr(model, "max_gap", np.inf):
                return model
            if longest is None or model.max_gap / file.fps > longest.max_gap / longest.file.fps:
                longest = model
    if longest is not None:
        return longest   # none fills so long a gap: the one that fills the longest says so when asked to
    wanted = " ".join(w for w in (kind, f"model for {serves}" if serves else "model") if w)
    if skeleton is None:
        raise ModelError(f"no {wanted} is shipped; pass --model FILE")
    raise ModelError(f"no shipped {wanted} knows this skeleton ({len(skeleton)} joints, root "
                     f"{skeleton.names[0]!r}); pass --model FILE with a model trained on it")


def use_under(licence):
    """What the licence text of a model's data allows (:attr:`ModelFile.use`): a model inherits the terms of
    every data set it was trained on, so one that is non-commercial makes the model so."""
    text = licence.lower()
    if "unknown" in text:
        return "unknown"
    if any(words in text for words in ("non-commercial", "noncommercial", "research and education only")):
        return "non-commercial use only"
    return "commercial use allowed" if "commercial" in text else "unknown"


def describe(path):
    """What ``python -m inference models`` lists of a model file: name, kind, skeleton, rate, size,
    licence and what it serves (nothing, for a kind this version does not know)."""
    file, _ = read(path)
    try:
        serves = list(runtime_class(file.kind).SERVES)
    except ModelError:
        serves = []
    return {"name": file.name, "file": file.path.name, "kind": file.kind,
            "skeleton": {"joints": len(file.skeleton), "root": file.skeleton.names[0]},
            "fps": file.fps, "bytes": file.path.stat().st_size, "licence": file.licence, "use": file.use, "serves": serves,
            "trained_on": file.data.get("source")}
