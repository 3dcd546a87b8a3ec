"""The LaFAN1 in-betweening benchmark (Harvey et al. 2020), exactly as the release evaluates it.

Test windows are 65 frames every 40 of the test subject's clips, statistics windows 50 every 20 of the
training subjects'; each window is centred and turned to face +X on its last past frame. A method
fills the ``n`` frames between 10 past frames and the target key, and is scored on those frames by L2Q (world quaternions), L2P (world positions normalised by the
statistics) and NPSS (power spectrum similarity of the world quaternions). Bone translations other
than the root's are the skeleton's offsets of the first statistics window, for the ground truth and
for every method alike.

Published methods see the past frames and the target key only; :func:`strict` gives a method just
that. The gaps also carry the frames after the target (an animator's next keys give them), and a
method scored with them is reported under its own name ("rtn+after"), never in place of the first.

Beyond the protocol, ``long=True`` scores gaps of 60, 90 and 120 frames (windows of 132 frames, every
40, the same statistics), where a model serves gaps longer than it was trained on. There a truthful
ending is one of many, so besides the errors it reports PEAK, each window's fastest joint speed in
the data's units per frame (99th percentile over windows, joints going into and out of the gap
included): a model that drifts off the data makes limbs fly, which errors average away.

A model of another skeleton (CMU's) is scored through retargeting (:func:`across`): each window brought
onto its skeleton, filled there, the fill brought back and scored on LaFAN1's; the capture's own round
trip (:func:`round_trip`) scores what retargeting alone costs.

Beside the protocol, :func:`floor_gaps` measures whether the fills of FLOOR_GAP frames stand on the
floor (:mod:`.floor_metrics`, issue 43), each beside the capture's on the same frames.
"""

from dataclasses import dataclass, field, replace

import numpy as np

from . import floor_metrics
from inference.contacts import plant
from inference.ends import ends
from .dataset import (bvh_members, centre_and_face, clip_stem, gather_windows, position_statistics, read_motions,
                      sliding_windows, subject_of)
from inference import quat
from inference.errors import BetwixtError, DataError
from inference.features import chain
from inference.motion import Motion, Skeleton, forward_kinematics
from inference.retarget import Retargeting, natural_pose
from inference.transition import BASELINES, Gap

LENGTHS = (5, 15, 30, 45)
METRICS = ("L2Q", "L2P", "NPSS")
PAST = 10
WINDOW, OFFSET = 65, 40         # test windows, as the release cuts them
LONG_LENGTHS = (60, 90, 120)    # beyond the protocol: see the module's docstring
LONG_METRICS = METRICS + ("PEAK",)
TRAIN_SUBJECTS = (1, 2, 3, 4)
TEST_SUBJECTS = (5,)
FLOOR_GAP = 30                  # the gaps whose fills the floor measures look at


@dataclass(frozen=True, eq=False)
class Benchmark:
    """Normalised test windows and the statistics that scale positions."""

    skeleton: Skeleton
    rotations: np.ndarray   # (N, 65, J, 4) local (132 frames for long gaps)
    positions: np.ndarray   # (N, 65, J, 3) local: root translation, then the skeleton's offsets
    x_mean: np.ndarray      # (J * 3,)
    x_std: np.ndarray       # (J * 3,)
    fps: float = 30.0
    pose: np.ndarray = None  # (J, 4) the training subjects' natural pose, where models of other skeletons meet it
    _truths: dict = field(default_factory=dict, init=False, repr=False)   # see truth

    @property
    def windows(self):
        return self.rotations.shape[0]

    def gap(self, n):
        """The benchmark's transitions of length ``n`` as one batch, with up to PAST frames after each
        target, as many as the window holds (9 at the longest gap), which :func:`strict` takes away."""
        r, p = self.rotations, self.positions
        after = slice(PAST + n + 1, PAST + n + 1 + PAST)
        return Gap(self.skeleton, r[:, :PAST], p[:, :PAST], r[:, PAST + n], p[:, PAST + n], n, r[:, after], p[:, after])

    def truth(self, n):
        """What every method's fills of the gaps of ``n`` frames are scored against, made once a length: the
        captured frames' world rotations (B, n, J, 4), their world positions normalised by the statistics (B, n,
        3J) and their rotations' :func:`spectrum`."""
        if n not in self._truths:
            q, x = forward_kinematics(self.rotations[:, PAST:PAST + n], self.positions[:, PAST:PAST + n],
                                      self.skeleton.parents)
            self._truths[n] = (q, (x.reshape(self.windows, n, -1) - self.x_mean) / self.x_std,
                               spectrum(q.reshape(self.windows, n, -1)))
        return self._truths[n]

    def capture(self, gap):
        """The captured frames of the gap: the method that scores zero, and PEAK's reference."""
        return self.rotations[:, PAST:PAST + gap.length], self.positions[:, PAST:PAST + gap.length]


def strict(method):
    """``method`` given the past frames and the target key only, as the published protocol scores it."""
    return lambda gap: method(replace(gap, after_rotations=None, after_positions=None))


def as_filled(model):
    """``model``'s fills with their keys eased as Fill Gaps eases them (:func:`inference.ends.ends`: the frames
    after the target read), the benchmark's ``+after`` method."""
    return lambda gap: ends(gap, *model(gap), model.layout)


def load_benchmark(path, progress=None, long=False, clips=()):
    """Build the benchmark from a LaFAN1 folder or archive (``lafan1.zip`` or ``lafan1-27.zip``);
    ``long``: windows for LONG_LENGTHS instead of the protocol's; ``clips``: the windows of these test clips
    alone (file stems), not the protocol's, the statistics still the training subjects'."""
    names = [name for name, _ in bvh_members(path)]
    tests = {clip_stem(n): n for n in names if subject_of(n) in TEST_SUBJECTS}
    unknown = [c for c in clips if c not in tests]
    if tests and unknown:
        raise DataError(f"{path}: no test clip named {', '.join(unknown)}; the test clips are {', '.join(tests)}")
    tested = {tests[c] for c in clips} or set(tests.values())
    motions = read_motions(path, progress, {n for n in names if subject_of(n) in TRAIN_SUBJECTS} | tested)
    train = [m for m in motions if subject_of(m.name) in TRAIN_SUBJECTS]
    test = [m for m in motions if subject_of(m.name) in TEST_SUBJECTS]
    if not train or not test:
        raise DataError(f"{path}: the benchmark needs files of subjects 1-4 and of subject 5 "
                        "named like LaFAN1's (<theme><take>_subject<N>.bvh)")
    parents = train[0].skeleton.parents

    windowed = [m for m in train if len(sliding_windows(m.n_frames, 50, 20))]
    if not windowed:
        raise DataError(f"{path}: no clip of subjects 1-4 is longer than a statistics window of 50 frames")
    x_mean, x_std = position_statistics((centre_and_face(*gather_windows([m], 50, 20), parents, PAST - 1)
                                         for m in windowed), parents)
    offsets = windowed[0].positions[0, 1:]

    width = PAST + max(LONG_LENGTHS) + 2 if long else WINDOW    # the target, then the frame after it
    rot, pos = centre_and_face(*gather_windows(test, width, OFFSET), parents, PAST - 1)
    pos[:, :, 1:] = offsets
    sk = train[0].skeleton
    skeleton = Skeleton(sk.names, sk.parents, np.concatenate([sk.offsets[:1], offsets]), sk.channels, sk.end_sites)
    return Benchmark(skeleton, rot, pos, x_mean, x_std, test[0].fps, natural_pose(train))


def _retargeted(onto, skeleton, fps, parts):
    """``parts`` [(rotations (B, T, J, 4), positions (B, T, J, 3))], stretches of windows of ``skeleton``'s
    frames, retargeted by ``onto`` window by window in time order (signs continuous), split as given."""
    rot = np.concatenate([r for r, _ in parts], axis=1)
    pos = np.concatenate([p for _, p in parts], axis=1)
    b, t = rot.shape[:2]
    out = onto(Motion(skeleton, rot.reshape(b * t, *rot.shape[2:]), pos.reshape(b * t, *pos.shape[2:]), fps))
    cuts = np.cumsum([r.shape[1] for r, _ in parts])[:-1]
    return list(zip(np.split(out.rotations.reshape(b, t, -1, 4), cuts, axis=1),
                    np.split(out.positions.reshape(b, t, -1, 3), cuts, axis=1)))


def _continuing(rotations, last):
    """Local rotations (B, T, J, 4) signed to go on from ``last`` (B, J, 4), the frame before them, as L2Q,
    which compares quaternions' components, needs (a retargeted rotation may come back negated)."""
    return quat.unroll(np.concatenate([last[:, None], rotations], axis=1), axis=1)[:, 1:]


def bridges(bench, model):
    """``(onto, back)``: :class:`Retargeting` from the benchmark's skeleton onto ``model``'s and back,
    matched where the training subjects' natural pose meets the model's reference pose (its training data's)."""
    reference = np.asarray(model.file.json("betwixt.reference_pose"), dtype=np.float64)
    # a model file keeps no channels: the joints from the root to the trajectory's (Bandai's joint_Root and
    # Hips) are the ones that move through the world
    carriers = chain(model.skeleton.parents, model.layout.trajectory)
    rotation = tuple(f"{a}rotation" for a in "ZYX")
    skeleton = replace(model.skeleton, channels=tuple((tuple(f"{a}position" for a in "XYZ") if j in carriers else ())
                                                      + rotation for j in range(len(model.skeleton))))
    onto = Retargeting.build(bench.skeleton, skeleton, bench.pose, reference, name="LaFAN1's skeleton")
    back = Retargeting.build(skeleton, bench.skeleton, reference, bench.pose, name=f"{model.name}'s skeleton")
    return onto, back


def across(method, bench, model):
    """``method``, which fills gaps of ``model``'s skeleton, as a method of the benchmark: each gap's frames
    (the past, the target, the frames after it where given) retargeted onto that skeleton, filled, and the
    fill brought back onto the benchmark's."""
    onto, back = bridges(bench, model)

    def method_across(gap):
        parts = [(gap.past_rotations, gap.past_positions), (gap.target_rotations[:, None], gap.target_positions[:, None])]
        if gap.after_rotations is not None:
            parts.append((gap.after_rotations, gap.after_positions))
        (past_r, past_p), (target_r, target_p), *after = _retargeted(onto, bench.skeleton, bench.fps, parts)
        theirs = Gap(model.skeleton, past_r, past_p, target_r[:, 0], target_p[:, 0], gap.length, *(after[0] if after else ()))
        [(rot, pos)] = _retargeted(back, model.skeleton, bench.fps, [tuple(map(np.asarray, method(theirs)))])
        return _continuing(rot, gap.past_rotations[:, -1]), pos
    return method_across


def round_trip(bench, model):
    """The capture's frames of each gap taken onto ``model``'s skeleton and back: the error retargeting alone
    adds to a model of another skeleton (:func:`across`), as a method."""
    onto, back = bridges(bench, model)

    def there_and_back(gap):
        [theirs] = _retargeted(onto, bench.skeleton, bench.fps, [bench.capture(gap)])
        [(rot, pos)] = _retargeted(back, model.skeleton, bench.fps, [theirs])
        return _continuing(rot, gap.past_rotations[:, -1]), pos
    return there_and_back


def npss(truth, pred):
    """Normalised power spectrum similarity of (B, T, D) sequences (Gopalakrishnan et al. 2019).

    Per window and coordinate: the power of the real part of the FFT over time, normalised to a
    distribution, compared by the L1 distance of cumulative distributions; averaged with the truth's
    total power as weights.
    """
    return _npss(spectrum(truth), spectrum(pred))


def spectrum(x):
    """``(cdf, total)`` of (B, T, D) sequences, as :func:`npss` compares them: the cumulative distribution over
    time of the power of the real part of their FFT (B, T, D), and that power's total (B, D)."""
    power = np.square(np.real(np.fft.fft(x, axis=1)))
    total = power.sum(axis=1)
    return np.cumsum(power / total[:, None], axis=1), total


def _npss(truth, pred):
    """:func:`npss` of two :func:`spectrum` s."""
    emd = np.abs(pred[0] - truth[0]).sum(axis=1)
    return float(np.average(emd, weights=truth[1]))


def peak_speed(rotations, positions, parents):
    """PEAK of windows (B, T, J, …) of local rotations and translations: the 99th percentile over
    windows of each window's fastest joint speed, in the data's units per frame."""
    _, world = forward_kinematics(rotations, positions, parents)
    return float(np.percentile(np.linalg.norm(np.diff(world, axis=1), axis=-1).max(axis=(1, 2)), 99))


def score(bench, method, n, metrics=METRICS):
    """``metrics`` and per-frame errors of ``method`` on the transitions of length ``n``."""
    gap = bench.gap(n)
    rot, pos = method(gap)
    rot, pos = np.asarray(rot, dtype=np.float64), np.asarray(pos, dtype=np.float64)
    shape = (bench.windows, n, len(bench.skeleton))
    if rot.shape != shape + (4,) or pos.shape != shape + (3,):
        raise BetwixtError(f"a method returned rotations {rot.shape} and positions {pos.shape}, "
                           f"expected {shape + (4,)} and {shape + (3,)}")
    if not (np.isfinite(rot).all() and np.isfinite(pos).all()):
        raise BetwixtError(f"a method returned NaN or infinite frames for transitions of length {n}")
    pos = pos.copy()
    pos[..., 1:, :] = bench.positions[:, PAST:PAST + n, 1:]

    parents = bench.skeleton.parents
    true_q, true_x, true_spectrum = bench.truth(n)
    pred_q, pred_x = forward_kinematics(rot, pos, parents)
    b = bench.windows
    pred_x = (pred_x.reshape(b, n, -1) - bench.x_mean) / bench.x_std
    l2q = np.sqrt(np.sum((pred_q - true_q) ** 2, axis=(2, 3)))
    l2p = np.sqrt(np.sum((pred_x - true_x) ** 2, axis=2))
    scores = {
        "L2Q": float(l2q.mean()),
        "L2P": float(l2p.mean()),
        "NPSS": _npss(true_spectrum, spectrum(pred_q.reshape(b, n, -1))),
    }
    if "PEAK" in metrics:   # the keys on either side included: a method may jump onto them
        through = [np.concatenate([a[:, PAST - 1:PAST], x, a[:, PAST + n:PAST + n + 1]], axis=1)
                   for a, x in ((bench.rotations, rot), (bench.positions, pos))]
        scores["PEAK"] = peak_speed(*through, parents)
    return scores, {"L2Q": l2q.mean(axis=0), "L2P": l2p.mean(axis=0)}


def scored_methods(bench, models, asked, long=False):
    """``(methods, planted)``: what the benchmark scores, by name, and the methods whose fills the floor table
    also measures planted, with the body height to plant them with (:func:`floor_gaps`). The baselines (and
    the capture, for ``long``), and each of ``models`` twice: as published methods are scored (the past and
    the target key), then as Fill Gaps fills (the frames after the target, its ends eased). A model of another
    skeleton is scored through retargeting, beside what the round trip alone costs, where ``asked`` (the user
    named its file); a shipped one is left out. A single model, and the benchmark's own (``rtn-lafan1``), go
    by their kind."""
    methods = {"capture": bench.capture, **BASELINES} if long else dict(BASELINES)
    planted = {}
    for model in models:
        name = model.file.kind if len(models) == 1 or model.name == "rtn-lafan1" else model.name
        if not model.skeleton.same_hierarchy(bench.skeleton):
            if asked:
                methods.update({f"{name} round trip": round_trip(bench, model),
                                name: strict(across(model, bench, model)),
                                f"{name}+after": across(as_filled(model), bench, model)})
            continue
        methods.update({name: strict(model), f"{name}+after": as_filled(model)})
        planted[f"{name}+after"] = model.layout.height
    return methods, planted


def kept_at(method, n):
    """``method`` keeping its fill of the gaps of ``n`` frames: the scores (:func:`evaluate`) and the floor table
    (:func:`floor_gaps`) both fill the benchmark's gaps of FLOOR_GAP frames, the same gaps, and a model's fill of
    376 windows takes seconds."""
    kept = []

    def method_kept(gap):
        if gap.length != n:
            return method(gap)
        if not kept:
            kept.append(method(gap))
        return kept[0]
    return method_kept


def evaluate(bench, methods, lengths=LENGTHS, metrics=METRICS):
    """``(results, curves)`` for every named method: the JSON table and the per-frame errors."""
    results = {"test_windows": bench.windows, "methods": {}}
    curves = {}
    for name, method in methods.items():
        table = {m: {} for m in metrics}
        for n in lengths:
            scores, per_frame = score(bench, method, n, metrics)
            for m in metrics:
                table[m][str(n)] = scores[m]
            curves[name, n] = per_frame
        results["methods"][name] = table
    return results, curves


def format_table(results):
    """The results as the Markdown table of the benchmark page."""
    lengths = list(next(iter(results["methods"].values()))["L2Q"])
    lines = ["| method | metric | " + " | ".join(lengths) + " |", "|---|---|" + "---|" * len(lengths)]
    for name, table in results["methods"].items():
        for metric in table:
            digits = {"NPSS": 5, "PEAK": 1}.get(metric, 4)
            values = " | ".join(f"{table[metric][n]:.{digits}f}" for n in lengths)
            lines.append(f"| {name} | {metric} | {values} |")
    return "\n".join(lines)


def floor_gaps(bench, methods, n=FLOOR_GAP, planted=None):
    """Issue 43's floor measures (:mod:`.floor_metrics`) of every named method's fills of the gaps of
    ``n`` frames and of the capture: over each gap with its two keys, the floating frames those where the
    capture stands, and the largest acceleration within KEY_SPAN frames of each key (the frames around
    the gap the capture's). The feet's grounds and the body's height are the capture's, over all its
    windows. ``planted`` maps a method's name to the body height with which its fill is measured again
    with the feet planted (``"<name> planted"``, :func:`inference.contacts.plant` with the window's frames as the
    context, as Fill Gaps gives it)."""
    span = floor_metrics.KEY_SPAN + 1                      # a key's neighbours, and one more for their acceleration
    window = slice(PAST - 1 - span, PAST + n + 1 + span)   # (T,) frames measured, within the benchmark's windows
    keys = (span, span + n + 1)
    measured = np.zeros(window.stop - window.start, dtype=bool)
    measured[keys[0]:keys[1] + 1] = True
    feet = floor_metrics.feet_of(bench.skeleton)
    parents = bench.skeleton.parents
    grot, world = forward_kinematics(bench.rotations, bench.positions, parents)
    points = floor_metrics.foot_points(feet, grot, world)
    ground = floor_metrics.ground_of(points)
    size = floor_metrics.body_size(bench.skeleton, world)
    hips = world[:, window, 0, 1]
    upright = hips - ground.min() > floor_metrics.UPRIGHT * size   # (B, T) where the capture stands

    def pooled(rotations, positions):
        g, w = forward_kinematics(rotations[:, window], positions[:, window], parents)
        p = floor_metrics.foot_points(feet, g, w)
        return floor_metrics.pooled([floor_metrics.row(w[b], p[b], feet, ground, size, bench.fps, measured,
                                                       upright[b], keys) for b in range(bench.windows)])

    results = {"gap": n, "size": size, "capture": pooled(bench.rotations, bench.positions), "methods": {}}
    gap = bench.gap(n)
    for name, method in methods.items():
        rot, pos = bench.rotations.copy(), bench.positions.copy()
        filled = method(gap)
        rot[:, PAST:PAST + n], pos[:, PAST:PAST + n, 0] = filled[0], np.asarray(filled[1])[..., 0, :]
        results["methods"][name] = pooled(rot, pos)
        if name in (planted or {}):
            gaps = [(PAST - 1, PAST + n)]
            rot = np.stack([plant(Motion(bench.skeleton, r, p, bench.fps), gaps, planted[name]).rotations
                            for r, p in zip(rot, pos)])
            results["methods"][f"{name} planted"] = pooled(rot, pos)
    return results


def format_floor(results):
    """The floor measures of :func:`floor_gaps` as lines: the capture first, then each method."""
    named = [("capture", results["capture"])] + list(results["methods"].items())
    return "\n".join([f"the floor over the gaps of {results['gap']} frames and their keys (issue 43): legs' contact "
                      "share, frames floating where the capture stands, slide of touching feet, longest off the "
                      "floor, hips cm, jitter cm/frame^2, largest acceleration within 3 frames of a key "
                      "cm/frame^2 (mean over keys)"] + floor_metrics.table(named))
