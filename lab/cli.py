"""``python -m lab``: the benchmarks, timings, data set caches and filmstrips, from a terminal.

The measuring commands that Blender never runs; ``python -m inference`` keeps what a user runs on their
own files. Bad input ends as it does there: one line on stderr and exit code 2.
"""

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path

import numpy as np

from inference.bvh import parse_bvh, read_bvh
from inference.cli import Parser, dispatch, number, positive, progress, whole, write_json
from inference.errors import BetwixtError
from inference.modelfile import DEFAULTS, MODELS, find_model, open_model, shipped
from . import carl_bench, decompress_floor, mann_bench, mvae_bench, plots, speed
from .benchmark import (FLOOR_GAP, LENGTHS, LONG_LENGTHS, LONG_METRICS, METRICS, evaluate, floor_gaps, format_floor,
                        format_table, kept_at, load_benchmark, scored_methods)
from .dataset import bvh_members, cache_path, clip_stem, load_motion_set, subject_of

FILMSTRIP_FIGURES = 12  # stick figures a filmstrip draws where --every is not given


def main(argv=None):
    parser = Parser(prog="python -m lab", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    bench = commands.add_parser("bench", help="the LaFAN1 in-betweening benchmark")
    bench.add_argument("--data", type=Path, required=True, help="LaFAN1 folder or archive")
    bench.add_argument("--json", type=Path, help="write the results here")
    bench.add_argument("--plots", type=Path, help="write PNG plots of per-frame errors here")
    bench.add_argument("--long", action="store_true",
                       help="gaps of 60, 90 and 120 frames instead of the protocol's, with PEAK, the "
                            "fastest joint's speed, beside the capture's")
    bench.add_argument("--model", type=Path, action="append", default=[],
                       help="a model to evaluate beside the baselines (default: the shipped ones for "
                            "LaFAN1's skeleton)")
    bench.add_argument("--clip", action="append", default=[],
                       help="score only this test clip's windows (file stem; repeatable; default: all of subject "
                            "5's, the protocol)")
    bench.set_defaults(run=_bench)

    timing = commands.add_parser("bench-speed", help="time a transition model on this machine")
    timing.add_argument("--model", type=Path, help="model file (default: the shipped default RTN)")
    timing.add_argument("--json", type=Path, help="write the timings here")
    timing.add_argument("--minutes", type=number(0.1, 60.0, "of motion Decompressed from a key a second"), default=10.0,
                        help="how long a motion to Decompress (default 10 minutes)")
    timing.set_defaults(run=_bench_speed)

    mann = commands.add_parser("bench-mann", help="the MANN measurements on the dog data's test split")
    mann.add_argument("--data", type=Path, required=True, help="the dog data (folder or archive) the model was "
                                                               "trained on; its test split is measured")
    mann.add_argument("--model", type=Path, help="model file (default: the shipped MANN model)")
    mann.add_argument("--json", type=Path, help="write the results here")
    mann.add_argument("--plots", type=Path, help="write PNG plots of the paths followed and of the experts here")
    mann.add_argument("--clips", type=positive, help="measure only the first N test clips")
    mann.add_argument("--seconds", type=_positive_seconds, help="measure only the first S seconds of each clip and "
                                                                "path")
    mann.add_argument("--rtn", type=Path, help="an RTN model file of the dog's skeleton: its gap filling is "
                                              "measured beside the MANN model's")
    mann.add_argument("--speed-repeats", type=whole(1, 100, "pairs of walks timed"), default=5,
                      help="pairs of a 10 s and a 20 s walk timed for the speed, their median kept (default 5)")
    mann.add_argument("--cache", type=Path, help="data set cache folder")
    mann.set_defaults(run=_bench_mann)

    mvae = commands.add_parser("bench-mvae", help="the Motion VAE measurements on LaFAN1's test subject 5")
    mvae.add_argument("--data", type=Path, required=True, help="LaFAN1 (folder or archive); subject 5 is measured")
    mvae.add_argument("--model", type=Path, help="model file (default: the shipped Motion VAE)")
    mvae.add_argument("--json", type=Path, help="write the results here")
    mvae.add_argument("--plots", type=Path, help="write PNG plots of the walks' hips heights, of the KL per "
                                                 "latent dimension and of the paths followed here")
    mvae.add_argument("--starts", type=positive, default=20, help="start poses (default 20)")
    mvae.add_argument("--frames", type=positive, default=10_000, help="frames of each random walk (default 10,000)")
    mvae.add_argument("--seconds", type=_positive_seconds, help="follow only the first S seconds of each path "
                                                                "(default: a lap)")
    mvae.add_argument("--no-floor-step", dest="grounded", action="store_false",
                      help="walk without the floor step (to see what it does)")
    mvae.add_argument("--no-contacts", dest="contacts", action="store_false",
                      help="measure the model's feet as they come (default: planted by foot IK, "
                           "inference/contacts.py, as the add-on and the other commands plant them)")
    mvae.add_argument("--speed-repeats", type=whole(1, 100, "timings of each walk"), default=3,
                      help="times each speed's walks are timed, the best kept (default 3)")
    mvae.add_argument("--cache", type=Path, help="data set cache folder")
    mvae.set_defaults(run=_bench_mvae)

    carl = commands.add_parser("bench-carl", help="CARL's tracking policy on the dog data's test split: tracking, "
                                                  "falls, pushes, the paws (issue 48)")
    carl.add_argument("--data", type=Path, required=True, help="the dog data (folder or archive) the policy was "
                                                               "trained on; its test split is measured")
    carl.add_argument("--model", type=Path, required=True, help="a CARL model file (python -m training export)")
    carl.add_argument("--json", type=Path, help="write the results here")
    carl.add_argument("--cache", type=Path, help="data set cache folder")
    carl.add_argument("--mann", type=Path, help="the MANN model whose paths it tracks (default: the shipped one)")
    carl.add_argument("--clips", type=positive, help="measure only the first N test clips")
    carl.add_argument("--assist", type=number(0.0, 1000.0, "a torque in Nm"), default=0.0,
                      help="hold the dog's root with at most this torque (Nm) as a Physics Pass's Assist does (0: "
                           "the policy alone)")
    carl.add_argument("--seconds", type=_positive_seconds, help="measure only the first 1 + S seconds of each clip "
                                                                "(as bench-mann) and S of each path")
    carl.set_defaults(run=_bench_carl)

    dec = commands.add_parser("bench-decompress", help="Decompress on the floor: LaFAN1's test subject 5 from a key "
                                                       "every second, beside the capture (issue 43)")
    dec.add_argument("--data", type=Path, required=True, help="LaFAN1 (folder or archive); subject 5 is measured")
    dec.add_argument("--model", type=Path, help="model file (default: the shipped RTN for LaFAN1's skeleton)")
    dec.add_argument("--every", type=whole(2, 10_000, "frames from one key to the next"), default=30,
                     help="a key every N frames (default 30: a second)")
    dec.add_argument("--clip", action="append", default=[], help="measure only this clip (file stem; repeatable)")
    dec.add_argument("--json", type=Path, help="write the results here")
    dec.set_defaults(run=_bench_decompress)

    film = commands.add_parser("filmstrip", help="a PNG of a BVH file's motion: stick figures from the side and "
                                                  "from above, and the feet's heights over time")
    film.add_argument("file", type=Path)
    film.add_argument("--frames", type=_span, help="A:B, the first and last frame shown (0 is the first; default: all)")
    film.add_argument("--every", type=whole(1, math.inf, "a figure every N frames"),
                      help=f"a figure every N frames (default: about {FILMSTRIP_FIGURES} figures)")
    film.add_argument("-o", "--output", required=True, type=Path, help="the PNG to write")
    film.set_defaults(run=_filmstrip, writes="file")

    data = commands.add_parser("data", help="build or check the compact training cache of a data set")
    data.add_argument("--data", type=Path, required=True, help="folder or archive of BVH files")
    data.add_argument("--cache", type=Path, help="cache folder (default: $BETWIXT_CACHE or ~/.cache/betwixt)")
    data.set_defaults(run=_data)

    return dispatch(parser, argv)


def _positive_seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:   # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _span(text):
    try:
        first, last = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not A:B, two frame numbers") from None
    if not 0 <= first < last:
        raise argparse.ArgumentTypeError(f"{text!r}: the frames must be 0 or later, the second after the first")
    return first, last


def _printed(text, name, start):
    """A measuring command's table on stdout and its time since ``start`` on stderr."""
    print(text)
    print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)


def _bench(args):
    start = time.perf_counter()
    lengths, metrics = (LONG_LENGTHS, LONG_METRICS) if args.long else (LENGTHS, METRICS)
    models = [open_model(path) for path in args.model or shipped("rtn")]
    short = [m for m in models if m.max_gap < max(lengths)]
    if args.model and short:
        raise BetwixtError(f"{short[0].file.path}: model {short[0].name} fills gaps of 1 to {short[0].max_gap} "
                           f"frames, and --long scores gaps of up to {max(lengths)}; give a model that fills them")
    models = [m for m in models if m not in short]   # a shipped one capped shorter: its longer gaps are another's
    bench = load_benchmark(args.data, progress=progress("reading"), long=args.long, clips=args.clip)
    loaded = time.perf_counter()
    subset = f" of {', '.join(args.clip)} alone, not the protocol's" if args.clip else ""
    print(f"{bench.windows} test windows{subset}, prepared in {loaded - start:.1f} s", file=sys.stderr)
    methods, planted = scored_methods(bench, models, bool(args.model), args.long)
    methods = {name: kept_at(method, FLOOR_GAP) for name, method in methods.items()}
    results, curves = evaluate(bench, methods, lengths, metrics)
    if args.clip:
        results["clips"] = args.clip
    print(format_table(results))
    results["floor"] = floor_gaps(bench, {k: m for k, m in methods.items() if k != "capture"}, planted=planted)
    print(format_floor(results["floor"]))
    print(f"benchmark: {time.perf_counter() - start:.1f} s in all ({time.perf_counter() - loaded:.1f} s scoring)",
          file=sys.stderr)
    write_json(args.json, results)
    if args.plots:
        for path in plots.plot_errors(curves, args.plots):
            print(f"wrote {path}", file=sys.stderr)


def _bench_speed(args):
    path = args.model or MODELS / f"{DEFAULTS['rtn']}.onnx"
    results = speed.measure(path, superres_minutes=args.minutes)
    if importlib.util.find_spec("torch"):
        # torch is training's, not the runtime's: the eager comparison is made only where it is installed
        from training.rtn.speed import eager_ms

        eager = eager_ms(path)
        results["torch_eager_transition_30_ms_batch1_1thread"] = eager
        results["torch_over_onnx"] = eager / results["transition_30_ms_batch1_1thread"]["median"]
    for key, value in results.items():
        shown = ", ".join(f"{k} {v:.2f}" for k, v in value.items()) if isinstance(value, dict) else \
            (f"{value:.2f}" if isinstance(value, float) else value)
        print(f"{key}: {shown}")
    write_json(args.json, results)


def _bench_mann(args):
    model = open_model(args.model, kind="mann") if args.model else find_model(None, kind="mann")
    rtn = open_model(args.rtn, kind="rtn") if args.rtn else None
    if rtn:
        rtn.check_skeleton(model.skeleton)
    data = load_motion_set(args.data, args.cache)
    start = time.perf_counter()
    results, runs = mann_bench.measure(model, data, args.clips, args.seconds, rtn, args.speed_repeats)
    _printed(mann_bench.table(results), "bench-mann", start)
    write_json(args.json, results)
    if args.plots:
        written = plots.plot_paths(runs, model.units_per_metre, args.plots)
        written += plots.plot_experts(runs, model.fps, args.plots) if model.experts else []
        for path in written:
            print(f"wrote {path}", file=sys.stderr)


def _bench_carl(args):
    model = open_model(args.model, kind="carl")
    mann = open_model(args.mann, kind="mann") if args.mann else find_model(None, kind="mann")
    mann.check_skeleton(model.skeleton)
    data = load_motion_set(args.data, args.cache)
    start = time.perf_counter()
    results = carl_bench.bench(model, data, args.clips, args.seconds, progress=progress("bench-carl", unit="clip"),
                               mann=mann, assist=args.assist)
    _printed(carl_bench.table(results), "bench-carl", start)
    write_json(args.json, results)


def _bench_mvae(args):
    model = open_model(args.model, kind="mvae") if args.model else find_model(None, kind="mvae")
    rtn = find_model(model.skeleton, kind="rtn", serves="variants")
    data = load_motion_set(args.data, args.cache)
    start = time.perf_counter()
    following = progress("following paths", unit="step")
    results, runs = mvae_bench.measure(model, data, args.starts, args.frames, rtn, progress("walking", unit="walk"),
                                       args.seconds, args.grounded, lambda done, total: following(done, total, "paths"),
                                       args.contacts, args.speed_repeats)
    _printed(mvae_bench.table(results), "bench-mvae", start)
    write_json(args.json, results)
    if args.plots:
        written = plots.plot_walks(runs, args.plots) + plots.plot_latent(runs["kl_dims"], args.plots)
        for path in written + plots.plot_paths(runs["paths"], model.units_per_metre, args.plots):
            print(f"wrote {path}", file=sys.stderr)


def _bench_decompress(args):
    members = [(name, read) for name, read in bvh_members(args.data)
               if (clip_stem(name) in args.clip if args.clip else subject_of(name) == 5)]
    if not members:
        raise BetwixtError(f"{args.data}: no clip named {', '.join(args.clip)}" if args.clip else
                           f"{args.data}: no clip of LaFAN1's test subject 5 (a name with _subject5)")
    clips = [parse_bvh(read(), name) for name, read in members]
    model = open_model(args.model) if args.model else find_model(clips[0].skeleton, serves="decompress")
    model.check_skeleton(clips[0].skeleton)
    start = time.perf_counter()
    results = decompress_floor.measure(model, clips, args.every)
    _printed(f"{len(clips)} clips from a key every {args.every} frames by {model.name}: legs' contact share, frames "
             "floating and aloft (the lowest foot 5 cm above the capture's) where the capture stands, slide of "
             "touching feet, longest off the floor, hips cm, jitter and largest acceleration within 3 frames of a "
             "key cm/frame^2\n" + decompress_floor.table(results), "bench-decompress", start)
    write_json(args.json, results)


def _filmstrip(args):
    if args.output.suffix.lower() != ".png":
        raise BetwixtError(f"{args.output}: a filmstrip is a PNG; give a name ending in .png")
    motion = read_bvh(args.file)
    first, last = args.frames or (0, motion.n_frames - 1)
    if last >= motion.n_frames:
        raise BetwixtError(f"{args.file}: --frames {first}:{last}: it has frames 0 to {motion.n_frames - 1}")
    every = args.every or max((last - first) // FILMSTRIP_FIGURES, 1)
    try:
        plots.plot_filmstrip(motion, np.arange(first, last + 1, every), args.output, args.file.stem)
    except OSError as e:
        raise BetwixtError(f"{args.output}: cannot be written in {args.output.parent} ({e.strerror or e}); choose "
                           "another place") from None
    print(f"wrote {args.output}: frames {first} to {last} of {args.file}, a figure every {every}")


def _data(args):
    cache = cache_path(args.data, args.cache)
    if not cache.exists():
        start = time.perf_counter()
        load_motion_set(args.data, args.cache, progress=progress("reading"))
        print(f"built {cache} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    start = time.perf_counter()
    data = load_motion_set(args.data, args.cache)
    seconds = time.perf_counter() - start
    subjects = sorted(set(data.subjects.tolist()))
    print(f"{args.data}: {len(data.names)} clips, {data.starts[-1]} frames at {data.fps:g} fps, "
          f"{len(data.skeleton)} joints, subjects {subjects}")
    print(f"cache {cache}: {cache.stat().st_size / 2**20:.1f} MiB, loaded in {seconds:.2f} s")
