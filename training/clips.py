"""Clips for training, as every family cuts them: subjects, the held-out tenth, mirror images, speeds.

Every clip is split in time: its last tenth is held out for validation, so a data set without a
test subject (Bandai) still gets an honest validation curve, and LaFAN1's test subject 5 is never
read at all. Mirrored copies of the clips double the data (left/right symmetry is free knowledge);
copies played faster or slower (``--speeds``) add timings the capture did not hold.
"""

from dataclasses import dataclass, replace

from inference.dataset import subject_of
from inference.errors import DataError
from inference.mirror import local_reflections, mirror

HOLD_OUT = 0.1


@dataclass
class Clips:
    """The motions of one part of a data set, and where they came from."""

    motions: list        # Motion, the data set's clips (then their mirror images, then other speeds)
    files: list          # the data set's clip names that went in, in order
    reflections: object  # (J, 3) the joints' reflections the mirror images were made with, or None


def clips(data, part="train", subjects=None, mirrored=True, speeds=(1.0,), context=0):
    """The ``part`` ("train" or "validation") of a cached data set ``data``: the first nine tenths of
    every clip of ``subjects`` (all when None; clips whose names carry no subject number, as Bandai's,
    are all kept), or the last tenth with ``context`` frames before it (so that a validation window's
    past may reach back before the held-out frames)."""
    motions, files = [], []
    for i, name in enumerate(data.names):
        if subjects is not None and subject_of(name) not in (*subjects, None):
            continue
        clip = data.clip(i)
        cut = int(round(clip.n_frames * (1 - HOLD_OUT)))
        motions.append(clip.frames(0, cut) if part == "train" else clip.frames(max(cut - context, 0)))
        files.append(name)
    if not motions:
        raise DataError(f"{data.source}: no clip of subjects {subjects}; check --subjects against the file names")
    # the joints' reflections, found once for the data set (stable where windows are not), also let
    # the runtime average a fill with its mirror image's
    reflections = local_reflections(motions) if mirrored else None
    if reflections is not None:
        motions += [mirror(c, reflections=reflections) for c in motions]
    motions += [replace(c.resample(c.fps / k), fps=c.fps) for k in speeds if k != 1.0 for c in motions]
    return Clips(motions, files, reflections)


def subjects_of(args):
    """``--subjects`` as a list of numbers, or None for every clip."""
    return [int(s) for s in args.subjects.split(",")] if args.subjects else None


def speeds_of(args):
    return [float(k) for k in args.speeds.split(",")]
