"""The MANN runtime: a locomotion controller that steps the network one frame at a time along desired
trajectories (Zhang, Starke, Komura, Saito 2018), several paths in one batch.

Each frame, as the paper's reference runtime does:

1. the future half of the trajectory (the network's prediction of the last step) is blended with the
   desired one, the path's positions, facing and velocity one to sixty frames ahead (of the path's
   frame that :mod:`.pursuit` reads, held back to a character that lags its path), with the weight
   ``(k / 60) ** tau`` for the sample ``k`` frames ahead: the further ahead, the more the path decides
   (tau 0: the path alone; large tau: the network's own plan, the path only at the horizon);
2. the network reads the twelve trajectory samples (the past second as it happened, the desired speed
   and actions from the path) and the bones as the last step left them, and predicts the next frame's
   bones, the root's motion and the next trajectory;
3. the root moves by dx, dz, dtheta (held back while the action is idle, sit, stand or lie, as in the
   reference, so that a resting dog does not slide); each bone goes halfway between its predicted
   position and where its last position plus its predicted velocity put it; the predicted future is
   averaged with the last one moved on a frame.

The motion written out is the joints' world rotations rebuilt from the predicted forward and up
vectors, turned as little as it takes for the bones to point at the bones' positions of step 3 (the
reference draws those positions; :mod:`..aim`), made local through the parents, and the hips' position:
a :class:`~..motion.Motion` of the model's skeleton at its frame rate.
"""

from dataclasses import dataclass, replace

import numpy as np

from .. import quat
from ..aim import aimed, skeleton_bones
from ..modelfile import Model, ModelError, Placement
from ..motion import Motion
from ..transition import interpolation
from .actions import ACTIONS, labels
from .features import (BONE_DIM, CURRENT, FORWARD, OUT_SAMPLE_DIM, SAMPLE_DIM, SITE, SPEED_HORIZON, UP, bones_of,
                       leg_length, one_hot, reflected, root, sample_frames, speed_ahead, turn, world)
from .fill import RESTING, onto_keys, plan
from .path import GAITS, Desired, braked, check, desired, paced
from .pursuit import APPROACH, ARRIVE, DRIFT_GAIN, DRIFT_SPEED, LEAD, SLOWEST, STEER, STEER_TIME, STRAIGHT, Pursuit

SETTLE = 1.0        # s: without a start motion, the network stands the dog up from its mean pose this long
POSITION_BLEND = 0.5   # the reference's: a bone halfway between its prediction and its integrated velocity
FUTURE_BLEND = 0.5     # ... and the future trajectory halfway between this step's prediction and the last
MAX_GAP = 4.0          # s: the longest gap it fills, one planned curve between the keys
BRAKE = 0.6            # m/s^2: a path slows into a stop no faster than this, down to a walk (path.braked): the
                       # network follows a slower timing into a stop, and slams to one from a faster
FASTEST = 6.0          # m/s: paths are slowed to this and desired speeds held under it; the dog capture's
                       # fastest frame moves its root 5.8 m/s, and past it the network lags, then diverges


@dataclass
class _State:
    """B characters mid-path, in world space (the model's units, Y up): the past second of the root,
    frame by frame (index -1 is now) as ``ground`` (B, P+1, 2), ``theta`` (B, P+1), ``velocity``
    (B, P+1, 2), ``speed`` (B, P+1) and ``actions`` (B, P+1, A) as each frame read them; the future
    the network plans, 1 to F frames ahead, ``future`` (B, F, 6) positions, directions, velocities;
    and the bones now, ``pos``, ``fwd``, ``up``, ``vel`` (B, bones, 3)."""

    ground: np.ndarray
    theta: np.ndarray
    velocity: np.ndarray
    speed: np.ndarray
    actions: np.ndarray
    future: np.ndarray
    pos: np.ndarray
    fwd: np.ndarray
    up: np.ndarray
    vel: np.ndarray

    def placed(self, here, heading, at, facing):
        """The same state moved on the ground and turned about +Y so that the point ``here`` (B, 2) comes to
        ``at`` (B, 2) and the direction ``heading`` (B,) to ``facing`` (B,)."""
        angle = facing - heading
        spin = lambda v: turn(-angle.reshape((-1,) + (1,) * (v.ndim - 2)), v)   # noqa: E731
        origin = np.stack([here[:, 0], np.zeros(len(here)), here[:, 1]], axis=-1)[:, None]
        target = np.stack([at[:, 0], np.zeros(len(at)), at[:, 1]], axis=-1)[:, None]
        future = np.concatenate([spin(self.future[..., :2] - here[:, None]) + at[:, None],
                                 spin(self.future[..., 2:4]), spin(self.future[..., 4:])], axis=-1)
        return replace(self, ground=spin(self.ground - here[:, None]) + at[:, None],
                       theta=self.theta + angle[:, None], velocity=spin(self.velocity), future=future,
                       pos=spin(self.pos - origin) + target, fwd=spin(self.fwd), up=spin(self.up), vel=spin(self.vel))


class MANNModel(Model):
    """A MANN model file, checked and ready (opened by :func:`..modelfile.open_model`)."""

    TITLE = "Locomotion (MANN)"
    SERVES = ("follow-path", "fill", "decompress")

    def __init__(self, file, session, tau=0.5):
        """``file``: the :class:`..modelfile.ModelFile`; ``tau``: how much the network's own plan of the
        future counts against the path's (see the module's docstring; 0 follows the path alone)."""
        super().__init__(file, session)
        if not 0 <= tau < np.inf:
            raise ModelError(f"tau must be 0 or more, not {tau}")
        self.tau = float(tau)
        try:
            lay = file.json("betwixt.layout")
            if not self.skeleton.end_sites:   # the paws' bones: a file without them is an older export's
                raise KeyError("end_sites")
            self.actions = tuple(lay["actions"])
            self.units_per_metre = float(lay["units_per_metre"])
            self.x_mean = file.normalisation["x_mean"].astype(np.float64)
            thresholds = file.json("betwixt.labels")["thresholds"]
            inputs, outputs = lay["input"]["size"], lay["output"]["size"]
            frames, names = lay["samples"]["frames"], lay["bones"]
            self.bones = bones_of(self.skeleton)
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{file.path}: incomplete model metadata ({e}); export it again") from None
        self.fps = file.fps
        # the hips carry the dog, Y up; its back leg's length is its scale, as for the labels' thresholds
        self.layout = Placement(trajectory=0, up=1, height=leg_length(self.skeleton, self.bones), fps=self.fps)
        self.offsets = sample_frames(self.fps)
        if list(self.bones.names) != names or frames != self.offsets.tolist() or len(self.x_mean) != inputs \
                or session.get_outputs()[0].shape[-1] != outputs or not {"move", "idle"} <= set(self.actions):
            raise ModelError(f"{file.path}: its feature layout is not the one this Betwixt reads; export it again")
        self.history, self.ahead = -int(self.offsets[0]), int(self.offsets[-1])
        self.move_speed = thresholds["MOVE_SPEED"] * leg_length(self.skeleton, self.bones)
        self.joint_bones = np.array([self.bones.index(n) for n in self.skeleton.names])
        self._aim = skeleton_bones(self.skeleton, self.joint_bones, {j: self.bones.index(self.skeleton.names[j] + SITE)
                                                                     for j, _ in self.skeleton.end_sites})
        self.experts = [o.name for o in session.get_outputs()][1:] == ["experts"]
        self.past = self.history + 1                      # a fill starts from the key and the second before it
        self.max_gap = int(round(MAX_GAP * self.fps))
        self._dense = _interpolation(self.offsets[CURRENT:], self.ahead)
        self.top_speed = FASTEST * self.units_per_metre   # units a second

    def follow(self, paths, start=None, progress=None):
        """One :class:`~..motion.Motion` per :class:`~.path.Path` in ``paths``, the model's skeleton
        following it at the model's frame rate from its first point, facing along it (or as the path
        says), for as long as the path lasts. ``start``: ``(motion, frame)``, or a list of one per path,
        the pose to start from with the second before it as the past (placed at the path's start);
        None: the model's own skeleton standing still. A path faster than ``top_speed`` anywhere is
        slowed to it there (:func:`.path.paced`: the motion lasts longer than the path), and one that
        stops from faster than a walk slows into the stop at BRAKE (:func:`.path.braked`: the stand after
        the stop gives up that time, or the motion lasts longer than the path).
        ``progress(done, total)`` is called after each step of the network (the standing start's
        included); it may raise to stop the work."""
        return self.rollout(paths, start, progress)[0]

    def timed(self, path):
        """``path`` as the dog follows it: slowed where it is faster than the dog goes (:func:`.path.paced`),
        its stops slowed into (:func:`.path.braked`)."""
        u = self.units_per_metre
        return braked(paced(path, self.top_speed), GAITS["walk"] * u, BRAKE * u)

    def rollout(self, paths, start=None, progress=None):
        """``(motions, experts)``: :meth:`follow`'s motions and, per path, the gating network's blending
        weights at every step (F - 1, K) (the paper's Fig. 9), or None where the model's graph does not
        output them (a file exported before it did)."""
        if not paths:
            return [], []
        for path in paths:
            check(path, self.actions)
        paths = [self.timed(p) for p in paths]
        wants = [desired(p, self.fps, self.ahead, self.actions, self.move_speed) for p in paths]
        starts = start if isinstance(start, list) else [start] * len(paths)
        if len(starts) != len(paths):
            raise ModelError(f"{len(starts)} start poses for {len(paths)} paths; give one, or one per path")
        settle = int(round(SETTLE * self.fps)) if any(s is None for s in starts) else 0
        tick = _ticker(progress, settle + max(w.frames for w in wants) - 1)
        rotations, hips, experts = self._run(self._start(starts, wants, tick), wants, tick)
        skeletons = [self.skeleton if s is None else s[0].skeleton for s in starts]
        motions = [self._motion(rotations[b, :w.frames], hips[b, :w.frames], sk, p)
                   for b, (w, sk, p) in enumerate(zip(wants, skeletons, paths))]
        return motions, [None if experts is None else experts[b, :w.frames - 1] for b, w in enumerate(wants)]

    def _run(self, state, wants, tick=None, timed=False):
        """The joints' world rotations (B, F, J, 4), the hips' positions (B, F, 3) and the experts'
        blending weights (B, F - 1, K) (or None) of the characters in ``state`` stepped along the desired
        paths ``wants`` for the longest one's frames (F), the first frame the state itself. Where along
        each path its desire is read is :mod:`.pursuit`'s; ``timed`` keeps to the paths' timing as they
        are, for a plan whose end must meet a key when it comes."""
        steps = max(w.frames for w in wants) - 1
        u, frames = self.units_per_metre, steps + self.ahead + 1
        pursuit = Pursuit(wants, frames, self.fps, fastest=self.top_speed) if timed else Pursuit(
            wants, frames, self.fps, lead=LEAD * u, idle=self.move_speed, slowest=SLOWEST, gain=DRIFT_GAIN,
            walking=DRIFT_SPEED * u, straight=STRAIGHT * u, arrive=ARRIVE * u, names=self.actions, steer=STEER * u,
            approach=APPROACH * u, fastest=self.top_speed, steer_time=STEER_TIME)
        rotations, bones, experts = [self._rotations(state)], [state.pos.copy()], []
        for t in range(steps):
            state, alpha = self._step(state, pursuit)
            pursuit.advance(t, state.ground[:, -1])
            rotations.append(self._rotations(state))
            bones.append(state.pos.copy())
            experts.append(alpha)
            if tick is not None:
                tick()
        weights = np.stack(experts, axis=1) if self.experts and steps else None
        bones = np.stack(bones, axis=1)
        return aimed(np.stack(rotations, axis=1), bones, bones[..., 0, :], self._aim), bones[..., 0, :], weights

    def fill(self, gap, blend=None, variation=0.0, seed=None):
        """The ``gap.length`` in-between frames of every gap of ``gap`` (a :class:`~..transition.Gap` at the
        model's frame rate): local rotations (B, n, J, 4) and translations (B, n, J, 3), as an RTN's fill.

        The controller starts from the key before the gap with the second before it as its past, follows
        a ground trajectory planned between the keys (:func:`.fill.plan`), and its frames are put onto
        the key after the gap by the target blend over ``blend`` frames (default: the whole gap); a gap
        between two keys of one resting pose (:data:`.fill.RESTING`) is the keys' interpolation.
        ``variation`` and ``seed`` are the fill's common options: the controller is deterministic, so
        there is no variation to draw and ``seed`` has nothing to seed."""
        self.check_skeleton(gap.skeleton)
        n = int(gap.length)
        if variation:
            raise ModelError(f"model {self.name} fills a gap one way only; set the variation to 0")
        if not 1 <= n <= self.max_gap:
            raise ModelError(f"a gap of {n} frames is outside what model {self.name} fills (1 to {self.max_gap}); "
                             "add a key inside the gap")
        arrays = [gap.past_rotations, gap.past_positions, gap.target_rotations, gap.target_positions]
        if not all(np.isfinite(a).all() for a in arrays + [gap.after_rotations, gap.after_positions] if a is not None):
            raise ModelError("the keys around the gap contain NaN or infinite values; fix those keys first")
        horizon = int(round(SPEED_HORIZON * self.fps))
        paths, floors, resting = plan(gap, self.bones, self.fps, self.ahead + horizon, self.actions)
        wants = [replace(desired(p, self.fps, self.ahead, self.actions, self.move_speed), frames=n + 2) for p in paths]
        lowered = gap.past_positions.copy()
        lowered[..., 0, 1] -= floors[:, :1]       # onto the controller's floor (the root joint is the hips)
        starts = [(Motion(gap.skeleton, r, p, self.fps), -1) for r, p in zip(gap.past_rotations, lowered)]
        rotations, hips, _ = self._run(self._start(starts, wants), wants, timed=True)
        rotations, positions = onto_keys(self._local(rotations[:, 1:], gap.skeleton.parents), hips[:, 1:], gap, floors,
                                         blend)
        held = interpolation(gap)
        rotations[resting], positions[resting] = held[0][resting], held[1][resting]
        return rotations, positions

    def _start(self, starts, wants, tick=None):
        """The state of every path's start (see follow), placed at its first point."""
        given = [s for s in starts if s is not None]
        for motion, _ in given:
            self.check_skeleton(motion.skeleton)
        states = [self._from_motion(*s) if s is not None else None for s in starts]
        if len(given) < len(starts):
            still = self._settled(tick)
            states = [s or still for s in states]
        state = _State(*(np.concatenate([getattr(s, k) for s in states]) for k in _State.__dataclass_fields__))
        first = np.stack([w.positions[0] for w in wants])
        facing = np.array([w.facing for w in wants])
        # the pose's own root (hips and neck), which the trajectory's may have drifted from while settling
        # (the characters stand in for frames here: unwrapping their angles adds whole turns at most)
        here, heading, _ = root(state.pos, self.bones, self.fps)
        state = state.placed(here, heading, first, facing)
        state.future = np.stack([np.concatenate([w.positions[1:self.ahead + 1], w.directions[1:self.ahead + 1],
                                                 w.velocities[1:self.ahead + 1]], axis=-1) for w in wants])
        return state

    def _from_motion(self, motion, frame):
        """A state of one character at ``frame`` of ``motion`` (any frame rate), its past second from the
        frames before (reflected where the motion starts later)."""
        if not -motion.n_frames <= frame < motion.n_frames:
            raise ModelError(f"frame {frame} is outside the start motion's {motion.n_frames} frames")
        frame %= motion.n_frames
        if motion.fps != self.fps:
            frame = int(round(frame * self.fps / motion.fps))
            motion = motion.resample(self.fps)
            frame = min(frame, motion.n_frames - 1)
        pos, rot = world(motion, self.bones)
        ground, theta, velocity = root(pos, self.bones, self.fps)
        pad = self.history + 5 * int(round(self.fps / 5)) + 1
        g = reflected(ground, pad, point=True)
        speed = speed_ahead(g, self.fps)
        label = reflected(self._labels(motion), pad)
        actions = one_hot(label, self.fps, len(self.actions)).astype(np.float64)
        past = slice(pad + frame - self.history, pad + frame + 1)
        if motion.n_frames > 1:   # backwards, as in training (the first frame takes the second's)
            bone_velocity = (pos[frame] - pos[frame - 1] if frame else pos[1] - pos[0]) * self.fps
        else:
            bone_velocity = np.zeros_like(pos[frame])
        one = lambda a: a[None]   # noqa: E731
        return _State(one(g[past]), one(reflected(theta, pad)[past]), one(reflected(velocity, pad)[past]),
                      one(speed[past]), one(actions[past]), np.zeros((1, self.ahead, 6)), one(pos[frame]),
                      one(quat.rotate(rot[frame], FORWARD)), one(quat.rotate(rot[frame], UP)), one(bone_velocity))

    def _labels(self, motion):
        """The action of every frame of ``motion`` (F,), an index into the model's actions (idle for one
        it does not know), by the rules its training data was labelled with (:mod:`.actions`)."""
        known = np.array([self.actions.index(a) if a in self.actions else self.actions.index("idle") for a in ACTIONS])
        return known[labels(motion, self.bones)]

    def _settled(self, tick=None):
        """One character of the model's own skeleton standing still at the origin facing +Z: the training
        data's mean pose, stood up by the network for SETTLE seconds of idling on the spot."""
        n, h = len(self.bones), self.history
        mean = self.x_mean[len(self.offsets) * SAMPLE_DIM:].reshape(n, BONE_DIM)[None]
        idle = np.eye(len(self.actions))[self.actions.index("idle")]
        state = _State(np.zeros((1, h + 1, 2)), np.zeros((1, h + 1)), np.zeros((1, h + 1, 2)), np.zeros((1, h + 1)),
                       np.tile(idle, (1, h + 1, 1)), np.tile([0.0, 0.0, 0.0, 1.0, 0.0, 0.0], (1, self.ahead, 1)),
                       mean[..., 0:3].copy(), _unit(mean[..., 3:6]), _unit(mean[..., 6:9]), np.zeros((1, n, 3)))
        frames = int(round(SETTLE * self.fps))
        length = frames + self.ahead + 1
        still = Desired(frames, np.zeros((length, 2)), np.tile([0.0, 1.0], (length, 1)), np.zeros((length, 2)),
                        np.zeros(length), np.tile(idle, (length, 1)))
        pursuit = Pursuit([still], length, self.fps)
        for t in range(frames):
            state, _ = self._step(state, pursuit)
            pursuit.advance(t, state.ground[:, -1])
            if tick is not None:
                tick()
        return state

    def _step(self, s, pursuit):
        """The state one frame on from ``s`` along the desired paths of ``pursuit`` (a :class:`.pursuit.Pursuit`
        at its clocks), and the experts' blending weights (B, K) of the step (None where the graph does not
        output them)."""
        weight = (np.arange(1, self.ahead + 1) / self.ahead) ** self.tau
        s.future = s.future + weight[None, :, None] * (pursuit.future(self.ahead) - s.future)
        s.future[..., 2:4] = _unit(s.future[..., 2:4])
        speed, actions = pursuit.desire([0])
        s.speed[:, -1], s.actions[:, -1] = speed[:, 0], actions[:, 0]
        y, *alpha = self.session.run(None, {"x": self._input(s, pursuit).astype(np.float32)})
        return self._advance(s, y.astype(np.float64)), (alpha[0] if alpha else None)

    def _input(self, s, pursuit):
        """x (B, 480): the trajectory samples in the root frame of now, the bones in the last frame's."""
        past = self.history + self.offsets[:CURRENT]
        desired_speed, desired_actions = pursuit.desire(self.offsets[CURRENT:])   # now and the future samples
        future = s.future[:, self.offsets[CURRENT + 1:] - 1]
        here, facing = s.ground[:, -1], s.theta[:, -1, None]
        direction = np.stack([np.sin(s.theta), np.cos(s.theta)], axis=-1)
        pos = np.concatenate([s.ground[:, past], here[:, None], future[..., :2]], axis=1)
        dirs = np.concatenate([direction[:, past], direction[:, -1:], future[..., 2:4]], axis=1)
        vel = np.concatenate([s.velocity[:, past], s.velocity[:, -1:], future[..., 4:]], axis=1)
        speed = np.concatenate([s.speed[:, past], desired_speed], axis=1)
        actions = np.concatenate([s.actions[:, past], desired_actions], axis=1)
        samples = np.concatenate([turn(facing, pos - here[:, None]), turn(facing, dirs), turn(facing, vel),
                                  speed[..., None], actions], axis=-1)
        last, before = s.ground[:, -2], s.theta[:, -2, None]
        origin = np.stack([last[:, 0], np.zeros(len(last)), last[:, 1]], axis=-1)[:, None]
        bones = np.concatenate([turn(before, s.pos - origin), turn(before, s.fwd), turn(before, s.up),
                                turn(before, s.vel)], axis=-1)
        return np.concatenate([samples.reshape(len(pos), -1), bones.reshape(len(pos), -1)], axis=1)

    def _advance(self, s, y):
        """The state after the network's step ``y`` (B, 363) from ``s``."""
        b, n, fps = len(y), len(self.bones), self.fps
        future_out = y[:, :(len(self.offsets) - CURRENT) * OUT_SAMPLE_DIM].reshape(b, -1, OUT_SAMPLE_DIM)
        start = future_out.shape[1] * OUT_SAMPLE_DIM
        bones = y[:, start:start + n * BONE_DIM].reshape(b, n, BONE_DIM)
        now = s.actions[:, -1]
        rest = sum(now[:, self.actions.index(a)] for a in RESTING if a in self.actions)
        idle = now[:, self.actions.index("idle")]
        held = np.minimum(np.clip(1 - idle, 0, 1) ** 0.25, np.clip(1 - rest, 0, 1) ** 0.5)   # the reference's
        step = y[:, -3:] * held[:, None] / fps
        here, facing = s.ground[:, -1], s.theta[:, -1]
        ground = here + turn(-facing[:, None], step[:, None, :2])[:, 0]
        theta = facing + step[:, 2]

        unturn = -facing[:, None]
        origin = np.stack([here[:, 0], np.zeros(b), here[:, 1]], axis=-1)[:, None]
        vel = turn(unturn, bones[..., 9:12])
        pos = (1 - POSITION_BLEND) * (s.pos + vel / fps) + POSITION_BLEND * (turn(unturn, bones[..., 0:3]) + origin)

        ahead = -theta[:, None]
        planned = np.concatenate([turn(ahead, future_out[..., 0:2]) + ground[:, None],
                                  _unit(turn(ahead, future_out[..., 2:4])), turn(ahead, future_out[..., 4:6])], axis=-1)
        planned = np.einsum("kj,bjc->bkc", self._dense, planned)
        moved = np.concatenate([s.future[:, 1:], s.future[:, -1:]], axis=1)
        moved[:, -1, :2] += s.future[:, -1, 4:] / fps
        future = moved + FUTURE_BLEND * (planned - moved)
        future[..., 2:4] = _unit(future[..., 2:4])

        shift = lambda a, new: np.concatenate([a[:, 1:], new[:, None]], axis=1)   # noqa: E731
        return _State(shift(s.ground, ground), shift(s.theta, theta), shift(s.velocity, (ground - here) * fps),
                      shift(s.speed, s.speed[:, -1]), shift(s.actions, s.actions[:, -1]), future, pos,
                      _unit(turn(unturn, bones[..., 3:6])), _unit(turn(unturn, bones[..., 6:9])), vel)

    def _rotations(self, s):
        """World rotations (B, J, 4) of the joints from their bones' forward and up vectors."""
        z = _unit(s.fwd[:, self.joint_bones])
        x = _unit(np.cross(s.up[:, self.joint_bones], z))
        return quat.from_matrix(np.stack([x, np.cross(z, x), z], axis=-1))

    def _motion(self, world_rotations, hips, skeleton, path):
        """A Motion of ``skeleton`` from joint world rotations (F, J, 4) and the hips' positions (F, 3)."""
        positions = np.repeat(skeleton.offsets[None], len(hips), axis=0)
        positions[:, 0] = hips
        name = f"{self.name} following {path.source}"
        return Motion(skeleton, quat.unroll(self._local(world_rotations, skeleton.parents)), positions, self.fps,
                      name=name)

    @staticmethod
    def _local(world_rotations, parents):
        """Local rotations (..., J, 4) of joint world rotations (..., J, 4)."""
        local = world_rotations.copy()
        local[..., 1:, :] = quat.mul(quat.inv(world_rotations[..., parents[1:], :]), world_rotations[..., 1:, :])
        return local


def _ticker(progress, total):
    """A function to call after each of ``total`` steps that reports ``progress(done, total)``, or None."""
    if progress is None:
        return None
    done = 0

    def tick():
        nonlocal done
        done += 1
        progress(done, total)
    return tick


def _unit(v, eps=1e-9):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), eps)


def _interpolation(offsets, ahead):
    """(ahead, S): linear interpolation weights from samples at frame ``offsets`` (S,) (0 first) to
    every frame 1..ahead."""
    k = np.arange(1, ahead + 1)
    eye = np.eye(len(offsets))
    return np.stack([np.interp(k, offsets, eye[j]) for j in range(len(offsets))], axis=1)
