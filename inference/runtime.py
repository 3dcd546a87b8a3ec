"""The model runtime: one ONNX transition model serving fill, super-resolution and variants.

A model file is trusted only as far as its metadata goes: kind, version, skeleton, feature layout
and normalisation must all be there and agree with the motion it is asked to fill. Every request is
a batch of :class:`~.transition.Gap` s of one length (gaps of several lengths are grouped), run as
one call of the network's whole-transition graph, then blended onto the keys: the start blend, the
target blend (Harvey & Pal 2018, §5.1) so that the last generated frame meets the key exactly in the
limit, and the end blend. Where the file carries its skeleton's left/right reflections, the same
call also fills each gap's mirror image, and where its network learned gaps played backwards, the
gap (and its mirror image) from its far side; a fill is the mean of those views where they agree.
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import quat
from .errors import BetwixtError
from .features import (Layout, canonical_frame, decode_features, frame_features, move, orient, target_features,
                       unmove)
from .mirror import mirror_map, reflect, reflection, world_reflection
from .motion import AXES, Skeleton
from .transition import Gap

KIND_RTN = "rtn"
METADATA_VERSION = 1
MAX_GAP = 120
# The target blend's default length in frames. Spreading the last frame's miss over the whole gap
# drags the middle of long gaps after it. On the held-out tenth of LaFAN1's training subjects
# (rtn-lafan1), of 5, 10, 15, 20 frames and the whole gap, 10 gave the lowest position errors at
# 30 and 45 frames and every other error within 3 % of the lowest; the benchmark agreed.
BLEND = 10
# The start blend's length in frames (see start_blend). On the held-out tenth of LaFAN1's training
# subjects (rtn-lafan1; never the benchmark's test subject), of 0, 4, 8, 12, 16, 20, 30, 45, 60 and
# 120, every length lowered every error, most of it by 8; they went on falling slowly up to 30 and
# changed by under 1 % beyond. Position RMS at 5 / 15 / 30 / 45 frames: 0.191 / 0.680 / 1.140 /
# 1.664 without, 0.160 / 0.630 / 1.124 / 1.652 over 30. On rtn-bandai1's held-out tenth, 30 also
# lowered every error (positions at 5 frames 0.398 -> 0.358, at 45 6.500 -> 6.479).
START_BLEND = 30
# Degrees by which two fills of a gap (mirror image, backwards) may differ (see _average): averaged fully up to
# the first, not at all beyond the second. Rotations 90 degrees apart still average without a
# jump; rtn-bandai1's fills of 120-frame gaps differed by up to 180 (the hips turned round either
# way) and their plain mean made a limb fly at four times the capture's peak speed.
AGREEMENT = (60.0, 90.0)
# The backward fill's part of the mean of the two directions at the keys on either side of a gap,
# linear in time between: each direction is surer near the keys it set out from. On the held-out tenth of
# LaFAN1's training subjects (rtn-lafan1's run at about 37,500 steps), L2P over interpolation's at
# 5 / 15 / 30 / 45 frames: forwards alone 0.389 / 0.421 / 0.468 / 0.480; shares (0.35, 0.65) 0.384 /
# 0.415 / 0.440 / 0.445, (0.25, 0.75) 0.382 / 0.415 / 0.439 / 0.443, (0.1, 0.9) 0.381 / 0.416 /
# 0.438 / 0.441. At 38,264 steps (0, 1) was within 0.3 % of (0.1, 0.9) on all twelve numbers, behind
# on L2P at 15 and 30. Symmetric, so that a motion played backwards is filled as the fill played
# backwards.
BACKWARD_SHARE = (0.1, 0.9)
MODELS = Path(__file__).parent / "models"
_GAP_ARRAYS = ("past_rotations", "past_positions", "target_rotations", "target_positions", "after_rotations",
               "after_positions")


class ModelError(BetwixtError):
    """A model file that cannot be used, or a request it cannot serve."""


def missing_runtime_hint(platform):
    """What to do when onnxruntime's library will not load on ``platform`` (``sys.platform``)."""
    if platform == "win32":
        return "install the Microsoft Visual C++ 2015-2022 redistributable (x64) and restart Blender"
    if platform == "darwin":
        return "the onnxruntime bundled with Betwixt needs macOS 13 (Ventura) or later"
    return "reinstall the Betwixt extension for this platform (Linux x64 needs glibc 2.27 or later)"


def _session(path, threads=1):
    try:
        import onnxruntime
    except (ImportError, OSError) as e:
        raise ModelError(f"onnxruntime could not be loaded ({e}); {missing_runtime_hint(sys.platform)}") from None
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    # One thread unless asked: a 30-frame transition is some 1,700 small operators one after
    # another, and splitting each across a thread pool costs more than it gains. On this project's
    # 2-core VM two threads were slower at every batch: 18.4 against 6.8 ms at batch 1, 232 against
    # 150 at 64.
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own untyped errors for unreadable files
        raise ModelError(f"{path}: not an ONNX model file ({str(e).splitlines()[0][:200]})") from None


class TransitionModel:
    """An RTN model file, checked and ready: ``model(gap)`` is a method for the benchmark."""

    def __init__(self, path, threads=1, symmetric=True, both_ways=True):
        """``symmetric``: average each fill with its mirror image's where the file allows (see
        fill); ``both_ways``: with the gap filled backwards too, where the file allows. Each view
        adds one gap to the network's batch."""
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"{self.path}: no such model file")
        self.session = _session(self.path, threads)
        meta = self.session.get_modelmeta().custom_metadata_map
        kind = meta.get("betwixt.kind")
        if kind != KIND_RTN:
            raise ModelError(f"{self.path}: not a Betwixt transition model (kind {kind!r}, expected "
                             f"{KIND_RTN!r}); choose a model exported by 'python -m training export'")
        if meta.get("betwixt.version") != str(METADATA_VERSION):
            raise ModelError(f"{self.path}: model format version {meta.get('betwixt.version')} is not "
                             f"{METADATA_VERSION}; export it again with this version of Betwixt")
        try:
            sk = json.loads(meta["betwixt.skeleton"])
            self.skeleton = Skeleton(sk["names"], sk["parents"], sk["offsets"])
            self.layout = Layout(**json.loads(meta["betwixt.layout"]))
            norm = {k: np.asarray(v, dtype=np.float32) for k, v in json.loads(meta["betwixt.normalisation"]).items()}
            self.frame_mean, self.frame_std = norm["frame_mean"], norm["frame_std"]
            self.target_mean, self.target_std = norm["target_mean"], norm["target_std"]
            self.past = int(meta["betwixt.past"])
            self.max_gap = int(json.loads(meta["betwixt.gaps"])["max"])
            self.noise_dim = self.session.get_inputs()[3].shape[-1]
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{self.path}: incomplete model metadata ({e}); export it again") from None
        if len(self.frame_mean) != self.layout.frame_dim or len(self.target_mean) != self.layout.target_dim:
            raise ModelError(f"{self.path}: normalisation does not match the feature layout; export it again")
        self.mirror = None
        self.backward = both_ways and meta.get("betwixt.backward") == "true"
        if symmetric and "betwixt.mirror" in meta:
            reflections = np.asarray(json.loads(meta["betwixt.mirror"])["reflections"], dtype=np.float64)
            self.mirror = reflection(self.skeleton.parents, mirror_map(self.skeleton.names),
                                     world_reflection(AXES[self.layout.up]), reflections)
        self.metadata = meta

    @property
    def name(self):
        return self.path.stem

    def check_skeleton(self, skeleton):
        """Refuse a skeleton this model was not trained on, naming the joints that differ."""
        if skeleton.same_hierarchy(self.skeleton):
            return
        missing = [n for n in self.skeleton.names if n not in skeleton.names]
        extra = [n for n in skeleton.names if n not in self.skeleton.names]
        detail = (f"missing joints {missing[:5]}" if missing else "") + \
                 (f"{', ' if missing else ''}unknown joints {extra[:5]}" if extra else "")
        raise ModelError(f"the skeleton does not match model {self.name} "
                         f"({detail or 'same joints, different hierarchy or order'}); "
                         "choose a model trained on this skeleton or map the bones first")

    def __call__(self, gap):
        return self.fill(gap)

    def fill(self, gap, variation=0.0, seed=None, blend=None, noise=None):
        """The ``gap.length`` in-between frames of every gap: local rotations and translations.

        The target's velocity comes from ``gap.after`` when the gap has it; ``blend`` is the number
        of frames over which the target blend rises to 1 (default BLEND; the whole transition when
        it is shorter); ``variation`` the strength of the noise that makes variants, drawn from
        ``seed`` unless ``noise`` (B, noise_dim) is given.

        Where the model file says how to mirror its skeleton, each gap is filled twice in the one
        call, as it is and as its left/right mirror image (which the network was trained on too),
        and the two are averaged (see _averaged): they err differently, so the average errs less
        (benchmark L2P at 30 frames 4 % lower) for about 2 ms more a 30-frame fill (6.5 against 4.5
        ms in one bench-speed run). Where the network also learned to fill gaps backwards and the
        gap has a past context's worth of frames after its target, it is filled from that side
        too, and the two directions are averaged, each trusted more near the keys it set out from.
        """
        return self._fill(gap, 1, variation, seed, blend, noise)

    def variants(self, gap, k, variation=1.0, seed=None, blend=None, noise=None):
        """``k`` different transitions for each gap in one batched call: arrays (k, B, n, J, …);
        ``noise``, when given, (k * B, noise_dim)."""
        rot, pos = self._fill(gap, k, variation, seed, blend, noise)
        return rot.reshape((k, gap.batch) + rot.shape[1:]), pos.reshape((k, gap.batch) + pos.shape[1:])

    def _fill(self, gap, copies, variation, seed, blend, noise):
        """``copies`` fills of every gap, copy after copy: arrays (copies * B, n, J, …)."""
        self.check_skeleton(gap.skeleton)
        n = int(gap.length)
        if not 1 <= n <= self.max_gap:
            raise ModelError(f"a gap of {n} frames is outside what model {self.name} fills "
                             f"(1 to {self.max_gap}); add a key inside the gap or choose another model")
        arrays = [gap.past_rotations, gap.past_positions, gap.target_rotations, gap.target_positions]
        if gap.after_rotations is not None:
            arrays += [gap.after_rotations, gap.after_positions]
        if not all(np.isfinite(a).all() for a in arrays):
            raise ModelError("the keys around the gap contain NaN or infinite values; fix those keys first")
        rows = (copies * gap.batch, self.noise_dim)
        if noise is None:
            noise = np.random.default_rng(seed).standard_normal(rows) if variation else np.zeros(rows)
        noise = variation * np.asarray(noise)
        views = self._views(gap)
        rotations, positions = (self._generate(_stacked([views[0][0]] * copies), noise, blend) if len(views) == 1
                                else self._averaged(gap, views, copies, noise, blend))
        # signs continuous with the caller's own last key (the network saw them oriented its way)
        last = np.concatenate([gap.past_rotations[:, -1:]] * copies)
        return quat.unroll(np.concatenate([last, rotations], axis=1), axis=1)[:, 1:], positions

    def _views(self, gap):
        """The ways of looking at ``gap`` that this fill averages, as ``(gap seen so, mirrored,
        backwards)``: as it is; its left/right mirror image where the file says how to mirror the
        skeleton; each of those played backwards where the network also learned to fill a gap from
        its far side and a whole past context's worth of frames follows the target."""
        views = [(gap, False, False)]
        if self.mirror is not None:
            views.append((self._mirror_image(gap), True, False))
        if self.backward and gap.after_rotations is not None and gap.after_rotations.shape[1] >= self.past - 1:
            views += [(_backwards(g), mirrored, True) for g, mirrored, _ in views]
        return [(self._read(g), mirrored, backwards) for g, mirrored, backwards in views]

    def _read(self, gap):
        """``gap`` as the network reads it: exactly ``past`` frames before it (see _context) and the
        first frame after its target, so that views of one gap stack into one batch."""
        rot, pos = self._context(gap.past_rotations, gap.past_positions)
        after = ((None, None) if gap.after_rotations is None
                 else (gap.after_rotations[:, :1], gap.after_positions[:, :1]))
        return replace(gap, past_rotations=rot, past_positions=pos, after_rotations=after[0], after_positions=after[1])

    def _averaged(self, gap, views, copies, noise, blend):
        """The plain fills (no noise) of every view, taken back to the gap as it is and averaged (see
        _average), in one call of the network, ``copies`` times over. A variant (``noise`` not zero)
        keeps its own departure from the plain fill, put onto the average: the mean of noisy draws
        would make variants alike (a quarter less spread for K = 8 with the mirror image alone). The
        plain fills run once however many copies: K variants of B gaps are a batch of (K + V) B for
        V views."""
        b, varied = gap.batch, bool(np.any(noise))
        rot, pos = self._generate(_stacked([g for g, _, _ in views] + [views[0][0]] * (copies if varied else 0)),
                                  np.concatenate([np.zeros((len(views) * b, self.noise_dim))] + [noise] * varied),
                                  blend)
        trajectory = self.layout.trajectory
        ways = {}   # direction -> its fill, averaged with its mirror image's (which follows it in views)
        for i, (_, mirrored, backwards) in enumerate(views):
            fill = rot[i * b:(i + 1) * b], pos[i * b:(i + 1) * b]
            fill = reflect(*fill, self.mirror) if mirrored else fill
            fill = (fill[0][:, ::-1], fill[1][:, ::-1]) if backwards else fill
            ways[backwards] = _average(*ways[backwards], *fill, trajectory) if backwards in ways else fill
        mean_rot, mean_pos = (_average(*ways[False], *ways[True], trajectory, _backward_share(gap.length))
                              if True in ways else ways[False])
        tile = lambda a: np.concatenate([a] * copies)  # noqa: E731
        if not varied:
            return tile(mean_rot), tile(mean_pos)
        departure = quat.mul(rot[len(views) * b:], quat.inv(tile(rot[:b])))
        return quat.mul(departure, tile(mean_rot)), tile(mean_pos) + pos[len(views) * b:] - tile(pos[:b])

    def _mirror_image(self, gap):
        """``gap`` mirrored left/right."""
        past = reflect(gap.past_rotations, gap.past_positions, self.mirror)
        target = reflect(gap.target_rotations, gap.target_positions, self.mirror)
        after = (None, None) if gap.after_rotations is None else reflect(gap.after_rotations, gap.after_positions,
                                                                          self.mirror)
        return replace(gap, past_rotations=past[0], past_positions=past[1], target_rotations=target[0],
                       target_positions=target[1], after_rotations=after[0], after_positions=after[1])

    def _generate(self, gap, noise, blend):
        """The network's blended frames for ``gap`` (B gaps) with variation ``noise`` (B, noise_dim)."""
        n = int(gap.length)
        after = gap.after
        rot, pos = self._context(gap.past_rotations, gap.past_positions)
        parents, lay = self.skeleton.parents, self.layout
        turn, origin = canonical_frame(rot[:, -1], pos[:, -1], parents, lay)
        rot, pos = move(rot, pos, turn, origin)
        t_rot, t_pos = move(gap.target_rotations[:, None], gap.target_positions[:, None], turn, origin)
        if after is not None:
            a_rot, a_pos = move(after[0][:, None], after[1][:, None], turn, origin)
        rot, t_rot, a_rot = orient(rot, t_rot[:, 0], None if after is None else a_rot[:, 0])
        t_pos = t_pos[:, 0]
        if after is not None:
            after = (a_rot, a_pos[:, 0])
        past = frame_features(rot, pos, parents, lay)
        target = target_features(t_rot, t_pos, parents, lay, after)
        frames = self.session.run(["frames"], {
            "past": ((past - self.frame_mean) / self.frame_std).astype(np.float32),
            "target": ((target - self.target_mean) / self.target_std).astype(np.float32),
            "gap": np.array(n, dtype=np.int64),
            "noise": noise.astype(np.float32),
        })[0].astype(np.float64) * self.frame_std + self.frame_mean
        key = target[:, :lay.frame_dim]   # the key's own frame features
        after_key = None if after is None else frame_features(*after, parents, lay)
        frames = end_blend(target_blend(start_blend(frames, past), key, blend), key, after_key)
        rotations, positions = decode_features(frames[:, :n], pos[:, -1:], parents, lay)
        return unmove(rotations, positions, turn, origin)

    def _context(self, rotations, positions):
        """Exactly ``past`` frames: the last ones, or the first repeated when fewer exist."""
        have = rotations.shape[1]
        if have == 0:
            raise ModelError("a gap needs at least one key before it")
        if have >= self.past:
            return rotations[:, -self.past:], positions[:, -self.past:]
        pad = self.past - have
        return (np.concatenate([np.repeat(rotations[:, :1], pad, axis=1), rotations], axis=1),
                np.concatenate([np.repeat(positions[:, :1], pad, axis=1), positions], axis=1))


def _stacked(gaps):
    """Gaps of one length as one batch, in order (a single gap as it is: no copy on a fill's path)."""
    if len(gaps) == 1:
        return gaps[0]
    return replace(gaps[0], **{name: None if getattr(gaps[0], name) is None else
                               np.concatenate([getattr(g, name) for g in gaps]) for name in _GAP_ARRAYS})


def _backwards(gap):
    """``gap`` played backwards: its target key and the frames after it are the past, the last key
    before it the target, and the frames before that key the frames after."""
    after_rot, after_pos = gap.past_rotations[:, -2::-1], gap.past_positions[:, -2::-1]
    return Gap(gap.skeleton, np.concatenate([gap.after_rotations[:, ::-1], gap.target_rotations[:, None]], axis=1),
               np.concatenate([gap.after_positions[:, ::-1], gap.target_positions[:, None]], axis=1),
               gap.past_rotations[:, -1], gap.past_positions[:, -1], gap.length,
               *((after_rot, after_pos) if after_rot.shape[1] else (None, None)))


def _backward_share(n):
    """How much of the backward fill goes into the mean on each of ``n`` frames: BACKWARD_SHARE at
    the keys on either side, linear between."""
    return np.interp(np.arange(1, n + 1) / (n + 1), [0.0, 1.0], BACKWARD_SHARE)


def _average(rotations, positions, other_rotations, other_positions, trajectory, share=0.5):
    """The mean of two fills of the same gaps: rotations (B, n, J, 4) normalised after taking the
    other's in the sign nearer each, and the trajectory joint's translation; other translations are
    the first fill's (the network does not generate them).

    Where the two fills part ways, as when one turns the character round to the left and the other
    to the right, their mean is neither and jumps where they are half a turn apart: a gap whose two
    fills differ anywhere (any joint, any frame) by more than AGREEMENT[0] degrees is
    averaged less, and beyond AGREEMENT[1] not at all (one weight a gap: no pop in time).
    ``share``: the other's part of the mean, one for every frame or one for each (n,).
    """
    dot = np.sum(rotations * other_rotations, axis=-1)
    other_rotations = np.where((dot < 0)[..., None], -other_rotations, other_rotations)
    worst = 2 * np.degrees(np.arccos(np.minimum(np.abs(dot), 1.0))).max(axis=(1, 2))
    full, none = AGREEMENT
    weight = np.clip((none - worst) / (none - full), 0.0, 1.0)[:, None, None] * np.reshape(share, (1, -1, 1))
    positions = positions.copy()
    positions[..., trajectory, :] += weight * (other_positions[..., trajectory, :] - positions[..., trajectory, :])
    return quat.normalize(rotations + weight[..., None] * (other_rotations - rotations)), positions


def start_blend(frames, past, length=None):
    """ỹ_t = ŷ_t + ω_t (2 x₀ − x₋₁ − ŷ₁), ω falling linearly from 1 on the first generated frame
    to 0 after ``length`` frames (default START_BLEND): frames (B, T, 3 + 4J) and the past frames
    (B, P, 3 + 4J) as raw features, signs continuous (see features.orient).

    The first frame is moved to where the last key's velocity carries it, and the correction fades
    out, the way the target blend fades one in. The network's own first frame lies nearly three
    times as far from the truth as that straight continuation (benchmark L2P 0.27 against 0.10),
    and an animator sees it as a hitch on the key: each joint's velocity jumps there by 1.7 cm a
    frame against the capture's 0.5; 0.2 with this blend. Where the past is one repeated frame (a
    key at the start of a clip) the continuation is the key held still.
    """
    length = START_BLEND if length is None else int(length)
    if length < 1 or past.shape[1] < 2:
        return frames
    miss = 2 * past[:, -1] - past[:, -2] - frames[:, 0]
    weight = _like(np.clip(1.0 - np.arange(frames.shape[1]) / length, 0.0, 1.0), frames)
    return frames + weight[None, :, None] * miss[:, None]


def target_blend(frames, target, blend=None):
    """ỹ_t = ŷ_t + ω_t (y_T − ŷ_T), ω rising linearly to 1 on the last frame over ``blend`` frames
    (default BLEND): frames (B, T, 3 + 4J) and the target key (B, 3 + 4J) as raw features, its
    quaternions taken in the sign of the last frame's."""
    steps = frames.shape[1]
    blend = int(np.clip(BLEND if blend is None else blend, 1, steps))
    error = _signed_like(target, frames[:, -1]) - frames[:, -1]
    weight = _like(np.clip((np.arange(1, steps + 1) - (steps - blend)) / blend, 0.0, 1.0), frames)
    return frames + weight[None, :, None] * error[:, None]


def end_blend(frames, target, after):
    """ỹ_t = ŷ_t + ω_t (2 y_T − y_{T+1} − ŷ_{T−1}), ω rising linearly over the whole gap to 1 on
    its last frame: the start blend's mirror image, where the frame after the target key is known.
    The last in-between frame is moved to where the key's velocity says the motion comes from, so
    that it runs into the key without a hitch. frames (B, T, 3 + 4J) after the target blend (the
    last is the key), the key and the frame after it (B, 3 + 4J) as raw features, their quaternions
    taken in the sign of the last frame's.

    On the held-out tenth of LaFAN1's training subjects, of blends over 4, 10, 20, 30 and 45 frames
    and over the whole gap, the whole gap gave the lowest errors at gaps of 5 and 45 frames and was
    within 0.3 % of the lowest at 15 and 30 (position RMS at 5 / 15 / 30 / 45 frames 0.160 / 0.630 /
    1.124 / 1.652 without it, 0.141 / 0.591 / 1.100 / 1.616 with it); a fixed 20 frames or more
    lost at 5. On rtn-bandai1's held-out tenth it lowered every error too (positions at 30 frames
    4.487 -> 4.334).
    """
    if after is None:
        return frames
    steps = frames.shape[1]   # the gap's frames and the key: two at least
    last = frames[:, -1]
    miss = 2 * _signed_like(target, last) - _signed_like(after, last) - frames[:, -2]
    weight = np.arange(1, steps + 1) / (steps - 1)
    weight[-1] = 0.0   # the key itself stays
    return frames + _like(weight, frames)[None, :, None] * miss[:, None]


def _signed_like(features, reference):
    """Raw features (B, 3 + 4J) with each quaternion in the sign nearer ``reference``'s."""
    b = features.shape[0]
    q, r = features[:, 3:].reshape(b, -1, 4), reference[:, 3:].reshape(b, -1, 4)
    flipped = (q * r).sum(-1)[..., None] < 0
    signed = features * 1.0   # a copy, of numpy's kind or torch's
    signed[:, 3:] = (q - 2 * flipped * q).reshape(b, -1)
    return signed


def _like(weights, frames):
    """Numpy ``weights`` as an array of the kind of ``frames``: numpy, or a torch tensor where
    training measures its loss on the blended frames (the blends are plain arithmetic otherwise)."""
    return weights if isinstance(frames, np.ndarray) else frames.new_tensor(weights)


def gap_in(motion, start, end, past, after=None):
    """The gap of ``motion`` strictly between key frames ``start`` and ``end``, as a batch of one,
    with up to ``after`` frames after ``end`` (default ``past``) where the motion has them."""
    if not 0 <= start < end < motion.n_frames:
        raise ModelError(f"{motion.name}: the keys {start}:{end} are not two frames of its "
                         f"{motion.n_frames} (0 to {motion.n_frames - 1}) in order")
    if end - start < 2:
        raise ModelError(f"{motion.name}: no frame lies strictly between keys {start} and {end}")
    first = max(0, start + 1 - past)
    r, p = motion.rotations, motion.positions
    last = min(motion.n_frames, end + 1 + (past if after is None else after))
    after = (r[None, end + 1:last], p[None, end + 1:last]) if last > end + 1 else (None, None)
    return Gap(motion.skeleton, r[None, first:start + 1], p[None, first:start + 1], r[None, end], p[None, end],
               end - start - 1, *after)


def frames_after(gaps, most):
    """Per ``(start, end)`` gap, how many frames after its end key are the user's, up to ``most``:
    those before the first that one of ``gaps`` generates, as where gaps follow one another
    (superres, Blender's Decompress: none), since a frame about to be replaced says nothing of the
    motion through the key."""
    generated = {f for start, end in gaps for f in range(start + 1, end)}
    return [next((k for k in range(most) if end + 1 + k in generated), most) for _, end in gaps]


def fill_gaps(model, motion, gaps, progress=None, **kwargs):
    """``motion`` with the frames strictly inside each ``(start, end)`` key pair generated, in order,
    each gap's past context taken from the frames generated before it (Harvey & Pal 2018, §7.4).

    A gap reads the frames after its end key that are the user's (:func:`frames_after`).
    ``progress(done, total)`` is called after each gap (it may raise to stop the work).
    """
    out = replace(motion, rotations=motion.rotations.copy(), positions=motion.positions.copy())
    for i, ((start, end), after) in enumerate(zip(gaps, frames_after(gaps, model.past))):
        rot, pos = model.fill(gap_in(out, start, end, model.past, after), **kwargs)
        out.rotations[start + 1:end], out.positions[start + 1:end] = rot[0], pos[0]
        if progress is not None:
            progress(i + 1, len(gaps))
    return replace(out, rotations=quat.unroll(out.rotations))


def superres(model, motion, every, **kwargs):
    """Dense motion from the keys every ``every`` frames of ``motion`` (and its last frame), read
    alone: the frames between them are the ones to generate."""
    if every < 2:
        raise ModelError(f"keys every {every} frames leave nothing to fill; use 2 or more")
    keys = list(range(0, motion.n_frames, every))
    if motion.n_frames - 1 - keys[-1] >= 2:   # a last frame right after a key has nothing to fill
        keys.append(motion.n_frames - 1)
    if len(keys) < 2:
        raise ModelError(f"{motion.name}: a single frame holds no gap to fill")
    return fill_gaps(model, motion, list(zip(keys[:-1], keys[1:])), **kwargs)


def default_model(skeleton, folder=MODELS):
    """The shipped model trained on ``skeleton``, or an error that says how to choose one."""
    for path in sorted(Path(folder).glob("*.onnx")):
        model = TransitionModel(path)
        if skeleton.same_hierarchy(model.skeleton):
            return model
    raise ModelError(f"no shipped model knows this skeleton ({len(skeleton)} joints, root "
                     f"{skeleton.names[0]!r}); pass --model FILE with a model trained on it")

