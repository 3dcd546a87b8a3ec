"""The dog's gap filling against Blender's Bézier, in numpy, on the held-out tenth of MANN's training clips
(issue 22): where the fill is chosen, never on the test split.

    .venv/bin/python tools/dog_fill.py --data ../shared/mocap/dog-mann.zip [--json out/dog-fill.json]
    .venv/bin/python tools/dog_fill.py --data ../shared/mocap/dog-mann.zip --rig-suite   # the check

Bézier here is Blender's auto-clamped F-curve with its default smoothing (:func:`bezier`) on the
channels Blender's BVH importer keys (:func:`channels`): the root's location and each joint's Euler
angles, in the bone's rest frame.

Runs, as ``tools/rig_suite.py`` makes them: Fill Gaps of 0.5, 1 and 2 s (30, 60, 120 frames key to
key) with every other frame a key; Decompress, one key a second. ``--rig-suite`` runs the rig suite's
dog cases (test split, the same places) to check the stand-in against Blender's Bézier numbers in
``docs/rig-suite.md``; the default runs gaps starting every 0.5 s in the last tenth of each training
clip (their context may reach back into the trained part) and a Decompress of each clip's last
``DECOMPRESS`` seconds. Errors: mean distance (cm) over the generated frames of the 21 joints and the
four paws (the End Sites), as the rig suite measures.
"""

import argparse
import functools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference import quat                                     # noqa: E402
from inference.inbetween import fill_gaps                      # noqa: E402
from inference.modelfile import find_model, open_model         # noqa: E402
from inference.motion import forward_kinematics                # noqa: E402
from lab import metrics                                        # noqa: E402
from lab.dataset import load_motion_set                        # noqa: E402
from training.clips import HOLD_OUT                            # noqa: E402

GAPS = (0.5, 1.0, 2.0)          # s, key to key
EVERY = 0.5                     # s between the gaps' starts in the held-out tenth
DECOMPRESS = 4.0                # s of each clip's end decompressed, one key a second
RIG_SUITE = {"dog-walk": ("D1_008_KAN01_002", 0, 600), "dog-010": ("D1_010_KAN01_003", 0, 203),
             "dog-ex04": ("D1_ex04_KAN02_003", 0, 498), "dog-009": ("D1_009_KAN01_002", 0, 548),
             "dog-058": ("D1_058_KAN01_001", 600, 1200)}


def bezier(values, keys):
    """(F, C): Blender's auto-clamped Bézier of ``values`` (F, C) through its frames ``keys`` (K,), sorted,
    every channel alone, with Blender 5.0's default Continuous Acceleration smoothing: handles a third of
    their interval (a cubic in time between keys) and slopes that make the acceleration continuous
    through every key but the locked ones (flat: the first and last key, and extrema), a key whose handle
    would pass a neighbour's value locked at the slope that just reaches it. Frames outside the keys
    hold the nearest key's value."""
    x, y = keys.astype(np.float64), values[keys].astype(np.float64)
    if len(x) < 2:
        return np.repeat(y[:1], len(values), axis=0)
    h = np.diff(x)[:, None]
    chord = np.diff(y, axis=0) / h                                          # (K-1, C)
    locked = np.ones(y.shape, bool)
    locked[1:-1] = chord[:-1] * chord[1:] <= 0                              # extrema, and the two ends
    fixed = np.zeros_like(y)
    for _ in range(len(x)):
        slope = _smooth(h, chord, locked, fixed)
        left, right = _overshoot(slope, y, h)
        left, right = left & ~locked, right & ~locked
        if not (left | right).any():
            break
        edge = np.zeros((1,) + y.shape[1:])
        back = np.concatenate([edge, 3 * chord])                                 # the handle on the key before
        ahead = np.concatenate([3 * chord, edge])                                # ... on the key after
        limit = np.where(left & right, np.where(np.abs(back) < np.abs(ahead), back, ahead), np.where(left, back, ahead))
        fixed = np.where(left | right, limit, fixed)
        locked |= left | right
    f = np.arange(len(values), dtype=np.float64)
    seg = np.clip(np.searchsorted(x, f, side="right") - 1, 0, len(x) - 2)
    t = ((np.clip(f, x[0], x[-1]) - x[seg]) / h[seg, 0])[:, None]
    p = (y[seg], y[seg] + slope[seg] * h[seg] / 3, y[seg + 1] - slope[seg + 1] * h[seg] / 3, y[seg + 1])
    return (1 - t) ** 3 * p[0] + 3 * (1 - t) ** 2 * t * p[1] + 3 * (1 - t) * t ** 2 * p[2] + t ** 3 * p[3]


def _smooth(h, chord, locked, fixed):
    """(K, C) slopes with a continuous second derivative through every key not ``locked`` (K, C), the
    locked ones at ``fixed``: a tridiagonal system per channel, solved by the Thomas algorithm."""
    k = len(locked)
    inv = 1 / h                                                              # (K-1, 1)
    lower = np.zeros(locked.shape)
    upper = np.zeros(locked.shape)
    diag = np.ones(locked.shape)
    rhs = fixed.copy()
    inner = ~locked[1:-1]
    lower[1:-1] = np.where(inner, inv[:-1], 0.0)
    upper[1:-1] = np.where(inner, inv[1:], 0.0)
    diag[1:-1] = np.where(inner, 2 * (inv[:-1] + inv[1:]), 1.0)
    rhs[1:-1] = np.where(inner, 3 * (chord[:-1] * inv[:-1] + chord[1:] * inv[1:]), fixed[1:-1])
    for i in range(1, k):
        w = lower[i] / diag[i - 1]
        diag[i] = diag[i] - w * upper[i - 1]
        rhs[i] = rhs[i] - w * rhs[i - 1]
    slope = np.empty_like(rhs)
    slope[-1] = rhs[-1] / diag[-1]
    for i in range(k - 2, -1, -1):
        slope[i] = (rhs[i] - upper[i] * slope[i + 1]) / diag[i]
    return slope


def _overshoot(slope, y, h):
    """Two (K, C): keys whose left handle, and whose right handle (a third of its interval at ``slope``),
    passes the neighbouring key's value."""
    left, right = np.zeros(y.shape, bool), np.zeros(y.shape, bool)
    left[1:] = (y[1:] - slope[1:] * h / 3 - y[:-1]) * (y[1:] - y[:-1]) < 0
    right[:-1] = (y[:-1] + slope[:-1] * h / 3 - y[1:]) * (y[:-1] - y[1:]) < 0
    return left, right


def channels(motion):
    """(F, 3 + 3J): the F-curves Blender's BVH importer keys for ``motion``: the root's location and each
    joint's Euler angles (:func:`_orders`), both in the bone's rest frame (:func:`rest_frames`), each
    frame's angles the pair's solution nearest the last frame's, as the importer keys them."""
    rest = rest_frames(motion.skeleton)
    pose = quat.mul(quat.mul(quat.inv(rest), motion.rotations), rest)               # (F, J, 4)
    euler = np.stack([quat.to_euler(pose[:, j], o) for j, o in enumerate(_orders(motion.skeleton))], axis=1)
    other = np.stack([euler[..., 0] + np.pi, np.pi - euler[..., 1], euler[..., 2] + np.pi], axis=-1)
    other = np.angle(np.exp(1j * other))                                 # the same turn, in (-pi, pi] as Blender's
    last = np.zeros(euler.shape[1:])
    for f in range(len(euler)):
        near = [_compatible(e, last) for e in (euler[f], other[f])]
        closer = np.abs(near[0] - last).sum(-1) <= np.abs(near[1] - last).sum(-1)
        euler[f] = last = np.where(closer[:, None], near[0], near[1])
    root = quat.rotate(quat.inv(rest[0]), motion.positions[:, 0])
    return np.concatenate([root, euler.reshape(len(euler), -1)], axis=1)


def _compatible(euler, last):
    """(J, 3): Euler angles ``euler`` (J, 3) turned by whole turns towards ``last`` as Blender's
    ``compatible_eul`` does (a component more than 5.1 away; then one more than 3.2 away while the
    other two are within 1.6)."""
    d = euler - last
    euler = euler - np.where(np.abs(d) > 5.1, np.floor(d / (2 * np.pi) + 0.5) * 2 * np.pi, 0.0)
    d = euler - last
    small = np.abs(d) < 1.6
    lone = (np.abs(d) > 3.2) & (small.sum(-1, keepdims=True) - small == 2)
    return euler - np.where(lone, np.sign(d) * 2 * np.pi, 0.0)


def from_channels(motion, values):
    """``motion`` posed by F-curve ``values`` (F, 3 + 3J) (:func:`channels`)."""
    rest = rest_frames(motion.skeleton)
    euler = values[:, 3:].reshape(len(values), -1, 3)
    pose = np.stack([quat.from_euler(euler[:, j], o) for j, o in enumerate(_orders(motion.skeleton))], axis=1)
    positions = motion.positions.copy()
    positions[:, 0] = quat.rotate(rest[0], values[:, :3])
    return replace(motion, rotations=quat.unroll(quat.mul(quat.mul(rest, pose), quat.inv(rest))), positions=positions)


def _orders(skeleton):
    """Each joint's Euler order as Blender's importer sets the pose bone's (the BVH's channels reversed:
    Blender's "ZXY" turns about Z first), in :func:`..quat.to_euler`'s terms (the first axis outermost)."""
    return ["".join(c[0].upper() for c in ch if c.lower().endswith("rotation"))[::-1] or "YXZ"
            for ch in skeleton.channels]


def rest_frames(skeleton):
    """(J, 4): each bone's rest orientation as Blender's BVH importer builds it, the shortest turn of +Y onto
    the bone (head to the mean of its children's heads, or its End Site; +Y where that is nothing), a
    half turn about Z for a bone along -Y."""
    ends = dict(skeleton.end_sites)
    tails = []
    for j in range(len(skeleton.names)):
        kids = skeleton.children(j)
        tail = skeleton.offsets[kids].mean(axis=0) if kids else ends.get(j, np.zeros(3))
        tails.append(tail if np.linalg.norm(tail) > 1e-3 else np.array([0.0, 1.0, 0.0]))
    tails = np.array(tails) / np.linalg.norm(tails, axis=-1, keepdims=True)
    turns = quat.between(np.array([0.0, 1.0, 0.0]), tails)
    down = np.hypot(tails[:, 0], tails[:, 2]) < 2.5e-4                     # along -Y: Blender turns about Z
    turns[down & (tails[:, 1] < 0)] = [0.0, 0.0, 0.0, 1.0]
    return quat.normalize(turns)


def points(motion):
    """(F, J + 4, 3): the joints' world positions and the four paws' (the End Sites)."""
    joints = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    return np.concatenate([joints, metrics.paws(motion)], axis=1)


def runs(clip, places, fps):
    """``(label, motion, gaps, keys)`` of one clip: a Fill Gaps run per gap start in ``places[seconds]``
    (frames; every frame outside the gap a key), and a Decompress of the clip from frame
    ``places["decompress"]`` (keys a second apart from that frame; the first and last held for a second
    beyond them)."""
    out = []
    for s in GAPS:
        for a in places[s]:
            b = a + int(round(s * fps))
            out.append((f"{s:g} s", clip, [(a, b)], np.setdiff1d(np.arange(clip.n_frames), np.arange(a + 1, b))))
    second = int(round(fps))
    start = places["decompress"]
    last = start + (clip.n_frames - 1 - start) // second * second
    at = np.clip(np.arange(start - second, last + second + 1), start, last)   # the end keys held a second, as
    cut = replace(clip, rotations=clip.rotations[at], positions=clip.positions[at])   # the add-on reads Blender
    keys = np.arange(second, cut.n_frames - second, second)
    return out + [("decompress", cut, list(zip(keys[:-1].tolist(), keys[1:].tolist())), keys)]


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


def measure(pick, clips, where, **options):
    """Per run label: the fill's and Bézier's mean error (units) and their paws' skating (units a frame)
    over the generated frames of ``clips``, runs placed by ``where(n_frames, fps)``, the fill by the model
    ``pick(seconds)`` gives for a run's longest gap, given ``options`` (blend), and its name; and per clip."""
    pooled, per_clip, filled_by = {}, {}, {}
    for clip in clips:
        for label, motion, gaps, keys in runs(clip, where(clip.n_frames, clip.fps), clip.fps):
            model = pick(max(b - a - 1 for a, b in gaps) / clip.fps)
            filled_by[label] = model.name
            made = np.zeros(motion.n_frames, bool)
            for a, b in gaps:
                made[a + 1:b] = True
            if not made.any():
                continue
            truth, ground = points(motion), metrics.paw_ground(metrics.paws(clip))
            steps = np.flatnonzero(made[1:] | made[:-1])
            curves = channels(motion)
            made_by = {"fill": fill_gaps(model, motion, gaps, **options),
                       "bezier": from_channels(motion, bezier(curves, keys))}
            for name, out in made_by.items():
                p = points(out)
                e = np.linalg.norm(p[made] - truth[made], axis=-1).mean(axis=1)
                skate = np.stack([metrics.foot_skating(p[s:s + 2, -4:], ground) for s in steps]).mean(axis=1)
                for table in (pooled.setdefault(label, {}), per_clip.setdefault(clip.name, {}).setdefault(label, {})):
                    table.setdefault(name, []).append(e)
                    table.setdefault(name + "_skating", []).append(skate)
    summary = lambda t: {k: float(np.concatenate(v).mean()) for k, v in t.items()}   # noqa: E731
    return {label: {**summary(t), "model": filled_by[label]} for label, t in pooled.items()}, \
        {c: {label: summary(t) for label, t in rows.items()} for c, rows in per_clip.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/mocap/dog-mann.zip"))
    parser.add_argument("--model", type=Path, help="a model file of the dog's skeleton, MANN or RTN (default: the "
                                                   "shipped model that fills the dog's gaps)")
    parser.add_argument("--rig-suite", action="store_true", help="the rig suite's dog cases (test split): the check")
    parser.add_argument("--clips", type=int, help="only the first N clips (a quick look)")
    parser.add_argument("--blend", type=int, help="the target blend in frames (default: the model's own)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    mann = find_model(None, kind="mann")      # the dog's skeleton and its test split
    chosen = open_model(args.model) if args.model else None
    if chosen:
        chosen.check_skeleton(mann.skeleton)

    @functools.lru_cache
    def pick(seconds):   # as the add-on and the command line choose: the first that fills the gap
        return chosen or find_model(mann.skeleton, serves="fill", gap=seconds)
    data = load_motion_set(args.data)
    test = mann.file.json("betwixt.test_clips")
    if args.rig_suite:
        clips = [data.clip(data.names.index(n)).frames(a, b) for n, a, b in RIG_SUITE.values()]
        where = rig_suite_places
    else:
        clips = [data.clip(i) for i, n in enumerate(data.names) if n not in test]
        where = held_out_places
    began = time.perf_counter()
    pooled, per_clip = measure(pick, clips[:args.clips], where, blend=args.blend)
    for label, r in pooled.items():
        print(f"{label:<11} {r['model']:<9} fill {r['fill']:6.2f} cm, Bézier {r['bezier']:6.2f} "
              f"(ratio {r['fill'] / r['bezier']:.2f}); "
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
