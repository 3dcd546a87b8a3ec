"""Where along its path the MANN controller reads its desired trajectory: the path's own timing, held
back to where the character has got to, and moved against the drift the network keeps to one side of
a curve with.

The paper's runtime steers from a gamepad, so its character is always where its desired trajectory
starts; along a timed path it need not be. Two things go wrong on a plain timed path:

1. a dog slower than its path (in a tight turn the network slows down, as the data's dogs do: their
   canters turn at half the rate a 2 m circle asks at 3 m/s) is drawn across toward where the timing
   has got to, and cuts inside the curve; so the frame the desired future is read from keeps the path's
   timing but never runs more than ``lead`` along the path ahead of the frame nearest the character,
   and catches up with the timing where the character does (pace);
2. even where it keeps pace, the network runs a steady distance to the inside of a curve, more the
   faster it goes (at 1.8 m/s round a 2 m circle, about 15 cm); so the character's sideways distance
   from the path is integrated (``gain`` a second) into an offset by which the desired positions move
   to the other side (drift), where the path curves (on a radius under ``straight``) at ``walking``
   speed or faster. Elsewhere the offset fades: slower, a dog sidesteps and turns on the spot, and on
   a straight path there is no curve to drift inside of (a corner cut is no drift to carry on with).
"""

import numpy as np

LEAD = 0.25          # m: how far along its path the desired trajectory may run ahead of the character
DRIFT_GAIN = 2.0     # 1/s: the drift correction's growth a second per unit of sideways distance
DRIFT_SPEED = 0.7    # m/s: where the path is slower than a walk, there is no drift to correct
STRAIGHT = 5.0       # m: a path turning on a wider radius than this goes straight: no drift to correct
FADE = 2.0           # 1/s: how fast the correction fades where there is none
CURVE_SPAN = 0.25    # s: a path's curvature is measured over chords this long either side of a frame
NEAR = 60            # frames either side of a path's frame searched for the one nearest its character


class Pursuit:
    """B desired paths (:class:`.path.Desired`) followed by B characters: per path and frame (each path
    held at its end to ``frames``) the desired ``track`` positions, directions and velocities (B, T, 6),
    ``speed`` (B, T) and ``actions`` (B, T, A), the distance ``along`` it (B, T) and its unit ``normal``
    to the left of travel (B, T, 2) where its drift is corrected (zero elsewhere); ``clock`` (B,), each
    path's frame for the next step, and ``offset`` (B,), the drift correction (units, to the left).
    ``lead``, ``walking`` (units a second) and ``straight`` (units) as in the module's docstring; the
    defaults keep to the path's timing and correct nothing."""

    def __init__(self, wants, frames, fps, lead=np.inf, gain=0.0, walking=np.inf, straight=np.inf):
        def held(a):
            return np.concatenate([a, np.repeat(a[-1:], max(frames - len(a), 0), axis=0)])[:frames]

        self.track = np.stack([held(np.concatenate([w.positions, w.directions, w.velocities], axis=-1))
                               for w in wants])
        self.speed = np.stack([held(w.speed) for w in wants])
        self.actions = np.stack([held(w.actions) for w in wants])
        steps = np.linalg.norm(np.diff(self.track[..., :2], axis=1), axis=-1)
        self.along = np.concatenate([np.zeros((len(wants), 1)), np.cumsum(steps, axis=1)], axis=1)
        self.normal = _normals(self.track[..., :2], fps, walking, straight)
        self.fps, self.lead, self.gain = fps, lead, gain
        self.clock = np.zeros(len(wants), dtype=int)
        self.offset = np.zeros(len(wants))

    def at(self, offsets):
        """Frame indices (B, S) ``offsets`` (S,) frames on from each path's clock (held at the end)."""
        return np.minimum(self.clock[:, None] + np.asarray(offsets), self.track.shape[1] - 1)

    def future(self, ahead):
        """(B, ahead, 6): the desired positions (moved by the drift correction), directions and
        velocities 1 to ``ahead`` frames on from the clocks."""
        k, rows = self.at(np.arange(1, ahead + 1)), np.arange(len(self.clock))[:, None]
        desired = self.track[rows, k]
        desired[..., :2] -= self.offset[:, None, None] * self.normal[rows, k]
        return desired

    def desire(self, offsets):
        """The desired speed (B, S) and action values (B, S, A) ``offsets`` (S,) frames on from the clocks."""
        k, rows = self.at(offsets), np.arange(len(self.clock))[:, None]
        return self.speed[rows, k], self.actions[rows, k]

    def advance(self, step, here):
        """The clocks and offsets for step ``step`` + 1, the characters' ground positions after step
        ``step`` being ``here`` (B, 2)."""
        rows, last = np.arange(len(here)), self.track.shape[1] - 1
        near = np.clip(self.clock[:, None] + np.arange(-NEAR, NEAR + 1), 0, last)
        distance = np.linalg.norm(self.track[rows[:, None], near, :2] - here[:, None], axis=-1)
        nearest = near[rows, np.argmin(distance, axis=1)]
        normal = self.normal[rows, nearest]
        side = np.sum((here - self.track[rows, nearest, :2]) * normal, axis=-1)
        drifts = np.any(normal != 0, axis=-1)
        self.offset = np.where(drifts, self.offset + self.gain * side / self.fps, self.offset * (1 - FADE / self.fps))
        reach = np.array([np.searchsorted(a, a[n] + self.lead, side="right") - 1 for a, n in zip(self.along, nearest)])
        self.clock = np.minimum(np.maximum(reach, self.clock), min(step + 1, last))


def _normals(points, fps, walking, straight):
    """(B, T, 2): unit normals to the left of paths of ``points`` (B, T, 2) at ``fps``, where they go
    at ``walking`` speed or faster and curve on a radius under ``straight``; zero elsewhere."""
    tangent = np.gradient(points, axis=1)
    length = np.linalg.norm(tangent, axis=-1)
    span = max(int(round(CURVE_SPAN * fps)), 1)
    ahead = np.pad(points, ((0, 0), (0, span), (0, 0)), mode="edge")[:, span:] - points
    behind = points - np.pad(points, ((0, 0), (span, 0), (0, 0)), mode="edge")[:, :-span]
    speed = np.minimum(np.linalg.norm(ahead, axis=-1), np.linalg.norm(behind, axis=-1)) * fps / span
    turn = np.arccos(np.clip(np.sum(_unit(ahead) * _unit(behind), axis=-1), -1, 1))
    chords = 0.5 * (np.linalg.norm(ahead, axis=-1) + np.linalg.norm(behind, axis=-1))
    drifts = (speed >= walking) & (turn >= chords / straight) & (length > 0)
    left = np.stack([tangent[..., 1], -tangent[..., 0]], axis=-1) / np.maximum(length, 1e-12)[..., None]
    return np.where(drifts[..., None], left, 0.0)


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
