"""The MANN measurements of ``python -m inference bench-mann`` (``../shared/docs/metrics.md``), beside the
capture on the model's test split (the clip names its file carries as ``betwixt.test_clips``):

1. following each test clip's captured root track (timing and facing) from its frame at one second,
   with the second before it as the past: foot skating of the paws (the End Sites; all four and the
   back two) and the legs' angular update, each beside the capture's over the same frames (the
   capture's paw grounds for both), and the root's distance to the track;
2. circle, square and star paths at walk, trot and canter speeds from the model's own standing start:
   the root's mean distance to the path (cm) and its facing's mean angle to it (degrees), beside the
   paper's MANN (Zhang et al. 2018, Table 4), and the time it takes against the path's own (from the
   share of the path it covers in the path's time); the gating network's blending weights on them;
3. gaps of 0.5, 1 and 2 s on the test clips filled by the model and by interpolation: the mean joint
   position error and the paws' skating, beside the capture's skating on the same frames;
4. speed: milliseconds per frame of the controller at batch 1 on one thread, and the file's size,
   beside the issue's goals and the paper's.

Lengths are in the data's units (the dog's: cm), as the model's ``units_per_metre`` says.
"""

import time

import numpy as np

from ..errors import DataError
from ..motion import Motion, forward_kinematics
from ..transition import Gap, interpolation
from . import metrics
from .features import bones_of, root, world
from .path import GAITS, Path

START = 1.0                                              # s: the first frame with a whole second before it
PAPER = {"walk": (2.98, 3.21), "trot": (4.65, 7.21), "canter": (6.61, 8.76)}   # MANN, Table 4: cm, degrees
GAPS = (0.5, 1.0, 2.0)                                   # s
GAP_EVERY = 0.5                                          # s between the starts of the gaps measured


def test_clips(model, data, count=None, seconds=None):
    """The test split's clips (the first ``count``), each cut to ``START + seconds`` where given."""
    names = model.file.json("betwixt.test_clips")[:count]
    missing = [n for n in names if n not in data.names]
    if missing:
        raise DataError(f"{data.source}: no clip {missing[0]!r} of the test split of model {model.name}; "
                        "give the data set the model was trained on")
    clips = [data.clip(data.names.index(n)) for n in names]
    return [c.frames(0, None if seconds is None else int(round((START + seconds) * c.fps)) + 1) for c in clips]


def follow_capture(model, clips):
    """Per clip and frame-weighted over all: skating, angular update and track deviation of the
    controller following each clip's root track from START, beside the capture's."""
    start = int(round(START * model.fps))
    paths, captures = [], []
    for clip in clips:
        bones = bones_of(clip.skeleton)
        ground, theta, _ = root(world(clip, bones)[0], bones, clip.fps)
        paths.append(Path(np.arange(clip.n_frames - start) / clip.fps, ground[start:], None, theta[start:], clip.name))
        captures.append(clip.frames(start))
    rows = {}
    for path, out, capture in zip(paths, model.follow(paths, start=[(c, start) for c in clips]), captures):
        pc, po = metrics.paws(capture), metrics.paws(out)
        ground = metrics.paw_ground(pc)
        sc, so = metrics.foot_skating(pc, ground), metrics.foot_skating(po, ground)
        deviation, facing = metrics.path_deviation(out, path.points)
        rows[path.source] = {"frames": out.n_frames, "skating": float(so.mean()), "skating_capture": float(sc.mean()),
                             "skating_back": float(so[2:].mean()), "skating_back_capture": float(sc[2:].mean()),
                             "angular": metrics.angular_update(out), "angular_capture": metrics.angular_update(capture),
                             "deviation": deviation, "facing": facing,
                             "facing_capture": metrics.path_deviation(capture, path.points)[1]}
    frames = [r["frames"] for r in rows.values()]
    total = {k: float(np.average([r[k] for r in rows.values()], weights=frames)) for k in next(iter(rows.values()))}
    total["frames"] = int(sum(frames))
    return {"clips": rows, "all": total}


def shapes(speed, units_per_metre, seconds=None):
    """Circle (radius 2 m), square (side 4 m) and five-pointed star (points 2 m, inner corners 1 m from
    its centre) paths of one lap at ``speed`` (m/s), timed to it, cut to ``seconds`` where given."""
    a = np.linspace(0, 2 * np.pi, 721)
    star = np.linspace(0, 2 * np.pi, 11) + np.pi / 2
    corners = {"circle": 2.0 * np.stack([1 - np.cos(a), np.sin(a)], axis=-1),
               "square": 4.0 * np.array([[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]], dtype=float),
               "star": np.where(np.arange(11)[:, None] % 2, 1.0, 2.0) * np.stack([np.cos(star), np.sin(star)], axis=-1)}
    return {name: _timed(c * units_per_metre, speed * units_per_metre, name, seconds) for name, c in corners.items()}


def _timed(corners, speed, name, seconds):
    """A :class:`~.path.Path` through ``corners`` (N, 2) at ``speed``, a point every centimetre or so."""
    legs = np.linalg.norm(np.diff(corners, axis=0), axis=-1)
    along = np.concatenate([[0.0], np.cumsum(legs)])
    s = np.linspace(0, along[-1], int(along[-1]) + 1)
    if seconds is not None:
        s = s[s <= seconds * speed]
    points = np.stack([np.interp(s, along, corners[:, k]) for k in range(2)], axis=-1)
    return Path(s / speed, points, source=name)


def follow_shapes(model, seconds=None):
    """Per path and gait: deviation (units), facing (degrees), the time taken against the path's, the
    paper's numbers; and, for the plots, each path with the dog's track and its experts' weights."""
    made = {(shape, gait): path for gait, speed in GAITS.items()
            for shape, path in shapes(speed, model.units_per_metre, seconds).items()}
    motions, experts = model.rollout(list(made.values()))
    rows, plots = {}, {}
    for ((shape, gait), path), out, weights in zip(made.items(), motions, experts):
        deviation, facing = metrics.path_deviation(out, path.points)
        progress = metrics.path_progress(out, path.points)
        rows[f"{shape} {gait}"] = {"deviation": deviation, "facing": facing, "path_seconds": path.duration,
                                   "seconds": path.duration / progress if progress > 0 else float("inf"),
                                   "paper_deviation": PAPER[gait][0], "paper_facing": PAPER[gait][1]}
        bones = bones_of(out.skeleton)
        plots[f"{shape} {gait}"] = {"path": path.points, "track": root(world(out, bones)[0], bones, out.fps)[0],
                                    "experts": weights}
    return rows, plots


def fill_gaps(model, clips, lengths=GAPS):
    """Per gap length (seconds): mean joint error (units) and paw skating of the model's fill and of
    interpolation over gaps starting every GAP_EVERY seconds of the test clips, with the capture's
    skating on the same frames, and how many gaps."""
    results = {}
    for seconds in lengths:
        n = int(round(seconds * model.fps)) - 1            # in-between frames of a gap of ``seconds``
        gaps, truths, grounds = [], [], []
        for clip in clips:
            starts = np.arange(model.past - 1, clip.n_frames - n - 1 - model.past, int(round(GAP_EVERY * clip.fps)))
            if len(starts):
                gaps.append(_gaps(clip, starts, n, model.past))
                truths.append(np.stack([np.arange(s, s + n + 2) for s in starts]))
                grounds.append((clip, metrics.paw_ground(metrics.paws(clip))))
        if not gaps:
            continue
        row = {"gaps": int(sum(g.batch for g in gaps))}
        for name, method in (("model", model.fill), ("interpolation", interpolation)):
            error, skating, capture = [], [], []
            for gap, frames, (clip, ground) in zip(gaps, truths, grounds):
                rot, pos = clip.rotations[frames], clip.positions[frames]
                filled_rot, filled_pos = rot.copy(), pos.copy()
                filled_rot[:, 1:-1], filled_pos[:, 1:-1] = method(gap)
                e, s, c = _measured(clip, filled_rot, filled_pos, rot, pos, ground)
                error.append(e), skating.append(s), capture.append(c)
            row[name] = {"error": float(np.concatenate(error).mean()), "skating": float(np.concatenate(skating).mean())}
            row["capture_skating"] = float(np.concatenate(capture).mean())
        results[f"{seconds:g} s"] = row
    return results


def _gaps(clip, starts, n, past):
    """A batch of gaps of ``n`` frames after each key frame in ``starts``, with ``past`` frames up to the
    key and ``past`` after the key that ends it."""
    before = starts[:, None] + np.arange(1 - past, 1)
    after = starts[:, None] + n + 2 + np.arange(past)
    r, p = clip.rotations, clip.positions
    return Gap(clip.skeleton, r[before], p[before], r[starts + n + 1], p[starts + n + 1], n, r[after], p[after])


def _measured(clip, rotations, positions, true_rotations, true_positions, ground):
    """Per gap (B,): the mean joint error of the in-between frames of filled windows (B, n + 2, J, ...)
    (the keys on either side included), their paws' skating over the window, and the capture's."""
    parents = clip.skeleton.parents
    _, filled = forward_kinematics(rotations, positions, parents)
    _, truth = forward_kinematics(true_rotations, true_positions, parents)
    error = np.linalg.norm(filled - truth, axis=-1)[:, 1:-1].mean(axis=(1, 2))
    skate = []
    for rot, pos in ((rotations, positions), (true_rotations, true_positions)):
        paws = [metrics.paws(Motion(clip.skeleton, r, p, clip.fps)) for r, p in zip(rot, pos)]
        skate.append(np.array([metrics.foot_skating(w, ground).mean() for w in paws]))
    return error, skate[0], skate[1]


def speed(model, repeats=5):
    """Milliseconds a frame of the controller at batch 1 (one thread: the model's session), the best of
    ``repeats``: the time of a twenty-second walk less that of a ten-second one, over the frames between,
    so that the start (a second of the network standing the dog up) does not count; and the file's size."""
    def walk(seconds):
        end = seconds * model.units_per_metre
        line = Path(np.array([0.0, seconds]), np.array([[0.0, 0.0], [0.0, end]]), source="line")
        began = time.perf_counter()
        frames = model.follow([line])[0].n_frames
        return time.perf_counter() - began, frames

    walk(1.0)
    short, long = (min((walk(s) for _ in range(repeats)), key=lambda r: r[0]) for s in (10.0, 20.0))
    return {"ms_per_frame": 1000 * (long[0] - short[0]) / (long[1] - short[1]), "bytes": model.path.stat().st_size}


def measure(model, data, clips=None, seconds=None):
    """Everything above as one dict (see the module's docstring)."""
    chosen = test_clips(model, data, clips, seconds)
    paths, plots = follow_shapes(model, seconds)
    return {"model": model.name, "tau": model.tau, "experts_output": model.experts,
            "test_clips": [c.name for c in chosen], "seconds": seconds,
            "follow_capture": follow_capture(model, chosen), "paths": paths,
            "gaps": fill_gaps(model, chosen), "speed": speed(model)}, plots


def table(results):
    """The results as readable lines."""
    lines = [f"{results['model']} (tau {results['tau']:g}) on the test split: {', '.join(results['test_clips'])}"]
    lines.append("following each test clip's captured root track: model / capture (goals: skating within 1.05x, "
                 "the paper's MANN 1.05-1.18x; angular update at least 95 %, the paper's 84-95 %)")
    for name, r in list(results["follow_capture"]["clips"].items()) + [("all (frame-weighted)",
                                                                        results["follow_capture"]["all"])]:
        lines.append(f"  {name:<22} skating {r['skating']:.3f} / {r['skating_capture']:.3f} cm/frame "
                     f"({r['skating'] / r['skating_capture']:.2f}x), back paws {r['skating_back']:.3f} / "
                     f"{r['skating_back_capture']:.3f} ({r['skating_back'] / r['skating_back_capture']:.2f}x); "
                     f"angular update {r['angular']:.2f} / {r['angular_capture']:.2f} deg "
                     f"({r['angular'] / r['angular_capture']:.0%}); track {r['deviation']:.1f} cm away")
    lines.append("paths from standing: distance cm, facing deg (paper's MANN); seconds taken / path's")
    for name, r in results["paths"].items():
        lines.append(f"  {name:<14} {r['deviation']:6.1f} ({r['paper_deviation']:.2f})  {r['facing']:5.1f} "
                     f"({r['paper_facing']:.2f})   {r['seconds']:5.1f} / {r['path_seconds']:.1f} s")
    lines.append("gaps on the test split: mean joint error cm, paw skating cm/frame (capture's)")
    for name, r in results["gaps"].items():
        lines.append(f"  {name:<5} {r['gaps']:4d} gaps  model {r['model']['error']:5.2f} cm, skating "
                     f"{r['model']['skating']:.3f}; interpolation {r['interpolation']['error']:5.2f} cm, skating "
                     f"{r['interpolation']['skating']:.3f} ({r['capture_skating']:.3f})")
    s = results["speed"]
    lines.append(f"speed: {s['ms_per_frame']:.2f} ms a frame at batch 1 on one thread (goal 1 ms; the paper's C++ "
                 f"about 2); file {s['bytes'] / 2**20:.1f} MiB (goal 15 MB; the paper's 22)")
    if not results["experts_output"]:
        lines.append("the model's graph does not output the experts' blending weights (exported before it did): "
                     "no experts plot; export it again to have one")
    return "\n".join(lines)
