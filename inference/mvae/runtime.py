"""The Motion VAE runtime: continuations of a pose by a random walk in the latent space (Ling et al.
2020, §4.1), several at once; variants of a gap that reach its key and paths followed, by
sampling-based control (§4.2, :mod:`.control`).

From a pose of a motion (and the frame before it, which its velocities need), every frame of K
continuations is one onnxruntime call of batch K: each continuation's last pose and a z drawn from
N(0, I) give its next pose, kept within the training data's range of every value (widened by
RANGE_MARGIN) and stood on the floor (:mod:`.floor`). The range is what keeps a long walk finite: a
roll-out fed its own slightly-off poses can wander where the network never learned anything, and there
its errors compound each frame until the pose is no longer a number; held near the data, it gets up
and walks on (docs/experiments.md, "A long walk kept near the data"). The poses then go back to motions
(:func:`.features.motion_of`): the root integrated from where the start stood, each joint's rotation
from its forward and up vectors, at the model's frame rate; walks and paths then with the hips' track
smoothed and the feet held where the poses stood them (:mod:`.stance`).
"""

import base64
from dataclasses import replace
from functools import cached_property

import numpy as np

from .. import quat
from ..anatomy import legs
from ..contacts import GROUND, plant
from ..ends import ends
from ..inbetween import floor
from ..mann.path import Path, check, desired, paced
from ..modelfile import Model, ModelError, Placement, session
from ..motion import Motion, forward_kinematics
from .control import (BEHIND, COMMIT, FOLLOWERS, HORIZON, STEER, along, candidates, diverse, drawn, misses, onto_key,
                      steered)
from .features import fields, hips_pair, motion_of, poses, root_path
from .floor import STANDS, Legs
from .stance import settled, stood, stopped

MAX_K = 256             # continuations of one request
MAX_VARIANTS = 64       # variants of one gap
MAX_FRAMES = 36_000     # frames of one continuation: 20 minutes at 30 fps
MAX_GAP = 4.0           # s: the longest gap its variants span (the control is tuned on gaps of 1 and 2 s)
MAX_TOTAL = 1_000_000   # generated frames of one request (poses of 267 values: 2 GiB in float64)
MAX_PATH = 300.0        # s: the longest path followed in one request (its sampling control takes about 1.5 s a
                        # second of path on two cores: 5 minutes of path, 7 or 8 minutes)
PAST = 1.0              # s: the frames up to a start (and around a key) whose feet find the floor
SETTLE = 1.0            # s: without a start pose, the data's mean pose stands still this long first
START_EASE = 0.5        # s: a variant's first step eased over this long, or half its gap (experiments.md)
STANDING = 1.6          # m: a standing adult's height, for paths given in metres
RANGE_MARGIN = 0.25     # of each pose value's training range, how far past it a generated value may go
FASTEST = 6.0           # m/s: paths are slowed to this; LaFAN1's fastest frame moves the hips 5.8 m/s, and
                        # the roll-outs cannot keep to a faster path
LEG_SHARE = 0.55        # a leg (hip to ankle joint) of the body's height as the RTN measures it (LaFAN1: 85.9 / 157.9)


class MVAEModel(Model):
    """A Motion VAE model file, checked and ready (opened by :func:`..modelfile.open_model`)."""

    TITLE = "Continuations (Motion VAE)"
    SERVES = ("continue", "variants", "follow-path")
    floored = True   # the floor step stands every pose on the floor (floor.py)

    def __init__(self, file, session):
        super().__init__(file, session)
        try:
            self.pose_layout = file.json("betwixt.layout")
            self.latent = int(file.metadata["betwixt.latent"])
            self.fps = float(file.fps)
            self.pair = tuple(self.skeleton.index(name) for name in self.pose_layout["facing"])
            size = int(self.pose_layout["size"])
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{file.path}: incomplete model metadata ({e}); export it again") from None
        stats = [file.normalisation.get(name, ()) for name in ("pose_mean", "pose_std", "pose_min", "pose_max")]
        if any(len(values) != size for values in stats) or hips_pair(self.skeleton) != self.pair:
            raise ModelError(f"{file.path}: normalisation or facing does not match the pose layout; export it again")
        low, high = stats[2:]
        self.bounds = low - RANGE_MARGIN * (high - low), high + RANGE_MARGIN * (high - low)
        self.legs = Legs.of(self.skeleton)
        # each joint's lowest height in the training data, which the floor step holds it at
        self.least = None if self.legs is None else np.maximum(low[self.legs.heights], self.floor)
        self.past = int(round(PAST * self.fps))
        self.max_gap = int(round(MAX_GAP * self.fps))
        self.layout = Placement(trajectory=0, up=1, height=_height(self.skeleton), fps=self.fps)
        self.units_per_metre = self.layout.height / STANDING
        self.top_speed = FASTEST * self.units_per_metre   # units a second
        self.actions = ("idle", "move")   # what a path may name; the Motion VAE goes by its positions alone
        self._encoder = None

    def walk(self, motion, frame, frames, k=1, seed=None, grounded=True, progress=None):
        """K random walks of ``frames`` frames from ``frame`` of ``motion`` (a frame number of the motion as
        given; it and the frame before it are the start): K motions at the model's frame rate, each the motion
        up to ``frame`` then the generated frames. ``seed``: a numpy Generator's seed (None: fresh).

        The walks stand on the floor under the start's feet (the lowest they reach in the second up to it),
        which the network sees as its own (``floor``); ``grounded``: each generated pose stood on it, its
        root stepped by its standing feet (:mod:`.floor`), and the walk's hips smoothed and its feet held
        where the poses stood them (:mod:`.stance`). A walk whose network output is not finite (a start beyond the
        network's 32-bit inputs) is refused (:class:`BlewUp`) rather than returned with NaN. ``progress(done,
        total)`` is called after every second of frames generated (it may raise to stop)."""
        motion, frame = self._start(motion, frame, frames, k)
        level = floor(motion.frames(max(0, frame + 1 - self.past), frame + 1), []) - self.floor
        start, origin, theta = poses(_lowered(motion.frames(frame - 1, frame + 1), level), self.pair)
        rng = np.random.default_rng(seed)
        walked = self._rollout(np.repeat(start, k, axis=0), frames,
                               lambda t: rng.standard_normal((k, self.latent), dtype=np.float32), grounded,
                               progress=progress)
        broken = ~np.isfinite(walked).all(axis=-1)
        if broken.any():
            i, t = np.argwhere(broken)[0]
            raise BlewUp(f"walk {i + 1} of model {self.name} blew up at its generated frame {t + 1} of {frames} "
                         "(the network's output is no longer finite there); start from another frame, ask for "
                         "fewer frames or another seed, or use a model trained to stay stable")
        made = [self._joined(motion, frame, walked[i].astype(np.float64), origin[1], theta[1], level, i)
                for i in range(k)]
        return [self._settled(m, walked[i], frame + 1) for i, m in enumerate(made)] if grounded else made

    def planted(self, walk, frames):
        """``walk`` (a motion of :meth:`walk`, or any whose last ``frames`` frames were generated after the
        rest) with those frames' feet planted (:func:`..contacts.plant`), the model's past before them (a
        second) their context, where they find their ground with the generated frames and the contacts
        they carry on: as Continue plants a continuation, whatever the length of the motion before it."""
        start = walk.n_frames - frames - 1
        first = max(start + 1 - self.past, 0)
        done = plant(walk.frames(first), [(start - first, walk.n_frames - first)], self.layout.height)
        return replace(walk, rotations=np.concatenate([walk.rotations[:first], done.rotations]))

    def variants(self, gap, k, variation=1.0, seed=None, blend=None, noise=None):
        """``k`` different transitions of every gap of ``gap`` (a batch of B, see :func:`..inbetween.gap_in`)
        that reach its key, as :meth:`..rtn.runtime.RTNModel.variants` gives them: local rotations (k, B, n,
        J, 4) and translations (k, B, n, J, 3). Sampling-based control (:mod:`.control`): C =
        ``candidates(k)`` roll-outs of a gap run from its last two frames to the key's frame, z ``variation``
        times N(0, I) drawn from ``seed`` (or ``noise`` (B * C, n + 1, latent) when given), the floor step
        on the floor of the frames around the gap; the k that end nearest the key and differ most are
        put onto it by the target blend over ``blend`` frames (default: the whole gap, the model's own), and
        eased out of the key before it over START_EASE (:func:`..ends.ends`): the floor step stands the first
        pose on the model's floor whatever the key stood on, a step off the key that the capture does not take."""
        n, c = self._check_gap(gap, k)
        starts = [self._gap_start(gap, b) for b in range(gap.batch)]
        if noise is None:
            noise = np.random.default_rng(seed).standard_normal((gap.batch * c, n + 1, self.latent))
        z = (variation * np.asarray(noise)).astype(np.float32)

        def steer(so_far, left):   # each gap's roll-outs resampled among themselves
            return np.concatenate([b * c + steered(so_far[b * c:(b + 1) * c], s["root"], s["key"], left, self.fps,
                                                   self.layout.height) for b, s in enumerate(starts)])

        rolled = self._rollout(np.repeat(np.concatenate([s["pose"] for s in starts]), c, axis=0), n + 1,
                               lambda t: z[:, t], steer=steer).reshape(gap.batch, c, n + 1, -1)
        rotations = np.empty((k, gap.batch, n, len(self.skeleton), 4))
        positions = np.repeat(np.repeat(gap.past_positions[None, :, -1:], n, axis=2), k, axis=0)
        for b, start in enumerate(starts):
            score = misses(rolled[b], start["root"], start["key"], self.fps, self.layout.height)
            chosen = rolled[b, diverse(score, rolled[b], start["root"], self.fps, k)]
            made = [self._settled(motion_of(pose.astype(np.float64), *start["root"], self.skeleton, self.fps), pose, 0)
                    for pose in chosen]
            hips = np.stack([m.positions[:, 0] for m in made]) + [0.0, start["level"], 0.0]
            rot, hips = onto_key(np.stack([m.rotations for m in made]), hips, gap.target_rotations[b],
                                 gap.target_positions[b, 0], blend)
            if self.legs is not None:   # stood on the floor around the gap again, after the blend
                rot, hips = self._stood(rot, hips, gap.past_positions[b, -1], start["grounds"], start["floors"])
            # signs continuous with the caller's own last key
            last = np.repeat(gap.past_rotations[None, b, -1:], k, axis=0)
            rotations[:, b] = quat.unroll(np.concatenate([last, rot[:, :n]], axis=1), axis=1)[:, 1:]
            positions[:, b, :, 0] = hips[:, :n]
            # the roll-out's first step (onto the model's floor) eased against the key's motion, the legs that
            # stand kept on their feet
            rotations[:, b], positions[:, b] = ends(gap.rows([b] * k), rotations[:, b], positions[:, b], self.layout,
                                                    last=False, ease=min(round(START_EASE * self.fps), n // 2))
        return rotations, positions

    def timed(self, path):
        """``path`` as the character follows it: slowed where it is faster than the model goes
        (:func:`..mann.path.paced`), for at most MAX_PATH seconds."""
        return paced(path, self.top_speed, MAX_PATH)

    def follow(self, paths, start=None, progress=None):
        """One :class:`~..motion.Motion` per :class:`~..mann.path.Path` in ``paths`` (the model's units, Y
        up), as :meth:`..mann.runtime.MANNModel.follow` gives them: the model's skeleton following it at the
        model's frame rate from its first point, facing along it (or as the path says), for as long as it
        lasts. Sampling-based control (:func:`.control.along`), deterministic. ``start``: ``(motion,
        frame)``, or one per path, the pose to start from (it and the frame before it), placed at the
        path's start; None: the training data's mean pose after SETTLE s of standing still. A path
        faster than ``top_speed`` anywhere is slowed to it there (:func:`..mann.path.paced`).
        ``progress(done, total)`` is called after each COMMIT frames chosen; it may raise to stop."""
        for path in paths:
            check(path, self.actions, MAX_PATH)
        paths = [self.timed(p) for p in paths]
        wants = [desired(p, self.fps, HORIZON, self.actions, np.inf) for p in paths]
        starts = start if isinstance(start, list) else [start] * len(paths)
        if len(starts) != len(paths):
            raise ModelError(f"{len(starts)} start poses for {len(paths)} paths; give one, or one per path")
        if not paths:
            return []
        begun = [self._begun(s) for s in starts]
        roots = [(np.array([w.positions[0, 0], 0.0, w.positions[0, 1]]), w.facing) for w in wants]
        frames = max(w.frames for w in wants) - 1
        chosen = self._along(np.concatenate([b[0] for b in begun]), roots, wants, frames, progress)
        motions = []
        for (pose, level), root, w, path in zip(begun, roots, wants, paths):
            still = pose.copy()
            still[:, :3] = 0.0   # the start pose where the path starts, facing along it
            raw = np.concatenate([still, chosen[len(motions), :w.frames - 1]])
            made = motion_of(raw, *root, self.skeleton, self.fps, name=f"{self.name} following {path.source}")
            made.positions[:, 0, 1] += level
            moving = np.flatnonzero(np.linalg.norm(w.velocities[:w.frames], axis=-1) > 0)
            made = stopped(made, moving[-1] + 1 if len(moving) else 0)
            motions.append(self._settled(made, raw[1:], 1))
        return motions

    def _settled(self, motion, raw, first):
        """``motion``, whose frames from ``first`` on the raw poses ``raw`` (F - first, D) made, with its hips'
        track smoothed and its feet held where those poses stand (:func:`.stance.settled`), each foot joint
        on its own ground (an ankle stands higher than its toe), the GROUND percentile of its height there."""
        if self.legs is None:
            return motion
        grounds = np.percentile(raw[:, self.legs.heights][:, self.legs.feet], GROUND, axis=0)
        standing = np.zeros((motion.n_frames, len(self.legs.feet)), dtype=bool)
        standing[first:] = self.legs.stands(raw, grounds) >= 0.5
        return settled(motion, standing, first, self.layout.height)

    def _stood(self, rotations, hips, offsets, grounds, floors):
        """Local rotations (K, T, J, 4) and hips (K, T, 3) of K variants, the other joints at ``offsets`` (J,
        3), each stood on its foot joints' ``grounds``, come down to their ``floors`` (:func:`.stance.stood`)."""
        positions = np.repeat(offsets[None], rotations.shape[1], axis=0)
        out = []
        for r, h in zip(rotations, hips):
            positions[:, 0] = h
            out.append(stood(Motion(self.skeleton, r, positions.copy(), self.fps), grounds, self.layout.height, floors))
        return np.stack([m.rotations for m in out]), np.stack([m.positions[:, 0] for m in out])

    def _begun(self, start):
        """``(pose (1, D), level)``: a start ``(motion, frame)``'s raw pose on the model's floor and how
        far its own floor is above that; or, for None, the data's mean pose (still) after SETTLE s of
        standing still, on the model's floor."""
        if start is None:
            return self._standing_start.copy(), 0.0
        motion, frame = self._start(*start, 1, 1)
        level = floor(motion.frames(max(0, frame + 1 - self.past), frame + 1), []) - self.floor
        return poses(_lowered(motion.frames(frame - 1, frame + 1), level), self.pair)[0], level

    @cached_property
    def _standing_start(self):
        """The data's mean pose (1, D) after SETTLE s of standing still: the same for every path that gives no
        start (its roll-outs are drawn from a fixed seed), so settled once per model."""
        pose = np.asarray(self.file.normalisation["pose_mean"], dtype=np.float64)[None].copy()
        pose[:, :3] = 0.0
        pose[:, slice(*fields(len(self.skeleton))["velocities"])] = 0.0
        still = desired(Path(np.array([0.0, SETTLE]), np.zeros((2, 2)), facing=np.zeros(2)), self.fps, HORIZON,
                        self.actions, np.inf)
        return self._along(pose, [(np.zeros(3), 0.0)], [still], still.frames - 1)[:, -1].astype(np.float64)

    def _along(self, pose, roots, wants, frames, progress=None):
        """The poses (B, frames, D) of B characters from raw poses ``pose`` (B, D) at ``roots`` (origin,
        facing angle) along the :class:`~..mann.path.Desired` ``wants``, COMMIT frames at a time: of
        FOLLOWERS roll-outs of HORIZON frames each, the one nearest its path (:func:`.control.along`);
        ``progress(done, total)`` after each choice."""
        b, rng = len(pose), np.random.default_rng(0)
        roots, behind = list(roots), int(round(BEHIND * self.fps))
        out = np.empty((b, frames + COMMIT, pose.shape[1]), dtype=np.float32)
        plan = None
        for t in range(0, frames, COMMIT):
            z = drawn(rng, plan, (b, FOLLOWERS, HORIZON, self.latent))
            rolled = self._rollout(np.repeat(pose, FOLLOWERS, axis=0), HORIZON,
                                   lambda k: z[:, :, k].reshape(b * FOLLOWERS, -1)).reshape(b, FOLLOWERS, HORIZON, -1)
            plan = np.empty((b, HORIZON, self.latent), dtype=np.float32)
            lowest = skid = None
            if self.legs is not None:   # each roll-out's lowest foot above the floor, and its standing feet's speed
                flat = rolled.reshape(-1, rolled.shape[-1])
                lowest = self.legs.lowest_each(flat)[1].reshape(rolled.shape[:3]) - self.floor
                skid = self.legs.skid(flat, self.floor).reshape(rolled.shape[:3])
            for i, w in enumerate(wants):   # (a path that ended is held at its last point)
                ahead = np.minimum(np.arange(t + 1, t + 1 + HORIZON), len(w.positions) - 1)
                first = max(0, min(t + 1 - behind, ahead[-1] - 1))   # two points at least, past its end
                facing = np.arctan2(*w.directions[ahead].T)
                chosen = np.argmin(along(rolled[i], roots[i], w.positions[first:ahead[-1] + 1], ahead - first, facing,
                                         self.fps, self.layout.height, np.linalg.norm(w.velocities[ahead], axis=-1),
                                         None if lowest is None else lowest[i], None if skid is None else skid[i]))
                best, plan[i] = rolled[i, chosen], z[i, chosen]
                out[i, t:t + COMMIT] = best[:COMMIT]
                origins, turned = root_path(best[:COMMIT], *roots[i], self.fps)
                roots[i] = (origins[-1], turned[-1])
            pose = out[:, t + COMMIT - 1]
            if progress is not None:
                progress(t // COMMIT + 1, -(-frames // COMMIT))
        return out[:, :frames]

    def _check_gap(self, gap, k):
        """``(n, C)``: the gap's length and its roll-outs, once the request is checked."""
        self.check_skeleton(gap.skeleton)
        n = int(gap.length)
        for name, value, most in (("variants (k)", k, MAX_VARIANTS), ("frames in the gap", n, self.max_gap)):
            if not 1 <= value <= most:
                raise ModelError(f"{value} {name}: give 1 to {most:,}")
        c = candidates(k)
        if gap.batch * c * (n + 1) > MAX_TOTAL:
            raise ModelError(f"{gap.batch} gaps of {n} frames are {gap.batch * c * (n + 1):,} frames to roll out "
                             f"for {k} variants, more than {MAX_TOTAL:,}; ask for fewer variants or shorter gaps")
        for label, arrays in (("a frame before the gap", (gap.past_rotations, gap.past_positions)),
                              ("the key after the gap", (gap.target_rotations, gap.target_positions)),
                              ("a frame after that key", (gap.after_rotations, gap.after_positions))):
            for values in arrays:
                bad = np.argwhere(~np.isfinite(values)) if values is not None else ()
                if len(bad):
                    raise ModelError(f"{label}: joint {self.skeleton.names[bad[0][-2]]!r} is not a number (NaN "
                                     "or infinite); fix that key first")
        return n, c

    def _gap_start(self, gap, b):
        """Where the ``b``-th gap of ``gap`` starts and what it must reach, in the network's space: its
        last two frames as a raw pose (1, D) (the key twice where it is the clip's first frame), the root
        (origin, facing angle) there, ``key``: the key's root and joints in its root frame (J, 3), and
        ``level``: how far the floor of the frames around the gap is above the model's."""
        rotations = [gap.past_rotations[b], gap.target_rotations[b, None]]
        positions = [gap.past_positions[b], gap.target_positions[b, None]]
        if gap.after_rotations is not None:
            rotations.append(gap.after_rotations[b])
            positions.append(gap.after_positions[b])
        around = Motion(self.skeleton, np.concatenate(rotations), np.concatenate(positions), self.fps)
        level = floor(around, []) - self.floor
        last = len(gap.past_rotations[b]) - 1
        start = around.frames(last - 1, last + 1) if last else _held(around.frames(0, 1))   # the key still
        pose, origin, theta = poses(_lowered(start, level), self.pair)
        key, key_origin, key_theta = poses(_lowered(_held(around.frames(last + 1, last + 2)), level), self.pair)
        joints = key[0, slice(*fields(len(self.skeleton))["positions"])].reshape(-1, 3)
        grounds, floors = (None, None) if self.legs is None else _grounds(
            around.global_transforms()[1][:, self.legs.feet, 1], len(self.legs.feet) - len(legs(self.skeleton)))
        return {"pose": pose, "root": (origin[1], theta[1]), "key": (key_origin[1], key_theta[1], joints),
                "level": level, "grounds": grounds, "floors": floors}

    def _rollout(self, pose, steps, draw, grounded=True, steer=None, progress=None):
        """``steps`` poses (B, steps, D) generated after raw poses ``pose`` (B, D), z (B, latent) of step
        t ``draw(t)``: one onnxruntime call of batch B a step, each pose then kept within ``bounds``;
        ``grounded``: each pose stood on the model's floor and its root stepped by its standing feet
        (:mod:`.floor`); ``steer(poses so far (B, t + 1, D), frames
        left)``, every STEER frames, the indices (B,) of the roll-outs to go on with; ``progress(done, steps)``
        after each second of steps."""
        with np.errstate(over="ignore"):   # a pose beyond 32 bits walks on as inf, and walk() refuses it
            pose = pose.astype(np.float32)
        out = np.empty((len(pose), steps, pose.shape[1]), dtype=np.float32)
        for t in range(steps):
            previous = pose
            pose = np.clip(self.session.run(["pose"], {"previous": pose, "z": draw(t)})[0], *self.bounds)
            if grounded and self.legs is not None:
                self.legs.ground(pose, self.floor, self.least)
                self.legs.anchor(previous, pose, self.floor, self.fps)
            out[:, t] = pose
            if steer is not None and (t + 1) % STEER == 0 and t + 1 < steps:
                index = steer(out[:, :t + 1], steps - t - 1)
                out[:, :t + 1], pose = out[index, :t + 1], out[index, t]
            if progress is not None and ((t + 1) % round(self.fps) == 0 or t + 1 == steps):
                progress(t + 1, steps)
        return out

    def encode(self, previous, pose):
        """The posterior's mean and log variance (B, latent) each of raw poses ``previous`` and ``pose``
        (B, D) each: the encoder, which the file carries in its metadata, run on demand."""
        if self._encoder is None:
            graph = base64.b64decode(self.metadata["betwixt.encoder"])
            self._encoder = session(graph)
        return self._encoder.run(None, {"previous": np.asarray(previous, np.float32),
                                        "pose": np.asarray(pose, np.float32)})

    def _start(self, motion, frame, frames, k):
        """The motion at the model's frame rate and the start frame in it, once the request is checked."""
        self.check_skeleton(motion.skeleton)
        n = motion.n_frames
        if not 1 <= frame < n:
            raise ModelError(f"{motion.name or 'the motion'}: start frame {frame} is outside frames 1 to {n - 1} (a "
                             "continuation starts from a frame and the one before it); choose a frame in that range")
        for name, value, most in (("frames", frames, MAX_FRAMES), ("continuations (k)", k, MAX_K)):
            if not 1 <= value <= most:
                raise ModelError(f"{value} {name}: give 1 to {most:,}")
        if frames * k > MAX_TOTAL:
            raise ModelError(f"{k} continuations of {frames:,} frames are {frames * k:,} frames, more than "
                             f"{MAX_TOTAL:,} in one request; ask for fewer or shorter ones")
        for label, values in (("rotation", motion.rotations), ("position", motion.positions)):
            bad = np.argwhere(~np.isfinite(values[frame - 1:frame + 1]))
            if len(bad):
                f, j = bad[0][:2]
                raise ModelError(f"{motion.name or 'the motion'}: frame {frame - 1 + f}, joint "
                                 f"{motion.skeleton.names[j]!r}: its {label} is not a number (NaN or infinite); fix "
                                 "the start pose")
        if motion.fps != self.fps:
            at = int(round(frame * self.fps / motion.fps))
            motion = motion.resample(self.fps)
            frame = min(max(at, 1), motion.n_frames - 1)
        return motion, frame

    def _joined(self, motion, frame, walked, origin, theta, level, i):
        """``motion`` up to ``frame`` and then the poses ``walked`` (N, D) generated from there, raised by
        ``level`` from the model's floor to the motion's."""
        generated = motion_of(walked, origin, theta, motion.skeleton, self.fps)
        positions = np.repeat(motion.positions[frame:frame + 1], len(walked), axis=0)
        positions[:, 0] = generated.positions[:, 0] + [0.0, level, 0.0]   # the rest keep the start's translations
        rotations = np.concatenate([motion.rotations[:frame + 1], generated.rotations])
        return replace(motion, rotations=quat.unroll(rotations), positions=np.concatenate(
            [motion.positions[:frame + 1], positions]), name=f"{motion.name} walk {i + 1} by {self.name}")


class BlewUp(ModelError):
    """A random walk whose network output stopped being finite: the model is unstable there."""


def _lowered(motion, level):
    """``motion`` (Y up) with its root lowered by ``level``."""
    positions = motion.positions.copy()
    positions[:, 0, 1] -= level
    return replace(motion, positions=positions)


def _grounds(heights, toes):
    """``(grounds, floors)`` (K,) of K foot joints (every leg's foot, then its toe, ``toes`` of them) from
    their heights (F, K) around a gap: each one's GROUND percentile, but where that stands more than
    STANDS[0] (:mod:`.floor`, 2 cm) above where its leg's lowest frame puts the floor, that (a leg on a box
    but at the key, whose toe there touches the floor); and ``floors``, the same on the lowest floor any
    leg reaches, where that is lower still (a foot on a box all around the gap), else ``grounds``. A joint
    stands above its leg's floor as much as it does on the leg that stands lowest over its toe (a toe 0,
    an ankle 6 cm for LaFAN1)."""
    grounds = np.percentile(heights, GROUND, axis=0)
    if toes * 2 != len(grounds):   # a leg without a toe: each joint on its own ground
        return grounds, grounds
    rows = grounds.reshape(2, toes)
    above = (rows - rows.min(axis=0)).min(axis=1).repeat(toes)             # (K,) over its leg's floor
    floor_of = (heights.min(axis=0) - above).reshape(2, toes).min(axis=0)  # (L,) each leg's floor
    own = np.tile(floor_of, 2) + above
    grounds = np.where(grounds - own > STANDS[0], own, grounds)
    lowest = floor_of.min() + above
    return grounds, np.where(grounds - lowest > STANDS[0], lowest, grounds)


def _held(frame):
    """A motion of one frame as two identical frames: a pose standing still."""
    return replace(frame, rotations=np.repeat(frame.rotations, 2, axis=0),
                   positions=np.repeat(frame.positions, 2, axis=0))


def _height(skeleton):
    """The body's height, for thresholds that scale with it (feet planting): a leg's length over
    LEG_SHARE, or the rest pose's largest extent where no legs are found."""
    found = legs(skeleton)
    if not found:
        rest = np.zeros((len(skeleton), 4)) + [1.0, 0.0, 0.0, 0.0]
        return float(np.ptp(forward_kinematics(rest, skeleton.offsets, skeleton.parents)[1], axis=0).max())
    leg = found[0]
    return float(np.linalg.norm(skeleton.offsets[[leg.knee, leg.foot]], axis=-1).sum()) / LEG_SHARE
