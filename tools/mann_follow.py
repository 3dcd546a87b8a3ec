"""How the MANN controller walks (a quick measurement until ``bench-mann`` exists):

    .venv/bin/python tools/mann_follow.py --model runs/mann/mann-dog.onnx [--tau 0.5] [--json F]

1. On the test split (``TEST_CLIPS``), the controller starts at each clip's frame 60 with the second
   before it as its past and follows the clip's captured root track (timing and facing): foot skating
   of the paws (End Sites; all four and the back two) and the legs' angular update, each beside the
   capture's over the same frames (the capture's paw grounds for both), and the path deviation.
2. Circle (radius 2 m) and square (side 4 m) paths, one lap, at walk (1.0 m/s), trot (1.8 m/s) and
   canter (3.0 m/s) speeds, from the model's own standing start: the root's mean distance to the
   path (cm), its facing's mean angle to the path (degrees), and the length of its track over the
   path's (how much of the path it covers in the path's time).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.dataset import load_motion_set  # noqa: E402
from inference.mann import metrics  # noqa: E402
from inference.mann.features import bones_of, root, world  # noqa: E402
from inference.mann.path import Path as GroundPath  # noqa: E402
from inference.modelfile import open_model  # noqa: E402

TEST_CLIPS = ("D1_008_KAN01_002", "D1_009_KAN01_002", "D1_010_KAN01_003", "D1_ex04_KAN02_003", "D1_058_KAN01_001")
SPEEDS = {"walk": 100.0, "trot": 180.0, "canter": 300.0}   # cm/s
START = 60   # the first frame with a whole second before it


def circle(speed, radius=200.0):
    """One lap counter-clockwise (seen from above in Blender), starting at the origin heading +Z."""
    t = np.linspace(0, 2 * np.pi * radius / speed, 721)
    a = t * speed / radius
    return GroundPath(t, np.stack([radius * (1 - np.cos(a)), radius * np.sin(a)], axis=-1), source="circle")


def square(speed, side=400.0):
    corners = np.array([[0, 0], [0, side], [side, side], [side, 0], [0, 0]], dtype=float)
    k = np.linspace(0, 4, 801)
    points = np.stack([np.interp(k, np.arange(5), corners[:, i]) for i in range(2)], axis=-1)
    return GroundPath(k * side / speed, points, source="square")


def travelled(motion, path):
    """The length of the root's track over the path's: how much of the path it walked in the path's time."""
    bones = bones_of(motion.skeleton)
    ground = root(world(motion, bones)[0], bones, motion.fps)[0]
    return float(np.linalg.norm(np.diff(ground, axis=0), axis=-1).sum()
                 / np.linalg.norm(np.diff(path.points, axis=0), axis=-1).sum())


def test_split(model, data):
    paths, starts, captures = [], [], []
    for name in TEST_CLIPS:
        clip = data.clip(data.names.index(name))
        bones = bones_of(clip.skeleton)
        ground, theta, _ = root(world(clip, bones)[0], bones, clip.fps)
        paths.append(GroundPath(np.arange(clip.n_frames - START) / clip.fps, ground[START:], None, theta[START:], name))
        starts.append((clip, START))
        captures.append(clip.frames(START))
    began = time.perf_counter()
    outs = model.follow(paths, start=starts)
    seconds = time.perf_counter() - began
    rows = {}
    for name, out, cap, path in zip(TEST_CLIPS, outs, captures, paths):
        pc, po = metrics.paws(cap), metrics.paws(out)
        ground = metrics.paw_ground(pc)
        sc, so = metrics.foot_skating(pc, ground), metrics.foot_skating(po, ground)
        rows[name] = {"frames": out.n_frames,
                      "skating": float(so.mean()), "skating_capture": float(sc.mean()),
                      "skating_back": float(so[2:].mean()), "skating_back_capture": float(sc[2:].mean()),
                      "angular": metrics.angular_update(out), "angular_capture": metrics.angular_update(cap),
                      "deviation_cm": metrics.path_deviation(out, path.points)[0],
                      "facing_deg": metrics.path_deviation(out, path.points)[1],
                      "facing_deg_capture": metrics.path_deviation(cap, path.points)[1]}
    frames = np.array([r["frames"] for r in rows.values()])
    total = {k: float(np.average([r[k] for r in rows.values()], weights=frames)) for k in next(iter(rows.values()))
             if k != "frames"}
    return rows, total, seconds


def paths(model):
    made = {f"{shape.__name__} {gait}": shape(speed) for shape in (circle, square) for gait, speed in SPEEDS.items()}
    began = time.perf_counter()
    outs = model.follow(list(made.values()))
    seconds = time.perf_counter() - began
    rows = {}
    for (name, path), out in zip(made.items(), outs):
        deviation, facing = metrics.path_deviation(out, path.points)
        rows[name] = {"deviation_cm": deviation, "facing_deg": facing, "travelled": travelled(out, path)}
    return rows, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/mocap/dog-mann.zip")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model = open_model(args.model, kind="mann", tau=args.tau)
    rows, total, seconds = test_split(model, load_motion_set(args.data, args.cache))
    print(f"test split, following the captured root track ({seconds:.1f} s); model / capture:")
    for name, r in list(rows.items()) + [("all (frame-weighted)", total)]:
        print(f"  {name:<22} skating {r['skating']:.3f} / {r['skating_capture']:.3f} cm/frame "
              f"({r['skating'] / r['skating_capture']:.2f}x), back paws {r['skating_back']:.3f} / "
              f"{r['skating_back_capture']:.3f}; angular update {r['angular']:.2f} / {r['angular_capture']:.2f} deg "
              f"({r['angular'] / r['angular_capture']:.0%}); deviation {r['deviation_cm']:.1f} cm, facing "
              f"{r['facing_deg']:.1f} / {r['facing_deg_capture']:.1f} deg")
    shapes, seconds = paths(model)
    print(f"paths ({seconds:.1f} s):")
    for name, r in shapes.items():
        print(f"  {name:<14} deviation {r['deviation_cm']:.1f} cm, facing {r['facing_deg']:.1f} deg, "
              f"track {r['travelled']:.0%} of the path's length in its time")
    if args.json:
        args.json.write_text(json.dumps({"tau": args.tau, "model": str(args.model), "test_split": rows,
                                         "test_split_all": total, "paths": shapes}, indent=1) + "\n")


if __name__ == "__main__":
    main()
