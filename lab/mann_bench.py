"""The MANN measurements of ``python -m lab bench-mann`` (``../shared/docs/metrics.md``), beside the
capture on the model's test split (the clip names its file carries as ``betwixt.test_clips``):

1. following each test clip's captured root track (timing and facing) from its frame at one second,
   with the second before it as the past: foot skating of the paws (the End Sites; all four and the
   back two) and the legs' angular update, each beside the capture's over the same frames (the
   capture's paw grounds for both), and the root's distance to the track;
2. circle, square and star paths at walk, trot and canter speeds from the model's own standing start:
   the root's mean distance to the path (cm), its facing's mean angle to it (degrees; the issue's) and
   its direction of travel's (metrics.md's), beside the paper's MANN (Zhang et al. 2018, Table 4), and
   the time it takes against the path's own (from the share of the path it covers in the path's time);
   the gating network's blending weights on them;
3. gaps of 0.5, 1 and 2 s on the test clips filled by the model, by an RTN trained on the dog data
   where one is given (``--rtn``: the issue's comparison of the two as the dog's fill model) and by
   interpolation: the mean joint position error and the paws' skating, beside the capture's skating
   on the same frames;
4. speed: milliseconds per frame of the controller at batch 1 on one thread, and the file's size,
   beside the issue's goals and the paper's;
5. the floor (:mod:`.floor_metrics`, issue 43): the paws' contact, floating, slide, longest time off
   the floor, hips and jitter of the planted motion following the test clips' tracks beside the
   capture's on the same frames, and of the paths beside the test clips' frames at the path's gait
   (the root's speed within BANDS); every paw's ground and the dog's size the test clips'.

Skating and angular update are given for the network's motion as it comes (the paper's measures are
of the raw network) and with the paws planted (``inference/contacts.py``, as the command line and the
add-on plant them by default): the controller's motion all but its start pose, a gap's frames with a
second of the clip on either side as context.

Lengths are in the data's units (the dog's: cm), as the model's ``units_per_metre`` says.
"""

import time

import numpy as np

from . import floor_metrics
from inference.contacts import plant
from inference.errors import DataError
from inference.motion import Motion, forward_kinematics
from inference.transition import Gap, interpolation
from . import metrics
from .planting import plant_windows
from inference.mann.features import bones_of, root, world
from inference.mann.path import GAITS, Path

START = 1.0                                              # s: the first frame with a whole second before it
PAPER = {"walk": (2.98, 3.21), "trot": (4.65, 7.21), "canter": (6.61, 8.76)}   # MANN, Table 4: cm, degrees
GAPS = (0.5, 1.0, 2.0)                                   # s
GAP_EVERY = 0.5                                          # s between the starts of the gaps measured
BANDS = {"walk": (0.3, 1.4), "trot": (1.4, 2.4), "canter": (2.4, np.inf)}   # m/s: the capture at a gait (GAITS')


def test_clips(model, data, count=None, seconds=None):
    """The test split's clips (the first ``count``), each cut to ``START + seconds`` where given."""
    names = model.file.json("betwixt.test_clips")[:count]
    missing = [n for n in names if n not in data.names]
    if missing:
        raise DataError(f"{data.source}: no clip {missing[0]!r} of the test split of model {model.name}; "
                        "give the data set the model was trained on")
    clips = [data.clip(data.names.index(n)) for n in names]
    return [c.frames(0, None if seconds is None else int(round((START + seconds) * c.fps)) + 1) for c in clips]


def floor_reference(clips):
    """What the floor measures are taken against: the paws (:class:`..floor_metrics.Feet`), their grounds
    (4,) over all of ``clips`` and the dog's size."""
    feet = floor_metrics.feet_of(clips[0].skeleton)
    points = np.concatenate([floor_metrics.foot_points(feet, *c.global_transforms()) for c in clips])
    return feet, floor_metrics.ground_of(points), floor_metrics.body_size(clips[0].skeleton, None)


def floor_at_gaits(clips, reference, units_per_metre):
    """The floor measures of ``clips`` over their frames at each gait of BANDS (None where none is)."""
    feet, ground, size = reference
    worlds = [c.global_transforms()[1] for c in clips]
    return {gait: floor_metrics.pooled([floor_metrics.measure(c, feet, ground, size, floor_metrics.speed_band(
        w[:, 0], c.fps, low * units_per_metre, high * units_per_metre)) for c, w in zip(clips, worlds)])
            for gait, (low, high) in BANDS.items()}


def follow_capture(model, clips, reference):
    """Per clip and frame-weighted over all: skating, angular update and track deviation of the
    controller following each clip's root track from START, raw and planted, beside the capture's; and
    ``floor``: the floor measures against ``reference`` (:func:`floor_reference`) of the planted motion
    and of the capture, over all clips' frames."""
    start = int(round(START * model.fps))
    paths, captures = [], []
    for clip in clips:
        bones = bones_of(clip.skeleton)
        ground, theta, _ = root(world(clip, bones)[0], bones, clip.fps)
        paths.append(Path(np.arange(clip.n_frames - start) / clip.fps, ground[start:], None, theta[start:], clip.name))
        captures.append(clip.frames(start))
    rows, floor = {}, {"model": [], "capture": []}
    for path, out, capture in zip(paths, model.follow(paths, start=[(c, start) for c in clips]), captures):
        ground = metrics.paw_ground(metrics.paws(capture))
        deviation, facing = metrics.path_deviation(out, path.points)
        walked, planted = _walked(out, ground, model.layout.height)
        rows[path.source] = {"frames": out.n_frames, **walked,
                             **_walked(capture, ground, suffix="_capture")[0], "deviation": deviation,
                             "facing": facing, "facing_capture": metrics.path_deviation(capture, path.points)[1]}
        floor["model"].append(floor_metrics.measure(planted, *reference))
        floor["capture"].append(floor_metrics.measure(capture, *reference))
    frames = [r["frames"] for r in rows.values()]
    total = {k: float(np.average([r[k] for r in rows.values()], weights=frames)) for k in next(iter(rows.values()))}
    total["frames"] = int(sum(frames))
    return {"clips": rows, "all": total, "floor": {k: floor_metrics.pooled(v) for k, v in floor.items()}}


def _walked(motion, ground, height=None, suffix=""):
    """Skating of all paws and the back ones over their ``ground`` (4,), and the legs' angular update, of
    ``motion``; with ``height`` also of it planted (all but its first frame) as ``..._planted``. Returns
    them and the motion planted (``motion`` itself without ``height``)."""
    versions = {suffix: motion}
    if height is not None:
        versions["_planted"] = plant(motion, [(0, motion.n_frames)], height)
    out = {}
    for name, m in versions.items():
        skating = metrics.foot_skating(metrics.paws(m), ground)
        out.update({f"skating{name}": float(skating.mean()), f"skating_back{name}": float(skating[2:].mean()),
                    f"angular{name}": metrics.angular_update(m)})
    return out, versions.get("_planted", motion)


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


def follow_shapes(model, reference, seconds=None):
    """Per path and gait: deviation (units), facing (degrees), the time taken against the path's, the
    paper's numbers, skating (over the paws' own grounds as the network put them) and angular update,
    raw and planted, and the planted motion's floor measures against ``reference``
    (:func:`floor_reference`) as ``floor``; and, for the plots, each path with the dog's track and its experts'
    weights."""
    made = {(shape, gait): path for gait, speed in GAITS.items()
            for shape, path in shapes(speed, model.units_per_metre, seconds).items()}
    motions, experts = model.rollout(list(made.values()))
    rows, plots = {}, {}
    for ((shape, gait), path), out, weights in zip(made.items(), motions, experts):
        deviation, facing = metrics.path_deviation(out, path.points)
        progress = metrics.path_progress(out, path.points)
        travel = metrics.travel_deviation(out, path.points, metrics.STILL * model.units_per_metre)
        walked, planted = _walked(out, metrics.paw_ground(metrics.paws(out)), model.layout.height)
        rows[f"{shape} {gait}"] = {"deviation": deviation, "facing": facing, "travel": travel,
                                   "path_seconds": path.duration,
                                   "seconds": path.duration / progress if progress > 0 else float("inf"),
                                   "paper_deviation": PAPER[gait][0], "paper_facing": PAPER[gait][1], **walked,
                                   "floor": floor_metrics.pooled([floor_metrics.measure(planted, *reference)])}
        bones = bones_of(out.skeleton)
        plots[f"{shape} {gait}"] = {"path": path.points, "track": root(world(out, bones)[0], bones, out.fps)[0],
                                    "experts": weights}
    return rows, plots


def fill_gaps(model, clips, lengths=GAPS, rtn=None):
    """Per gap length (seconds): mean joint error (units), paw skating (all paws, back paws) and the legs'
    angular update of the model's fill and, where given, of an RTN model's of the same skeleton up to the
    longest gap it fills (each raw and planted), and of interpolation, over gaps starting every GAP_EVERY
    seconds of the test clips, with the capture's on the same frames, and how many gaps."""
    results = {}
    for seconds in lengths:
        n = int(round(seconds * model.fps)) - 1            # in-between frames of a gap of ``seconds``
        methods = {"model": model.fill, **({"rtn": rtn.fill} if rtn and n <= rtn.max_gap else {}),
                   "interpolation": interpolation}
        cut = []
        for clip in clips:
            starts = np.arange(model.past - 1, clip.n_frames - n - 1 - model.past, int(round(GAP_EVERY * clip.fps)))
            if len(starts):
                cut.append((clip, starts, _gaps(clip, starts, n, model.past), metrics.paw_ground(metrics.paws(clip))))
        if not cut:
            continue
        row = {"gaps": int(sum(g.batch for _, _, g, _ in cut))}
        for name, method in methods.items():
            measured = []
            for clip, starts, gap, ground in cut:
                frames = starts[:, None] + np.arange(n + 2)
                rot, pos = clip.rotations[frames], clip.positions[frames]
                filled = rot.copy()
                filled[:, 1:-1], moved = method(gap)
                filled_pos = pos.copy()
                filled_pos[:, 1:-1] = moved
                versions = {name: filled}
                if name != "interpolation":
                    versions[f"{name}_planted"] = plant_windows(clip, starts, filled, filled_pos, model.past,
                                                                model.layout.height)
                measured.append({k: _measured(clip, r, filled_pos, rot, pos, ground) for k, r in versions.items()})
            for version in measured[0]:
                row[version] = {k: float(np.concatenate([m[version][0][k] for m in measured]).mean())
                                for k in measured[0][version][0]}
            row["capture"] = {k: float(np.concatenate([m[name][1][k] for m in measured]).mean())
                              for k in measured[0][name][1]}
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
    """Per gap (B,) of filled windows (B, n + 2, J, ...) (the keys on either side included), then of the
    capture's: the mean joint error of the in-between frames (``error``, the filled only), and over the
    window the paws' skating (all, ``back``), the lowest paw's height above its ground and the legs'
    angular update."""
    parents = clip.skeleton.parents
    _, filled = forward_kinematics(rotations, positions, parents)
    _, truth = forward_kinematics(true_rotations, true_positions, parents)
    out = []
    for rot, pos in ((rotations, positions), (true_rotations, true_positions)):
        motions = [Motion(clip.skeleton, r, p, clip.fps) for r, p in zip(rot, pos)]
        paws = [metrics.paws(m) for m in motions]
        skating = np.array([metrics.foot_skating(p, ground) for p in paws])
        out.append({"skating": skating.mean(axis=1), "skating_back": skating[:, 2:].mean(axis=1),
                    "lowest": np.array([metrics.lowest_paw(p, ground) for p in paws]),
                    "angular": np.array([metrics.angular_update(m) for m in motions])})
    out[0]["error"] = np.linalg.norm(filled - truth, axis=-1)[:, 1:-1].mean(axis=(1, 2))
    return out


def speed(model, repeats=5):
    """Milliseconds a frame of the controller at batch 1 (one thread: the model's session), the median of
    ``repeats`` pairs run back to back: the time of a twenty-second walk less that of a ten-second one, over
    the frames between, so that the start (a second of the network standing the dog up) does not count (the
    best of each length apart could pair a slow long walk's best with a slower short one's on a busy
    machine, and come out below zero); and the file's size."""
    def walk(seconds):
        end = seconds * model.units_per_metre
        line = Path(np.array([0.0, seconds]), np.array([[0.0, 0.0], [0.0, end]]), source="line")
        began = time.perf_counter()
        frames = model.follow([line])[0].n_frames
        return time.perf_counter() - began, frames

    walk(1.0)
    pairs = [(walk(10.0), walk(20.0)) for _ in range(repeats)]
    each = [1000 * (long[0] - short[0]) / (long[1] - short[1]) for short, long in pairs]
    return {"ms_per_frame": float(np.median(each)), "repeats": repeats, "bytes": model.path.stat().st_size}


def measure(model, data, clips=None, seconds=None, rtn=None, repeats=5):
    """Everything above as one dict (see the module's docstring); ``rtn``: an RTN model file of the
    dog's skeleton whose gap filling is measured beside the model's; ``repeats``: :func:`speed`'s."""
    chosen = test_clips(model, data, clips, seconds)
    reference = floor_reference(chosen)
    paths, plots = follow_shapes(model, reference, seconds)
    return {"model": model.name, "tau": model.tau, "experts_output": model.experts,
            "test_clips": [c.name for c in chosen], "seconds": seconds,
            "follow_capture": follow_capture(model, chosen, reference), "paths": paths,
            "floor_capture": floor_at_gaits(chosen, reference, model.units_per_metre),
            "gaps": fill_gaps(model, chosen, rtn=rtn), "fill_rtn": rtn.name if rtn else None,
            "speed": speed(model, repeats)}, plots


def table(results):
    """The results as readable lines."""
    lines = [f"{results['model']} (tau {results['tau']:g}) on the test split: {', '.join(results['test_clips'])}"]
    lines.append("following each test clip's captured root track, raw -> planted paws, x the capture's (goals: skating "
                 "within 1.05x, the paper's MANN 1.05-1.18x; angular update at least 95 %, the paper's 84-95 %)")
    for name, r in list(results["follow_capture"]["clips"].items()) + [("all (frame-weighted)",
                                                                        results["follow_capture"]["all"])]:
        lines.append(f"  {name:<22} skating {_against(r, 'skating', r['skating_capture'], '.2f')}x (capture "
                     f"{r['skating_capture']:.3f} cm/frame), back paws "
                     f"{_against(r, 'skating_back', r['skating_back_capture'], '.2f')}x; angular update "
                     f"{_against(r, 'angular', r['angular_capture'], '.0%')}; track {r['deviation']:.1f} cm away")
    lines.append("paths from standing: distance cm, facing deg (paper's MANN), direction of travel deg; seconds "
                 "taken / path's; skating cm/frame and angular update deg, raw -> planted")
    for name, r in results["paths"].items():
        lines.append(f"  {name:<14} {r['deviation']:6.1f} ({r['paper_deviation']:.2f})  {r['facing']:5.1f} "
                     f"({r['paper_facing']:.2f})  {r['travel']:5.1f}   {r['seconds']:5.1f} / "
                     f"{r['path_seconds']:.1f} s   skating "
                     f"{_against(r, 'skating')}, back {_against(r, 'skating_back')}; "
                     f"angular {_against(r, 'angular', fmt='.2f')}")
    rtn = f" (rtn: {results['fill_rtn']})" if results.get("fill_rtn") else ""
    lines.append(f"gaps on the test split{rtn}: mean joint error cm; paw skating cm/frame, all / back; the lowest "
                 "paw's height above its ground; legs' angular update deg")
    for name, r in results["gaps"].items():
        lines.append(f"  {name:<5} {r['gaps']:4d} gaps")
        for version in [v for v in ("model", "model_planted", "rtn", "rtn_planted", "interpolation", "capture")
                        if v in r]:
            v = r[version]
            error = f"error {v['error']:5.2f} cm, " if "error" in v else " " * 17
            lines.append(f"        {version.replace('_', ' '):<15} {error}skating {v['skating']:.3f} / "
                         f"{v['skating_back']:.3f}, lowest paw {v['lowest']:4.1f} cm up, angular {v['angular']:.2f}")
    lines += _floor_lines(results)
    s = results["speed"]
    lines.append(f"speed: {s['ms_per_frame']:.2f} ms a frame at batch 1 on one thread, median of {s['repeats']} "
                 f"(goal 1 ms; the paper's C++ about 2); file {s['bytes'] / 2**20:.1f} MiB (goal 15 MB; the paper's "
                 "22)")
    if not results["experts_output"]:
        lines.append("the model's graph does not output the experts' blending weights (exported before it did): "
                     "no experts plot; export it again to have one")
    return "\n".join(lines)


def _against(row, key, reference=None, fmt=".3f"):
    """``row[key]`` -> ``row[key + '_planted']``, over ``reference`` where given, formatted by ``fmt``."""
    raw, planted = row[key], row[key + "_planted"]
    if reference is not None:
        raw, planted = raw / reference, planted / reference
    return f"{raw:{fmt}} -> {planted:{fmt}}"


def _floor_lines(results):
    """The floor measures' table: following the test clips beside the capture, then each gait's paths
    beside the test clips at that gait."""
    lines = ["the floor (issue 43), paws planted: legs' contact share, frames floating, slide of touching paws, "
             "longest off the floor, hips cm, jitter cm/frame^2"]
    named = [("following the test clips", results["follow_capture"]["floor"]["model"]),
             ("  the capture", results["follow_capture"]["floor"]["capture"])]
    for gait in BANDS:
        named += [(name, r["floor"]) for name, r in results["paths"].items() if name.endswith(f" {gait}")]
        named.append((f"  the capture at a {gait}", results["floor_capture"][gait]))
    return lines + floor_metrics.table(named)
