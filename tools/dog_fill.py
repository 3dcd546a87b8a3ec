"""The dog's gap filling against Blender's Bézier, in numpy, on the held-out tenth of MANN's training clips
(issue 22): where the fill is chosen, never on the test split.

    .venv/bin/python tools/dog_fill.py --data ../shared/mocap/dog-mann.zip [--json out/dog-fill.json]
    .venv/bin/python tools/dog_fill.py --data ../shared/mocap/dog-mann.zip --rig-suite   # the check

Bézier here is Blender's auto-clamped F-curve (``BKE_nurb_handle_calc`` for F-curves, no smoothing: a
key's slope the mean of the two chords, handles 1/2.5614 of the neighbouring interval, at most five
times the other side's; flat at an extremum, at the first and last key, and where a handle would pass
a neighbour's value) per channel: the root's position and each joint's local Euler angles in its BVH
order, as Blender's BVH importer keys them (there in the bone's rest frame, here in the file's).

Runs, as ``tools/rig_suite.py`` makes them: Fill Gaps of 0.5, 1 and 2 s (30, 60, 120 frames key to
key) with every other frame a key; Decompress, one key a second. ``--rig-suite`` runs the rig suite's
dog cases (test split, the same places) to check the stand-in against Blender's Bézier numbers in
``docs/rig-suite.md``; the default runs gaps starting every 0.5 s in the last tenth of each training
clip (their context may reach back into the trained part) and a Decompress of each clip's last
``DECOMPRESS`` seconds. Errors: mean distance (cm) over the generated frames of the 21 joints and the
four paws (the End Sites), as the rig suite measures.
"""

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference import quat                                     # noqa: E402
from inference.dataset import load_motion_set                  # noqa: E402
from inference.inbetween import fill_gaps, superres            # noqa: E402
from inference.mann import metrics                             # noqa: E402
from inference.modelfile import find_model, open_model         # noqa: E402
from inference.motion import forward_kinematics                # noqa: E402
from training.clips import HOLD_OUT                            # noqa: E402

GAPS = (0.5, 1.0, 2.0)          # s, key to key
EVERY = 0.5                     # s between the gaps' starts in the held-out tenth
DECOMPRESS = 4.0                # s of each clip's end decompressed, one key a second
HANDLE = 2.5614                 # Blender's: a handle is the interval over this
RIG_SUITE = {"dog-walk": ("D1_008_KAN01_002", 0, 600), "dog-010": ("D1_010_KAN01_003", 0, 203),
             "dog-ex04": ("D1_ex04_KAN02_003", 0, 498), "dog-009": ("D1_009_KAN01_002", 0, 548),
             "dog-058": ("D1_058_KAN01_001", 600, 1200)}


def bezier(values, keys):
    """(F, C): Blender's auto-clamped Bézier of ``values`` (F, C) through its frames ``keys`` (K,), sorted,
    every channel alone; frames outside the keys hold the nearest key's value."""
    x, y = keys.astype(np.float64), values[keys]
    if len(x) < 2:
        return np.repeat(y[:1], len(values), axis=0)
    dx = np.diff(x)[:, None]
    chord = np.diff(y, axis=0) / dx                                         # (K-1, C)
    left = np.concatenate([[np.inf], np.minimum(dx[:, 0], 5 * np.append(dx[1:, 0], np.inf))])   # a key's left interval
    right = np.concatenate([np.minimum(dx[:, 0], 5 * np.concatenate([[np.inf], dx[:-1, 0]])), [np.inf]])
    hl, hr = left[:, None] / HANDLE, right[:, None] / HANDLE                 # handle lengths in frames (K, 1)
    slope = np.zeros_like(y)
    inner = (chord[:-1] * chord[1:]) > 0                                    # no extremum: not flat
    mean = (chord[:-1] + chord[1:]) / 2
    rise_l, rise_r = y[1:-1] - y[:-2], y[2:] - y[1:-1]
    over_l = np.abs(mean) * hl[1:-1] > np.abs(rise_l)                        # a handle past the neighbour's value
    over_r = ~over_l & (np.abs(mean) * hr[1:-1] > np.abs(rise_r))
    mean = np.where(over_l, rise_l / hl[1:-1], np.where(over_r, rise_r / hr[1:-1], mean))
    slope[1:-1] = np.where(inner, mean, 0.0)
    f = np.arange(len(values), dtype=np.float64)
    seg = np.clip(np.searchsorted(x, f, side="right") - 1, 0, len(x) - 2)
    x0, x1 = x[seg], x[seg + 1]
    a, b = hr[seg, 0], hl[seg + 1, 0]
    t = _solve(x0, x0 + a, x1 - b, x1, np.clip(f, x[0], x[-1]))[:, None]
    p = (y[seg], y[seg] + slope[seg] * a[:, None], y[seg + 1] - slope[seg + 1] * b[:, None], y[seg + 1])
    return ((1 - t) ** 3 * p[0] + 3 * (1 - t) ** 2 * t * p[1] + 3 * (1 - t) * t ** 2 * p[2] + t ** 3 * p[3])


def _solve(x0, x1, x2, x3, x, steps=40):
    """(N,): the parameter t in [0, 1] where the cubic Bézier with x control points ``x0..x3`` (N,), monotone,
    reaches ``x`` (N,), by bisection."""
    lo, hi = np.zeros_like(x), np.ones_like(x)
    for _ in range(steps):
        t = (lo + hi) / 2
        at = (1 - t) ** 3 * x0 + 3 * (1 - t) ** 2 * t * x1 + 3 * (1 - t) * t ** 2 * x2 + t ** 3 * x3
        lo, hi = np.where(at < x, t, lo), np.where(at < x, hi, t)
    return (lo + hi) / 2


def bezier_motion(motion, keys):
    """``motion`` with every frame but ``keys`` (K,) replaced by Bézier through them: the root's translation
    and every joint's local rotation as Euler angles in its BVH channel order (unwrapped over time)."""
    positions = motion.positions.copy()
    positions[:, 0] = bezier(motion.positions[:, 0], keys)
    rotations = motion.rotations.copy()
    for j, channels in enumerate(motion.skeleton.channels):
        order = "".join(c[0].upper() for c in channels if c.lower().endswith("rotation")) or "ZXY"
        euler = np.unwrap(quat.to_euler(motion.rotations[:, j], order), axis=0)
        rotations[:, j] = quat.from_euler(bezier(euler, keys), order)
    return replace(motion, rotations=quat.unroll(rotations), positions=positions)


def points(motion):
    """(F, J + 4, 3): the joints' world positions and the four paws' (the End Sites)."""
    joints = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    return np.concatenate([joints, metrics.paws(motion)], axis=1)


def error(made, truth, frames):
    """Per frame of ``frames``: the mean distance of the points of ``made`` from ``truth``'s (units)."""
    return np.linalg.norm(points(made)[frames] - points(truth)[frames], axis=-1).mean(axis=1)


def runs(clip, places, fps):
    """``(label, gaps)`` of one clip: a Fill Gaps run per gap start in ``places[seconds]`` (frames), and a
    Decompress run (keys a second apart from frame ``places["decompress"]`` to the end)."""
    out = [(f"{s:g} s", [(a, a + int(round(s * fps)))]) for s in GAPS for a in places[s]]
    keys = np.arange(places["decompress"], clip.n_frames, int(round(fps)))
    return out + [("decompress", list(zip(keys[:-1].tolist(), keys[1:].tolist())))]


def rig_suite_places(n_frames, fps):
    """The rig suite's places (``tools/rig_suite.py`` gap_starts, scene frame 1 = clip frame 0)."""
    margin = int(np.ceil(0.4 * fps))
    places = {"decompress": 0}
    for s in GAPS:
        n = int(round(s * fps))
        first, last = 1 + margin, n_frames - margin - n
        places[s] = sorted({int(np.ceil(p)) - 1 for p in np.linspace(first, max(first, last), 5)})
    return places


def held_out_places(n_frames, fps):
    """Gap starts every EVERY seconds in the clip's last tenth, each gap ending before its last frame; the
    Decompress keys over its last DECOMPRESS seconds."""
    cut = int(round(n_frames * (1 - HOLD_OUT)))
    places = {s: list(range(cut, n_frames - int(round(s * fps)) - 1, int(round(EVERY * fps)))) for s in GAPS}
    places["decompress"] = max(0, n_frames - 1 - int(round(DECOMPRESS * fps)))
    return places


def measure(model, clips, where):
    """Per run label: the fill's and Bézier's mean error (units) and their paws' skating (units a frame)
    over the generated frames of ``clips``, runs placed by ``where(n_frames, fps)``; and per clip."""
    pooled, per_clip = {}, {}
    for clip in clips:
        truth, ground = points(clip), metrics.paw_ground(metrics.paws(clip))
        for label, gaps in runs(clip, where(clip.n_frames, clip.fps), clip.fps):
            made = np.zeros(clip.n_frames, bool)
            for a, b in gaps:
                made[a + 1:b] = True
            if not made.any():
                continue
            keys = np.flatnonzero(~made)
            for name, motion in (("fill", fill_gaps(model, clip, gaps)), ("bezier", bezier_motion(clip, keys))):
                p = points(motion)
                e = np.linalg.norm(p[made] - truth[made], axis=-1).mean(axis=1)
                steps = np.flatnonzero(made[1:] | made[:-1])
                paws = p[:, -4:]
                skate = np.stack([metrics.foot_skating(paws[s:s + 2], ground) for s in steps]).mean(axis=1)
                for table in (pooled.setdefault(label, {}), per_clip.setdefault(clip.name, {}).setdefault(label, {})):
                    table.setdefault(name, []).append(e)
                    table.setdefault(name + "_skating", []).append(skate)
    summary = lambda t: {k: float(np.concatenate(v).mean()) for k, v in t.items()}   # noqa: E731
    return {label: summary(t) for label, t in pooled.items()}, \
        {c: {label: summary(t) for label, t in rows.items()} for c, rows in per_clip.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/mocap/dog-mann.zip"))
    parser.add_argument("--model", type=Path, help="a MANN model file (default: the shipped one)")
    parser.add_argument("--rig-suite", action="store_true", help="the rig suite's dog cases (test split): the check")
    parser.add_argument("--clips", type=int, help="only the first N clips (a quick look)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    model = open_model(args.model, kind="mann") if args.model else find_model(None, kind="mann")
    data = load_motion_set(args.data)
    test = model.file.json("betwixt.test_clips")
    if args.rig_suite:
        clips = [data.clip(data.names.index(n)).frames(a, b) for n, a, b in RIG_SUITE.values()]
        where = rig_suite_places
    else:
        clips = [data.clip(i) for i, n in enumerate(data.names) if n not in test]
        where = held_out_places
    began = time.perf_counter()
    pooled, per_clip = measure(model, clips[:args.clips], where)
    for label, r in pooled.items():
        print(f"{label:<11} fill {r['fill']:6.2f} cm, Bézier {r['bezier']:6.2f} (ratio {r['fill'] / r['bezier']:.2f}); "
              f"paw skating {r['fill_skating']:.3f} / {r['bezier_skating']:.3f} cm/frame")
    if args.rig_suite:
        for name, rows in per_clip.items():
            print(f"  {name:<18} " + "  ".join(f"{k} {r['fill']:.1f}/{r['bezier']:.1f}" for k, r in rows.items()))
    print(f"{len(clips[:args.clips])} clips, {time.perf_counter() - began:.0f} s", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"pooled": pooled, "clips": per_clip}, indent=2) + "\n")


if __name__ == "__main__":
    main()
