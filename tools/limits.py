"""Time and memory of the command line at each input limit: what the largest request a user may make costs.

    .venv/bin/python tools/limits.py --shared ../shared [--only walk,variants]

Each case runs ``python -m inference ...`` at the limit its option allows (the numbers are the command
line's own: MOST_VARIANTS, MOST_CONTINUATIONS and MOST_WALK_FRAMES, mann/path.py's LONGEST and MOST_ROWS, the Motion VAE's
longest path) and prints its wall seconds, peak memory (the child's maximum resident set, from wait4) and
exit code. One thread, as Blender runs the models.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inference.cli import MOST_CONTINUATIONS, MOST_FRAMES, MOST_VARIANTS, MOST_WALK_FRAMES  # noqa: E402
from inference.mann.path import LONGEST, MOST_ROWS  # noqa: E402
from inference.modelfile import MODELS, open_model  # noqa: E402
from inference.mvae.runtime import MAX_PATH  # noqa: E402

CLIP = "obstacles1_subject5.bvh"   # LaFAN1's test subject: walking, a few obstacles
OTHER = "ground1_subject5.bvh"     # the same subject on the ground: a transition's other clip


def run(args):
    """``(seconds, peak MiB, exit code, last line of output)`` of ``python -m inference *args``."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "inference", *map(str, args)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    last = (out.strip().splitlines() or [""])[-1]
    return time.perf_counter() - began, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), last


def circle_path(path, seconds, rows, speed=1.0):
    """A CSV path of ``rows`` points over ``seconds`` at ``speed`` m/s round a circle of 5 m radius."""
    t = np.linspace(0.0, seconds, rows)
    angle = speed * t / 5.0
    with open(path, "w") as f:
        f.write("time,x,y\n")
        np.savetxt(f, np.c_[t, 5 * np.sin(angle), 5 - 5 * np.cos(angle)], fmt="%.4f", delimiter=",")
    return path


def cases(clip, other, folder):
    """``name -> (the limit in words, the command's arguments)``."""
    gap = open_model(MODELS / "rtn-human.onnx").max_gap
    walk_k = MOST_CONTINUATIONS
    return {
        "variants": (f"-k {MOST_VARIANTS}, a gap of {gap} frames (the model's longest)",
                     ["variants", clip, "--gap", f"100:{101 + gap}", "-k", MOST_VARIANTS, "-o", folder / "v"]),
        "walk": (f"-k {walk_k} x --frames {MOST_WALK_FRAMES // walk_k:,} (K x frames at most {MOST_WALK_FRAMES:,})",
                 ["walk", clip, "--from", 100, "--frames", MOST_WALK_FRAMES // walk_k, "-k", walk_k, "-o", folder / "w"]),
        "walk-long": (f"-k {MOST_WALK_FRAMES // MOST_FRAMES} x --frames {MOST_FRAMES:,} (20 minutes each)",
                      ["walk", clip, "--from", 100, "--frames", MOST_FRAMES, "-k", MOST_WALK_FRAMES // MOST_FRAMES,
                       "-o", folder / "wl"]),
        "follow-path-mann": (f"a CSV of {MOST_ROWS:,} points over {LONGEST:g} s (MANN, the dog)",
                             ["follow-path", circle_path(folder / "long.csv", LONGEST - 1, MOST_ROWS), "-o",
                              folder / "dog.bvh"]),
        "follow-path-mvae": (f"{MAX_PATH:g} s of path (the Motion VAE, two legs)",
                             ["follow-path", circle_path(folder / "mvae.csv", MAX_PATH, 3001), "--start",
                              f"{clip}:100", "-o", folder / "human.bvh"]),
        "transitions": (f"-k {MOST_VARIANTS}, two clips (two pairs), {gap} frames",
                        ["transitions", clip, other, "--length", gap, "-k", MOST_VARIANTS, "--no-sheet", "-o",
                         folder / "t"]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, required=True, help="the shared folder (mocap/lafan1-27.zip)")
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with zipfile.ZipFile(args.shared / "mocap" / "lafan1-27.zip") as z:
            for name in (CLIP, OTHER):
                (folder / name).write_bytes(z.read(name))
        chosen = cases(folder / CLIP, folder / OTHER, folder)
        names = args.only.split(",") if args.only else list(chosen)
        print("| case | limit | seconds | peak MiB | exit |\n|---|---|---|---|---|")
        for name in names:
            limit, command = chosen[name]
            seconds, mib, code, last = run(command)
            print(f"| {name} | {limit} | {seconds:.1f} | {mib:.0f} | {code} |", flush=True)
            if code:
                print(f"  {last}", flush=True)


if __name__ == "__main__":
    main()
