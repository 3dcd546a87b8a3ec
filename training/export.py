"""A training checkpoint → one self-contained ONNX model file that the runtime can trust, and its card.

Everything the runtime needs to use the network travels in the file's metadata, in one namespace:
the common keys every kind has (kind, format version, skeleton, frame rate, normalisation, training
data, licence, how it was trained) and the family's own, so anyone can check that no test file was
used. ``convert`` brings a checkpoint or a model file of an earlier Betwixt to this version, once.
"""

import json
import math
import os
from pathlib import Path

import onnx

from inference.cli import whole
from inference.errors import DataError
from inference.inbetween import data_floor
from inference.modelfile import FORMAT
from lab.dataset import load_sources
from . import card, checkpoint
from .carl import export as carl
from .clips import selection_in
from .family import family as family_called
from .loop import source_commit
from .onnx_tools import LARGE, WEIGHTS, metadata_of, write
from .rtn.card import benchmark_section

AGREEMENT = 1e-3   # largest difference between torch and onnxruntime a float32 export may show


def loaded(state):
    """A checkpoint's family and its network with the weights it ships (their moving average when
    the run kept one), ready to export."""
    family = family_called(state["family"])
    model = family.network(state["config"], checkpoint.arrays(state["stats"]))
    model.load_state_dict(state.get("average", state["model"]))
    return family, model.eval()


def metadata(state, family, model, weights):
    """The model file's metadata, as strings."""
    meta = state["meta"]
    common = {
        "kind": family.name,
        "version": str(FORMAT),
        "skeleton": json.dumps(meta["skeleton"]),
        "fps": str(meta["fps"]),
        "normalisation": json.dumps({k: state["stats"][k].tolist() for k in family.normalisation}),
        "data": json.dumps({"source": " + ".join(os.path.basename(d) for d in card.sources(meta)),
                            "files": meta["data_files"], "subjects": meta["subjects"],
                            "held_out": meta.get("held_out", [])}),
        "licence": meta["licence"],
        "training": json.dumps({"steps": state["step"], "commit": source_commit(), "runs": state["history"]["runs"]}),
        "weights": weights,
        "config": json.dumps(state["config"], sort_keys=True),
    }
    return {f"betwixt.{k}": v for k, v in {**common, **family.metadata(state, model)}.items()}


def floor_of(data, cache, meta):
    """``betwixt.floor`` of a model trained on the data sets ``data`` (their clips that its metadata
    ``meta`` says it read): the floor under their feet (:func:`inference.inbetween.data_floor`), where
    a fill stands the rig. Of several data sets, the first's: the skeleton the others were brought onto
    keeps its floor, and theirs stay where their capture had them (Bandai's toes some 4 cm up), so the
    median over all clips would be the many short clips' floor rather than the one the network's
    statistics and most of its windows stand on (a fill then lifted every rig 4 cm and skated more)."""
    chosen = selection_in(meta)
    clips = load_sources(data, cache, chosen=chosen)
    first = [clips.clip(i) for i, name in enumerate(clips.names) if chosen.keeps(name) and clips.origin(i) == 0]
    return f"{data_floor(first):.3f}"


def precision(weights):
    """How the card says the weights are stored."""
    if not WEIGHTS[weights]:
        return "in float32."
    (bits, block), (small_bits, small_block) = WEIGHTS[weights]
    if (bits, block) == (small_bits, small_block):
        return f"in {bits} bits (onnxruntime MatMulNBits, blocks of {block})."
    return (f"in {bits} bits (blocks of {block}) for the matrices of {LARGE:,} entries or more and "
            f"{small_bits} bits (blocks of {small_block}) for the others (onnxruntime MatMulNBits).")


def export(path, output, weights="float32", bench_data=None, data=None, cache=None, max_gap=None):
    state = checkpoint.load(path)
    output = Path(output)
    if state["family"] == "carl":   # reinforcement learning's checkpoint: a policy and its body, no data statistics
        if weights != "float32" or bench_data or data or max_gap is not None:
            raise DataError(f"{path}: a carl checkpoint exports its policy in float32 alone; leave out --weights, "
                            "--bench-data, --data and --max-gap")
        output.parent.mkdir(parents=True, exist_ok=True)
        return output, carl.export(state, output)
    family, model = loaded(state)
    meta = metadata(state, family, model, weights)
    if max_gap is not None:
        meta["betwixt.gaps"] = _capped(meta, max_gap, path)
    output.parent.mkdir(parents=True, exist_ok=True)
    if data:
        meta["betwixt.floor"] = floor_of(data, cache, state["meta"])
    write(family.graph(model), output, meta, weights)
    difference = family.check_export(model, output)
    if weights == "float32" and difference > AGREEMENT:
        output.unlink()
        raise DataError(f"{output}: onnxruntime and torch differ by {difference:.2g} (more than {AGREEMENT}); "
                        "the export is wrong, nothing was written")
    card.write(output, family, state, weights, precision(weights),
               family.card(state, model, meta, output, bench_data, data, cache),
               f" --max-gap {max_gap}" if max_gap is not None else "")
    return output, difference


def _capped(meta, longest, path):
    """The ``betwixt.gaps`` of a model that fills gaps, its longest cut to ``longest`` frames: where a
    network's fills of long gaps lose to another model of the skeleton (the dog's RTN stops striding
    where MANN does not), a longer gap goes to that one."""
    if "betwixt.gaps" not in meta:
        raise DataError(f"{path}: --max-gap is for a model that fills gaps between keys (an RTN)")
    gaps = json.loads(meta["betwixt.gaps"])
    reach = max(gaps["max"], gaps.get("trained", (0, 0))[1])   # a file capped before keeps what it trained on
    if not 1 <= longest <= reach:
        raise DataError(f"{path}: --max-gap {longest}: give 1 to {reach}, the longest gap its network reaches")
    return json.dumps({**gaps, "max": longest})


def convert(path, output, bench_data=None, data=None, cache=None, max_gap=None):
    """A checkpoint (.pt) or model file (.onnx) of an earlier Betwixt, in this version's form; a model
    file of this version exported before ``betwixt.floor`` or its skeleton's End Sites were kept gains them
    from its data sets ``data``; one of this version with ``max_gap``, its longest gap set anew."""
    if not Path(path).is_file():
        raise DataError(f"{path}: no such file; give the checkpoint (.pt) or model file (.onnx) to convert")
    if max_gap is not None and (Path(path).suffix != ".onnx"
                                or metadata_of(path).get("betwixt.version") != str(FORMAT)):
        raise DataError(f"{path}: --max-gap is for a model file (.onnx) of this version; convert it first")
    if Path(path).suffix == ".onnx":
        if metadata_of(path).get("betwixt.version") == str(FORMAT):
            return _completed(path, output, data, cache) if max_gap is None else _recapped(path, output, max_gap)
        return _convert_model(path, output, bench_data)
    old = checkpoint.earlier(path)
    return checkpoint.convert(old, path, output, family_called(old.get("family", "rtn")))


# Model files of format 1 named their network's own keys rtn.*, and wrote a context length the
# config also holds.
_RENAMED = {"rtn.config": "betwixt.config", "rtn.graph": "betwixt.graph", "rtn.weights": "betwixt.weights"}


def _convert_model(path, output, bench_data):
    """A format-1 model file as format 2: the same graph and weights, the metadata in one namespace;
    its card gains the benchmark scored both ways when ``bench_data`` is given."""
    old = metadata_of(path)
    if old.get("betwixt.version") != "1":
        raise DataError(f"{path}: format version {old.get('betwixt.version')}, not 1; nothing to convert")
    meta = {_RENAMED.get(k, k): v for k, v in old.items() if k != "betwixt.past"}
    config = json.loads(meta["betwixt.config"])
    if config.pop("velocity", False) or config.pop("extra_dim", 0):
        raise DataError(f"{path}: a network with --velocity or extra inputs, which this version no longer runs")
    meta.update({"betwixt.version": str(FORMAT), "betwixt.config": json.dumps(config, sort_keys=True)})
    _rewritten(path, output, meta)
    card_path = Path(path).with_suffix(".md")
    if card_path.exists():
        text = card_path.read_text()
        if bench_data:
            text = _replaced_section(text, "## Benchmark", benchmark_section(output, bench_data))
        Path(output).with_suffix(".md").write_text(
            text.rstrip() + f"\n\nMetadata converted to format {FORMAT} by `python -m training convert` at commit "
                            f"{source_commit()}; the graph and weights are the file's own.\n")
    return output


def _completed(path, output, data, cache):
    """A model file of this format with what later exports write and it lacks, from its data sets ``data``:
    ``betwixt.floor``, measured on them, and its skeleton's End Sites (where a quadruped's paws stand), theirs."""
    meta = metadata_of(path)
    skeleton = json.loads(meta["betwixt.skeleton"])
    floor, sites = "betwixt.floor" not in meta, "end_sites" not in skeleton
    if not floor and not sites:
        raise DataError(f"{path}: already a model file of format {FORMAT}; nothing to convert")
    if not data:
        raise DataError(f"{path}: to add what its training data gives (its floor, its End Sites), give that data "
                        "with --data")
    notes = []
    if floor:
        meta["betwixt.floor"] = floor_of(data, cache, json.loads(meta["betwixt.data"]))
        notes.append(f"The floor under its training data's feet, {meta['betwixt.floor']} (betwixt.floor)")
    if sites:
        theirs = load_sources(data, cache).skeleton
        if list(theirs.names) != skeleton["names"]:
            raise DataError(f"{path}: its skeleton is not the one of {data[0]}; give the data it was trained on")
        skeleton["end_sites"] = theirs.to_json()["end_sites"]
        meta["betwixt.skeleton"] = json.dumps(skeleton)
        notes.append(f"its skeleton's {len(theirs.end_sites)} End Sites (betwixt.skeleton), where planting stands "
                     "a quadruped's paws")
    said = " and ".join(notes)
    return _rewritten(path, output, meta, f"{said[0].upper()}{said[1:]}, added by `python -m training convert --data` "
                      f"at commit {source_commit()}; the graph and weights are the file's own.")


def _recapped(path, output, longest):
    """A model file of this format whose RTN fills gaps of up to ``longest`` frames (within those its network
    trained on): where the cap set at export no longer measures best, the same weights take the longer gaps
    back from the other model of their skeleton."""
    meta = metadata_of(path)
    meta["betwixt.gaps"] = _capped(meta, longest, path)
    return _rewritten(path, output, meta, f"Gaps of 1 to {longest} frames (betwixt.gaps), set by `python -m training "
                      f"convert --max-gap {longest}` at commit {source_commit()}; the graph and weights are the "
                      "file's own.")


def _rewritten(path, output, meta, note=None):
    """The model file at ``path`` written to ``output`` with the metadata ``meta`` instead of its own, and its
    card, where it has one, with ``note`` (a paragraph saying what changed) at its end; ``output``."""
    proto = onnx.load(str(path))
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, meta)
    onnx.save(proto, str(output))
    card_path = Path(path).with_suffix(".md")
    if note and card_path.exists():
        Path(output).with_suffix(".md").write_text(card_path.read_text().rstrip() + f"\n\n{note}\n")
    return output


def _replaced_section(text, heading, lines):
    """``text`` (Markdown) with the section under ``heading`` replaced by ``lines``."""
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[:start] + "\n".join(lines) + ("\n\n" + text[end + 1:] if end >= 0 else "\n")


def add_arguments(parser):
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True, help="the .onnx file to write")
    parser.add_argument("--weights", choices=list(WEIGHTS), default="float32",
                        help="weight precision: int8 and int4 are smaller and faster, a little less exact")
    parser.add_argument("--bench-data", help="LaFAN1 folder or archive: put benchmark numbers in the model card")
    parser.add_argument("--data", action="append",
                        help="the training data (as many --data as the run had): put validation numbers beside "
                             "interpolation's in the model card (for data sets without a benchmark, like Bandai's)")
    parser.add_argument("--cache", help="data set cache folder")
    parser.add_argument("--max-gap", type=whole(1, math.inf, "frames; at most the longest its network reaches"),
                        help="an RTN's longest gap (frames) to fill, below what it reaches: "
                                                    "a longer one goes to another model of its skeleton that fills it")


def run(args):
    path, difference = export(args.checkpoint, args.output, args.weights, args.bench_data, args.data, args.cache,
                              args.max_gap)
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB; onnxruntime within {difference:.2g} of torch) "
          f"and its model card {path.with_suffix('.md')}")


def add_convert_arguments(parser):
    parser.add_argument("file", type=Path, help="a checkpoint (.pt) or model file (.onnx) of an earlier Betwixt")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--bench-data", help="LaFAN1: score a converted RTN model file for its card")
    parser.add_argument("--data", action="append",
                        help="a model file of this format without betwixt.floor: its training data (as many --data "
                             "as it had), on which the floor under its feet is measured")
    parser.add_argument("--cache", help="data set cache folder")
    parser.add_argument("--max-gap", type=whole(1, math.inf, "frames; at most the longest its network trained on"),
                        help="a model file of this version: the longest gap (frames) its RTN fills, set anew")


def run_convert(args):
    convert(args.file, args.output, args.bench_data, args.data, args.cache, args.max_gap)
    print(f"wrote {args.output}")
