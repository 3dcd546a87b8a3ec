"""How small the facing's path deviation can be on bench-mann's and bench-mvae's paths, given how fast the
capture itself turns at each gait:

    .venv/bin/python tools/turning.py --cache cache

The paths' facing measure (``lab/metrics.path_deviation``) compares the root's facing with the
path's direction at its nearest point, which jumps by a corner's whole turn where the nearest point passes
the corner. A root whose facing turns at most ``w`` radians a second spends at least
``turn ** 2 / (4 w)`` radian-seconds off that direction per corner (the least when it turns evenly, half
before the jump and half after), however it moves; summed over a lap's corners and divided by the path's
time, it is a floor under the lap's mean facing angle for a character that keeps the path's timing at
that gait. ``w`` is read from the capture: the facing's change over half-second windows in which the
root travels at the gait's speed (within a fifth), its 99th percentile and its largest. The shapes are
bench-mann's (``lab/mann_bench.shapes``); a corner split over vertices closer than CORNER is one
turn. A gait slowed through its corners turns faster, but no longer keeps the gait or the timing.

Off the corners the root's facing is not the path's either: a biped's is its hips', which swing with
each stride. The capture's own straight lines say by how much: over every STRAIGHT_WINDOW in which the
root travels at the gait's speed and keeps within LINE of the straight chord from its start to its end,
the facing's mean angle to that chord, the median (and quartile, tenth) over the windows, a floor on
straight lines that the corners' adds to.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.mann.path import GAITS  # noqa: E402
from inference.mvae.features import hips_pair, root_of  # noqa: E402
from lab.dataset import load_motion_set  # noqa: E402  (after the path is set)
from lab.mann_bench import PAPER, shapes  # noqa: E402
from lab.metrics import root_track  # noqa: E402
from lab.mvae_bench import PAPER_GAIT, SPEEDS  # noqa: E402

WINDOW = 0.5           # s over which the capture's turning rate is read
BAND = 0.2             # the speed band of a gait: its speed within this share
STRAIGHT = np.radians(5)   # a vertex turning less than this is no corner (a circle's polyline)
CORNER = 0.2           # m: vertices closer than this along the path make one corner
UNITS = 100.0          # to the metre: both captures are in centimetres
STRAIGHT_WINDOW = 1.0  # s of a capture's straight line
LINE = 0.05            # the farthest the root may stray from a straight line's chord, a share of its length


def biped_track(clip):
    """A LaFAN1 clip's root on the floor (F, 2) and facing (F,), as bench-mvae reads a biped's."""
    origin, theta = root_of(clip.global_transforms()[1], hips_pair(clip.skeleton))
    return origin[:, [0, 2]], theta


def turning_rates(data, track, speed, units_per_metre):
    """The facing's change (radians a second) over every WINDOW of every clip of ``data`` in which the root
    travels at ``speed`` m/s, within BAND."""
    span = int(round(WINDOW * data.fps))
    rates = []
    for i in range(len(data.subjects)):
        ground, theta = track(data.clip(i))
        travelled = np.linalg.norm(ground[span:] - ground[:-span], axis=-1) / WINDOW / units_per_metre
        at_gait = np.abs(travelled - speed) < BAND * speed
        rates.append(np.abs(theta[span:] - theta[:-span])[at_gait] / WINDOW)
    return np.concatenate(rates)


def straight_offsets(data, track, speed, units_per_metre):
    """The facing's mean angle (radians) to the chord of every STRAIGHT_WINDOW of the clips of ``data``
    (windows a quarter apart) in which the root travels at ``speed`` m/s, within BAND, and keeps within
    LINE of the chord."""
    span = int(round(STRAIGHT_WINDOW * data.fps))
    offsets = []
    for i in range(len(data.subjects)):
        ground, theta = track(data.clip(i))
        for s in range(0, len(ground) - span, max(span // 4, 1)):
            chord = ground[s + span] - ground[s]
            length = np.linalg.norm(chord)
            if abs(length / STRAIGHT_WINDOW / units_per_metre - speed) > BAND * speed:
                continue
            along = ground[s:s + span + 1] - ground[s]
            if np.abs(along[:, 0] * chord[1] - along[:, 1] * chord[0]).max() > LINE * length ** 2:
                continue
            off = theta[s:s + span + 1] - np.arctan2(chord[0], chord[1])
            offsets.append(np.abs(np.angle(np.exp(1j * off))).mean())
    return np.array(offsets)


def corners(points):
    """The turns (radians) at the corners of a polyline (N, 2) in UNITS: vertices turning less than STRAIGHT
    are no corner, and the turns of those closer than CORNER along the path are summed into one (a polyline
    sampled in time may cut a corner's vertex into two)."""
    step = np.diff(points, axis=0)
    step = step[np.linalg.norm(step, axis=-1) > 1e-9]
    length = np.linalg.norm(step, axis=-1)
    turn = np.diff(np.unwrap(np.arctan2(step[:, 0], step[:, 1])))
    found, run, since = [], 0.0, 0.0
    for k, t in enumerate(turn):
        if abs(t) < STRAIGHT:
            since += length[k + 1]
            continue
        if run and since >= CORNER * UNITS:
            found.append(abs(run))
            run = 0.0
        run, since = run + t, 0.0
    if run:
        found.append(abs(run))
    return np.array(found)


def floor_of(speed, rate):
    """Per bench shape at ``speed`` m/s, the least mean facing angle (degrees) at a turning ``rate``."""
    return {name: float(np.degrees((corners(path.points) ** 2).sum() / (4 * rate) / path.duration))
            for name, path in shapes(speed, UNITS).items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    mocap = args.shared / "mocap"
    sets = [("LaFAN1 (bench-mvae)", mocap / "lafan1-27.zip", biped_track,
             {gait: (speed, PAPER[PAPER_GAIT[gait]][1]) for gait, speed in SPEEDS.items()}),
            ("dog (bench-mann)", mocap / "dog-mann.zip", root_track,
             {gait: (speed, PAPER[gait][1]) for gait, speed in GAITS.items()})]
    print("the least mean facing angle (degrees) a character keeping a gait and the path's timing can have, "
          "at the capture's turning rate over half a second at that gait (99th percentile; largest)")
    for title, source, track, gaits in sets:
        data = load_motion_set(source, args.cache)
        for gait, (speed, paper) in gaits.items():
            rates = turning_rates(data, track, speed, UNITS)
            floors = [floor_of(speed, np.percentile(rates, q)) for q in (99, 100)]
            per_shape = ", ".join(f"{name} {a:.1f}; {b:.1f}" for (name, a), b in zip(floors[0].items(),
                                                                                    floors[1].values()))
            turning = f"{np.degrees(np.percentile(rates, 99)):.0f}; {np.degrees(rates.max()):.0f} deg/s"
            means = "; ".join(f"{np.mean(list(f.values())):.1f}" for f in floors)
            print(f"  {title} {gait} {speed:g} m/s ({len(rates):,} windows; turning {turning}): {per_shape}; "
                  f"mean {means} (the paper's MANN {paper:g})")
            line = np.degrees(np.percentile(straight_offsets(data, track, speed, UNITS), [50, 25, 10]))
            print(f"    on the capture's straight lines of {STRAIGHT_WINDOW:g} s at that gait, the facing's mean angle "
                  f"to the line: median {line[0]:.1f} (quartile {line[1]:.1f}, tenth {line[2]:.1f})")

if __name__ == "__main__":
    main()
