"""Where generated motion may be poor: joints faster than the animator's own motion, feet through the floor,
gaps the model was unsure of.

After a fill the animator should know where to look. Two checks on world joint positions of the
filled motion, and one on how the model filled it:
- speed: a generated frame where a joint moves faster than ``SPEED`` times the fastest joint of the
  frames the animator gave, or of human motion (``FASTEST`` body heights a second) where theirs is
  slower: a still context (or none, as in Decompress) says nothing of how fast the gap may move;
- floor: a generated frame where a foot (:func:`.anatomy.feet`) is lower than the lowest any foot
  reaches in those frames (the floor found from the rig's feet, not assumed at zero height), by more
  than ``DEPTH`` of the body's height;
- unsure: a gap whose fills seen as it is, mirrored and backwards part by more than ``UNSURE`` degrees on
  some joint (``RTNModel.fill_parted``): the model's fill errs more in such gaps, most of them among the
  worst it fills (docs/experiments.md, "Mixamo's dance at 0.5 s").
"""

from dataclasses import dataclass

import numpy as np

from .anatomy import feet
from .motion import AXES, forward_kinematics
from .rtn.runtime import AGREEMENT

SPEED = 1.5     # times the animator's fastest joint
FASTEST = 7.5   # body heights a second: the fastest joint of LaFAN1's test subject moves 7.3
DEPTH = 0.01    # of the body's height
UNSURE = AGREEMENT[0]   # degrees: where the runtime's views part further, it stops averaging them fully


@dataclass(frozen=True)
class Finding:
    """One check that failed on a run of generated frames: ``what`` is "fast" or "floor"."""

    what: str
    first: int      # frames of the motion, inclusive
    last: int
    joint: str
    value: float    # "fast": times the reference speed; "floor": depth below it, in the motion's units


def check(motion, gaps, height, up="Y"):
    """Findings on the frames strictly inside the ``(start, end)`` key pairs of ``motion`` (filled),
    judged against the frames outside them; ``height`` the body's height in the motion's units."""
    _, world = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    generated = np.zeros(motion.n_frames, dtype=bool)
    for start, end in gaps:
        generated[start + 1:end] = True
    names = motion.skeleton.names
    speed = np.linalg.norm(np.diff(world, axis=0), axis=-1)            # (F - 1, J): frame f to f + 1
    given = ~generated[:-1] & ~generated[1:]
    reference = max(speed[given].max(initial=0.0), FASTEST * height / motion.fps)
    touched = generated[:-1] | generated[1:]
    findings = _runs("fast", touched[:, None] & (speed > SPEED * reference), speed / max(reference, 1e-9), names)
    joints = feet(names)
    if joints:
        floor = ground(world, ~generated, joints, up).min()
        depth = floor - world[:, joints, AXES.index(up)]
        flagged = np.zeros(world.shape[:2], dtype=bool)
        flagged[:, joints] = generated[:, None] & (depth[:, :] > DEPTH * height)
        values = np.zeros(world.shape[:2])
        values[:, joints] = depth
        findings += _runs("floor", flagged, values, names)
    return findings


def ground(world, given, joints, up="Y", percentile=0.0):
    """(len(joints),) how low each of ``joints`` reaches along ``up`` in the ``given`` frames (a bool
    mask) of world positions ``world`` (F, J, 3), the lowest or the ``percentile``: where the rig's own
    feet find the floor."""
    return np.percentile(world[given][:, joints, AXES.index(up)], percentile, axis=0)


def _runs(what, flagged, values, names):
    """One finding per joint and run of consecutive flagged frames, with the run's worst value."""
    found = []
    for j in np.flatnonzero(flagged.any(axis=0)):
        frames = np.flatnonzero(flagged[:, j])
        for run in np.split(frames, np.flatnonzero(np.diff(frames) > 1) + 1):
            found.append(Finding(what, int(run[0]), int(run[-1]), names[j], float(values[run, j].max())))
    return sorted(found, key=lambda f: (f.first, f.joint))


def summary(findings, height, frame=lambda f: f, most=4):
    """One line for the animator: where to look, worst first; ``frame`` maps the motion's frames to
    the user's (scene frames), depths are given in hundredths of the body's ``height``."""
    if not findings:
        return ""
    worst = sorted(findings, key=lambda f: -f.value if f.what == "fast" else -100 * f.value / height)[:most]

    def where(f):
        frames = f"frames {frame(f.first)}-{frame(f.last)}" if f.last > f.first else f"frame {frame(f.first)}"
        what = (f"{f.value:.1f}x as fast as the motion around it" if f.what == "fast"
                else f"{100 * f.value / height:.0f} % of the body's height below the floor")
        return f"{f.joint} {what} at {frames}"

    more = len(findings) - len(worst)
    return "look at " + "; ".join(map(where, worst)) + (f" (and {more} more)" if more > 0 else "")


def unsure(parting, gaps):
    """``[(start, end, degrees)]``: the key pairs of ``gaps`` whose fills parted (``parting``: gap index ->
    degrees, as :func:`.edit.fill` gives it) by more than UNSURE, in order."""
    return [(*gaps[i], parting[i]) for i in sorted(parting) if parting[i] > UNSURE]


def unsure_summary(found, most=4):
    """One line for the animator on :func:`unsure`'s gaps (scene frames)."""
    shown = ", ".join(f"{a + 1}-{b - 1}" for a, b, _ in found[:most]) + (f" (and {len(found) - most} more)"
                                                                          if len(found) > most else "")
    return (f"the model was unsure of frames {shown}: seen as they are, mirrored and backwards it fills them "
            f"differently (by up to {max(d for _, _, d in found):.0f} degrees); look at them, or key a pose inside")
