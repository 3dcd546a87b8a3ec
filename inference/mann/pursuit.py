"""Where along its path the MANN controller reads its desired trajectory: the path's own timing, held
back to where the character has got to, and, in a curve, spaced at the character's pace and moved
against the drift the network keeps to one side.

The paper's runtime steers from a gamepad, so its character is always where its desired trajectory
starts; along a timed path it need not be. The network slows down in a tight turn, as the data's dogs
do (their canters turn at a third to a half of the rate a 2 m circle asks at 3 m/s), and runs a steady
distance to one side of a curve even where it keeps pace. So, per path:

1. lead: the frame the desired future is read from keeps the path's timing, but never runs more than
   ``lead`` along the path ahead of the frame nearest the character, and catches up with the timing
   where the character does, so that a character slower than its path is led on from where it is
   rather than drawn across a curve toward where the timing has got to (where the path idles, below
   ``idle`` speed, the timing goes on: a character that stopped short has nothing to wait for), but
   for its end (4);
2. pace: in a curve, the desired future is spaced at the character's own speed over the last SPAN
   (as a share of the path's, at least ``slowest``), so that its directions turn at the rate that
   speed asks for on the path's radius, not at the rate the path's timing does, and its velocities
   are scaled alike, so that they say what its positions say;
3. drift: in a curve, the character's sideways distance from the path is integrated (``gain`` a
   second) into an offset by which the desired positions move to the other side, and the desired
   directions (and velocities, by the same angle) turn toward the path by that distance over the way
   the path goes in ``steer_time`` (at least ``steer``): the network answers a future that points back at
   the path sooner than one moved sideways, and a proportional turn does not wind up as the integral
   does (over a fixed distance, a trot turned twice as sharply as a walk for the same miss, and the dog
   broke into bounds). Elsewhere the offset fades and nothing turns: there is no curve to drift inside
   of (a corner cut is no drift to carry on with);
4. arrival: from where the path comes to its last stop (its desired speed under ``idle`` for good),
   the desired speed is the character's own distance from the path's end over the speed's horizon,
   and a speed-decided idle is read as move, fading to idle over the last ``arrive``, rather than the
   path's clock's: the network idles once its desired speed falls under the walking threshold, which
   the clock's does up to a lead behind the end, and the reference's runtime then holds its root there.
   The clock waits for the character there, so that the future it is shown ends at the path's end.

An arrival's desired speed is at most ``approach`` (a trot), and every desired speed at most
``fastest``: a path slower than a walk all along comes to its last stop at its first frame, and its
distance to go over the speed's horizon asked the network for speeds its data never had (9.5 m in 95 s:
9.5 m/s at the start), on which it diverged; at a trot it keeps to such a path by walks and stops.

A curve is where the path turns on a radius under ``straight`` at ``walking`` speed or faster; slower,
a dog sidesteps and turns on the spot.
"""

import numpy as np

from .features import SPEED_HORIZON, turn

LEAD = 0.25          # m: how far along its path the desired trajectory may run ahead of the character
SLOWEST = 0.5        # the least share of the path's pace a curve's desired future is spaced at
DRIFT_GAIN = 2.0     # 1/s: the drift correction's growth a second per unit of sideways distance
DRIFT_SPEED = 0.7    # m/s: a path slower than a walk has no curve
STRAIGHT = 5.0       # m: nor has a path turning on a wider radius than this
SPAN = 0.25          # s: chords either side of a frame that measure a path's curvature, and a character's pace
FADE = 2.0           # 1/s: how fast the drift correction fades outside curves
ARRIVE = 0.1         # m: how close to its path's end a character's move fades into idle
APPROACH = 1.8       # m/s: the fastest an arrival asks for (the dog capture's trot)
STEER = 0.15        # m: in a curve, the desired directions turn toward the path by the character's
                    # sideways distance from it over at least this,
STEER_TIME = 0.15   # s: ... and over the way the path goes in this (the same at a walk's 1 m/s)
NEAR = 60            # frames either side of a path's frame searched for the one nearest its character


class Pursuit:
    """B desired paths (:class:`.path.Desired`) at ``fps`` followed by B characters: per path and frame
    (each path held at its end to ``frames``) the desired ``track`` positions, directions and velocities
    (B, T, 6), ``speed`` (B, T) and ``actions`` (B, T, A), the distance ``along`` it (B, T) and its unit
    ``normal`` to the left of travel in curves (B, T, 2; zero elsewhere); per path ``clock`` (B,), its
    frame for the next step, ``rate`` (B,), the share of its pace its future is spaced at, and
    ``offset`` (B,), the drift correction (units, to the left); ``rest`` (B,), the frame from which the
    path stands still for good (below ``idle`` speed), and ``remaining`` (B,), the character's distance
    from its end (along it, or straight where that is shorter: a standing capture's sway is no way to
    go); ``side`` (B,), the character's sideways distance from a curve (to the left). ``lead``, ``idle``,
    ``walking`` (units, a second), ``straight``, ``arrive`` and ``steer`` (units), ``slowest`` and
    ``gain`` (1/s) and ``steer_time`` (s) as in the module's docstring, ``approach`` and ``fastest`` (units a
    second) the most an arrival's and any desired speed may be; the defaults keep to the path's timing and
    correct nothing."""

    def __init__(self, wants, frames, fps, lead=np.inf, idle=0.0, slowest=1.0, gain=0.0, walking=np.inf,
                 straight=np.inf, arrive=None, names=("idle", "move"), steer=np.inf, approach=np.inf,
                 fastest=np.inf, steer_time=0.0):
        def held(a):
            return np.concatenate([a, np.repeat(a[-1:], max(frames - len(a), 0), axis=0)])[:frames]

        self.track = np.stack([held(np.concatenate([w.positions, w.directions, w.velocities], axis=-1))
                               for w in wants])
        self.speed = np.stack([held(w.speed) for w in wants])
        self.actions = np.stack([held(w.actions) for w in wants])
        steps = np.linalg.norm(np.diff(self.track[..., :2], axis=1), axis=-1)
        self.along = np.concatenate([np.zeros((len(wants), 1)), np.cumsum(steps, axis=1)], axis=1)
        self.span = max(int(round(SPAN * fps)), 1)
        self.normal = _curve_normals(self.track[..., :2], self.span, fps, walking, straight)
        self.fps, self.lead, self.idle, self.slowest, self.gain, self.steer = fps, lead, idle, slowest, gain, steer
        self.steer_time = steer_time
        self.arrive, self.still, self.move = arrive, names.index("idle"), names.index("move")
        self.approach, self.fastest = approach, fastest
        moving = self.speed >= idle
        self.rest = np.where(moving.any(axis=1), frames - np.argmax(moving[:, ::-1], axis=1), 0)
        self.remaining = self.along[:, -1].copy()
        self.clock = np.zeros(len(wants), dtype=int)
        self.rate, self.offset = np.ones(len(wants)), np.zeros(len(wants))
        self.side = np.zeros(len(wants))
        self.trail = []   # the characters' last ground positions (B, 2), up to a span's worth

    def at(self, offsets):
        """Frame indices (B, S) ``offsets`` (S,) frames on from each path's clock (held at the end)."""
        return np.minimum(self.clock[:, None] + np.asarray(offsets), self.track.shape[1] - 1)

    def future(self, ahead):
        """(B, ahead, 6): the desired positions (moved by the drift correction), directions and
        velocities (scaled by the rate) 1 to ``ahead`` frames on from the clocks at each path's rate."""
        rows, last = np.arange(len(self.clock))[:, None], self.track.shape[1] - 1
        frame = np.minimum(self.clock[:, None] + self.rate[:, None] * np.arange(1, ahead + 1), last)
        lo = np.floor(frame).astype(int)
        hi, w = np.minimum(lo + 1, last), (frame - lo)[..., None]
        desired = (1 - w) * self.track[rows, lo] + w * self.track[rows, hi]
        desired[..., 2:4] /= np.maximum(np.linalg.norm(desired[..., 2:4], axis=-1, keepdims=True), 1e-12)
        desired[..., :2] -= self.offset[:, None, None] * self.normal[rows, lo]
        steer = np.maximum(self.steer, self.steer_time * self.speed[rows[:, 0], self.clock])[:, None, None]
        turned = desired[..., 2:4] - (self.side[:, None, None] / steer) * self.normal[rows, lo]
        turned /= np.maximum(np.linalg.norm(turned, axis=-1, keepdims=True), 1e-12)
        angle = np.arctan2(desired[..., 2] * turned[..., 1] - desired[..., 3] * turned[..., 0],
                           np.sum(desired[..., 2:4] * turned, axis=-1))
        desired[..., 2:4] = turned
        desired[..., 4:6] = turn(angle, desired[..., 4:6]) * self.rate[:, None, None]
        return desired

    def desire(self, offsets):
        """The desired speed (B, S) and action values (B, S, A) ``offsets`` (S,) frames on from the clocks;
        once a path has come to its last stop, the character's own (module's docstring, 4)."""
        k, rows = self.at(offsets), np.arange(len(self.clock))[:, None]
        speed, actions = np.minimum(self.speed[rows, k], self.fastest), self.actions[rows, k].copy()
        if self.arrive is None:
            return speed, actions
        ending = (self.clock >= self.rest)[:, None]
        arriving = np.minimum(self.remaining[:, None] / SPEED_HORIZON, self.approach)
        speed = np.where(ending, np.maximum(speed, arriving), speed)
        going = (ending * np.clip(self.remaining / self.arrive, 0, 1)[:, None]) * actions[..., self.still]
        actions[..., self.still] -= going
        actions[..., self.move] += going
        return speed, actions

    def advance(self, step, here):
        """The clocks, rates and offsets for step ``step`` + 1, the characters' ground positions after
        step ``step`` being ``here`` (B, 2)."""
        rows = np.arange(len(here))
        nearest = self._nearest(here)
        normal = self.normal[rows, nearest]
        curving = np.any(normal != 0, axis=-1)
        side = np.sum((here - self.track[rows, nearest, :2]) * normal, axis=-1)
        self.side = side
        self.offset = np.where(curving, self.offset + self.gain * side / self.fps, self.offset * (1 - FADE / self.fps))
        self.remaining = np.minimum(self.along[rows, -1] - self.along[rows, nearest],
                                    np.linalg.norm(self.track[rows, -1, :2] - here, axis=-1))
        self.clock = self._led(step, nearest)
        self.trail = (self.trail + [here.copy()])[-(self.span + 1):]
        self.rate = np.where(curving, self._pace(), 1.0)

    def _nearest(self, here):
        """(B,) each path's frame nearest its character at ``here`` (B, 2), within NEAR of its clock."""
        rows, last = np.arange(len(here)), self.track.shape[1] - 1
        near = np.clip(self.clock[:, None] + np.arange(-NEAR, NEAR + 1), 0, last)
        distance = np.linalg.norm(self.track[rows[:, None], near, :2] - here[:, None], axis=-1)
        return near[rows, np.argmin(distance, axis=1)]

    def _led(self, step, nearest):
        """(B,) the clocks for step ``step`` + 1: the path's timing, held to ``lead`` ahead of ``nearest``."""
        rows, last = np.arange(len(nearest)), self.track.shape[1] - 1
        reach = np.array([np.searchsorted(a, a[n] + self.lead, side="right") - 1 for a, n in zip(self.along, nearest)])
        idling = (self.speed[rows, self.clock] < self.idle) & ((self.clock < self.rest) | (self.arrive is None))
        led = np.where(idling, self.clock + 1, np.maximum(reach, self.clock))
        return np.minimum(led, min(step + 1, last))

    def _pace(self):
        """(B,) the characters' speed over the last span over their paths' from the clocks, between
        ``slowest`` and 1 (1 until a span has passed)."""
        if len(self.trail) <= self.span:
            return np.ones(len(self.clock))
        rows, last = np.arange(len(self.clock)), self.track.shape[1] - 1
        mine = np.linalg.norm(self.trail[-1] - self.trail[0], axis=-1)
        theirs = self.along[rows, np.minimum(self.clock + self.span, last)] - self.along[rows, self.clock]
        return np.where(theirs > 0, np.clip(mine / np.maximum(theirs, 1e-12), self.slowest, 1.0), 1.0)


def _curve_normals(points, span, fps, walking, straight):
    """(B, T, 2): unit normals to the left of paths of ``points`` (B, T, 2) at ``fps`` where they curve:
    go at ``walking`` speed or faster over the ``span`` frames either side, turning between those
    chords on a radius under ``straight``; zero elsewhere."""
    tangent = np.gradient(points, axis=1)
    length = np.linalg.norm(tangent, axis=-1)
    ahead = np.pad(points, ((0, 0), (0, span), (0, 0)), mode="edge")[:, span:] - points
    behind = points - np.pad(points, ((0, 0), (span, 0), (0, 0)), mode="edge")[:, :-span]
    chords = np.linalg.norm(ahead, axis=-1), np.linalg.norm(behind, axis=-1)
    turn = np.arccos(np.clip(np.sum(ahead * behind, axis=-1) / np.maximum(chords[0] * chords[1], 1e-12), -1, 1))
    curves = (np.minimum(*chords) * fps / span >= walking) & (turn >= 0.5 * (chords[0] + chords[1]) / straight)
    left = np.stack([tangent[..., 1], -tangent[..., 0]], axis=-1) / np.maximum(length, 1e-12)[..., None]
    return np.where((curves & (length > 0))[..., None], left, 0.0)
