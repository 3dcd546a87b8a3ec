"""The RTN runtime: one ONNX transition model serving fill, decompress and variants.

Every request is a batch of :class:`~..transition.Gap` s of one length (gaps of several lengths are
grouped), run as one call of the network's whole-transition graph, then put onto the keys by the
start, target and end blends (:mod:`.blends`). Where the file carries its skeleton's left/right
reflections, the same call also fills each gap's mirror image, and where its network learned gaps
played backwards, the gap (and its mirror image) from its far side; a fill is the mean of those
views where they agree.
"""

from dataclasses import replace

import numpy as np

from .. import quat
from ..features import Layout, canonical_frame, decode_features, frame_features, move, orient, target_features, unmove
from ..mirror import mirror_map, reflect, reflection, world_reflection
from ..modelfile import Model, ModelError, session as onnx_session
from ..motion import AXES
from ..transition import Gap, held, stacked
from .blends import end_blend, end_ramp, start_blend, start_ramp, target_blend, target_ramp

# Degrees by which two fills of a gap (mirror image, backwards) may differ (see _average): averaged
# fully up to the first, not at all beyond the second (rotations half a turn apart have no mean).
AGREEMENT = (60.0, 90.0)
# The backward fill's part of the mean of the two directions at the keys on either side of a gap,
# linear in time between: each direction is surer near the keys it set out from. Symmetric, so that
# a motion played backwards is filled as the fill played backwards.
BACKWARD_SHARE = (0.1, 0.9)
# The share of the root's ground path that a plain fill between the animator's own frames takes from
# the spline through the keys' velocities (see ..transition.toward_spline), the network's path giving
# the rest: on LaFAN1's test subject the mean errs no more than the network, on motion it never saw
# (Bandai-1's walks) the network's path can leave the keys' momentum and errs up to four times the
# spline's (docs/experiments.md).
SPLINE = 0.75
# The share between sparse keys (Decompress), where the frames next to a key are generated and the
# spline's tangents come from the keys either side: on motion the network never saw it keeps the root
# nearer Bezier's path, on LaFAN1's test subject it costs little (docs/experiments.md).
KEY_SPLINE = 0.25
# Seconds over which a transformer's variant departs from the plain fill after the last key (see _departing).
DEPARTURE = 0.5
# A call of WIDE_ROWS gaps or more (Decompress's rounds, many variants) runs in a session of WIDE_THREADS threads
# of its own, made on first use: the same numbers to the bit, 1.6-1.7x as fast from 28 rows up on two cores. A
# single gap's few rows stay on one thread, where splitting the small operators costs more than it gains.
WIDE_ROWS = 16
WIDE_THREADS = 2


class RTNModel(Model):
    """An RTN model file, checked and ready (opened by :func:`..modelfile.open_model`): ``model(gap)``
    is a method for the benchmark."""

    TITLE = "In-betweening (RTN)"
    SERVES = ("fill", "decompress", "variants")

    def __init__(self, file, session, symmetric=True, both_ways=True, wide=WIDE_THREADS):
        """``file``: the :class:`..modelfile.ModelFile`; ``symmetric``: average each fill with its
        mirror image's where the file allows (see fill); ``both_ways``: with the gap filled
        backwards too, where the file allows. Each view adds one gap to the network's batch. ``wide``: the
        threads of a call of WIDE_ROWS gaps or more (1: the file's own session)."""
        super().__init__(file, session)
        self.wide, self._wide = wide, None
        norm = file.normalisation
        try:
            self.layout = Layout(**file.json("betwixt.layout"))
            self.frame_mean, self.frame_std = norm["frame_mean"], norm["frame_std"]
            self.target_mean, self.target_std = norm["target_mean"], norm["target_std"]
            self.past = int(file.json("betwixt.config")["past"])
            self.max_gap = int(file.json("betwixt.gaps")["max"])
            self.noise_dim = session.get_inputs()[3].shape[-1]
        except (KeyError, TypeError, IndexError) as e:
            raise ModelError(f"{file.path}: incomplete model metadata ({e}); export it again") from None
        if len(self.frame_mean) != self.layout.frame_dim or len(self.target_mean) != self.layout.target_dim:
            raise ModelError(f"{file.path}: normalisation does not match the feature layout; export it again")
        self.mirror = None
        self.spline, self.key_spline = SPLINE, KEY_SPLINE
        self.backward = both_ways and file.metadata.get("betwixt.backward") == "true"
        # a transformer reads the whole window at once, and carries every frame's noise to the first (see _departing)
        self.departure = DEPARTURE if file.json("betwixt.config").get("network") == "transformer" else 0.0
        if symmetric and "betwixt.mirror" in file.metadata:
            reflections = np.asarray(file.json("betwixt.mirror")["reflections"], dtype=np.float64)
            self.mirror = reflection(self.skeleton.parents, mirror_map(self.skeleton.names),
                                     world_reflection(AXES[self.layout.up]), reflections)

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
        and the two are averaged (see _averaged): they err differently, so the average errs less,
        for one more gap in the network's batch (docs/experiments.md). Where the network also learned to fill gaps backwards and the
        gap has a past context's worth of frames after its target, it is filled from that side
        too, and the two directions are averaged, each trusted more near the keys it set out from.
        """
        return self._fill(gap, 1, variation, seed, blend, noise)[:2]

    def fill_parted(self, gap, variation=0.0, seed=None, blend=None, noise=None):
        """:meth:`fill`'s frames and (B,) each gap's parting: the most its views' fills (as it is, mirrored,
        backwards) turn any joint apart on any frame, in degrees (0 where one view fills it). Where they part
        by more than AGREEMENT[0] the model is unsure of the gap: its fill errs more there, most such gaps among
        the worst it fills (docs/experiments.md, "Mixamo's dance at 0.5 s"), a place for the animator to look."""
        return self._fill(gap, 1, variation, seed, blend, noise)

    def variants(self, gap, k, variation=1.0, seed=None, blend=None, noise=None):
        """``k`` different transitions for each gap in one batched call: arrays (k, B, n, J, …);
        ``noise``, when given, (k * B, noise_dim)."""
        rot, pos, _ = self._fill(gap, k, variation, seed, blend, noise)
        return rot.reshape((k, gap.batch) + rot.shape[1:]), pos.reshape((k, gap.batch) + pos.shape[1:])

    def _fill(self, gap, copies, variation, seed, blend, noise):
        """``copies`` fills of every gap, copy after copy: arrays (copies * B, n, J, …), and each gap's
        parting (B,) (:meth:`fill_parted`)."""
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
        rotations, positions, parting = self._averaged(gap, self._views(gap), copies, noise, blend)
        last = np.concatenate([gap.past_rotations[:, -1:]] * copies)
        if not variation:   # a plain fill of a hold holds (variants of it still vary)
            hold = np.tile(held(gap, self.layout.height), copies)
            rotations[hold] = last[hold]
            positions[hold] = np.concatenate([gap.past_positions[:, -1:]] * copies)[hold]
        # signs continuous with the caller's own last key (the network saw them oriented its way)
        return quat.unroll(np.concatenate([last, rotations], axis=1), axis=1)[:, 1:], positions, parting

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
        _average), in one call of the network, ``copies`` times over, and each gap's parting (B,). A
        variant (``noise`` not zero) keeps its own departure from the plain fill, put onto the average:
        the mean of noisy draws would make variants alike. A transformer's departure rises from none over
        the first :data:`DEPARTURE` seconds (:func:`_departing`). The plain fills run once however many copies: K
        variants of B gaps are a batch of (K + V) B for V views."""
        b, varied = gap.batch, bool(np.any(noise))
        rot, pos = self._generate(stacked([g for g, _, _ in views] + [views[0][0]] * (copies if varied else 0)),
                                  np.concatenate([np.zeros((len(views) * b, self.noise_dim))] + [noise] * varied),
                                  blend)
        trajectory = self.layout.trajectory
        ways, parting = {}, np.zeros(b)   # direction -> its fill, averaged with its mirror image's (after it)
        for i, (_, mirrored, backwards) in enumerate(views):
            fill = rot[i * b:(i + 1) * b], pos[i * b:(i + 1) * b]
            fill = reflect(*fill, self.mirror) if mirrored else fill
            fill = (fill[0][:, ::-1], fill[1][:, ::-1]) if backwards else fill
            if backwards in ways:
                apart = _parting(ways[backwards][0], fill[0])
                parting = np.maximum(parting, apart[1])
                fill = _average(*ways[backwards], *fill, trajectory, apart)
            ways[backwards] = fill
        mean_rot, mean_pos = ways[False]
        if True in ways:
            apart = _parting(mean_rot, ways[True][0])
            parting = np.maximum(parting, apart[1])
            mean_rot, mean_pos = _average(mean_rot, mean_pos, *ways[True], trajectory, apart,
                                          _backward_share(gap.length))
        tile = lambda a: np.concatenate([a] * copies)  # noqa: E731
        if not varied:
            return tile(mean_rot), tile(mean_pos), parting
        turn = quat.mul(rot[len(views) * b:], quat.inv(tile(rot[:b])))
        shift = pos[len(views) * b:] - tile(pos[:b])
        if self.departure:
            rise = _departing(gap.length, self.layout.fps, self.departure)[None, :, None]
            turn, shift = quat.slerp(np.array([1.0, 0.0, 0.0, 0.0]), turn, rise), rise[..., None] * shift
        return quat.mul(turn, tile(mean_rot)), tile(mean_pos) + shift, parting

    def _mirror_image(self, gap):
        """``gap`` mirrored left/right (its frames in one call: each is mirrored alone)."""
        has_after = gap.after_rotations is not None
        rot = [gap.past_rotations, gap.target_rotations[:, None]] + [gap.after_rotations] * has_after
        pos = [gap.past_positions, gap.target_positions[:, None]] + [gap.after_positions] * has_after
        rot, pos = reflect(np.concatenate(rot, axis=1), np.concatenate(pos, axis=1), self.mirror)
        p = gap.past_rotations.shape[1]
        after = (rot[:, p + 1:], pos[:, p + 1:]) if has_after else (None, None)
        return replace(gap, past_rotations=rot[:, :p], past_positions=pos[:, :p], target_rotations=rot[:, p],
                       target_positions=pos[:, p], after_rotations=after[0], after_positions=after[1])

    def _generate(self, gap, noise, blend):
        """The network's blended frames for ``gap`` (B gaps) with variation ``noise`` (B, noise_dim)."""
        n = int(gap.length)
        after = gap.after
        rot, pos = self._context(gap.past_rotations, gap.past_positions)
        parents, lay = self.skeleton.parents, self.layout
        turn, origin = canonical_frame(rot[:, -1], pos[:, -1], parents, lay)
        keys = [(gap.target_rotations, gap.target_positions)] + ([after] if after is not None else [])
        p = rot.shape[1]   # the past and the keys moved in one call: each frame is moved alone
        moved, placed = move(np.concatenate([rot] + [r[:, None] for r, _ in keys], axis=1),
                             np.concatenate([pos] + [q[:, None] for _, q in keys], axis=1), turn, origin)
        rot, t_rot, a_rot = orient(moved[:, :p], moved[:, p], None if after is None else moved[:, p + 1])
        pos, t_pos = placed[:, :p], placed[:, p]
        if after is not None:
            after = (a_rot, placed[:, p + 1])
        past = frame_features(rot, pos, parents, lay)
        target = target_features(t_rot, t_pos, parents, lay, after)
        frames = self._session(len(past)).run(["frames"], {
            "past": ((past - self.frame_mean) / self.frame_std).astype(np.float32),
            "target": ((target - self.target_mean) / self.target_std).astype(np.float32),
            "gap": np.array(n, dtype=np.int64),
            "noise": noise.astype(np.float32),
        })[0].astype(np.float64) * self.frame_std + self.frame_mean
        key = target[:, :lay.frame_dim]   # the key's own frame features
        steps = frames.shape[1]
        frames = target_blend(start_blend(frames, past, start_ramp(steps)), key, target_ramp(steps, blend))
        if after is not None:
            frames = end_blend(frames, key, frame_features(*after, parents, lay), end_ramp(steps))
        rotations, positions = decode_features(frames[:, :n], pos[:, -1:], parents, lay)
        return unmove(rotations, positions, turn, origin)

    def _session(self, rows):
        """The onnxruntime session for a call of ``rows`` gaps (see WIDE_ROWS)."""
        if rows < WIDE_ROWS or self.wide <= 1:
            return self.session
        if self._wide is None:
            self._wide = onnx_session(self.file.path, self.wide)
        return self._wide

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


def _backwards(gap):
    """``gap`` played backwards: its target key and the frames after it are the past, the last key
    before it the target, and the frames before that key the frames after (a key at the clip's
    start, with none before it, held, as :meth:`RTNModel._context` holds it going forwards)."""
    after_rot, after_pos = gap.past_rotations[:, -2::-1], gap.past_positions[:, -2::-1]
    if not after_rot.shape[1]:
        after_rot, after_pos = gap.past_rotations[:, -1:], gap.past_positions[:, -1:]
    return Gap(gap.skeleton, np.concatenate([gap.after_rotations[:, ::-1], gap.target_rotations[:, None]], axis=1),
               np.concatenate([gap.after_positions[:, ::-1], gap.target_positions[:, None]], axis=1),
               gap.past_rotations[:, -1], gap.past_positions[:, -1], gap.length, after_rot, after_pos)


def _departing(n, fps, seconds):
    """(n,) how much of a variant's departure from the plain fill each of ``n`` frames keeps: none on the frame
    after the last key, rising (a smoothstep, so that it leaves with the key's velocity) to all of it at
    ``seconds``. A transformer's noise reaches every frame at once (its
    attention carries every frame's noise to the first), and its variants left a walk kicking its joints at up
    to 2.5 times the walk's own acceleration at the cut; an RTN's noise enters its recurrent state a frame at a
    time, and its own variants leave as they are (docs/experiments.md, "Nearly straight legs under Plant
    Feet")."""
    x = np.clip(np.arange(1, n + 1) / (seconds * fps), 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _backward_share(n):
    """How much of the backward fill goes into the mean on each of ``n`` frames: BACKWARD_SHARE at
    the keys on either side, linear between."""
    return np.interp(np.arange(1, n + 1) / (n + 1), [0.0, 1.0], BACKWARD_SHARE)


def _average(rotations, positions, other_rotations, other_positions, trajectory, parting, share=0.5):
    """The mean of two fills of the same gaps: rotations (B, n, J, 4) normalised after taking the
    other's in the sign nearer each, and the trajectory joint's translation; other translations are
    the first fill's (the network does not generate them).

    Where the two fills part ways, as when one turns the character round to the left and the other
    to the right, their mean is neither and jumps where they are half a turn apart: a gap whose two
    fills differ anywhere (any joint, any frame) by more than AGREEMENT[0] degrees is
    averaged less, and beyond AGREEMENT[1] not at all (one weight a gap: no pop in time).
    ``parting``: the two's rotations' dot products and how far they part (:func:`_parting`, which the caller
    has measured already); ``share``: the other's part of the mean, one for every frame or one for each (n,).
    """
    dot, worst = parting
    other_rotations = np.where((dot < 0)[..., None], -other_rotations, other_rotations)
    full, none = AGREEMENT
    weight = np.clip((none - worst) / (none - full), 0.0, 1.0)[:, None, None] * np.reshape(share, (1, -1, 1))
    positions = positions.copy()
    positions[..., trajectory, :] += weight * (other_positions[..., trajectory, :] - positions[..., trajectory, :])
    return quat.normalize(rotations + weight[..., None] * (other_rotations - rotations)), positions


def _parting(rotations, other_rotations):
    """``(dot (B, n, J), degrees (B,))``: two fills' (B, n, J, 4) of the same gaps rotations' dot products, and the
    most they turn any joint apart on any frame."""
    dot = np.sum(rotations * other_rotations, axis=-1)
    return dot, 2 * np.degrees(np.arccos(np.minimum(np.abs(dot), 1.0))).max(axis=(1, 2))
