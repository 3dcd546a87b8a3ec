"""Motion data sets: BVH folders and archives, subject splits, windows, and a compact cache.

A data set is given the way LaFAN1 is published, as a folder or an archive (``.zip``, ``.tar.xz``,
``.tar.gz``) of BVH files. Parsing a large set takes seconds, and a GPU machine receives only what
travels with the code, so the parsed clips are cached once in a compact file keyed by the source's
content: rotations quantised to 16 bits (3e-5, a hundredth of a degree) and translations only for
the joints a file actually animates. Several data sets train one model on one skeleton
(:func:`load_sources`): each is retargeted onto it once (:mod:`inference.retarget`) and cached the same way,
and so is each skeleton of an archive that holds several (CMU's, gathered from three converters).
"""

import hashlib
import json
import os
import re
import tarfile
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from inference import quat
from inference.bvh import hierarchy, parse_bvh, read_bvh
from inference.errors import BetwixtError, DataError
from inference.motion import AXES, Motion, Skeleton, forward_kinematics
from inference.retarget import Retargeting, natural_pose

CACHE_VERSION = 1
RETARGET_VERSION = 1   # of inference/retarget.py's maths: a change there makes retargeted caches stale
HEADER = 1 << 16        # bytes: a BVH file's hierarchy, read alone to group a data set's files by skeleton
BIND_POSE = 2.0        # a first frame this many times the clip's 99th percentile step away is no performance
_SUBJECT = re.compile(r"_subject(\d+)", re.IGNORECASE)


def bvh_members(path):
    """``(name, read)`` for every BVH file in a folder or archive, sorted by name.

    ``read()`` returns the file's bytes, ``read(n)`` its first ``n`` bytes at most (a header, without
    decompressing the motion after it); names are ``archive:member`` so errors point into archives.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; --data takes a folder or a .zip/.tar.xz of BVH files")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() == ".bvh" and p.is_file())
        members = [(str(p), partial(_head, p)) for p in files]
    elif zipfile.is_zipfile(path):
        archive = zipfile.ZipFile(path)
        names = sorted(n for n in archive.namelist()
                       if n.lower().endswith(".bvh") and not n.startswith("__MACOSX/"))
        members = [(f"{path}:{n}", partial(_member, archive, n)) for n in names]
    elif path.suffix.lower() == ".bvh":
        members = [(str(path), partial(_head, path))]
    else:
        try:
            archive = tarfile.open(path)
        except (tarfile.TarError, OSError):
            raise DataError(f"{path}: not a folder, a BVH file, or a .zip/.tar archive of BVH files") from None
        infos = sorted((m for m in archive.getmembers() if m.isfile() and m.name.lower().endswith(".bvh")),
                       key=lambda m: m.name)
        members = [(f"{path}:{m.name}", (lambda size=-1, m=m: archive.extractfile(m).read(size))) for m in infos]
    if not members:
        raise DataError(f"{path}: contains no .bvh files")
    return members


def read_motions(path, progress=None, names=None):
    """Every clip of a data set (or those called ``names``) as a :class:`Motion`; ``progress(done, total,
    name)`` if given."""
    members = [(n, read) for n, read in bvh_members(path) if names is None or n in names]
    motions = []
    for i, (name, read) in enumerate(members):
        motions.append(parse_bvh(read(), name))
        if progress:
            progress(i + 1, len(members), name)
    return motions


def _head(path, size=-1):
    """The bytes of the file at ``path``, the first ``size`` of them where given."""
    with open(path, "rb") as file:
        return file.read(size)


def _member(archive, name, size=-1):
    """The bytes of the zip ``archive``'s member ``name``, the first ``size`` of them where given."""
    with archive.open(name) as file:
        return file.read(size)


def layouts(path):
    """A data set's clips grouped by skeleton, ``[(skeleton, names)]``, the group of most clips first.

    Most data sets hold one skeleton; an archive gathered from several converters holds several (CMU's:
    a 31-joint layout under three namings and a 43-joint one without toes). Only the files' headers are read.
    """
    if str(path).endswith(".npz"):
        data = load_motion_set(path)
        return [(data.skeleton, data.names)]
    groups = {}
    for name, read in bvh_members(path):
        head = read(HEADER)
        skeleton = hierarchy(head if b"MOTION" in head else read(), name)
        key = (skeleton.names, tuple(skeleton.parents.tolist()))
        groups.setdefault(key, (skeleton, []))[1].append(name)
    return sorted(((sk, tuple(names)) for sk, names in groups.values()), key=lambda group: -len(group[1]))


def without_bind_pose(motion):
    """``motion`` less a first frame that is no frame of the performance but a converter's bind pose (the
    T-pose CMU's BVH conversions start with): the joints, relative to the root, jump from it to the next
    frame by more than ``BIND_POSE`` times the clip's 99th percentile step. (CMU's first steps are 2.2-29
    times that, but for the few whose bind pose lies near their first pose; LaFAN1's, Bandai's and the
    dog's at most 1.2 times.)"""
    if motion.n_frames < 3:
        return motion
    _, world = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)
    step = np.linalg.norm(np.diff(world - world[:, :1], axis=0), axis=-1).mean(axis=-1)
    return motion.frames(1) if step[0] > BIND_POSE * np.percentile(step[1:], 99) else motion


def _performances(path, names=None, progress=None):
    """The clips of a data set (those called ``names`` where given: one skeleton of several), each
    without a bind pose before it."""
    return [without_bind_pose(m) for m in read_motions(path, progress, names)]


def clip_stem(name):
    """A clip's file stem, as ``--hold-out`` names it (``bandai1.zip:data/walk_001.bvh`` → ``walk_001``)."""
    return Path(name.split(":")[-1]).stem


def subject_of(name):
    """The performer number in a LaFAN1-style name (``walk1_subject3.bvh`` → 3), else None."""
    match = _SUBJECT.search(clip_stem(name))
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Selection:
    """Which clips of its data sets a run may read, by name: the one rule training, retargeting's
    natural poses and export's floor all follow.

    ``subjects`` keeps the clips of those performers and every clip whose name carries no subject
    number (Bandai's), so LaFAN1's test subject stays out; ``held_out`` names clips (file stems) never
    trained or validated on, in any data set, so that a model can be measured on them. Those an earlier
    run held out (``inherited``: a resumed run's, or ``--init``'s) stay out, and may be of other data.
    """

    subjects: tuple = None     # performer numbers, or None for every clip
    held_out: tuple = ()       # file stems, the inherited ones among them
    inherited: tuple = ()

    def keeps(self, name):
        """Whether a run may read the clip called ``name`` (a data set's name for it, ``archive:member``)."""
        return ((self.subjects is None or subject_of(name) in (*self.subjects, None))
                and clip_stem(name) not in self.held_out)

    def check(self, names, source):
        """Refuse held-out names that match none of ``names`` (every clip of the data sets ``source``):
        a misspelt name would otherwise hold out nothing, silently."""
        stems = {clip_stem(n) for n in names}
        unknown = [n for n in self.held_out if n not in stems and n not in self.inherited]
        if unknown:
            raise DataError(f"--hold-out {', '.join(unknown)}: no clip of that name in {source}; give file stems "
                            f"as the data set names them (e.g. {clip_stem(names[0])})")


def content_key(path):
    """A digest of a data set's bytes: the cache is valid exactly as long as the data is unchanged."""
    digest = hashlib.sha256()
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        digest.update(str(p.relative_to(path) if p != path else p.name).encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:20]


@dataclass(frozen=True, eq=False)
class MotionSet:
    """All clips of a data set in a few flat arrays, as training wants them.

    Frames of clip ``i`` are ``starts[i]:starts[i + 1]``. ``translated`` lists the joints whose
    translations are animated; every other joint keeps its clip's rest offset.
    """

    skeleton: Skeleton
    fps: float
    names: tuple
    starts: np.ndarray       # (C + 1,)
    offsets: np.ndarray      # (C, J, 3) rest offsets per clip (performers differ)
    rotations: np.ndarray    # (F, J, 4) float32, sign-continuous within each clip
    translated: np.ndarray   # (K,) joint indices
    translations: np.ndarray  # (F, K, 3) float32
    source: str = ""
    origins: tuple = ()       # per clip, the index of the data set it came from (load_sources); () for one

    def origin(self, i):
        """The index among the data sets joined into this one (``--data``'s order) of clip ``i``."""
        return self.origins[i] if self.origins else 0

    @property
    def subjects(self):
        return np.array([subject_of(n) or 0 for n in self.names])

    def clip(self, i):
        """Clip ``i`` as a full :class:`Motion`."""
        a, b = self.starts[i], self.starts[i + 1]
        positions = np.repeat(self.offsets[i][None], b - a, axis=0)
        positions[:, self.translated] = self.translations[a:b]
        sk = Skeleton(self.skeleton.names, self.skeleton.parents, self.offsets[i], self.skeleton.channels,
                      self.skeleton.end_sites)
        return Motion(sk, self.rotations[a:b].astype(np.float64), positions, self.fps,
                      name=self.names[i])


def motion_set(motions, source=""):
    """Pack parsed clips into a :class:`MotionSet`; they must share one hierarchy and frame rate."""
    first = motions[0]
    for m in motions[1:]:
        if not m.skeleton.same_hierarchy(first.skeleton):
            raise DataError(f"{m.name}: its joints differ from {first.name}'s; a data set needs one skeleton")
        if m.fps != first.fps:
            raise DataError(f"{m.name}: {m.fps} frames per second, but {first.name} has {first.fps}; "
                            "resample the data set to one frame rate first")
    has_position = [any(c.endswith("position") for c in chans) for chans in first.skeleton.channels]
    translated = np.flatnonzero(has_position)
    return MotionSet(
        skeleton=first.skeleton,
        fps=first.fps,
        names=tuple(m.name for m in motions),
        starts=np.cumsum([0] + [m.n_frames for m in motions]),
        offsets=np.stack([m.skeleton.offsets for m in motions]),
        rotations=np.concatenate([m.rotations for m in motions]).astype(np.float32),
        translated=translated,
        translations=np.concatenate([m.positions[:, translated] for m in motions]).astype(np.float32),
        source=source,
    )


def default_cache_dir():
    return Path(os.environ.get("BETWIXT_CACHE", Path.home() / ".cache" / "betwixt"))


def cache_path(path, cache_dir=None, names=None):
    """Where the cache of the data set at ``path`` (of its clips called ``names``, one skeleton of several)
    lives; its name carries the content key."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; --data takes a folder or a .zip/.tar.xz of BVH files")
    cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
    part = f"-{hashlib.sha256(json.dumps(sorted(names)).encode()).hexdigest()[:8]}" if names else ""
    return cache_dir / f"{path.stem}-{content_key(path)}{part}-v{CACHE_VERSION}.npz"


def load_motion_set(path, cache_dir=None, progress=None, names=None):
    """The data set at ``path`` (its clips called ``names``, where it holds several skeletons) as a
    :class:`MotionSet`, from the cache when its content is unchanged.

    ``path`` may be a cache file itself (``.npz``), which is how a data set travels to a machine that
    lacks its source. A freshly parsed set is returned as its cache reads back, so that a run gets the
    same numbers whether the cache was there or not.
    """
    if str(path).endswith(".npz"):
        try:
            return _read_cache(Path(path))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):
            raise DataError(f"{path}: not a data set cache of this Betwixt (version {CACHE_VERSION}); give the "
                            "data set itself, or a cache written by this version's --cache") from None
    cache = cache_path(path, cache_dir, names)
    if cache.exists():
        try:
            return _read_cache(cache)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):
            cache.unlink(missing_ok=True)   # a cache cut short by a crash: rebuild it
    _write_cache(motion_set(_performances(path, names, progress), source=str(path)), cache)
    return _read_cache(cache)


def load_sources(paths, cache_dir=None, skeleton=None, chosen=Selection()):
    """Several data sets as one :class:`MotionSet` on one skeleton: the first's (its most common, where it
    holds several), or ``skeleton``'s (a BVH file).

    A source of that hierarchy goes in as it is, its performers' bone lengths and all. Another (or another
    skeleton's clips of the same archive) is retargeted onto it through the two skeletons' natural poses, each measured on its data set's clips
    that the :class:`Selection` ``chosen`` keeps (LaFAN1's test subject and held-out clips are never
    read into one), resampled to the skeleton's frame rate, and cached: only the result is kept, as
    compact as any data set's cache. That cache is a data set of the skeleton's hierarchy, so it may
    stand for its source as a later ``--data`` where the source is not at hand (a GPU machine). Every
    clip is returned; training reads only the chosen ones (``training/clips.py``).
    """
    paths = [str(p) for p in paths]
    file = read_bvh(skeleton) if skeleton else None
    # (path, skeleton, clip names where the path holds several skeletons, else None)
    parts = [(p, sk, names if len(found) > 1 else None) for p in paths for found in [layouts(p)] for sk, names in found]
    target = file.skeleton if file else parts[0][1]
    own = [part for part in parts if part[1].same_hierarchy(target)]
    others = [part for part in parts if not part[1].same_hierarchy(target)]
    sets = [load_motion_set(p, cache_dir, names=names) for p, _, names in own]
    order = [paths.index(p) for p, _, _ in own + others]
    kept = [m for data in sets for m in _clips_of(data, chosen)]
    if sets and not kept:
        raise DataError(f"{' + '.join(p for p, _, _ in own)}: no clip of subjects {chosen.subjects} outside "
                        "--hold-out; check --subjects and --hold-out against the file names")
    if file is None:
        target = sets[0].skeleton   # its first clip's bone lengths
    pose = natural_pose(kept or [file])
    fps = sets[0].fps if sets else file.fps
    sets += [_retargeted(p, names, target, pose, fps, chosen, cache_dir) for p, _, names in others]
    return _joined(sets, " + ".join(dict.fromkeys(data.source for data in sets)), order)


def _clips_of(data, chosen):
    """The clips of ``data`` that the :class:`Selection` ``chosen`` keeps."""
    return [data.clip(i) for i, n in enumerate(data.names) if chosen.keeps(n)]


def _retargeted(path, names, target, target_pose, fps, chosen, cache_dir):
    """The data set at ``path`` (its clips called ``names``, where it holds several skeletons) retargeted
    onto ``target`` (natural pose ``target_pose``) at ``fps``, cached.

    The cache's name carries the target and, when ``chosen`` leaves some of the source's clips out,
    their names: its own natural pose is measured without them, so a cache made from every clip is
    never served to a run that holds some out.
    """
    left_out = [clip_stem(n) for n, _ in bvh_members(path) if not chosen.keeps(n) and (names is None or n in names)]
    digest = hashlib.sha256(json.dumps([target.names, target.parents.tolist(), np.round(target.offsets, 6).tolist(),
                                        np.round(target_pose, 6).tolist(), fps, RETARGET_VERSION]
                                       + ([left_out] if left_out else [])).encode())
    cache = cache_path(path, cache_dir, names)
    cache = cache.with_name(cache.name.replace(f"-v{CACHE_VERSION}", f"-on-{digest.hexdigest()[:12]}-v{CACHE_VERSION}"))
    if cache.exists():
        try:
            return _read_cache(cache)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):
            cache.unlink(missing_ok=True)
    motions = _performances(path, names)
    raw = motion_set(motions)   # one hierarchy and frame rate, or a clear error
    kept = _clips_of(raw, chosen)
    if not kept:
        raise DataError(f"{path}: no clip of subjects {chosen.subjects} outside --hold-out; "
                        "check --subjects and --hold-out against the file names")
    what = str(path) if names is None else f"{path} ({', '.join(clip_stem(n) for n in names[:3])}, … of one skeleton)"
    onto = Retargeting.build(raw.skeleton, target, natural_pose(kept), target_pose, motions[0].up, name=what)
    _write_cache(motion_set([onto(m if m.fps == fps else m.resample(fps)) for m in motions], source=str(path)), cache)
    return _read_cache(cache)


def _joined(sets, source, order):
    """One :class:`MotionSet` of several of one hierarchy, frame rate and translated joints, each clip's
    origin the ``order`` entry of its set (its place among ``--data``)."""
    first = sets[0]
    for data in sets[1:]:
        if data.fps != first.fps or not np.array_equal(data.translated, first.translated):
            raise DataError(f"{data.source}: {data.fps:g} fps and translations on joints {data.translated.tolist()}, "
                            f"but {first.source} has {first.fps:g} and {first.translated.tolist()}; "
                            "resample it, or give it as the first --data")
    if len(sets) == 1:
        return first
    lengths = np.concatenate([np.diff(data.starts) for data in sets])
    return MotionSet(first.skeleton, first.fps, sum((data.names for data in sets), ()),
                     np.concatenate([[0], np.cumsum(lengths)]), np.concatenate([data.offsets for data in sets]),
                     np.concatenate([data.rotations for data in sets]), first.translated,
                     np.concatenate([data.translations for data in sets]), source,
                     tuple(k for data, k in zip(sets, order) for _ in data.names))


def _write_cache(data, cache):
    cache.parent.mkdir(parents=True, exist_ok=True)
    sk = data.skeleton
    meta = {"version": CACHE_VERSION, "fps": data.fps, "names": data.names, "joints": sk.names,
            "channels": sk.channels, "source": data.source,
            "end_sites": [[int(j), list(map(float, o))] for j, o in sk.end_sites]}
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.part")   # this process's: runs sharing a cache write at once
    with open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), parents=sk.parents, starts=data.starts,
                 offsets=data.offsets, translated=data.translated, translations=data.translations,
                 rotations=np.round(data.rotations * 32767.0).astype(np.int16))
    tmp.replace(cache)


def _read_cache(cache):
    with np.load(cache) as z:
        meta = json.loads(str(z["meta"]))
        if meta["version"] != CACHE_VERSION:
            raise ValueError("old cache")
        offsets = z["offsets"]
        sk = Skeleton(meta["joints"], z["parents"], offsets[0], tuple(map(tuple, meta["channels"])),
                      tuple((j, np.array(o)) for j, o in meta["end_sites"]))
        rotations = quat.normalize(z["rotations"].astype(np.float32) / np.float32(32767.0))
        return MotionSet(sk, meta["fps"], tuple(meta["names"]), z["starts"], offsets,
                         rotations.astype(np.float32), z["translated"], z["translations"], meta["source"])


def sliding_windows(n_frames, width, offset):
    """Start frames of the windows ``[s, s + width)`` taken every ``offset`` frames.

    The LaFAN1 release's rule, ``while start + width < n_frames``: a window never ends on the last frame.
    """
    return np.arange(0, max(n_frames - width, 0), offset)


def centre_and_face(rotations, positions, parents, frame, up="Y", forward=(0.0, 1.0, 0.0)):
    """Windows moved to the origin and turned to face +X on ``frame`` (the benchmark's normalisation).

    ``rotations`` (N, W, J, 4) and ``positions`` (N, W, J, 3) are local; the root's horizontal
    position is centred on its mean over each window, then each window is rotated about the up
    axis so that the root's ``forward`` axis (local), projected on the ground, points along +X.
    Returns new arrays; only the root's rotation and translation change.
    """
    u = AXES.index(up)
    ground = [a for a in range(3) if a != u]
    rotations = rotations.copy()
    positions = positions.copy()
    root = positions[:, :, 0]
    root[..., ground] -= root[..., ground].mean(axis=1, keepdims=True)
    heading = quat.rotate(rotations[:, frame, 0], np.asarray(forward, dtype=rotations.dtype))
    heading[..., u] = 0.0
    heading /= np.linalg.norm(heading, axis=-1, keepdims=True) + 1e-8
    x_axis = np.zeros(3, dtype=rotations.dtype)
    x_axis[ground[0]] = 1.0
    turn = quat.inv(quat.normalize(quat.between(x_axis, heading)))[:, None]
    rotations[:, :, 0] = quat.mul(turn, rotations[:, :, 0])
    positions[:, :, 0] = quat.rotate(turn, root)
    return rotations, positions


def gather_windows(motions, width, offset):
    """Local rotations and translations of every sliding window of every clip, stacked."""
    rot, pos = [], []
    for m in motions:
        for s in sliding_windows(m.n_frames, width, offset):
            rot.append(m.rotations[s:s + width])
            pos.append(m.positions[s:s + width])
    if not rot:
        raise BetwixtError(f"no clip is longer than a window of {width} frames")
    return np.stack(rot), np.stack(pos)


def position_statistics(windows, parents):
    """Mean and standard deviation of every world joint coordinate over all windows and frames. ``windows``
    yields local rotations and translations (N, W, J, …) a few windows at a time (a clip's), merged by Chan,
    Golub and LeVeque's pairwise update, so that a data set's windows, and the copies that centring and forward
    kinematics make of them, never lie in memory all at once (docs/experiments.md)."""
    count, mean, squares = 0, 0.0, 0.0
    for rotations, positions in windows:
        _, world = forward_kinematics(rotations, positions, parents)
        flat = world.reshape(-1, world.shape[-2] * 3)
        n, centre = len(flat), flat.mean(axis=0)
        step, total = centre - mean, count + n
        mean = mean + step * (n / total)
        squares = squares + np.square(flat - centre).sum(axis=0) + np.square(step) * (count * n / total)
        count = total
    if not count:
        raise BetwixtError("no windows to measure the positions over")
    return mean, np.sqrt(squares / count)
