"""The Motion VAE measurements of ``python -m lab bench-mvae`` (``../shared/docs/metrics.md``), beside
the capture on LaFAN1's test subject 5, from start poses spread evenly over its clips:

1. stability: a random walk of ``frames`` frames from each start (with the floor step, :mod:`inference.mvae.floor`,
   unless ``grounded`` is False): walks with NaN, the hips' height range, PEAK (the 99th percentile over
   frames of the fastest joint's speed), foot skating of the toes and feet (each foot's ground the
   capture's, the 2nd percentile of its height in the start's clip; and the walk's own, which tells
   sliding from sinking), the root's mean speed on the floor; and where the body stands against the
   floor: the share of frames with the lowest foot more than UNDER or DEEP below its ground, the hips
   under the lowest ground, the lowest foot more than each of OFF above its ground; each beside the
   capture's (every frame);
2. diversity: the mean pairwise distance of K continuations of each start after SPREAD_AFTER seconds (the
   root on the floor, and the joints relative to the root); how often K continuations of UP_SECONDS from
   the starts that stand (the hips above STANDS) go down (the hips under LOW), beside the capture after
   the same frames (:func:`staying_up`: a random walk drifts toward its data's balance, and LaFAN1's
   training subjects spend 30 % of their frames on or near the floor); and K variants of a gap after each start
   against the shipped RTN's noise variants of the same gaps at the same error (:func:`variants_against_rtn`);
3. latent health: the KL of every latent dimension of the encoder the file carries, on every pair of
   consecutive poses of subject 5, and the active units (KL above ACTIVE);
4. two-legged paths: bench-mann's circle, square and star, one lap at each of SPEEDS from the model's
   standing start (:func:`paths`), against the paper's MANN at the dog's nearest gait;
5. speed: milliseconds per generated frame at batch 1, and K = 16 continuations of 10 s (one thread);
6. the floor (:mod:`.floor_metrics`, issue 43): the legs' contact, floating, slide, longest time off the
   floor, hips and jitter of the walks beside the capture's (every frame), of the continuations of
   standing starts beside the capture after the same starts, of the variants beside the capture in the
   same gaps, and of the paths beside the capture at the
   path's speed (the root within BANDS): LaFAN1's clips of every subject there, but for the themes of
   OFF_FLOOR, whose boxes' tops would count as floating. Each clip's feet's grounds its own; the paths'
   those of subject 5 together; the body's height subject 5's.

Every generated motion is measured as the user gets it (``planted``, unless --no-contacts): feet planted
by :func:`inference.contacts.plant` after the model, as the add-on's Plant Feet and the command line plant them.
A walk (and a continuation) on its generated frames with the second before its start as the context, as
Continue reads it (:meth:`inference.mvae.runtime.MVAEModel.planted`); a gap's variants, the Motion VAE's and the
RTN's alike, with each model's past on either side (:func:`.planting.plant_windows`); a path on every
frame after the start pose. The timings include the planting.

Lengths are LaFAN1's centimetres; ``goals`` holds the issue's bar.
"""

import time

import numpy as np

from . import floor_metrics
from .benchmark import TEST_SUBJECTS
from inference.anatomy import stance_joints
from inference.contacts import plant
from inference.errors import DataError
from inference.inbetween import gap_in
from .mann_bench import PAPER, shapes
from .metrics import STILL, foot_skating, path_deviation, path_progress, paw_ground, travel_deviation
from .planting import plant_windows
from inference.motion import forward_kinematics
from inference.mvae.features import poses, root_of
from inference.mvae.runtime import BlewUp

UNDER = 5.0           # cm below a foot's ground that counts as under the floor
DEEP = 20.0           # cm below it: sunk, not a heel's slip
OFF = (10.0, 30.0)    # cm above it: the lowest foot off the floor (a step, a jump; the capture climbs obstacles)
ACTIVE = 0.01         # nats: a latent dimension in use, as training's validation counts it
SPREAD_K = 8          # continuations (and variants) of one request whose spread is measured
SPREAD_AFTER = 3.0    # s after the start
UP_SECONDS = 10.0     # s of the continuations of a standing start
STANDS, LOW = 80.0, 60.0   # cm: the hips of a start that stands, and of a body gone down (crouching, kneeling)
VARIANT_GAP = 30      # in-between frames of the gaps whose variants are measured (the benchmark's 30)
VARIATIONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)   # RTN's noise strengths; the one at the model's error is its match
SPEEDS = {"walk": 1.0, "jog": 2.0}   # m/s of the paths; the paper's MANN at the dog's nearest gait beside each
PAPER_GAIT = {"walk": "walk", "jog": "trot"}
SPEED_K, SPEED_SECONDS = 16, 10.0
BANDS = {"walk": (0.5, 1.5), "jog": (1.5, 2.5)}   # m/s: the capture at the speed of SPEEDS' paths
OFF_FLOOR = ("obstacles",)   # LaFAN1's themes whose clips stand on boxes: not the capture at a gait on the floor
GOALS = {"ms_per_frame": 0.3, "k16_10s_seconds": 1.0, "spread_over_rtn": 2.0, "root_speed_share": 0.5}


def test_clips(data):
    """The clips of LaFAN1's test subject, or one error that says which data set to give."""
    clips = [data.clip(i) for i, s in enumerate(data.subjects) if s in TEST_SUBJECTS]
    if not clips:
        raise DataError(f"{data.source}: no clip of LaFAN1's test subject 5 (names like obstacles1_subject5.bvh); "
                        "give LaFAN1, e.g. --data ../shared/mocap/lafan1-27.zip")
    return clips


def start_poses(clips, starts):
    """``starts`` (clip, frame) pairs, the clips in turn, each clip's frames evenly spread inside it."""
    chosen = []
    for s in range(starts):
        clip = clips[s % len(clips)]
        count = len(range(s % len(clips), starts, len(clips)))
        chosen.append((clip, int((s // len(clips) + 1) * clip.n_frames / (count + 1))))
    return chosen


def foot_positions(world, skeleton):
    """World positions (F, 4, 3) of the toes and feet (:func:`inference.anatomy.stance_joints`: metrics.md's four
    foot joints) from world joint positions (F, J, 3)."""
    return world[:, stance_joints(skeleton)]


def floor_reference(clips):
    """What the floor measures are taken against: the feet (:class:`..floor_metrics.Feet`), each clip's
    feet's grounds by name, those of all ``clips`` together (``None``'s) and the body's height."""
    feet = floor_metrics.feet_of(clips[0].skeleton)
    worlds = {c.name: c.global_transforms() for c in clips}
    points = {name: floor_metrics.foot_points(feet, *w) for name, w in worlds.items()}
    grounds = {name: floor_metrics.ground_of(p) for name, p in points.items()}
    grounds[None] = floor_metrics.ground_of(np.concatenate(list(points.values())))
    return feet, grounds, floor_metrics.body_size(clips[0].skeleton, np.concatenate([w[1] for w in worlds.values()]))


def per_motion(motion, ground, floor=None):
    """What one motion contributes to the measures, ``ground`` (4,) its feet's: None where it is not finite
    (a walk that blew up is counted, not measured). ``floor``: (feet, their grounds, the body's height)
    of :mod:`.floor_metrics`, whose row it adds as ``floor``."""
    rotations, world = motion.global_transforms()
    if not np.isfinite(world).all():
        return None
    feet = foot_positions(world, motion.skeleton)
    with np.errstate(over="ignore"):   # a foot far up skates 0: 2 ** (h / H) is inf
        skating, own = foot_skating(feet, ground), foot_skating(feet, paw_ground(feet))
    lowest = (feet[..., 1] - ground).min(axis=1)   # (F,) the lowest foot over its ground
    return {"hips": world[:, 0, 1], "fastest": np.linalg.norm(np.diff(world, axis=0), axis=-1).max(axis=1),
            "skating": skating, "skating_own": own,
            "root_speed": float(np.linalg.norm(np.diff(world[:, 0, [0, 2]], axis=0), axis=-1).mean()),
            "under": float((lowest < -UNDER).mean()), "deep": float((lowest < -DEEP).mean()),
            "hips_under": float((world[:, 0, 1] < ground.min()).mean()),
            **{f"off_{h:g}": float((lowest > h).mean()) for h in OFF},
            **({"floor": floor_metrics.row(world, floor_metrics.foot_points(floor[0], rotations, world), *floor,
                                           motion.fps)} if floor else {})}


def pooled(rows):
    """The measures over several motions' ``per_motion`` rows, every frame counting once."""
    if not rows:
        return None
    steps = [len(r["fastest"]) for r in rows]
    skating = np.average([r["skating"] for r in rows], axis=0, weights=steps)
    return {"hips_min": float(min(r["hips"].min() for r in rows)),
            "hips_max": float(max(r["hips"].max() for r in rows)),
            "peak": float(np.percentile(np.concatenate([r["fastest"] for r in rows]), 99)),
            "skating": float(skating.mean()), "skating_toes": float(skating[:2].mean()),
            "skating_feet": float(skating[2:].mean()),
            "skating_own_ground": float(np.average([r["skating_own"].mean() for r in rows], weights=steps)),
            "root_speed": float(np.average([r["root_speed"] for r in rows], weights=steps)),
            **{name: float(np.average([r[key] for r in rows], weights=[s + 1 for s in steps])) for name, key in
               [("under_floor", "under"), ("deep_under_floor", "deep"), ("hips_under_floor", "hips_under")]
               + [(f"off_floor_{h:g}", f"off_{h:g}") for h in OFF]},
            **({"floor": floor_metrics.pooled([r["floor"] for r in rows])}
               if "floor" in rows[0] else {})}


def planted_walk(model, walk, frames, planted=True):
    """The ``frames`` generated frames that end ``walk`` (a motion of :meth:`inference.mvae.runtime.MVAEModel.walk`),
    their feet planted where ``planted`` (:meth:`inference.mvae.runtime.MVAEModel.planted`)."""
    return (model.planted(walk, frames) if planted else walk).frames(walk.n_frames - frames)


def walks(model, clips, starts, frames, progress=None, grounded=True, planted=True, reference=None):
    """One random walk of ``frames`` frames from each of ``starts`` start poses (``grounded``: with the
    floor step; ``planted``: its feet planted, :func:`planted_walk`), measured beside the capture (every
    frame of ``clips``), with the floor measures where a :func:`floor_reference` is given; and for the
    plots each finite walk's hips height (frames,)."""
    floor = (lambda clip: (reference[0], reference[1][clip.name], reference[2])) if reference else (lambda clip: None)
    grounds = {c.name: paw_ground(foot_positions(c.global_transforms()[1], c.skeleton)) for c in clips}
    rows, heights = [], []
    for s, (clip, frame) in enumerate(start_poses(clips, starts)):
        try:
            walked = planted_walk(model, model.walk(clip, frame, frames, k=1, seed=s, grounded=grounded)[0], frames,
                                  planted)
        except BlewUp:   # counted, not measured
            walked = None
        rows.append(None if walked is None else per_motion(walked, grounds[clip.name], floor(clip)))
        if rows[-1] is not None:
            heights.append(walked.positions[:, 0, 1])
        if progress:
            progress(s + 1, starts, clip.name)
    finite = [r for r in rows if r is not None]
    return {"walks": len(rows), "frames": frames, "grounded": grounded, "planted": planted,
            "with_nan": len(rows) - len(finite),
            "model": pooled(finite),
            "capture": pooled([per_motion(c, grounds[c.name], floor(c)) for c in clips])}, heights


def continuations(model, clips, starts, k=SPREAD_K, seconds=SPREAD_AFTER, grounded=True, planted=True):
    """Mean pairwise distance (cm) of ``k`` continuations of each start pose after ``seconds``: of the root
    on the floor, and of the joints relative to the root (metrics.md's spread at a stated time)."""
    frames = int(round(seconds * model.fps))
    roots, joints = [], []
    for s, (clip, frame) in enumerate(start_poses(clips, starts)):
        try:
            walked = model.walk(clip, frame, frames, k, seed=s, grounded=grounded)
        except BlewUp:   # a start whose continuations are not all finite has no spread to measure
            continue
        at = np.stack([planted_walk(model, w, frames, planted).frames(-1).global_transforms()[1][0] for w in walked])
        roots.append(_pairwise(at[:, 0, [0, 2]]).mean())
        joints.append(_pairwise(at - at[:, :1]).mean())
    return {"k": k, "seconds": seconds, "root": float(np.mean(roots)), "joints": float(np.mean(joints))}


def staying_up(model, clips, starts, reference, k=SPREAD_K, seconds=UP_SECONDS, grounded=True, planted=True):
    """Of ``k`` continuations of ``seconds`` from each start pose whose hips are above STANDS, the share of
    their frames with the hips under LOW (``model``; in the first SPREAD_AFTER seconds, ``model_early``),
    and the capture's over the same frames after the same starts (as far as each clip goes); and
    ``floor``: the floor measures of both (``model``, ``capture``) against ``reference``
    (:func:`floor_reference`)."""
    frames, early = int(round(seconds * model.fps)), int(round(SPREAD_AFTER * model.fps))
    model_low, capture_low = [], []
    floor = {"model": [], "capture": []}
    for s, (clip, frame) in enumerate(start_poses(clips, starts)):
        hips = clip.positions[:, 0, 1]   # the root's own position: no forward kinematics needed
        if hips[frame] <= STANDS:
            continue
        try:
            walked = model.walk(clip, frame, frames, k, seed=s, grounded=grounded)
        except BlewUp:   # counted by the walks' row, not here
            continue
        walked = [planted_walk(model, w, frames, planted) for w in walked]
        walked_hips = np.stack([w.positions[:, 0, 1] for w in walked])
        model_low.append(walked_hips < LOW)                                                    # (k, frames)
        capture_low.append(hips[frame + 1:frame + 1 + frames] < LOW)
        against = (reference[0], reference[1][clip.name], reference[2])
        floor["model"] += [floor_metrics.measure(w, *against) for w in walked]
        floor["capture"].append(floor_metrics.measure(clip.frames(frame + 1, frame + 1 + frames), *against))
    if not model_low:
        return None
    low = np.concatenate(model_low)
    return {"starts": len(model_low), "k": k, "seconds": seconds, "model": float(low.mean()),
            "model_early": float(low[:, :early].mean()), "capture": float(np.concatenate(capture_low).mean()),
            "capture_early": float(np.concatenate([c[:early] for c in capture_low]).mean()),
            "floor": {name: floor_metrics.pooled(rows) for name, rows in floor.items()}}


def _pairwise(points):
    """Distances (pairs, ...) between every pair of the first axis' members of ``points`` (K, ..., 3)."""
    a, b = np.triu_indices(len(points), 1)
    return np.linalg.norm(points[a] - points[b], axis=-1)


def variants_against_rtn(model, rtn, clips, starts, k=SPREAD_K, planted=True, reference=None):
    """``k`` variants of a gap of VARIANT_GAP frames after each start pose by ``model`` (anything with RTN's
    ``variants(gap, k, seed=..., blend=...)``) against ``rtn``'s noise variants of the same gaps at the same
    error, each gap cut with the method's own ``past``. Per method (:func:`_variants`): ``error``, the
    variants' mean joint distance to the capture over the gap (cm), the error they are matched at (both
    end on the key; the miss before the blend says how much of that the blend did); ``miss_root`` and
    ``miss_joints``, the last in-between frame's distance from the key before the blend (cm); ``spread``,
    their mean pairwise joint distance over the gap's middle third (metrics.md); and ``skating`` beside
    the capture's. ``planted``: both methods' variants with their feet planted (all but the miss, the
    model's own). RTN runs at each of VARIATIONS; the one whose error is nearest the model's is its
    match, and ``spread_over_rtn`` the model's spread over that one's. ``reference``
    (:func:`floor_reference`): the model's variants' floor measures beside the capture's (``floor``)."""
    worlds = {c.name: c.global_transforms()[1] for c in clips}
    keys = start_poses(clips, starts)
    measured = {"model": _variants(model, {}, keys, worlds, k, planted, reference)}
    ladder = {v: _variants(rtn, {"variation": v}, keys, worlds, k, planted) for v in VARIATIONS}
    variation = min(ladder, key=lambda v: abs(ladder[v]["error"] - measured["model"]["error"]))
    measured.update({"rtn": {**ladder[variation], "variation": variation},
                     "rtn_by_variation": {f"{v:g}": r for v, r in ladder.items()}, "gaps": len(keys), "k": k,
                     "planted": planted})
    measured["spread_over_rtn"] = measured["model"]["spread"] / max(ladder[variation]["spread"], 1e-9)
    return measured


def _variants(method, options, keys, worlds, k, planted=True, reference=None):
    """Error, miss, spread and skating (see :func:`variants_against_rtn`) of ``method.variants(gap, k,
    seed=..., **options)`` (arrays (k, 1, VARIANT_GAP, J, ...)) of the gap after each (clip, key frame) of
    ``keys``, ``planted`` in the clip (:func:`.planting.plant_windows`, all but the miss); ``worlds`` the
    clips' world joint positions (F, J, 3) by name. Where a :func:`floor_reference` is given, ``floor``: the
    floor measures of the in-between frames (``model``) and of the capture's same frames (``capture``)."""
    rows, floor = [], {"model": [], "capture": []}
    third = slice(VARIANT_GAP // 3, 2 * VARIANT_GAP // 3)
    for s, (clip, first) in enumerate(keys):
        gap = gap_in(clip, first, first + VARIANT_GAP + 1, method.past)
        window = worlds[clip.name][first:first + VARIANT_GAP + 2]                # the keys and the capture between
        made = method.variants(gap, k, seed=s, **options)
        if planted:
            made = _planted_variants(method, clip, first, *made)
        (grot, world), raw = (forward_kinematics(rot[:, 0], pos[:, 0], clip.skeleton.parents)   # (k, VARIANT_GAP, J, .)
                              for rot, pos in (made, method.variants(gap, k, seed=s, blend=1, **options)))  # 1: the key
        raw = raw[1]
        if reference is not None:
            feet, grounds, size = reference
            points = floor_metrics.foot_points(feet, grot, world)
            floor["model"] += [floor_metrics.row(w, p, feet, grounds[clip.name], size, clip.fps)
                               for w, p in zip(world, points)]
            floor["capture"].append(floor_metrics.measure(clip.frames(first + 1, first + VARIANT_GAP + 1), feet,
                                                          grounds[clip.name], size))
        miss = raw[:, -1] - window[-1]                                          # (k, J, 3)
        ground = paw_ground(foot_positions(worlds[clip.name], clip.skeleton))
        keyed = np.concatenate([np.repeat(window[None, :1], k, 0), world, np.repeat(window[None, -1:], k, 0)], axis=1)
        with np.errstate(over="ignore"):   # as in per_motion
            skating = np.mean([foot_skating(foot_positions(w, clip.skeleton), ground).mean() for w in keyed])
        rows.append({"error": np.linalg.norm(world - window[None, 1:-1], axis=-1).mean(),
                     "miss_root": np.linalg.norm(miss[:, 0, [0, 2]], axis=-1).mean(),
                     "miss_joints": np.linalg.norm(miss, axis=-1).mean(), "spread": _pairwise(world[:, third]).mean(),
                     "skating": skating,
                     "skating_capture": foot_skating(foot_positions(window, clip.skeleton), ground).mean()})
    return {**{name: float(np.mean([r[name] for r in rows])) for name in rows[0]},
            **({"floor": {name: floor_metrics.pooled(r) for name, r in floor.items()}} if reference else {})}


def _planted_variants(method, clip, first, rotations, positions):
    """Variants (k, 1, n, J, ...) of the gap after ``clip``'s key ``first``, their feet planted in the clip
    with ``method``'s past on either side (:func:`.planting.plant_windows`)."""
    ends = [first, first + rotations.shape[2] + 1]
    window = (np.concatenate([np.repeat(clip.rotations[None, ends[:1]], len(rotations), 0), rotations[:, 0],
                              np.repeat(clip.rotations[None, ends[1:]], len(rotations), 0)], axis=1),
              np.concatenate([np.repeat(clip.positions[None, ends[:1]], len(rotations), 0), positions[:, 0],
                              np.repeat(clip.positions[None, ends[1:]], len(rotations), 0)], axis=1))
    done = plant_windows(clip, np.full(len(rotations), first), *window, method.past, method.layout.height,
                         method.floored)
    return done[:, None, 1:-1], positions


def paths(model, reference, seconds=None, progress=None, planted=True):
    """Per path and speed (``"circle walk"``...): the root's mean distance to the path (cm), its facing's
    mean angle to it (degrees) (:func:`.metrics.path_deviation`, the biped's root from its hips) and
    its direction of travel's (:func:`.metrics.travel_deviation`),
    the time taken against the path's (from the share of it covered in the path's time), skating (the
    walk's own ground) and the hips' height range, beside the paper's MANN at the gait PAPER_GAIT names;
    and, for the plots, each path (N, 2) with the root's track (F, 2). One lap of bench-mann's shapes
    from the model's standing start, cut to ``seconds`` where given; ``planted``: the feet planted on
    every frame after the start pose, as Follow Path plants them; and each path's floor measures
    (``floor``) against ``reference`` (:func:`floor_reference`), its feet's grounds subject 5's together."""
    made = {f"{shape} {gait}": path for gait, speed in SPEEDS.items()
            for shape, path in shapes(speed, model.units_per_metre, seconds).items()}
    rows, plots = {}, {}
    for (name, path), out in zip(made.items(), model.follow(list(made.values()), progress=progress)):
        out = plant(out, [(0, out.n_frames)], model.layout.height) if planted else out
        world = out.global_transforms()[1]
        origin, theta = root_of(world, model.pair)
        track = (origin[:, [0, 2]], theta)
        deviation, facing = path_deviation(out, path.points, track)
        travel = travel_deviation(out, path.points, STILL * model.units_per_metre, track)
        progress_share = path_progress(out, path.points, track)
        feet = foot_positions(world, out.skeleton)
        with np.errstate(over="ignore"):
            skating = float(foot_skating(feet, paw_ground(feet)).mean())
        paper = PAPER[PAPER_GAIT[name.split()[1]]]
        rows[name] = {"deviation": deviation, "facing": facing, "travel": travel, "path_seconds": path.duration,
                      "seconds": path.duration / progress_share if progress_share > 0 else float("inf"),
                      "skating": skating, "hips_min": float(world[:, 0, 1].min()),
                      "hips_max": float(world[:, 0, 1].max()), "paper_deviation": paper[0], "paper_facing": paper[1]}
        rows[name]["floor"] = floor_metrics.pooled([floor_metrics.measure(out, reference[0], reference[1][None],
                                                                          reference[2])])
        plots[name] = {"path": path.points, "track": track[0]}
    return rows, plots


def floor_at_speeds(data, reference, units_per_metre):
    """The floor measures of the capture at the speed of each of BANDS: every clip of ``data`` but those of
    the themes OFF_FLOOR, over its frames whose root goes at that speed (None where none does)."""
    feet, _, size = reference
    clips = [data.clip(i) for i, name in enumerate(data.names) if not name.startswith(OFF_FLOOR)]
    grounds = floor_reference(clips)[1]
    hips = [c.global_transforms()[1][:, 0] for c in clips]
    return {gait: floor_metrics.pooled([floor_metrics.measure(c, feet, grounds[c.name], size, floor_metrics.speed_band(
        h, c.fps, low * units_per_metre, high * units_per_metre)) for c, h in zip(clips, hips)])
            for gait, (low, high) in BANDS.items()}


def latent(model, clips):
    """KL (nats) of every latent dimension of the encoder's posterior against N(0, I), the mean over every
    pair of consecutive poses of ``clips``, and how many dimensions are active (above ACTIVE)."""
    kl = []
    for clip in clips:
        pose = poses(clip, model.pair)[0]
        mean, logvar = model.encode(pose[:-1], pose[1:])
        kl.append(0.5 * (mean ** 2 + np.exp(logvar) - 1 - logvar))
    kl = np.concatenate(kl).mean(axis=0)
    return {"kl_dims": [round(float(v), 4) for v in kl], "kl": float(kl.mean()), "active": int((kl > ACTIVE).sum()),
            "dims": len(kl)}


def speed(model, clip, frames=1000, repeats=3, planted=True):
    """Milliseconds per generated frame of one walk at batch 1, and seconds for SPEED_K continuations of
    SPEED_SECONDS (the model's session: one thread), the best of ``repeats``; the motions built (and
    ``planted``, :func:`planted_walk`) included."""
    def best(n, k):
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            for walk in model.walk(clip, clip.n_frames // 2, n, k=k, seed=0):
                planted_walk(model, walk, n, planted)
            times.append(time.perf_counter() - began)
        return min(times)

    return {"ms_per_frame": 1000 * best(frames, 1) / frames,
            "k16_10s_seconds": best(int(round(SPEED_SECONDS * model.fps)), SPEED_K), "repeats": repeats}


def measure(model, data, starts=20, frames=10_000, rtn=None, progress=None, seconds=None, grounded=True,
            path_progress=None, planted=True, repeats=3):
    """Everything above as one dict (see the module's docstring) with the issue's ``goals``, and for the
    plots the walks' hips heights and the paths' tracks. ``rtn``: the RTN whose noise variants the
    model's are measured against (None: not measured); ``seconds``: the paths cut to that long;
    ``grounded``: the walks and continuations with the floor step; ``planted``: every generated motion
    with its feet planted (see the module's docstring); ``progress(done, total, name)`` after
    each walk, ``path_progress(done, total)`` as the paths are followed; ``repeats``: :func:`speed`'s."""
    clips = test_clips(data)
    reference = floor_reference(clips)
    walked, heights = walks(model, clips, starts, frames, progress, grounded, planted, reference)
    spread = continuations(model, clips, starts, grounded=grounded, planted=planted)
    up = staying_up(model, clips, starts, reference, grounded=grounded, planted=planted)
    followed, tracks = paths(model, reference, seconds, path_progress, planted)
    results = {"model": model.name, "file": str(model.path), "data": data.source, "test_clips": [c.name for c in clips],
               "starts": starts, "planted": planted, "walks": walked, "continuations": spread, "staying_up": up,
               "variants": None if rtn is None else variants_against_rtn(model, rtn, clips, starts, planted=planted,
                                                                     reference=reference),
               "latent": latent(model, clips), "paths": followed,
               "speed": speed(model, clips[0], repeats=repeats, planted=planted),
               "floor_capture": floor_at_speeds(data, reference, model.units_per_metre)}
    results["goals"] = goals(results)
    return results, {"heights": heights, "with_nan": walked["with_nan"], "fps": model.fps, "capture": walked["capture"],
                     "kl_dims": results["latent"]["kl_dims"], "paths": tracks}


def goals(r):
    """The issue's bar, one row per measure: what, the value (the capture's or RTN's beside it), the goal,
    and whether it is met (None where there is no goal or nothing was measured)."""
    w, c, m = r["walks"], r["walks"]["capture"], r["walks"]["model"] or {}
    moves = bool(m) and m["root_speed"] >= GOALS["root_speed_share"] * c["root_speed"]
    rows = [("walks with NaN", f"{w['with_nan']} of {w['walks']} ({w['frames']:,} frames each)", "0",
             w["with_nan"] == 0)]
    if m:
        rows += [("hips height (cm)", f"{m['hips_min']:.1f} to {m['hips_max']:.1f} / {c['hips_min']:.1f} to "
                  f"{c['hips_max']:.1f}", "within the capture's", c["hips_min"] <= m["hips_min"]
                  and m["hips_max"] <= c["hips_max"]),
                 ("PEAK (cm a frame)", f"{m['peak']:.2f} / {c['peak']:.2f}", "at most the capture's",
                  m["peak"] <= c["peak"]),
                 ("foot skating, toes and feet (cm a frame)", f"{m['skating']:.3f} / {c['skating']:.3f}",
                  "at most the capture's, moving", m["skating"] <= c["skating"] and moves),
                 ("root speed (cm a frame)", f"{m['root_speed']:.2f} / {c['root_speed']:.2f}",
                  "at least half the capture's", moves),
                 (f"frames with a foot > {UNDER:g} cm under the floor", f"{m['under_floor']:.1%} / "
                  f"{c['under_floor']:.1%}", "at most the capture's", m["under_floor"] <= c["under_floor"])]
    s = r["continuations"]
    rows.append((f"spread of K = {s['k']} continuations after {s['seconds']:g} s: root / joints (cm)",
                 f"{s['root']:.1f} / {s['joints']:.1f}", "none; read it beside skating and PEAK", None))
    u = r["staying_up"]
    if u:
        rows.append((f"continuations of standing starts ({u['starts']} x {u['k']} of {u['seconds']:g} s): frames with "
                     f"the hips under {LOW:g} cm", f"{u['model']:.1%} / {u['capture']:.1%} (first {SPREAD_AFTER:g} s "
                     f"{u['model_early']:.1%} / {u['capture_early']:.1%})", "none; read it beside skating", None))
    v = r["variants"]
    better = v and v["spread_over_rtn"] >= GOALS["spread_over_rtn"] and v["model"]["skating"] <= v["rtn"]["skating"]
    rows.append((f"spread of K = {SPREAD_K} variants over RTN's noise variants at the same error",
                 f"{v['spread_over_rtn']:.2f}x (error {v['model']['error']:.1f} / {v['rtn']['error']:.1f} cm at "
                 f"noise {v['rtn']['variation']:g}; skating {v['model']['skating']:.3f} / {v['rtn']['skating']:.3f})"
                 if v else "not measured (no RTN given)", f"at least {GOALS['spread_over_rtn']:g}x, skating no worse",
                 better if v else None))
    for gait, pace in SPEEDS.items():
        followed = [p for name, p in r["paths"].items() if name.endswith(f" {gait}")]
        deviation, facing = (float(np.mean([p[key] for p in followed])) for key in ("deviation", "facing"))
        paper = PAPER[PAPER_GAIT[gait]]
        rows.append((f"paths at {pace:g} m/s, circle, square, star: deviation (cm) / facing (degrees)",
                     f"{deviation:.1f} / {facing:.1f}", f"below the paper's MANN at a {PAPER_GAIT[gait]}: "
                     f"{paper[0]:g} / {paper[1]:g}", deviation < paper[0] and facing < paper[1]))
    lat, sp = r["latent"], r["speed"]
    rows += [("active latent units (KL > 0.01 nats)", f"{lat['active']} of {lat['dims']} (mean KL {lat['kl']:.3f})",
              "all", lat["active"] == lat["dims"]),
             (f"ms per generated frame, batch 1, one thread, best of {sp['repeats']}", f"{sp['ms_per_frame']:.3f}",
              f"at most {GOALS['ms_per_frame']:g}", sp["ms_per_frame"] <= GOALS["ms_per_frame"]),
             (f"K = {SPEED_K} continuations of {SPEED_SECONDS:g} s (s)", f"{sp['k16_10s_seconds']:.2f}",
              f"under {GOALS['k16_10s_seconds']:g}", sp["k16_10s_seconds"] < GOALS["k16_10s_seconds"])]
    return [{"what": what, "value": value, "goal": goal, "met": met} for what, value, goal, met in rows]


def table(results):
    """The results as readable lines: the goals, then the details behind them."""
    floor_step = "with" if results["walks"]["grounded"] else "WITHOUT"
    feet = "planted" if results["planted"] else "NOT planted (--no-contacts)"
    lines = [f"{results['model']} on LaFAN1's test subject 5 ({', '.join(results['test_clips'])}): model / capture, "
             f"{results['starts']} start poses, walks {floor_step} the floor step, feet {feet}"]
    width = max(len(g["what"]) for g in results["goals"])
    for g in results["goals"]:
        met = {True: "met", False: "NOT MET", None: "-"}[g["met"]]
        lines.append(f"  {met:<7}  {g['what']:<{width}}  {g['value']:<32}  (goal: {g['goal']})")
    m, c = results["walks"]["model"], results["walks"]["capture"]
    if m:
        lines.append(f"skating: toes {m['skating_toes']:.3f} / {c['skating_toes']:.3f}, feet {m['skating_feet']:.3f} / "
                     f"{c['skating_feet']:.3f}; on the walk's own ground (sliding without sinking) "
                     f"{m['skating_own_ground']:.3f} / {c['skating_own_ground']:.3f} cm a frame")
        lines.append("the floor: frames with the lowest foot > " + ", > ".join(
            f"{h:g} cm under {m[k]:.1%} / {c[k]:.1%}" for h, k in ((UNDER, "under_floor"), (DEEP, "deep_under_floor")))
            + f"; the hips under it {m['hips_under_floor']:.2%} / {c['hips_under_floor']:.2%}; the lowest foot > "
            + ", > ".join(f"{h:g} cm above {m[f'off_floor_{h:g}']:.1%} / {c[f'off_floor_{h:g}']:.1%}" for h in OFF))
    v = results["variants"]
    if v:
        lines.append(f"variants of {v['gaps']} gaps of {VARIANT_GAP} frames, K = {v['k']}: joint error to the capture, "
                     "miss before the blend (root / joints), spread (cm); skating cm a frame (the capture's "
                     f"{v['model']['skating_capture']:.3f})")
        for name, row in [("model", v["model"])] + [(f"RTN noise {n}", r) for n, r in v["rtn_by_variation"].items()]:
            lines.append(f"  {name:<15} {row['error']:6.2f}  {row['miss_root']:6.2f} / {row['miss_joints']:6.2f}  "
                         f"{row['spread']:6.2f}  {row['skating']:.3f}")
    lines.append("paths from standing: deviation cm, facing degrees (the paper's MANN), direction of travel degrees; "
                 "seconds taken / the path's; skating cm a frame (own ground); hips cm")
    for name, r in results["paths"].items():
        lines.append(f"  {name:<12} {r['deviation']:6.1f} ({r['paper_deviation']:.2f})  {r['facing']:5.1f} "
                     f"({r['paper_facing']:.2f})  {r['travel']:5.1f}  {r['seconds']:5.1f} / "
                     f"{r['path_seconds']:.1f} s  skating "
                     f"{r['skating']:.3f}  hips {r['hips_min']:.0f} to {r['hips_max']:.0f}")
    lines += _floor_lines(results)
    lines.append("KL per latent dimension (nats): " + " ".join(f"{k:.3f}" for k in results["latent"]["kl_dims"]))
    return "\n".join(lines)


def _floor_lines(results):
    """The floor measures' table: walks, continuations and each speed's paths, each beside the capture."""
    w, u = results["walks"], results["staying_up"]
    named = [("walks", (w["model"] or {}).get("floor")), ("  the capture (every frame)", w["capture"].get("floor"))]
    if u:
        named += [(f"continuations of standing starts, {u['seconds']:g} s", u["floor"]["model"]),
                  ("  the capture after the same starts", u["floor"]["capture"])]
    v = (results["variants"] or {}).get("model", {}).get("floor")
    if v:
        named += [(f"variants of {VARIANT_GAP}-frame gaps", v["model"]),
                  ("  the capture in the same gaps", v["capture"])]
    for gait in BANDS:
        named += [(name, r["floor"]) for name, r in results["paths"].items() if name.endswith(f" {gait}")]
        named.append((f"  the capture at a {gait} ({BANDS[gait][0]:g}-{BANDS[gait][1]:g} m/s)",
                      results["floor_capture"][gait]))
    return ["the floor (issue 43), feet as measured above: legs' contact share, frames floating, slide of touching "
            "feet, longest off the floor, hips cm, jitter cm/frame^2"] + floor_metrics.table(named)
