"""Checkpoints: tensors and plain values only, written atomically, read without running any code.

A checkpoint is a dict of state dicts, tensors, and str/int/float/bool/None in lists and dicts, so
``torch.load(..., weights_only=True)`` reads it: a checkpoint someone hands a technical animator
(for ``--init`` or ``export``) cannot run code on their machine. Checkpoints of earlier versions
held numpy arrays and were read by unpickling; :func:`convert` turns one into this form once.
"""

import pickle
import zipfile
from pathlib import Path

import numpy as np
import torch

from inference.errors import DataError
from inference.modelfile import read
from .onnx_tools import stored_weights

FORMAT = 2


def save(state, path):
    """Write ``state`` to ``path`` through a temporary file, so a cut leaves the last one whole."""
    path = Path(path)
    tmp = path.with_suffix(".part")
    torch.save(state, tmp)
    tmp.replace(path)


def load(path):
    """The checkpoint at ``path``, or one clear error that says what to do."""
    if Path(path).is_file() and not zipfile.is_zipfile(path):   # torch writes checkpoints as zip archives
        raise DataError(f"{path}: not a training checkpoint; give a RUN/checkpoint.pt")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise DataError(f"{path}: no such checkpoint; give a RUN/checkpoint.pt") from None
    except pickle.UnpicklingError as e:
        raise DataError(f"{path}: not a checkpoint this version reads safely ({str(e).splitlines()[0][:160]}); "
                        "if it is a checkpoint of an earlier Betwixt that you trust, convert it once with "
                        f"'python -m training convert {path} -o NEW.pt'") from None
    except (OSError, RuntimeError, EOFError) as e:
        raise DataError(f"{path}: not a training checkpoint ({e}); give a RUN/checkpoint.pt") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT or "family" not in state:
        raise DataError(f"{path}: not a Betwixt training checkpoint of format {FORMAT}; give a RUN/checkpoint.pt, "
                        f"or convert one of an earlier Betwixt with 'python -m training convert'")
    return state


def initial(path, family):
    """The checkpoint at ``path`` that a new run of ``family`` (its name) starts from (``--init``), once it
    is known to be of that family (whether it fits the run is the family's to say)."""
    source = load(path)
    if source["family"] != family:
        raise DataError(f"{path}: a checkpoint of a {source['family']} run; --init needs a {family} checkpoint")
    return source


def of_model_file(path, family):
    """The state ``--init`` starts from when given a model file (``.onnx``) rather than a checkpoint: a
    technical animator has the shipped models, not the runs that made them, and fine-tunes those on
    their own data. The weights come back as the file stores them (quantised ones as every fill
    multiplies by them); ``stats`` holds what the file carries, and the loop measures the rest (the
    loss's own units) on the new data; the record of how the weights were made goes on."""
    file, _ = read(path)
    if file.kind != family.name:
        raise DataError(f"{path}: a {file.kind} model; --init needs a {family.name} model or checkpoint")
    config, stats, training = file.json("betwixt.config"), family.stats_of(file), file.json("betwixt.training")
    model = family.network(config, stats)
    runs = training.get("runs") or [{"from_step": 0, "argv": argv_of(training["args"]),
                                     "commit": training.get("commit")}]
    return {"format": FORMAT, "family": family.name, "step": int(training["steps"]), "config": config,
            "stats": tensors(stats), "file": str(path),
            "meta": {"held_out": file.data.get("held_out", []), **family.meta_of(file)},
            "history": {"train": [], "validation": [], "runs": runs},
            "model": family.weights_of(model, stored_weights(path))}


def tensors(arrays):
    """A dict of arrays as float32 tensors, for a checkpoint."""
    return {k: torch.as_tensor(np.asarray(v), dtype=torch.float32) for k, v in arrays.items()}


def arrays(stored):
    """A checkpoint's dict of tensors back as numpy arrays."""
    return {k: v.numpy() for k, v in stored.items()}


def earlier(path):
    """A checkpoint of an earlier version: numpy arrays and plain values in a pickle. Only numpy's
    own array types are let through the safe unpickler: still no arbitrary code."""
    allowed = [np.core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float32)),
               type(np.dtype(np.float64)), type(np.dtype(np.int64)), np.core.multiarray.scalar]
    if not zipfile.is_zipfile(path):   # torch has written checkpoints as zip archives since 1.6
        raise DataError(f"{path}: not a checkpoint of an earlier Betwixt; give the run's checkpoint.pt")
    try:
        with torch.serialization.safe_globals(allowed):
            return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, OSError, RuntimeError, EOFError) as e:
        raise DataError(f"{path}: not a checkpoint of an earlier Betwixt ({str(e).splitlines()[0][:160]})") from None


def argv_of(args):
    """The command line an earlier checkpoint's recorded arguments (a dict of strings) stand for:
    every flag whose value is not off, in the order recorded."""
    argv = [args["command"]] if "command" in args else []
    for key, value in args.items():
        if key in ("command", "run", "data", "out", "device", "threads") or value in ("None", "False"):
            continue
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value == "True" else [flag, value]
    return argv + ["--data", args["data"], "--out", args["out"]]


def convert(old, path, output, family):
    """Turn ``old``, the earlier checkpoint read from ``path`` (see :func:`earlier`), into this
    version's form at ``output``: numpy arrays become tensors, recorded arguments become the command
    line, and ``family`` (its Family) converts its own parts (config, history)."""
    if old.get("format") == FORMAT:
        raise DataError(f"{path}: already a checkpoint of format {FORMAT}; nothing to convert")
    meta = dict(old["meta"])
    args = {k: str(v) for k, v in meta.pop("args").items() if k != "run"}
    runs = old["history"].get("runs") or [{"from_step": 0, "args": args}]
    state = {
        "format": FORMAT, "family": family.name, "step": int(old["step"]),
        "model": old["model"], "optimiser": old["optimiser"],
        **({"average": old["average"]} if "average" in old else {}),
        "stats": tensors(old["stats"]),
        "meta": {**meta, "args": {k: _plain(v) for k, v in args.items()}},
        "history": {"runs": [{"from_step": int(r["from_step"]), "argv": argv_of(r["args"]), "commit": r.get("commit")}
                             for r in runs]},
    }
    state = family.converted(state, old)
    save(state, output)
    return state


def _plain(text):
    """A recorded argument (a string) as the plain value it was."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)
