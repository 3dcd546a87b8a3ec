"""How a Motion VAE walks (a quick measurement until ``bench-mvae`` exists), on LaFAN1's test subject 5:

    .venv/bin/python tools/mvae_walk.py --model runs/mvae/mvae-lafan1.onnx --data ../shared/mocap/lafan1-27.zip \\
        [--starts 8 --frames 3000 --json F]

1. Random walks of ``--frames`` frames from ``--starts`` poses spread over subject 5's clips (two walks
   each): NaN, the hips' height against the capture's range, PEAK (../shared/docs/metrics.md: the 99th
   percentile of the fastest joint's speed, cm a frame), foot skating (toes and feet, each foot's ground
   the capture's) and the root's mean speed, each beside the capture's (subject 5, every frame); walks
   with NaN are counted and left out of the means.
2. Spread: the mean pairwise distance of the root after 3 s, and of all joints (root-relative), over
   K = 8 continuations of each start.
3. Latent health on subject 5: the encoder's KL per dimension on every pair of frames, active units.
4. Speed: ms per generated frame at batch 1 on one thread; K = 16 continuations of 10 s.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.dataset import load_motion_set  # noqa: E402
from inference.mann.metrics import foot_skating, paw_ground  # noqa: E402
from inference.modelfile import open_model  # noqa: E402
from inference.mvae.features import poses  # noqa: E402

FEET = ("LeftToe", "RightToe", "LeftFoot", "RightFoot")
ACTIVE = 0.01   # nats, as training's validation counts them


def measures(motion, ground):
    """NaN, hip height range, PEAK, foot skating (``ground`` (4,) the feet's) and root speed of a motion."""
    world = motion.global_transforms()[1]
    if not np.isfinite(world).all():   # a walk that blew up is counted, not measured
        return {"nan": True}
    feet = world[:, [motion.skeleton.index(f) for f in FEET]]
    speed = np.linalg.norm(np.diff(world, axis=0), axis=-1).max(axis=1)
    with np.errstate(over="ignore"):   # a foot miles up skates 0: 2 ** (h / H) is inf
        skating = float(foot_skating(feet, ground).mean())
    return {"nan": False, "hips_min": float(world[:, 0, 1].min()), "hips_max": float(world[:, 0, 1].max()),
            "peak": float(np.percentile(speed, 99)), "skating": skating,
            "root_speed": float(np.linalg.norm(np.diff(world[:, 0, [0, 2]], axis=0), axis=-1).mean())}


def test_clips(data):
    return [data.clip(i) for i, n in enumerate(data.names) if n.endswith("subject5")]


def walks(model, clips, starts, frames):
    """Two walks from each of ``starts`` poses spread evenly over ``clips``, measured beside the capture."""
    capture = [measures(c, paw_ground(feet_of(c))) for c in clips]
    rows = []
    for s in range(starts):
        clip = clips[s % len(clips)]
        frame = int((s // len(clips) + 1) * clip.n_frames / (starts // len(clips) + 2))
        for w in model.walk(clip, frame, frames, k=2, seed=s):
            rows.append(measures(w.frames(frame + 1), paw_ground(feet_of(clip))))
    finite = [r for r in rows if not r["nan"]]
    return {"capture": {k: _combine(k, [c[k] for c in capture]) for k in capture[0] if k != "nan"},
            "model": {k: _combine(k, [r[k] for r in finite]) for k in (finite or [{}])[0] if k != "nan"},
            "walks": len(rows), "with_nan": sum(r["nan"] for r in rows)}


def _combine(key, values):
    return {"hips_min": min, "hips_max": max}.get(key, lambda v: float(np.mean(v)))(values)


def feet_of(motion):
    return motion.global_transforms()[1][:, [motion.skeleton.index(f) for f in FEET]]


def spread(model, clips, k=8, seconds=3.0):
    """Mean pairwise distance (cm) of the root after ``seconds``, and of the root-relative joints, over
    ``k`` continuations of a start in the middle of each clip."""
    frames = int(round(seconds * model.fps))
    roots, joints = [], []
    for i, clip in enumerate(clips):
        frame = clip.n_frames // 2
        world = np.stack([w.global_transforms()[1][frame + frames] for w in model.walk(clip, frame, frames, k, seed=i)])
        pairs = np.triu_indices(k, 1)
        roots.append(np.linalg.norm(world[pairs[0]][:, 0, [0, 2]] - world[pairs[1]][:, 0, [0, 2]], axis=-1).mean())
        local = world - world[:, :1]
        joints.append(np.linalg.norm(local[pairs[0]] - local[pairs[1]], axis=-1).mean())
    return {"root_after_3s": float(np.mean(roots)), "joints_after_3s": float(np.mean(joints))}


def latent(model, clips):
    """KL per latent dimension (nats) of the encoder's posterior on every pair of frames of ``clips``."""
    kl = []
    for clip in clips:
        pose = poses(clip)[0]
        mean, logvar = model.encode(pose[:-1], pose[1:])
        kl.append(0.5 * (mean ** 2 + np.exp(logvar) - 1 - logvar))
    kl = np.concatenate(kl).mean(axis=0)
    return {"kl_dims": [round(float(v), 4) for v in kl], "kl": float(kl.mean()), "active": int((kl > ACTIVE).sum())}


def speed(model, clip):
    began = time.perf_counter()
    model.walk(clip, 100, 1000, k=1, seed=0)
    one = (time.perf_counter() - began) / 1000 * 1e3
    began = time.perf_counter()
    model.walk(clip, 100, int(10 * model.fps), k=16, seed=0)
    return {"ms_per_frame_batch1": one, "k16_10s_seconds": time.perf_counter() - began}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="LaFAN1 (subject 5 is read)")
    parser.add_argument("--cache", default=None)
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model = open_model(args.model, kind="mvae")
    clips = test_clips(load_motion_set(args.data, args.cache))
    results = {"walks": walks(model, clips, args.starts, args.frames), "spread": spread(model, clips),
               "latent": latent(model, clips), "speed": speed(model, clips[0])}
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
