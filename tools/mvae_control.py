"""The Motion VAE's control measured on LaFAN1's test subject 5 (until ``bench-mvae`` has it):

    .venv/bin/python tools/mvae_control.py floor --model MVAE.onnx --data ../shared/mocap/lafan1-27.zip \\
        [--starts 8 --frames 3000 --json F]
    .venv/bin/python tools/mvae_control.py variants --model MVAE.onnx --data ../shared/mocap/lafan1-27.zip \\
        [--rtn inference/models/rtn-lafan1.onnx --gaps 30,60 -k 8 --every 100 --json F]
    .venv/bin/python tools/mvae_control.py follow --model MVAE.onnx --data ../shared/mocap/lafan1-27.zip [--json F]

``floor``: random walks (two from each of ``--starts`` poses spread over subject 5)
with and without the floor step: the share of frames whose lowest foot (toes and feet) is more than 5 or
20 cm under the floor (the lowest the feet reach in the second up to the start), whose hips are under
it, and whose lowest foot is more than 10 or 30 cm above it (the capture's shares beside them, its floor
the clip's lowest foot).

``variants``: K variants of gaps of each length cut every ``--every`` frames of subject 5's clips, the
Motion VAE's beside the RTN's: the target error before the blend (the last in-between frame's distance
from the key, root on the floor and joints, with a blend of one frame, which is the key's alone), the
joints' mean distance to the capture over the gap, foot skating (../shared/docs/metrics.md, toes and
feet, each foot's ground the clip's) and the spread (mean pairwise distance of the K variants' joints
over the gap), all in cm.

``follow``: bench-mann's circle, square and star (one lap) at 1 and 2 m/s from the model's standing
start: the root's mean distance to the path (cm) and its facing's angle to the path (degrees), the time
taken against the path's, foot skating (the walk's own ground) and the hips' height range.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.dataset import load_motion_set  # noqa: E402
from inference.inbetween import floor, gap_in  # noqa: E402
from inference.mann.bench import shapes  # noqa: E402
from inference.mann.metrics import foot_skating, path_deviation, path_progress, paw_ground  # noqa: E402
from inference.modelfile import open_model  # noqa: E402
from inference.motion import forward_kinematics  # noqa: E402
from inference.mvae.features import root_of  # noqa: E402

SPEEDS = {"walk": 1.0, "jog": 2.0}   # m/s

FEET = ("LeftToe", "RightToe", "LeftFoot", "RightFoot")


def test_clips(data):
    return [data.clip(i) for i, n in enumerate(data.names) if n.endswith("subject5")]


def heights(world, skeleton, ground):
    """Per frame, the lowest foot's and the hips' height above ``ground``."""
    feet = [skeleton.index(f) for f in FEET]
    return world[:, feet, 1].min(axis=1) - ground, world[:, 0, 1] - ground


def shares(lowest, hips):
    return {"foot_5cm_under": float(np.mean(lowest < -5)), "foot_20cm_under": float(np.mean(lowest < -20)),
            "hips_under": float(np.mean(hips < 0)), "foot_10cm_over": float(np.mean(lowest > 10)),
            "foot_30cm_over": float(np.mean(lowest > 30))}


def floor_step(model, clips, starts, frames):
    """The shares of :func:`shares` over the walks, with and without the floor step, and the capture's."""
    capture = [heights(c.global_transforms()[1], c.skeleton, floor(c, [])) for c in clips]
    out = {"capture": shares(*(np.concatenate(v) for v in zip(*capture)))}
    for grounded in (False, True):
        rows = []
        for s in range(starts):
            clip = clips[s % len(clips)]
            frame = int((s // len(clips) + 1) * clip.n_frames / (starts // len(clips) + 2))
            ground = floor(clip.frames(max(0, frame + 1 - model.past), frame + 1), [])
            for w in model.walk(clip, frame, frames, k=2, seed=s, grounded=grounded):
                rows.append(heights(w.frames(frame + 1).global_transforms()[1], clip.skeleton, ground))
        out["grounded" if grounded else "without"] = shares(*(np.concatenate(v) for v in zip(*rows)))
    return out


def gaps_of(clips, length, every=100, past=30):
    """``(clip, start, end)`` of gaps of ``length`` frames every ``every`` frames of each clip."""
    return [(c, s, s + length + 1) for c in clips for s in range(past, c.n_frames - length - past - 1, every)]


def variants(models, clips, length, k, every, seed=0):
    """Per model, the means over the gaps of :func:`measures` and :func:`miss` of its K variants."""
    rows = {name: [] for name in models}
    for i, (clip, start, end) in enumerate(gaps_of(clips, length, every)):
        truth = clip.global_transforms()[1][start + 1:end]
        ground = paw_ground(truth[:, [clip.skeleton.index(f) for f in FEET]])
        for name, model in models.items():
            gap = gap_in(clip, start, end, model.past)
            rot, pos = model.variants(gap, k, seed=seed + i)
            rows[name].append(measures(rot[:, 0], pos[:, 0], clip.skeleton, truth, ground))
            raw = model.variants(gap, k, seed=seed + i, blend=1)   # a blend of one frame is the key alone
            rows[name][-1].update(miss(*raw, clip, end))
    return {name: {key: float(np.mean([r[key] for r in v])) for key in v[0]} for name, v in rows.items()}


def measures(rotations, positions, skeleton, truth, ground):
    """Joint error, skating and spread (cm) of K variants' frames (K, n, J, 4/3) against ``truth`` (n, J, 3)."""
    world = forward_kinematics(rotations, positions, skeleton.parents)[1]
    feet = [skeleton.index(f) for f in FEET]
    with np.errstate(over="ignore"):
        skating = np.mean([foot_skating(w[:, feet], ground).mean() for w in world])
    pairs = np.triu_indices(len(world), 1)
    return {"joint_error": float(np.linalg.norm(world - truth, axis=-1).mean()), "skating": float(skating),
            "spread": float(np.linalg.norm(world[pairs[0]] - world[pairs[1]], axis=-1).mean())}


def miss(rotations, positions, clip, end):
    """How far the last in-between frame of K variants (K, 1, n, J, 4/3) is from the key after it: the
    root on the floor and every joint (cm), mean over the variants."""
    last = forward_kinematics(rotations[:, 0, -1], positions[:, 0, -1], clip.skeleton.parents)[1]
    key = clip.global_transforms()[1][end]
    return {"miss_root": float(np.linalg.norm((last - key)[:, 0, [0, 2]], axis=-1).mean()),
            "miss_joints": float(np.linalg.norm(last - key, axis=-1).mean())}


def follow(model):
    """Per path and speed: deviation (cm), facing (degrees), seconds taken against the path's, skating
    and the hips' height range."""
    made = {f"{shape} {gait}": path for gait, speed in SPEEDS.items()
            for shape, path in shapes(speed, model.units_per_metre).items()}
    rows = {}
    for (name, path), out in zip(made.items(), model.follow(list(made.values()))):
        world = out.global_transforms()[1]
        origin, theta = root_of(world, model.pair)
        track = (origin[:, [0, 2]], theta)
        deviation, facing = path_deviation(out, path.points, track)
        progress = path_progress(out, path.points, track)
        feet = world[:, [out.skeleton.index(f) for f in FEET]]
        with np.errstate(over="ignore"):
            skating = float(foot_skating(feet, paw_ground(feet)).mean())
        rows[name] = {"deviation": deviation, "facing": facing, "path_seconds": path.duration,
                      "seconds": path.duration / progress if progress > 0 else float("inf"), "skating": skating,
                      "hips_min": float(world[:, 0, 1].min()), "hips_max": float(world[:, 0, 1].max())}
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("floor", "variants", "follow"))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="LaFAN1 (subject 5 is read)")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--rtn", type=Path, default=Path(__file__).resolve().parents[1] / "inference" / "models" /
                        "rtn-lafan1.onnx")
    parser.add_argument("--gaps", default="30,60")
    parser.add_argument("-k", type=int, default=8)
    parser.add_argument("--every", type=int, default=100, help="frames between the starts of two gaps")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model = open_model(args.model, kind="mvae")
    clips = test_clips(load_motion_set(args.data, args.cache))
    began = time.perf_counter()
    if args.what == "floor":
        results = floor_step(model, clips, args.starts, args.frames)
    elif args.what == "follow":
        results = follow(model)
    else:
        models = {"mvae": model, "rtn": open_model(args.rtn, kind="rtn")}
        results = {n: variants(models, clips, int(n), args.k, args.every) for n in args.gaps.split(",")}
    results["seconds"] = time.perf_counter() - began
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
