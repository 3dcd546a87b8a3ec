"""The RTN model card's own sections: how the runtime uses the file, the benchmark scored both
ways, and validation beside straight-line interpolation."""

import json

from inference.modelfile import open_model
from inference.rtn.blends import BLEND, START_BLEND
from inference.transition import BASELINES
from lab.benchmark import across, evaluate, format_table, load_benchmark, round_trip, strict


def sections(state, metadata, path, bench_data=None, errors=None):
    """{"use": lines, "measured": lines} of an RTN model file's card; ``bench_data`` asks for the benchmark of
    the file at ``path``; ``errors``: the held-out validation (:func:`validation_section`), where measured."""
    gaps = json.loads(metadata["betwixt.gaps"])
    past = state["config"]["past"]
    use = ["## Skeleton and use",
           f"- {len(state['meta']['skeleton']['names'])} joints, root `{state['meta']['skeleton']['names'][0]}`, "
           f"{metadata['betwixt.fps']} fps, {past} frames of past context, gaps of 1 to {gaps['max']} frames "
           f"(trained on {gaps['trained']})."
           + (" The file carries the joints' left/right reflections its training mirrored the clips with, so "
              "the runtime fills each gap as it is and as its mirror image, and averages the two."
              if "betwixt.mirror" in metadata else "")
           + (" Its last stretch of training also played windows backwards (`--reverse`), so where a gap has "
              f"{past - 1} frames or more after its target key, the runtime also fills it "
              "backwards, from those frames, and averages the two directions."
              if metadata.get("betwixt.backward") == "true" else "")]
    if state["config"].get("network") == "transformer":
        cf = state["config"]
        use.append(f"- The network is a transformer over the whole window (`--network transformer`), {cf['layers']} "
                   f"layers of width {cf['width']}: a gap's frames in one pass, where the RTN steps once a frame.")
    use.append("")
    measured = []
    if bench_data:
        measured += [""] + benchmark_section(path, bench_data)
    if errors:
        measured += [""] + validation_section(errors)
    return {"use": use, "measured": measured}


def benchmark_section(path, bench_data):
    """The benchmark of the model file at ``path``: as published methods are scored, and with the frames
    after the target; each beside the baselines and as ratios to interpolation."""
    model = open_model(path)
    windows = load_benchmark(bench_data)
    if model.skeleton.same_hierarchy(windows.skeleton):
        scored, how = {"rtn": strict(model), "rtn+after": model}, ""
    else:
        scored = {"rtn round trip": round_trip(windows, model), "rtn": strict(across(model, windows, model)),
                  "rtn+after": across(model, windows, model)}
        how = (" Its skeleton is not LaFAN1's: each window is taken onto it, filled, and brought back (`rtn round "
               "trip`: the capture taken there and back, what retargeting alone costs).")
    bench, _ = evaluate(windows, {**BASELINES, **scored})
    methods = bench["methods"]
    lines = ["## Benchmark (LaFAN1 protocol, `python -m lab bench`)", "",
             f"{bench['test_windows']} test windows. `rtn` is scored as published methods are, from the 10 past "
             "frames and the target key only; `rtn+after` is also given the frames after the target that an "
             f"animator's next keys give (only the target constrains it).{how}", "", format_table(bench), "",
             "Ratio to Interpolation (lower is better):", "",
             "| method | metric | " + " | ".join(methods["rtn"]["L2Q"]) + " |", "|---|---|" + "---|" * 4]
    for name in ("rtn", "rtn+after"):
        for metric, values in methods[name].items():
            lines.append(f"| {name} | {metric} | " + " | ".join(
                f"{v / methods['interpolation'][metric][n]:.3f}" for n, v in values.items()) + " |")
    return lines


def validation_section(errors):
    """``errors`` ({gap length: ((rotations, positions), (interpolation's))}, :func:`.family.held_out_errors`)
    as the card's table."""
    lines = ["## Validation (gaps in the held-out last tenth of every training clip)", "",
             f"Root mean square error of the float32 network with the runtime's blends (start over "
             f"{START_BLEND} frames, target over {BLEND}, end over the whole gap) over the same 256 windows per "
             "length as straight-line interpolation from the last past frame to the target key. Each window's "
             "missing frames and target lie in the held-out tenth; its past frames may precede it. Rotations in "
             "quaternion components, positions in spreads of each joint coordinate (the training loss's units). "
             "Lower is better.", "",
             "| frames | rotations | interpolation | ratio | positions | interpolation | ratio |",
             "|---|---|---|---|---|---|---|"]
    for n, ((r, p), (ri, pi)) in errors.items():
        lines.append(f"| {n} | {r:.3f} | {ri:.3f} | {r / ri:.3f} | {p:.3f} | {pi:.3f} | {p / pi:.3f} |")
    return lines
