"""``python -m inference``: inspect BVH files and run the models on them from a terminal.

Bad input ends with one line on stderr that says what is wrong and where, and exit code 2; so does a
result that fails its last check (:mod:`.check`): nothing is written then. The benchmarks, timings and
data set caches are ``python -m lab``'s (not shipped), which runs on :func:`dispatch` and these option types.
"""

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import library, quat
from .anatomy import legs
from .bvh import read_bvh, write_bvh
from .check import ResultError, check_result
from .contacts import plant
from .edit import fill, superres, surround, variants, window
from .errors import BetwixtError
from .guard import check, summary, unsure, unsure_summary
from .inbetween import check_keys, sparse_keys
from .mann.path import paced, read_path
from .modelfile import ModelError, find_model, open_model, shipped
from .modelfile import describe as describe_model
from .motion import AXES, guess_up_axis, height

MOST_VARIANTS = 64      # variants of one gap: each is a model's run, held in memory until all are checked
MOST_CONTINUATIONS = 256  # walks of one request (the Motion VAE's own limit)
MOST_FRAMES = 36_000    # frames of one walk: 20 minutes at 30 fps (the Motion VAE's own limit)
MOST_WALK_FRAMES = 288_000  # K x frames of one request: all are held until checked (about 1.4 GB, 80 s)
MOST_VARIATION = 10.0   # noise strength: 1 is the training's spread, the add-on's slider stops at 2
MOST_TAU = 10.0         # MANN's tau: at 10 the path counts only in the last frames of the network's second
MOST_BLEND = 10_000     # frames of a target blend: longer than any gap a model fills


class Parser(argparse.ArgumentParser):
    """A mistake on the command line ends as other bad input does: one line on stderr and exit code 2
    (argparse's own prints its usage block first). ``python -m lab`` and ``python -m training`` parse with it
    too."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def main(argv=None):
    parser = Parser(prog="python -m inference", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="describe a BVH file")
    info.add_argument("file", type=Path)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(run=_info)

    models = commands.add_parser("models", help="list the shipped models")
    models.add_argument("--json", action="store_true", help="print JSON instead of text")
    models.set_defaults(run=_models)

    fills = commands.add_parser("fill", help="generate the frames strictly between two key frames")
    fills.add_argument("file", type=Path)
    fills.add_argument("--gap", required=True, type=_gap, help="START:END, the two key frames")
    fills.add_argument("-o", "--output", required=True, type=Path)
    _model_options(fills)
    fills.set_defaults(run=_fill, serves="fill", writes="file")

    sr = commands.add_parser("superres", help="dense motion from keys every N frames")
    sr.add_argument("file", type=Path)
    sr.add_argument("--every", required=True, type=whole(2, math.inf, "a key and at least one frame to fill after it"),
                    help="keep every Nth frame as a key")
    sr.add_argument("-o", "--output", required=True, type=Path)
    _model_options(sr)
    sr.set_defaults(run=_superres, serves="decompress", writes="file")

    var = commands.add_parser("variants", help="K different transitions for one gap")
    var.add_argument("file", type=Path)
    var.add_argument("--gap", required=True, type=_gap, help="START:END, the two key frames")
    var.add_argument("-k", type=whole(1, MOST_VARIANTS, "each is a run of the model, all held until checked"),
                     default=8, help=f"how many variants (1 to {MOST_VARIANTS})")
    var.add_argument("-o", "--output", required=True, type=Path, help="folder for the K files")
    _model_options(var, variation=1.0)
    var.set_defaults(run=_variants, serves="variants", writes="folder")

    follow = commands.add_parser("follow-path", help="a character walking along a path (MANN: four-legged; Motion "
                                                      "VAE: two-legged)")
    follow.add_argument("path", type=Path, help="a CSV with the header time,x,y[,action] (seconds; metres on the "
                                                "ground in Blender's axes, Z up) or a BVH whose root track to follow")
    follow.add_argument("-o", "--output", required=True, type=Path)
    follow.add_argument("--model", type=Path, help="model file (default: the shipped one serving follow-path, for "
                                                   "the skeleton of --start or of a BVH path)")
    follow.add_argument("--tau", type=number(0.0, MOST_TAU, "how much MANN's own plan counts against the path's"),
                        help="MANN: how much the network's own plan of the next second counts against the path's "
                             "(0: the path alone; default 0.5)")
    follow.add_argument("--start", type=_start, metavar="FILE.bvh:FRAME",
                        help="start from this frame of a BVH file (0 is the first) with the second before it as the "
                             "past (default: the model's skeleton standing still)")
    _contacts_option(follow)
    follow.set_defaults(run=_follow_path, serves="follow-path", writes="file")

    walk = commands.add_parser("walk", help="K continuations of a clip after one of its frames (Motion VAE)")
    walk.add_argument("file", type=Path)
    walk.add_argument("--from", dest="frame", required=True,
                      type=whole(1, math.inf, "the start is it and the frame before it"),
                      help="the frame to continue from (it and the frame before it are the start)")
    walk.add_argument("--frames", required=True, type=whole(1, MOST_FRAMES, "20 minutes at 30 fps"),
                      help=f"how many frames to generate after it (1 to {MOST_FRAMES:,})")
    walk.add_argument("-k", type=whole(1, MOST_CONTINUATIONS, "each is a run of the model"), default=8,
                      help=f"how many continuations (1 to {MOST_CONTINUATIONS})")
    walk.add_argument("-o", "--output", required=True, type=Path, help="folder for the K files")
    walk.add_argument("--seed", type=_seed, default=0)
    walk.add_argument("--model", type=Path, help="model file (default: the shipped one that continues the skeleton)")
    _contacts_option(walk)
    walk.set_defaults(run=_walk, serves="continue", writes="folder")

    trans = commands.add_parser("transitions", help="K variants of a transition between every two clips, a BVH "
                                                     "each, with a report and a contact sheet")
    trans.add_argument("clips", type=Path, nargs="+", help="BVH files of one skeleton")
    trans.add_argument("--length", required=True, type=positive, help="frames of each transition")
    trans.add_argument("-k", type=whole(1, MOST_VARIANTS, "each is a run of the model, all held until checked"),
                       default=4, help=f"variants of each transition (1 to {MOST_VARIANTS}; default 4)")
    trans.add_argument("-o", "--output", required=True, type=Path, help="folder for the BVH files, report.json "
                                                                        "and contact-sheet.png")
    trans.add_argument("--pairs", type=Path, help="a file of SOURCE TARGET clip names, a pair a line (default: "
                                                  "every ordered pair)")
    trans.add_argument("--leave", default="auto", help="where each source leaves: auto (the best match within its "
                                                       "last second), last, or a frame (default auto)")
    trans.add_argument("--enter", default="auto", help="where each target enters: auto (within its first second), "
                                                       "first, or a frame (default auto)")
    trans.add_argument("--model", type=Path, help="an RTN model file (default: the shipped one for the skeleton)")
    trans.add_argument("--variation", type=number(0.0, MOST_VARIATION, "1 is the noise the model was trained with"),
                       default=1.0, help="noise strength, and how far apart the variants' targets land (default 1)")
    trans.add_argument("--seed", type=_seed, default=0)
    trans.add_argument("--no-sheet", dest="sheet", action="store_false", help="write no contact sheet")
    _contacts_option(trans)
    trans.set_defaults(run=_transitions, serves="variants", writes="folder")

    return dispatch(parser, argv)


def dispatch(parser, argv):
    """Run the command that ``parser`` reads from ``argv`` (its ``run``) and give its exit status: 2, with
    one line on stderr, for a mistake on the command line, an output that cannot be written or bad input."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:   # --help, or a mistake already told on stderr in one line
        return e.code
    try:
        _writable(args)
        return args.run(args) or 0
    except BetwixtError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _gap(text):
    try:
        start, end = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not START:END, two frame numbers") from None
    if start < 0 or end < start + 2:
        raise argparse.ArgumentTypeError(f"{text!r}: the keys must be frames 0 or later, the second at least two after "
                                         "the first (a frame to fill between them)")
    return start, end


def whole(least, most, why):
    """An argparse type: a whole number from ``least`` to ``most``, refused with the limit and ``why``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not least <= value <= most:
            limit = f"{least:,} or more" if most == math.inf else f"{least:,} to {most:,}"
            raise argparse.ArgumentTypeError(f"{value:,}: give {limit} ({why})")
        return value
    return parse


def number(least, most, why):
    """An argparse type: a number from ``least`` to ``most`` (NaN and infinities refused), with ``why``."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not least <= value <= most:   # NaN too
            raise argparse.ArgumentTypeError(f"{text}: give {least:g} to {most:g} ({why})")
        return value
    return parse


_seed = whole(0, 2**32 - 1, "a seed is a whole number from 0")


def positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _start(text):
    file, _, frame = text.rpartition(":")
    try:
        return Path(file), int(frame)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not FILE.bvh:FRAME, a BVH file and a frame number") from None


def _model_options(parser, variation=0.0):
    parser.add_argument("--model", type=Path, help="model file (default: the shipped one for the skeleton)")
    parser.add_argument("--blend", help="target blend length in frames (default 10)",
                        type=whole(1, MOST_BLEND, "frames over which the motion meets the key; leave it out for "
                                                  "the model's own"))
    parser.add_argument("--variation", default=variation, help="noise strength; 0 is deterministic",
                        type=number(0.0, MOST_VARIATION, "1 is the noise the model was trained with"))
    parser.add_argument("--seed", type=_seed, default=0)
    _contacts_option(parser)


def _contacts_option(parser):
    parser.add_argument("--no-contacts", dest="contacts", action="store_false",
                        help="leave the model's feet as they come (default: feet that touch the ground are "
                             "held planted by foot IK, inference/contacts.py)")


def _load(args):
    """The input motion and the model that will serve the command; both checked before anything runs."""
    motion = read_bvh(args.file)
    longest = args.gap[1] - args.gap[0] - 1 if getattr(args, "gap", None) else getattr(args, "every", 1) - 1
    model = open_model(args.model) if args.model else find_model(motion.skeleton, serves=args.serves,
                                                                 gap=longest / motion.fps)
    _serving(model, args)
    model.check_skeleton(motion.skeleton)
    return motion, model, {"blend": args.blend, "variation": args.variation, "seed": args.seed}


def _serving(model, args):
    """Refuse a model that does not serve the command."""
    if args.serves not in model.SERVES:
        raise ModelError(f"{model.path}: a {model.file.kind!r} model does not serve {args.command}; choose a model "
                         f"that does ('python -m inference models' lists what each serves)")


def _fill(args):
    motion, model, options = _load(args)
    start, end = args.gap
    check_keys(motion, start, end)
    first, last = window(model, [(start, end)], motion.fps)        # what Blender's Fill Gaps reads
    first, last = max(first, 0), min(last, motion.n_frames - 1)
    gap = [(start - first, end - first)]
    near, far = surround(model, [(start, end)], motion.fps)   # where Blender's Fill Gaps tries the keys' spline
    near, far = max(near, 0), min(far, motion.n_frames - 1)
    parting = {}
    part = _planted(args, model, fill(model, motion.frames(first, last + 1), 0, gap, motion.fps, parting=parting,
                                      around=(motion.frames(near, far + 1), near - first), **options), gap)
    rotations, positions = motion.rotations.copy(), motion.positions.copy()
    rotations[first:last + 1], positions[first:last + 1] = part.rotations, part.positions
    out = replace(motion, rotations=quat.unroll(rotations), positions=positions)
    _checked(model, out, "try a shorter gap (a key inside it), --variation 0 or --no-contacts", gaps=[(start, end)])
    _write(out, args.output)
    print(f"wrote {args.output}: frames {start + 1} to {end - 1} generated by {model.name}")
    _warn(model, out, [(start, end)], parting)


def _superres(args):
    motion, model, options = _load(args)
    start = time.perf_counter()
    keys = sparse_keys(motion.n_frames, args.every)
    gaps = list(zip(keys[:-1], keys[1:]))
    filling, parting = progress("filling", unit="gap"), {}
    filled = superres(model, motion, args.every, progress=lambda done, total: filling(done, total, args.file.name),
                      parting=parting, **options)
    out = _planted(args, model, filled, gaps)
    _checked(model, out, "try keys closer together (a smaller --every), --variation 0 or --no-contacts", gaps=gaps)
    _write(out, args.output)
    print(f"wrote {args.output}: {motion.n_frames} frames from keys every {args.every}, "
          f"by {model.name} in {time.perf_counter() - start:.2f} s")
    _warn(model, out, gaps, parting)


def _planted(args, model, motion, gaps):
    """``motion`` with its feet planted in the ``gaps`` (inference/contacts.py), unless --no-contacts;
    a skeleton without legs found is left alone, with a note on stderr."""
    if not args.contacts:
        return motion
    if not legs(motion.skeleton):
        print(f"note: feet not planted: no legs found among {model.name}'s joints (a joint named as a foot or "
              "ankle, with a side, under a knee and a hip)", file=sys.stderr)
    return plant(motion, gaps, model.layout.height, model.floored)


def _measure(model, motion):
    """The body's height and up axis that ``model``'s ``motion`` is judged by."""
    if hasattr(model, "layout"):
        return model.layout.height, AXES[model.layout.up]
    return height(motion.global_transforms()[1], "Y"), "Y"   # a quadruped's RTN: the motion's own, Y up


def _warn(model, motion, gaps, parting=None):
    """Where the generated frames may be poor (see inference.guard), on stderr; ``parting``: each gap's, as
    :func:`.edit.fill` gives it."""
    tall, up = _measure(model, motion)
    findings = check(motion, gaps, tall, up)
    if findings:
        print(f"warning: {summary(findings, tall)}", file=sys.stderr)
    doubtful = unsure(parting or {}, gaps)
    if doubtful:
        print(f"warning: {unsure_summary(doubtful)}", file=sys.stderr)


def _variants(args):
    motion, model, options = _load(args)
    start, end = args.gap
    check_keys(motion, start, end)
    made, checking = [], progress("planting and checking", unit="variant")
    for i, variant in enumerate(variants(model, motion, 0, (start, end), motion.fps, args.k,   # as Blender's are
                                         variation=options["variation"], seed=options["seed"], blend=options["blend"])):
        out = _planted(args, model, variant, [(start, end)])
        try:
            made.append(_checked(model, out, "try a smaller --variation, another --seed or a shorter gap",
                                 gaps=[(start, end)]))
        except ResultError as e:
            raise ResultError(f"variant {i + 1}: {e}") from None
        checking(i + 1, args.k, args.file.name)
    for i, out in enumerate(made):
        _write(out, args.output / f"{args.file.stem}-variant{i + 1:02d}.bvh")
    print(f"wrote {args.k} variants of frames {start + 1} to {end - 1} to {args.output}")


def _transitions(args):
    names = library.clip_names(args.clips)
    clips = [read_bvh(path) for path in args.clips]
    model = open_model(args.model, kind="rtn") if args.model else find_model(clips[0].skeleton, kind="rtn",
                                                                             serves=args.serves)
    _serving(model, args)
    for path, clip in zip(args.clips, clips):
        try:
            model.check_skeleton(clip.skeleton)
        except BetwixtError as e:
            raise BetwixtError(f"{path}: {e}") from None
    fps = model.file.fps
    clips = [replace(c if c.fps == fps else c.resample(fps), name=n) for c, n in zip(clips, names)]
    pairs = library.read_pairs(args.pairs, names) if args.pairs else library.all_pairs(len(clips))
    if not pairs:
        raise BetwixtError("one clip makes no pair; give two or more clips, or --pairs with a clip to itself")
    leave, enter = library.frame_choice(args.leave, "last"), library.frame_choice(args.enter, "first")
    if not args.length <= model.max_gap:
        raise BetwixtError(f"--length {args.length}: model {model.name} fills 1 to {model.max_gap} frames")
    began = time.perf_counter()
    joins = library.joins(clips, pairs, model.layout, leave, enter)
    joining = progress("joining", unit="take")
    takes = library.generate(model, clips, joins, args.length, args.k, args.variation, args.seed, args.contacts,
                             progress=lambda done, total: joining(done, total, f"{len(clips)} clips"))
    made = time.perf_counter()
    height, up = model.layout.height, model.layout.up
    results = library.report(takes, clips, height, up)
    broken = [r for r in results["transitions"] if not r["finite"]]
    if broken:
        raise BetwixtError(f"{len(broken)} of {len(takes)} transitions came out not finite (the first "
                           f"{broken[0]['source']} -> {broken[0]['target']}); nothing written")
    for take, row in zip(takes, results["transitions"]):
        row["file"] = f"{row['source']}-to-{row['target']}-{take.variant + 1:02d}.bvh"
        _write(take.motion, args.output / row["file"])
    write_json(args.output / "report.json", results)
    if args.sheet:
        library.contact_sheet(takes, args.output / "contact-sheet.png", height, up,
                              [r["flags"] for r in results["transitions"]])
    print(library.table(results))
    print(f"wrote {len(takes)} transitions ({len(joins)} pairs x {args.k}) of {args.length} frames to {args.output} "
          f"by {model.name}: generated in {made - began:.2f} s, measured and written in "
          f"{time.perf_counter() - made:.2f} s", file=sys.stderr)


def _follow_path(args):
    start = (read_bvh(args.start[0]), args.start[1]) if args.start else None
    options = {} if args.tau is None else {"tau": args.tau}   # only MANN's controller weighs its own plan
    kind = "mann" if options else None
    if args.model:
        model = open_model(args.model, kind=kind, **options)
        _serving(model, args)
    else:   # the skeleton to find a model for: the start's, a BVH path's, or any
        given = start[0].skeleton if start else \
            (read_bvh(args.path).skeleton if args.path.suffix.lower() == ".bvh" else None)
        model = find_model(given, kind=kind, serves=args.serves, **options)
    if start:
        model.check_skeleton(start[0].skeleton)
    if args.path.suffix.lower() == ".bvh" and model.file.kind != "mann":
        raise BetwixtError(f"{args.path}: {model.name}, the {model.TITLE} model chosen for its skeleton, follows a CSV "
                           "path (time,x,y); a BVH's root track is followed by MANN, for a four-legged skeleton, only")
    path = _paced(model, read_path(args.path, model.skeleton, model.units_per_metre, model.actions))
    began = time.perf_counter()
    following = progress("following", unit="step")
    out = model.follow([path], start, progress=lambda done, total: following(done, total, args.path.name))[0]
    out = _planted(args, model, out, [(0, out.n_frames)])   # all but the start pose
    _checked(model, out, "try a shorter or gentler path" + (", --tau 0" if model.file.kind == "mann" else "")
             + " or --no-contacts", path=path.points)
    _write(out, args.output)
    print(f"wrote {args.output}: {out.n_frames} frames at {out.fps:g} fps ({out.duration:.2f} s) along {args.path} "
          f"by {model.name} in {time.perf_counter() - began:.2f} s")


def _walk(args):
    if args.k * args.frames > MOST_WALK_FRAMES:
        raise BetwixtError(f"-k {args.k} x --frames {args.frames:,} is {args.k * args.frames:,} frames; give at most "
                           f"{MOST_WALK_FRAMES:,} in all (every walk is held until all are checked): fewer walks or "
                           "frames, or several requests")
    motion = read_bvh(args.file)
    model = open_model(args.model, kind="mvae") if args.model else find_model(motion.skeleton, serves=args.serves)
    began = time.perf_counter()
    walking = progress("walking", unit="frame")
    walks = model.walk(motion, args.frame, args.frames, args.k, seed=args.seed,
                       progress=lambda done, total: walking(done, total, args.file.name))
    made = []
    for i, out in enumerate(walks):
        out = model.planted(out, args.frames) if args.contacts else out
        generated = np.arange(out.n_frames) >= out.n_frames - args.frames
        try:
            made.append(_checked(model, out, "try another --seed, fewer --frames or --no-contacts", generated=generated))
        except ResultError as e:
            raise ResultError(f"continuation {i + 1}: {e}") from None
    for i, out in enumerate(made):
        _write(out, args.output / f"{args.file.stem}-walk{i + 1:02d}.bvh")
    print(f"wrote {args.k} continuations of {args.file} from frame {args.frame}, {args.frames} frames each at "
          f"{model.fps:g} fps, to {args.output} by {model.name} in {time.perf_counter() - began:.2f} s")


def write_json(path, results):
    """A measuring command's results as JSON at ``path`` (None: not asked for)."""
    if path:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2) + "\n")
        except OSError as e:
            raise BetwixtError(f"{path}: cannot be written in {path.parent} ({e.strerror or e}); choose another "
                           "place") from None


def _writable(args):
    """Refuse, before any work, the outputs of ``args`` that cannot be written: a file's path that is a
    folder, a folder's that is a file, one under a file or in a folder not writable. Folders that are
    missing are made when the result is written: naming a new one is how a user asks for it."""
    outputs = [(args.output, args.writes)] if getattr(args, "writes", None) else []
    outputs += [(getattr(args, name), kind) for name, kind in (("json", "file"), ("plots", "folder"))
                if isinstance(getattr(args, name, None), Path)]   # info's and models' --json are flags
    for path, kind in outputs:
        writable(path, kind)


def writable(path, kind):
    """Refuse ``path``, a ``kind`` ("file" or "folder") to be written, where it cannot be: see :func:`_writable`
    (the training command's run folders and model files are checked alike)."""
    if kind == "file" and path.is_dir():
        raise BetwixtError(f"{path}: is a folder; give a file's name (as {path / ('out' + (path.suffix or '.bvh'))})")
    if kind == "folder" and path.exists() and not path.is_dir():
        raise BetwixtError(f"{path}: is a file; give a folder for the results (a new one is made)")
    folder = path.parent if kind == "file" else path
    there = next(p for p in (folder, *folder.parents) if p.exists())
    if not there.is_dir():
        raise BetwixtError(f"{path}: {there} is a file, not a folder; choose another place")
    if not os.access(there, os.W_OK | os.X_OK):
        raise BetwixtError(f"{path}: the folder {there} is not writable; choose another place")


def _write(motion, path):
    """``motion`` as a BVH file at ``path``, its folders made: a failure is one line naming the path,
    and leaves no ``.part`` behind."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bvh(motion, path)
    except OSError as e:
        path.with_name(path.name + ".part").unlink(missing_ok=True)
        raise BetwixtError(f"{path}: cannot be written in {path.parent} ({e.strerror or e}); choose another "
                           "place") from None


def _checked(model, motion, fix, gaps=(), path=None, generated=None):
    """``motion`` once it has passed the result check (:func:`.check.check_result`) with ``model``'s
    measures: the frames strictly inside ``gaps`` (or ``generated``; None: all) are the model's."""
    if generated is None and gaps:
        generated = np.zeros(motion.n_frames, dtype=bool)
        for start, end in gaps:
            generated[start + 1:end] = True
    tall, up = _measure(model, motion)
    check_result(motion, tall, up, generated=generated, gaps=gaps, path=path, fix=fix,
                 units_per_metre=getattr(model, "units_per_metre", None))
    return motion


def _paced(model, path):
    """``path`` slowed where it is faster than ``model`` goes (:func:`.mann.path.paced`), and the user
    told so on stderr, with the time the model takes to follow it (MANN's slowing into its stops too)."""
    slowed = paced(path, model.top_speed)
    if slowed is not path:
        fastest = (np.linalg.norm(np.diff(path.points, axis=0), axis=-1) / np.diff(path.times)).max()
        print(f"warning: {path.source} asks for up to {fastest / model.units_per_metre:,.1f} m/s; {model.name} goes "
              f"{model.top_speed / model.units_per_metre:g} m/s at most (the fastest of its data), so it follows the "
              f"path in {model.timed(path).duration:,.1f} s rather than {path.duration:,.1f} s", file=sys.stderr)
    return slowed


def describe(motion):
    """What ``info`` reports about a motion, as plain data."""
    sk = motion.skeleton
    _, world = motion.global_transforms()
    up = guess_up_axis(world)
    return {
        "name": motion.name,
        "joints": list(sk.names),
        "parents": [int(p) for p in sk.parents],
        "channels": {n: list(c) for n, c in zip(sk.names, sk.channels)},
        "end_sites": len(sk.end_sites),
        "frames": motion.n_frames,
        "fps": motion.fps,
        "duration": motion.duration,
        "height": height(world, up),
        "up_axis_guess": up,
    }


def _info(args):
    d = describe(read_bvh(args.file))
    if args.json:
        print(json.dumps(d, indent=2))
        return
    print(f"{args.file}: {len(d['joints'])} joints, {d['end_sites']} end sites, {d['frames']} frames at "
          f"{d['fps']:g} fps ({d['duration']:.2f} s), height {d['height']:.4g} units, up axis {d['up_axis_guess']} (guess)")
    depth = {}
    for name, parent in zip(d["joints"], d["parents"]):
        depth[name] = 0 if parent < 0 else depth[d["joints"][parent]] + 1
        print(f"  {'  ' * depth[name]}{name:<{28 - 2 * depth[name]}} {' '.join(d['channels'][name])}")


def _models(args):
    listed = [describe_model(path) for path in shipped()]
    if args.json:
        print(json.dumps(listed, indent=2))
        return
    for m in listed:
        serves = ", ".join(m["serves"]) or "nothing this version of Betwixt knows"
        print(f"{m['name']}: {m['kind']}, {m['skeleton']['joints']} joints (root {m['skeleton']['root']}), "
              f"{m['fps']:g} fps, {m['bytes'] / 2**20:.1f} MiB, serves {serves}; trained on {m['trained_on']}; "
              f"{m['use']}; licence: {m['licence']}")


def progress(verb, unit="file"):
    """A progress bar on stderr (tqdm), as ``progress(done, total, name)``; tqdm is imported here,
    not with the module, since Blender's Python, which loads this package, has none."""
    from tqdm import tqdm

    bar = None

    def report(done, total, name):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=verb, unit=unit, leave=False)
        bar.set_postfix_str(Path(name.split(":")[-1]).name, refresh=False)
        bar.update(done - bar.n)
        if done == total:
            bar.close()
    return report
