"""``python -m inference``: inspect BVH files and run the benchmark from a terminal.

Bad input ends with one line on stderr that says what is wrong and where, and exit code 2.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from .bvh import read_bvh
from .errors import BetwixtError
from .motion import guess_up_axis, height


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m inference", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="describe a BVH file")
    info.add_argument("file", type=Path)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(run=_info)

    bench = commands.add_parser("bench", help="the LaFAN1 in-betweening benchmark")
    bench.add_argument("--data", type=Path, required=True, help="LaFAN1 folder or archive")
    bench.add_argument("--json", type=Path, help="write the results here")
    bench.add_argument("--plots", type=Path, help="write PNG plots of per-frame errors here")
    bench.set_defaults(run=_bench)

    data = commands.add_parser("data", help="build or check the compact training cache of a data set")
    data.add_argument("--data", type=Path, required=True, help="folder or archive of BVH files")
    data.add_argument("--cache", type=Path, help="cache folder (default: $BETWIXT_CACHE or ~/.cache/betwixt)")
    data.set_defaults(run=_data)

    args = parser.parse_args(argv)
    try:
        return args.run(args) or 0
    except BetwixtError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def describe(motion):
    """What ``info`` reports about a motion, as plain data."""
    sk = motion.skeleton
    _, world = motion.global_transforms()
    up = guess_up_axis(world)
    return {
        "name": motion.name,
        "joints": list(sk.names),
        "parents": [int(p) for p in sk.parents],
        "channels": {n: list(c) for n, c in zip(sk.names, sk.channels)},
        "end_sites": len(sk.end_sites),
        "frames": motion.n_frames,
        "fps": motion.fps,
        "duration": motion.duration,
        "height": height(world, up),
        "up_axis_guess": up,
    }


def _info(args):
    d = describe(read_bvh(args.file))
    if args.json:
        print(json.dumps(d, indent=2))
        return
    print(f"{args.file}: {len(d['joints'])} joints, {d['end_sites']} end sites, {d['frames']} frames at "
          f"{d['fps']:g} fps ({d['duration']:.2f} s), height {d['height']:.4g} units, up axis {d['up_axis_guess']} (guess)")
    depth = {}
    for name, parent in zip(d["joints"], d["parents"]):
        depth[name] = 0 if parent < 0 else depth[d["joints"][parent]] + 1
        print(f"  {'  ' * depth[name]}{name:<{28 - 2 * depth[name]}} {' '.join(d['channels'][name])}")


def _bench(args):
    from .benchmark import evaluate, format_table, load_benchmark
    from .transition import BASELINES

    start = time.perf_counter()
    bench = load_benchmark(args.data, progress=_progress("reading"))
    loaded = time.perf_counter()
    print(f"{bench.windows} test windows, prepared in {loaded - start:.1f} s", file=sys.stderr)
    results, curves = evaluate(bench, BASELINES)
    print(format_table(results))
    print(f"benchmark: {time.perf_counter() - start:.1f} s in all ({time.perf_counter() - loaded:.1f} s scoring)",
          file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.plots:
        from .plots import plot_errors

        for path in plot_errors(curves, args.plots):
            print(f"wrote {path}", file=sys.stderr)


def _data(args):
    from .dataset import cache_path, load_motion_set

    cache = cache_path(args.data, args.cache)
    if not cache.exists():
        start = time.perf_counter()
        load_motion_set(args.data, args.cache, progress=_progress("reading"))
        print(f"built {cache} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    start = time.perf_counter()
    data = load_motion_set(args.data, args.cache)
    seconds = time.perf_counter() - start
    subjects = sorted(set(data.subjects.tolist()))
    print(f"{args.data}: {len(data.names)} clips, {data.starts[-1]} frames at {data.fps:g} fps, "
          f"{len(data.skeleton)} joints, subjects {subjects}")
    print(f"cache {cache}: {cache.stat().st_size / 2**20:.1f} MiB, loaded in {seconds:.2f} s")


def _progress(verb):
    """A one-line progress report on stderr, rewritten in place."""
    def report(done, total, name):
        end = "\n" if done == total else ""
        print(f"\r{verb} {done}/{total} {Path(name.split(':')[-1]).name:<40}", end=end, file=sys.stderr, flush=True)
    return report
