"""A training checkpoint → one self-contained ONNX model file that the runtime can trust.

Everything the runtime needs to use the network travels in the file's metadata: the skeleton, the
feature layout and normalisation, frame rate, context length, supported gap lengths, and where the
weights came from (training files, licence, commit), so anyone can check that no test file was used.
"""

import json
from pathlib import Path

import torch

from inference.dataset import load_motion_set
from inference.errors import DataError
from inference.features import Layout
from inference.runtime import BLEND, KIND_RTN, MAX_GAP, METADATA_VERSION, START_BLEND
from .data import Transitions
from .rtn import LARGE, WEIGHTS, RTNConfig, export_onnx
from .train_rtn import VALIDATION_LENGTHS, Normaliser, network, source_commit, validate


NORMALISATION = ("frame_mean", "frame_std", "target_mean", "target_std")


def metadata(state, reflections=None):
    """The model file's metadata, as strings, from a checkpoint's contents and the joints'
    ``reflections`` its training mirrored the clips with (the runtime averages each fill with its
    mirror image's where the file has them, and with the backward fill's where the last run trained
    on windows played backwards)."""
    meta = state["meta"]
    config = RTNConfig(**state["config"])
    mirror = {} if reflections is None else {"betwixt.mirror": json.dumps({"reflections": reflections})}
    backward = float(meta["args"].get("reverse", 0.0)) > 0
    return {**mirror, **({"betwixt.backward": "true"} if backward else {}),
        "betwixt.kind": KIND_RTN,
        "betwixt.version": str(METADATA_VERSION),
        "betwixt.skeleton": json.dumps(meta["skeleton"]),
        "betwixt.layout": json.dumps(meta["layout"]),
        "betwixt.normalisation": json.dumps({k: state["stats"][k].tolist() for k in NORMALISATION}),
        "betwixt.reference_pose": json.dumps(state["stats"]["reference_pose"].tolist()),
        "betwixt.fps": str(meta["layout"]["fps"]),
        "betwixt.past": str(config.past),
        "betwixt.gaps": json.dumps({"min": 1, "max": MAX_GAP, "trained": [int(meta["args"]["min_gap"]),
                                                                         int(meta["args"]["max_gap"])]}),
        "betwixt.data": json.dumps({"source": Path(meta["data"]).name, "files": meta["data_files"],
                                    "subjects": meta["subjects"]}),
        "betwixt.licence": meta["licence"],
        # (older checkpoints also recorded ``run``, the command line's dispatch function)
        "betwixt.training": json.dumps({"steps": state["step"], "commit": source_commit(),
                                        "args": {k: v for k, v in meta["args"].items() if k != "run"}}),
    }


def _hardware(device):
    import os
    import platform

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def training_command(args):
    """The ``python -m training rtn`` command line that ``args`` (a checkpoint's, as strings) were."""
    return (f"python -m training rtn --data {args['data']} --out {args['out']}"
            + (f" --init {args['init']}" if args.get("init", "None") != "None" else "")
            + (f" --subjects {args['subjects']}" if args["subjects"] != "None" else "")
            + f" --batch {args['batch']} --lr {args['lr']}" + (" --bf16" if args.get("bf16") == "True" else "")
            + f" --min-gap {args['min_gap']} --max-gap {args['max_gap']} --noise {args.get('noise', '0.5')}"
            + (f" --speeds {args['speeds']}" if args.get("speeds", "1") != "1" else "")
            + (f" --reverse {args['reverse']}" if args.get("reverse", "0.0") != "0.0" else "")
            + (" --velocity" if args.get("velocity") == "True" else "")
            + (" --blends" if args.get("blends") == "True" else "")
            + (" --relative" if args.get("relative") == "True" else "")
            + (f" --loss {args['loss']}" if args.get("loss", "mse") != "mse" else "")
            + (f" --average {args['average']}" if args.get("average", "0.999") != "0.999" else ""))


def _precision(weights):
    """How the card says the weights are stored."""
    if not WEIGHTS[weights]:
        return "in float32."
    (bits, block), (small_bits, small_block) = WEIGHTS[weights]
    if (bits, block) == (small_bits, small_block):
        return f"in {bits} bits (onnxruntime MatMulNBits, blocks of {block})."
    return (f"in {bits} bits (blocks of {block}) for the matrices of {LARGE:,} entries or more and "
            f"{small_bits} bits (blocks of {small_block}) for the others (onnxruntime MatMulNBits).")


def model_card(path, state, meta, bench=None, weights="float32", validation=None):
    """The model card: what the weights are, where they came from, what they may be used for."""
    args = state["meta"]["args"]
    data = json.loads(meta["betwixt.data"])
    skeleton = json.loads(meta["betwixt.skeleton"])
    made = []  # [first step, (command, commit)]: resumes with both unchanged are one stretch
    for run in state["history"].get("runs") or [{"from_step": 0, "args": args}]:
        how = training_command(run["args"]), run.get("commit")
        if not made or made[-1][1] != how:
            made.append([run["from_step"], how])
    ends = [start for start, _ in made[1:]] + [state["step"]]
    made = [f"- Steps {start} to {end}: `{command}`" + (f" at commit {commit}" if commit else "")
            for (start, (command, commit)), end in zip(made, ends)]
    lines = [
        f"# {path.stem}", "",
        "A Recurrent Transition Network (Harvey & Pal 2018, extended: rotations out, any gap length through a "
        "time-to-target embedding, noise for variants) that fills the frames between two keys.", "",
        "## Data and licence",
        f"- Trained on `{data['source']}`" + (f", subjects {data['subjects']}" if data["subjects"] else "")
        + f": {len(data['files'])} files, the last tenth of each held out for validation, plus their mirror images"
        + (f" and, where the commands below say `--speeds`, copies played at speeds {args['speeds']}."
           if args.get("speeds", "1") != "1" else "."),
        f"- Files: {', '.join(data['files'])}.",
        f"- Licence of the weights: {meta['betwixt.licence']}. A model inherits the terms of its data.", "",
        "## Skeleton and use",
        f"- {len(skeleton['names'])} joints, root `{skeleton['names'][0]}`, {meta['betwixt.fps']} fps, "
        f"{meta['betwixt.past']} frames of past context, gaps of 1 to {json.loads(meta['betwixt.gaps'])['max']} frames "
        f"(trained on {json.loads(meta['betwixt.gaps'])['trained']})."
        + (" The file carries the joints' left/right reflections its training mirrored the clips with, so "
           "the runtime fills each gap as it is and as its mirror image, and averages the two."
           if "betwixt.mirror" in meta else "")
        + (" Its last stretch of training also played windows backwards (`--reverse`), so where a gap has "
           f"{int(meta['betwixt.past']) - 1} frames or more after its target key, the runtime also fills it "
           "backwards, from those frames, and averages the two directions."
           if meta.get("betwixt.backward") == "true" else ""), "",
        "## How it was made",
        "Trained in stretches, each going on from the checkpoint where the one before stopped: resuming "
        "it (from a copy of its `--out` folder where the folders differ) or, with `--init`, starting a "
        "new run from its weights:", "", *made, "",
        f"Then `python -m training export CHECKPOINT -o {path.name} --weights {weights}`: weights "
        + _precision(weights),
        f"- {state['step']} optimiser steps; commit {json.loads(meta['betwixt.training'])['commit']}; "
        f"{_hardware(args['device'])}.",
    ]
    if bench:
        from inference.benchmark import format_table
        lines += ["", "## Benchmark (LaFAN1 protocol, `python -m inference bench`)", "",
                  f"{bench['test_windows']} test windows.", "", format_table(bench)]
        if "interpolation" in bench["methods"] and "rtn" in bench["methods"]:
            ratio = {m: {n: bench["methods"]["rtn"][m][n] / bench["methods"]["interpolation"][m][n]
                         for n in bench["methods"]["rtn"][m]} for m in bench["methods"]["rtn"]}
            lines += ["", "Ratio to Interpolation (lower is better):", "",
                      "| metric | " + " | ".join(ratio["L2Q"]) + " |", "|---|" + "---|" * len(ratio["L2Q"])]
            lines += [f"| {m} | " + " | ".join(f"{v:.3f}" for v in ratio[m].values()) + " |" for m in ratio]
    if validation:
        lines += ["", "## Validation (gaps in the held-out last tenth of every training clip)", "",
                  f"Root mean square error of the float32 network with the runtime's blends (start over "
                  f"{START_BLEND} frames, target over {BLEND}, end over the whole gap) over the same "
                  f"{validation['windows']} windows per length as straight-line interpolation from the "
                  "last past frame to the target key. Each window's missing frames and target lie in the "
                  "held-out tenth; its past frames may precede it. Rotations in quaternion components, "
                  "positions in spreads of each joint coordinate (the training loss's units). "
                  "Lower is better.", "",
                  "| frames | rotations | interpolation | ratio | positions | interpolation | ratio |",
                  "|---|---|---|---|---|---|---|"]
        for i, n in enumerate(VALIDATION_LENGTHS):
            (r, p), (ri, pi) = validation["model"][2 * i:2 * i + 2], validation["interpolation"][2 * i:2 * i + 2]
            lines.append(f"| {n} | {r:.3f} | {ri:.3f} | {r / ri:.3f} | {p:.3f} | {pi:.3f} | {p / pi:.3f} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _transitions(state, data, cache, part):
    """The ``part`` ("train" or "validation") of ``data``, once it is known to be the data set the
    checkpoint was trained on."""
    meta = state["meta"]
    transitions = Transitions(load_motion_set(data, cache), part, meta["subjects"], mirrored=part == "train",
                              layout=Layout(**meta["layout"]))
    if transitions.files != meta["data_files"]:
        raise DataError(f"{data}: not the data set this checkpoint was trained on ({meta['data']})")
    return transitions


def validation_scores(model, state, data, cache=None):
    """The model's and interpolation's errors on the held-out tenth of the training clips of ``data``."""
    val_set = _transitions(state, data, cache, "validation")
    parents = [int(q) for q in val_set.parents]
    norm, device = Normaliser(state["stats"]), torch.device("cpu")
    return {"windows": 4 * 64, "model": validate(model, norm, val_set, parents, device, blend=BLEND),
            "interpolation": validate(model, norm, val_set, parents, device, interpolate=True)}


def _reflections(state, data, cache):
    """The reflections the checkpoint's run mirrored its clips with (a list), found again from
    ``data`` for checkpoints from before runs kept them; None for a run without mirror images."""
    meta = state["meta"]
    if "reflections" in meta or meta["args"].get("no_mirror") == "True" or not data:
        return meta.get("reflections")
    return _transitions(state, data, cache, "train").reflections.tolist()


def export(checkpoint, output, weights="float32", bench_data=None, data=None, cache=None):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    model = network(state)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    meta = metadata(state, _reflections(state, data, cache))
    export_onnx(model, output, meta, weights=weights)
    bench = None
    if bench_data:
        from inference.benchmark import evaluate, load_benchmark
        from inference.runtime import TransitionModel
        from inference.transition import BASELINES
        bench, _ = evaluate(load_benchmark(bench_data), {**BASELINES, "rtn": TransitionModel(output)})
    validation = validation_scores(model, state, data, cache) if data else None
    model_card(output, state, meta, bench, weights, validation)
    return output


def add_arguments(parser):
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True, help="the .onnx file to write")
    parser.add_argument("--weights", choices=list(WEIGHTS), default="float32",
                        help="weight precision: int8 and int4 are smaller and faster, a little less exact")
    parser.add_argument("--bench-data", help="LaFAN1 folder or archive: put benchmark numbers in the model card")
    parser.add_argument("--data", help="the training data: put validation numbers beside interpolation's "
                                       "in the model card (for data sets without a benchmark, like Bandai's)")
    parser.add_argument("--cache", help="data set cache folder")


def run(args):
    path = export(args.checkpoint, args.output, args.weights, args.bench_data, args.data, args.cache)
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB) and its model card {path.with_suffix('.md')}")
