"""Clips for training, as every family cuts them: subjects and held-out clips, the held-out tenth,
mirror images, speeds.

Every clip is split in time: its last tenth is held out for validation, so a data set without a
test subject (Bandai) still gets an honest validation curve, and LaFAN1's test subject 5 is never
read at all; nor are the clips named by ``--hold-out``, on which a model can then be measured.
Mirrored copies of the clips double the data (left/right symmetry is free knowledge); copies played
faster or slower (``--speeds``) add timings the capture did not hold.
"""

from dataclasses import dataclass, replace
from pathlib import Path

from inference.errors import DataError
from inference.mirror import local_reflections, mirror
from lab.dataset import Selection

HOLD_OUT = 0.1


@dataclass
class Clips:
    """The motions of one part of a data set, and where they came from."""

    motions: list        # Motion, the data set's clips (then their mirror images, then other speeds)
    files: list          # the data set's clip names that went in, in order
    reflections: object  # (J, 3) the joints' reflections the mirror images were made with, or None
    origins: list        # per motion, the data set it came from (``MotionSet.origin``)


def clips(data, part="train", chosen=Selection(), mirrored=True, speeds=(1.0,), context=0):
    """The ``part`` ("train" or "validation") of a cached data set ``data``: the first nine tenths of
    every clip the :class:`Selection` ``chosen`` keeps, or the last tenth with ``context`` frames
    before it (so that a validation window's past may reach back before the held-out frames)."""
    chosen.check(data.names, data.source)
    motions, files, origins = [], [], []
    for i, name in enumerate(data.names):
        if not chosen.keeps(name):
            continue
        clip = data.clip(i)
        cut = int(round(clip.n_frames * (1 - HOLD_OUT)))
        motions.append(clip.frames(0, cut) if part == "train" else clip.frames(max(cut - context, 0)))
        files.append(name)
        origins.append(data.origin(i))
    if not motions:
        raise DataError(f"{data.source}: no clip of subjects {chosen.subjects} outside --hold-out; check --subjects "
                        "and --hold-out against the file names")
    # the joints' reflections, found once for the data set (stable where windows are not), also let
    # the runtime average a fill with its mirror image's
    reflections = local_reflections(motions) if mirrored else None
    if reflections is not None:
        motions += [mirror(c, reflections=reflections) for c in motions]
        origins += origins
    copies = [k for k in speeds if k != 1.0]
    motions += [replace(c.resample(c.fps / k), fps=c.fps) for k in copies for c in motions]
    return Clips(motions, files, reflections, origins * (1 + len(copies)))


def subjects_of(args):
    """``--subjects`` as a list of numbers, or None for every clip."""
    return [int(s) for s in args.subjects.split(",")] if args.subjects else None


def held_out_of(value):
    """``--hold-out``'s clip names: a comma-separated list, or a file of one name a line; a name may
    keep its ``.bvh``."""
    if not value:
        return []
    path = Path(value)
    names = [n.strip() for n in (path.read_text().splitlines() if path.is_file() else value.split(","))]
    return sorted({Path(n).stem if n.lower().endswith(".bvh") else n for n in names if n})


def selection_of(args):
    """The clips a run may read, as its ``--subjects`` and ``--hold-out`` say, and less those its
    checkpoint's run held out (``held_out_before``, set by the loop on a resume or ``--init``)."""
    before = tuple(getattr(args, "held_out_before", ()))
    return Selection(subjects_of(args), tuple(sorted({*held_out_of(args.hold_out), *before})), before)


def selection_in(meta):
    """The clips a run read, from its metadata (a checkpoint's ``meta`` or a model file's ``betwixt.data``;
    one from before ``--hold-out`` held none out)."""
    return Selection(meta["subjects"], tuple(meta.get("held_out", ())))


def speeds_of(args):
    return [float(k) for k in args.speeds.split(",")]
