"""Desired trajectories for the MANN controller: read from a CSV or a BVH file, checked, and sampled
at the model's frame rate.

A CSV path has the header ``time,x,y`` and optionally ``action``: seconds, and metres on the ground
in Blender's Z-up axes, which become the model's Y-up ground as Blender's BVH importer maps them
(Blender (x, y, z) is BVH (x, z, -y), so Blender's ground (x, y) is the model's (x, -z)). An action
applies from its point to the next; an empty cell leaves it to the speed (see :func:`desired`). A BVH
path is a motion of the model's skeleton whose root (the hips projected to the floor) the controller
follows, with its timing and facing.
"""

import csv
import io
from dataclasses import dataclass, replace
from pathlib import Path as FilePath

import numpy as np

from ..bvh import read_bvh
from ..errors import BetwixtError
from .features import SPEED_HORIZON, bones_of, one_hot, root, speed_ahead, world

GAITS = {"walk": 1.0, "trot": 1.8, "canter": 3.0}   # m/s: the dog capture's walk, trot and canter

STILL = 1e-6   # units a frame: slower than this the path has no direction of its own
LONGEST = 1200.0   # s: the longest path followed in one request (20 minutes: MANN's 72,000 steps take two minutes)
MOST_ROWS = 100_000   # points of a CSV path: one every 12 ms of the longest
BRAKE_PIECES = 30   # legs a braking distance is drawn with (braked)


class PathError(BetwixtError):
    """A path that cannot be followed."""


@dataclass(frozen=True, eq=False)
class Path:
    """A desired trajectory on the ground, in the model's units and axes (Y up, (x, z) on the floor).

    ``times`` (N,) seconds, increasing; ``points`` (N, 2); ``actions`` (N,) action names (or None, the
    speed decides) each from its point to the next, or None for all; ``facing`` (N,) angles the
    character should face (a capture's), or None: along the path."""

    times: np.ndarray
    points: np.ndarray
    actions: tuple = None
    facing: np.ndarray = None
    source: str = "path"

    @property
    def duration(self):
        return float(self.times[-1] - self.times[0])


def check(path, actions, longest=LONGEST):
    """Refuse a path with fewer than two points, times not increasing, a value not finite, an action not
    in ``actions``, or lasting longer than ``longest`` seconds: one error naming the path and the point."""
    where = path.source
    if len(path.times) < 2:
        raise PathError(f"{where}: a path needs at least two points, it has {len(path.times)}")
    values = [path.times, path.points] + ([] if path.facing is None else [path.facing])
    for v in values:
        bad = np.flatnonzero(~np.isfinite(np.reshape(v, (len(path.times), -1))).all(axis=1))
        if len(bad):
            raise PathError(f"{where}: point {bad[0] + 1} is not a number (NaN or infinite); fix it")
    back = np.flatnonzero(np.diff(path.times) <= 0)
    if len(back):
        raise PathError(f"{where}: the time of point {back[0] + 2} ({path.times[back[0] + 1]:g} s) does not come "
                        f"after the one before ({path.times[back[0]]:g} s); times must increase")
    if path.duration > longest:
        raise PathError(f"{where}: the path lasts {path.duration:,.0f} s, longer than the {longest:,.0f} s one request "
                        "follows (its time and memory grow with it); follow it in parts")
    for i, a in enumerate(path.actions or ()):
        if a is not None and a not in actions:
            raise PathError(f"{where}: point {i + 1} asks for the action {a!r}; the model knows "
                            f"{', '.join(actions)}")


def read_path(file, skeleton, units_per_metre, actions):
    """The :class:`Path` in ``file``: a CSV (see the module's docstring) or a BVH of ``skeleton``; checked."""
    file = FilePath(file)
    if file.suffix.lower() == ".bvh":
        path = bvh_path(file, skeleton)
    else:
        path = csv_path(file, units_per_metre, actions)
    check(path, actions)
    return path


def csv_path(file, units_per_metre, actions):
    """A CSV path; a row that cannot be read is an error naming its line."""
    too_many = f"more than the {MOST_ROWS:,} points a path may have (one every few centimetres is plenty); thin it"
    try:
        size = FilePath(file).stat().st_size
        if size > 100 * MOST_ROWS:   # a hundred bytes a row: refused before it is read
            raise PathError(f"{file}: {size / 2**20:,.0f} MiB, {too_many}")
        text = FilePath(file).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise PathError(f"{file}: cannot read the path ({getattr(e, 'strerror', None) or e})") from None
    count = text.count("\n")
    if count > MOST_ROWS + 1:   # the header, and a point a line
        raise PathError(f"{file}: {count:,} lines, {too_many}")
    rows = list(csv.reader(io.StringIO(text)))
    lines = [(n, r) for n, r in enumerate(rows, 1) if any(c.strip() for c in r)]
    header = [c.strip().lower() for c in lines[0][1]] if lines else []
    if header not in (["time", "x", "y"], ["time", "x", "y", "action"]):
        raise PathError(f"{file}, line {lines[0][0] if lines else 1}: the header must be time,x,y or "
                        f"time,x,y,action (seconds, and metres on the ground in Blender's axes)")
    values, named = [], []
    for n, row in lines[1:]:
        cells = [c.strip() for c in row]
        if len(cells) not in (3, len(header)):
            raise PathError(f"{file}, line {n}: {len(cells)} values where the header has {len(header)}")
        try:
            t, x, y = (float(c) for c in cells[:3])
        except ValueError:
            raise PathError(f"{file}, line {n}: {','.join(cells[:3])!r} is not three numbers") from None
        if not np.isfinite([t, x, y]).all():
            raise PathError(f"{file}, line {n}: not a number (NaN or infinite); fix the point")
        action = cells[3] if len(cells) > 3 and cells[3] else None
        if action is not None and action not in actions:
            raise PathError(f"{file}, line {n}: unknown action {action!r}; the model knows {', '.join(actions)} "
                            "(or leave it empty to go by the speed)")
        if values and t <= values[-1][0]:
            raise PathError(f"{file}, line {n}: time {t:g} s does not come after {values[-1][0]:g} s; times "
                            "must increase")
        values.append((t, x, y))
        named.append(action)
    if len(values) < 2:
        raise PathError(f"{file}: a path needs at least two points, it has {len(values)}")
    v = np.array(values)
    # Blender's ground (x, y) in metres is the model's (x, -z) in its units
    return Path(v[:, 0], np.stack([v[:, 1], -v[:, 2]], axis=-1) * units_per_metre,
                tuple(named) if any(named) else None, None, str(file))


def bvh_path(file, skeleton):
    """The root track of a BVH file of ``skeleton``, with its timing and facing."""
    motion = read_bvh(file)
    if not motion.skeleton.same_hierarchy(skeleton):
        missing = [n for n in skeleton.names if n not in motion.skeleton.names]
        raise PathError(f"{file}: a motion of another skeleton ({len(motion.skeleton)} joints, root "
                        f"{motion.skeleton.names[0]!r}{f', without {missing[:3]}' if missing else ''}); a path "
                        f"BVH must be of the model's skeleton ({len(skeleton)} joints, root {skeleton.names[0]!r})")
    bones = bones_of(motion.skeleton)
    ground, theta, _ = root(world(motion, bones)[0], bones, motion.fps)
    return Path(np.arange(motion.n_frames) / motion.fps, ground, None, theta, str(file))


def paced(path, fastest, longest=LONGEST):
    """``path`` with its times stretched wherever it goes faster than ``fastest`` (units a second, what a
    model can do): a network asked for a speed its data never had diverges (MANN, 30 m/s: the root
    kilometres away) or lags far behind. Unchanged (the same object) where no part is faster; a path
    that paced takes longer than ``longest`` seconds is refused."""
    step = np.linalg.norm(np.diff(path.points, axis=0), axis=-1)
    given = np.diff(path.times)
    if not (step > fastest * given * (1 + 1e-9)).any():
        return path
    times = path.times[0] + np.concatenate([[0.0], np.cumsum(np.maximum(given, step / fastest))])
    slowed = replace(path, times=times)
    if slowed.duration > longest:
        raise PathError(f"{path.source}: at the model's fastest ({fastest:g} units a second) the path takes "
                        f"{slowed.duration:,.0f} s, longer than the {longest:,.0f} s one request follows; "
                        "shorten it or follow it in parts")
    return slowed


def braked(path, slow, brake):
    """``path`` with its approach to every stop (its end, or a point it then stands on) re-timed so that
    its speed falls no faster than ``brake`` (units a second squared) down to ``slow`` (units a second)
    by the stop: no faster than sqrt(slow^2 + 2 brake d) with d the way left to the stop. Told to stop
    dead from a canter, the network stops within a few frames, its forelegs folded, where the capture's
    dogs take most of a second or more, by way of a trot. A stand after the stop gives up the time the
    approach takes longer (the stand's end keeps its time); a path that ends moving lasts longer.
    Unchanged (the same object) where no approach is faster than that, and for a path with its own
    facing (a capture's root track, whose dog eased its own stops)."""
    if path.facing is not None:
        return path
    path = _divided(path, slow, brake)
    step = np.linalg.norm(np.diff(path.points, axis=0), axis=-1)
    given = np.diff(path.times)
    moving = step > STILL
    ends = np.flatnonzero(moving & ~np.append(moving[1:], False))        # the last moving leg before each stop
    way = np.zeros(len(step))                                            # from each leg's end to its stop
    for e, start in zip(ends, np.concatenate([[0], ends[:-1] + 1])):
        legs = np.arange(start, e + 1)
        way[legs] = np.cumsum(step[legs][::-1])[::-1] - step[legs]
    # the leg's mean speed no faster than the braking curve allows at its end (the slower end of the leg)
    allowed = np.sqrt(slow ** 2 + 2 * brake * way)
    wanted = np.where(moving, np.maximum(given, step / np.maximum(allowed, 1e-12)), given)
    if np.allclose(wanted, given, rtol=1e-9, atol=0):
        return path
    late, times, keep = 0.0, [path.times[0]], [0]
    for i in range(len(step)):
        if moving[i]:
            late += wanted[i] - given[i]
            duration = wanted[i]
        else:                                                             # a stand: it gives up the delay
            duration = max(given[i] - late, 0.0)
            late -= given[i] - duration
            if duration <= 1e-9:                                          # given up whole: its end (and the
                keep[-1] = i + 1                                          # action from there) takes its place
                continue
        times.append(times[-1] + duration)
        keep.append(i + 1)
    keep = np.array(keep)
    return replace(path, times=np.array(times), points=path.points[keep],
                   actions=None if path.actions is None else tuple(path.actions[k] for k in keep))


def _divided(path, slow, brake, pieces=BRAKE_PIECES):
    """``path`` with every leg cut into legs of at most 1/``pieces`` of the braking distance from its fastest
    speed (:func:`braked`), so that re-timing its legs can draw the braking curve; the same object where
    none is faster than ``slow`` or no leg is cut."""
    step = np.linalg.norm(np.diff(path.points, axis=0), axis=-1)
    speed = step / np.diff(path.times)
    if not (speed > slow).any():
        return path
    longest = max(speed.max() ** 2 - slow ** 2, slow ** 2) / (2 * brake * pieces)
    cut = np.ceil(step / longest).astype(int).clip(1)
    if (cut <= 1).all():
        return path
    share = np.concatenate([np.arange(c) / c for c in cut] + [[0.0]])
    leg = np.concatenate([np.full(c, i) for i, c in enumerate(cut)] + [[len(step) - 1]])
    share[-1] = 1.0
    times = path.times[leg] + share * np.diff(path.times)[leg]
    points = path.points[leg] + share[:, None] * np.diff(path.points, axis=0)[leg]
    actions = None if path.actions is None else tuple(path.actions[i] for i in leg[:-1]) + (path.actions[-1],)
    return replace(path, times=times, points=points, actions=actions)


@dataclass(frozen=True, eq=False)
class Desired:
    """A path at a frame rate, held at its last point for ``ahead`` frames more: ``frames`` of its own
    and, per frame, ground ``positions`` (T, 2), facing ``directions`` (T, 2) as (sin, cos), ``velocities``
    (T, 2) (units/s), desired ``speed`` (T,) and action values ``actions`` (T, A)."""

    frames: int
    positions: np.ndarray
    directions: np.ndarray
    velocities: np.ndarray
    speed: np.ndarray
    actions: np.ndarray

    @property
    def facing(self):
        """The facing angle at the first frame."""
        return float(np.arctan2(*self.directions[0]))


def desired(path, fps, ahead, actions, move_speed):
    """The :class:`Desired` of ``path`` at ``fps``: positions linear between the points; facing the
    path's own (a BVH's) or along the path (kept where it stands still); the action of each frame the
    path's, or "move" where the desired speed reaches ``move_speed`` and "idle" below."""
    frames = int(np.floor(path.duration * fps + 1e-6)) + 1
    horizon = int(round(SPEED_HORIZON * fps))
    t = path.times[0] + np.arange(frames + ahead + horizon + 1) / fps     # held past the end
    pos = np.stack([np.interp(t, path.times, path.points[:, k]) for k in range(2)], axis=-1)
    velocity = np.diff(pos, axis=0, prepend=pos[:1]) * fps   # backwards, as the training data's
    velocity[0] = velocity[1]
    if path.facing is not None:
        theta = np.interp(t, path.times, np.unwrap(path.facing))
        direction = np.stack([np.sin(theta), np.cos(theta)], axis=-1)
    else:
        direction = _along(np.gradient(pos, axis=0))
    speed = speed_ahead(pos, fps)
    if path.actions is None:
        named = [None] * len(t)
    else:
        segment = np.clip(np.searchsorted(path.times, t, side="right") - 1, 0, len(path.times) - 1)
        named = [path.actions[s] for s in segment]
    move, idle = actions.index("move"), actions.index("idle")
    label = np.array([actions.index(a) if a is not None else (move if v >= move_speed else idle)
                      for a, v in zip(named, speed)])
    n = frames + ahead + 1
    return Desired(frames, pos[:n], direction[:n], velocity[:n], speed[:n],
                   one_hot(label, fps, len(actions))[:n].astype(np.float64))


def _along(step):
    """Unit directions (T, 2) of travel of per-frame steps (T, 2); where the path stands still, the
    last direction it had (the first one it will have, before it moves; +Z if it never does)."""
    length = np.linalg.norm(step, axis=-1)
    moving = length > STILL
    if not moving.any():
        return np.tile([0.0, 1.0], (len(step), 1))
    last = np.maximum.accumulate(np.where(moving, np.arange(len(step)), -1))
    last = np.where(last < 0, np.flatnonzero(moving)[0], last)
    return step[last] / length[last, None]
