"""A transition library on clips no shipped model trained on, against issue 44's goal:

    .venv/bin/python tools/transitions_bench.py --mocap ../shared/mocap --out out/transitions [--model FILE]

Eight clips: four of LaFAN1's test subject 5 on flat ground (3 s of standing and shifting its weight, 4 s of a
slow, a plain and a brisk walk; its other frames climb, crawl, step onto obstacles or hold the T-pose each
file starts with) and four of CMU (4 s or as long as the trial) (two walks and two runs, 30 fps, their T-pose frame dropped), brought onto LaFAN1's
skeleton (inference/retarget.py, calibrated on LaFAN1's training subjects as training does) and written
as BVH. Then ``python -m inference transitions`` makes all 56 ordered pairs, K = 4 variants, 30 frames,
in one process on one thread (OMP_NUM_THREADS=1), timed from outside (wall clock, and the process's CPU
time, which other work on the machine does not inflate), and its report.json is read into the goal's
table: total time, every transition finite, foot skating against the clips' own, the fastest joint and
the joins' acceleration against the clips' (at most 1.5x), the variants' spread. The same library with
``--no-contacts`` beside it shows what planting the feet changes.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inference.bvh import parse_bvh, write_bvh  # noqa: E402
from inference.retarget import Retargeting, natural_pose  # noqa: E402
from lab.dataset import bvh_members, read_motions, subject_of  # noqa: E402

LAFAN1 = (("fallAndGetUp1_subject5", 2600, 90, "stand"), ("obstacles1_subject5", 1470, 120, "slow-walk"),
          ("fallAndGetUp1_subject5", 2745, 120, "walk"), ("obstacles1_subject5", 4320, 120, "brisk-walk"))
CMU = (("07_01", "cmu-walk"), ("08_04", "cmu-slow-walk"), ("09_11", "cmu-run"), ("02_03", "cmu-jog"))
SECONDS = 4.0
PAIRS, K, LENGTH = 56, 4, 30
GOAL = {"seconds": 10.0, "fastest": 1.5, "join": 1.5, "spread_cm": 10.0}


def clips(mocap, folder):
    """The eight clips as BVH files in ``folder`` on LaFAN1's skeleton; their paths."""
    lafan = read_motions(mocap / "lafan1-27.zip")
    tests = {m.name.split(":")[-1].removesuffix(".bvh"): m for m in lafan if subject_of(m.name) == 5}
    target = tests["obstacles1_subject5"].skeleton
    pose = natural_pose([m for m in lafan if subject_of(m.name) in (1, 2, 3, 4)])
    frames = int(SECONDS * 30)
    out = []
    for clip, start, length, name in LAFAN1:
        out.append((name, tests[clip].frames(start, start + length)))
    members = dict(bvh_members(mocap / "cmu-30fps.zip"))
    for trial, name in CMU:
        member = next(m for m in members if m.endswith(f"/{trial}.bvh"))
        motion = parse_bvh(members[member](), member).frames(1, 1 + frames)   # frame 0 is the T-pose
        onto = Retargeting.build(motion.skeleton, target, natural_pose([motion]), pose)
        out.append((name, onto(motion)))
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, motion in out:
        paths.append(folder / f"{name}.bvh")
        write_bvh(motion, paths[-1])
    return paths


def goal_table(results, seconds, cpu):
    """The goal's lines from a report: measured, goal, met."""
    rows = results["transitions"]
    ratio = lambda key: np.array([r[key][0] / max(r[key][1], 1e-9) for r in rows])  # noqa: E731
    skating = np.mean([r["skating"][0] for r in rows]), np.mean([r["skating"][1] for r in rows])
    joins = np.concatenate([ratio("leave_join"), ratio("enter_join")])
    spread = [p["spread_1s"] for p in results["pairs"]]
    middle = [p["spread_middle"] for p in results["pairs"]]
    flags = {}
    for r in rows:
        for f in r["flags"]:
            flags[f] = flags.get(f, 0) + 1
    lines = [
        ("transitions", f"{len(rows)} ({len(results['pairs'])} pairs)", f"{PAIRS * K}", len(rows) == PAIRS * K),
        ("time, one thread (s)", f"{seconds:.2f} wall, {cpu:.2f} CPU", f"<= {GOAL['seconds']:g}",
         cpu <= GOAL["seconds"]),
        ("finite", f"{sum(r['finite'] for r in rows)} of {len(rows)}", "all", all(r["finite"] for r in rows)),
        ("foot skating (cm/frame)", f"{skating[0]:.3f} (clips {skating[1]:.3f}, {skating[0] / skating[1]:.2f}x)",
         "<= the clips'", skating[0] <= skating[1]),
        ("fastest joint / clips'", f"median {np.median(ratio('fastest')):.2f}, max {ratio('fastest').max():.2f}; "
                                   f"{np.sum(ratio('fastest') <= GOAL['fastest'])} of {len(rows)} within",
         f"<= {GOAL['fastest']:g}", ratio("fastest").max() <= GOAL["fastest"]),
        ("join acceleration / clips' at their cuts",
         f"median {np.median(joins):.2f}, 90th pct {np.percentile(joins, 90):.2f}, max {joins.max():.2f}; "
         f"{np.sum(joins <= GOAL['join'])} of {len(joins)} within", f"<= {GOAL['join']:g}",
         joins.max() <= GOAL["join"]),
        ("variants' spread at 1 s (cm)", f"{np.mean(spread):.1f} (mid-transition {np.mean(middle):.1f})",
         f">= {GOAL['spread_cm']:g}", np.mean(spread) >= GOAL["spread_cm"]),
        ("contact share", f"{np.mean([r['contacts'][0] for r in rows]):.2f} (clips "
                          f"{np.mean([r['contacts'][1] for r in rows]):.2f})", "", True),
        ("flagged", f"{sum(bool(r['flags']) for r in rows)} of {len(rows)} ("
                    + ", ".join(f"{k} {v}" for k, v in sorted(flags.items(), key=lambda kv: -kv[1])) + ")", "", True),
    ]
    width = max(len(n) for n, *_ in lines)
    return "\n".join(f"{n:<{width}}  {m:<72} {g:<14} {'yes' if ok else 'NO'}" for n, m, g, ok in lines)


def library(paths, out, *options):
    """``python -m inference transitions`` on ``paths`` into ``out`` on one thread: (report, wall seconds,
    CPU seconds), its last line on stderr printed."""
    command = [sys.executable, "-m", "inference", "transitions", *map(str, paths), "--length", str(LENGTH),
               "-k", str(K), "-o", str(out), *options]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"error: the command failed:\n{done.stderr}")
    print(done.stderr.strip().splitlines()[-1])
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    return json.loads((out / "report.json").read_text()), seconds, cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mocap", type=Path, default=ROOT.parent / "shared" / "mocap")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "transitions")
    parser.add_argument("--json", type=Path, help="write the goal's numbers and the report here")
    parser.add_argument("--model", type=Path, help="an RTN model file to hold against the goal (default: the shipped one)")
    args = parser.parse_args(argv)
    paths = clips(args.mocap, args.out / "clips")
    model = ("--model", str(args.model.resolve())) if args.model else ()
    print(f"python -m inference transitions {' '.join(p.name for p in paths)} --length {LENGTH} -k {K} {' '.join(model)}")
    results = {}
    for name, options in (("planted", model), ("no-contacts", (*model, "--no-contacts", "--no-sheet"))):
        report, seconds, cpu = library(paths, args.out / name, *options)
        print(f"{name}:\n{goal_table(report, seconds, cpu)}")
        results[name] = {"seconds": seconds, "cpu_seconds": cpu, **report}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
