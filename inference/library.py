"""A library of transitions: K variants of a transition from every chosen clip to every other, batched.

A game's locomotion needs a transition from each of its states to each other (walk to run, run to stop...),
a number that grows with the square of the clips. For each ordered pair this module chooses where the source
leaves and the target enters (its last and first frames, given frames, or the best match within a window, as
motion graphs choose: Kovar et al. 2002), places the target on the ground to continue from the source, and
fills the gap between them with K variants of the RTN (its noise, and where each variant's target lands),
every pair and variant in as few calls of the model as :data:`BATCH` allows; eases the joins and plants the
feet. Each transition is then measured beside its two clips (foot skating, contact share, fastest joint,
acceleration at both joins) and flagged where poor; :func:`contact_sheet` draws the library on one page
(:func:`sheet_pixels` in numpy alone, for Blender).

numpy only (the model is passed in, the contact sheet imports matplotlib when drawn), so that the
command line (``python -m inference transitions``) and the Blender add-on share it. Lengths are in the
clips' units, the up axis the model's (``layout.up``).
"""

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import quat
from .anatomy import feet
from .contacts import GROUND, contacts, plant
from .errors import BetwixtError
from .features import canonical_frame, chain_transform, move, unmove
from .guard import ground
from .inbetween import floor
from .inertialize import eased
from .motion import forward_kinematics
from .transition import Gap

WINDOW = 1.0      # seconds: "auto" looks for the leave frame this far back from the source's end, the enter frame
                  # this far into the target
VELOCITY = 0.1    # seconds: a joint's velocity weighs in a match as the way it moves in this time (Kovar et al.
                  # compare point clouds over a few frames, which weighs velocity alike)
SHOWN = 1.0       # seconds of the source before the transition and of the target after it, in each take
STEADY = 10       # frames either side of a cut over which the root's ground velocity there is read: about a step,
                  # so that the sway within a stride averages out (docs/experiments.md, "Placement")
SKATE = 2.5 / 165.0   # of the body's height: H of the skating measure (2.5 cm on LaFAN1's 1.65 m body,
                      # ../shared/docs/metrics.md)
# a transition is flagged where one of its measures is past these times its clips' own: skating over one
# second is noisy (a capture's own varies by half from step to step), the fastest joint and the joins are
# bounded as the add-on's guard bounds a fill (..guard.SPEED) and issue 44 asks; a contact share under half
# the clips' is a transition that floats or glides with its feet in the air
POOR = {"skating": 2.0, "fastest": 1.5, "join": 1.5, "contacts": 0.5}
JOIN = 0.2        # seconds either side of a join (and of a clip's own cut) over which its acceleration is read
LANDING = 0.05    # of the body's height, times the variation: how far apart variants' targets land (see generate)
EASE = 30         # frames over which a join's velocity mismatch is eased out (see eased)
BATCH = 1024      # transitions a call of the model at most (its views make the network's batch five times as many),
                  # so that a large library's intermediate arrays stay within a few hundred MiB
STRIP = 9         # poses drawn per transition in the contact sheet, the two joins included


@dataclass(frozen=True)
class Join:
    """Where one transition leaves clip ``source`` (frame ``leave``) and enters clip ``target`` (frame
    ``enter``): indices into the library's clips; ``cost`` the pose-and-velocity distance of the two frames
    (:func:`match_costs`, root-mean-square a joint, in body heights)."""

    source: int
    target: int
    leave: int
    enter: int
    cost: float


@dataclass(frozen=True)
class Take:
    """Variant ``variant`` (from 0) of the transition at ``join``: ``motion`` is the source's last
    :data:`SHOWN` second up to its leave frame, the transition, then the placed target from its enter
    frame on for :data:`SHOWN` second; ``gap`` ``(a, b)`` the leave and enter frames in it (the
    transition strictly between)."""

    join: Join
    variant: int
    motion: object
    gap: tuple


def clip_names(paths):
    """Each clip's name in the library (file stems), refused where two share one: files are named for them."""
    names = [Path(p).stem for p in paths]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise BetwixtError(f"two clips are named {twice[0]!r}; give each clip its own file name")
    return names


def read_pairs(path, names):
    """``[(source, target)]`` clip indices from a text file: a line a pair, two clip names separated by
    spaces, a comma or ``->``; blank lines and ``#`` comments skipped."""
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise BetwixtError(f"{path}: cannot read the pairs ({e.strerror or e})") from None
    pairs = []
    for number, line in enumerate(lines, 1):
        words = [w for w in re.split(r"\s*(?:->|,|\s)\s*", line.split("#")[0].strip()) if w]
        if not words:
            continue
        if len(words) != 2:
            raise BetwixtError(f"{path}, line {number}: {line.strip()!r} is not two clip names (SOURCE TARGET)")
        missing = [w for w in words if w not in names]
        if missing:
            raise BetwixtError(f"{path}, line {number}: no clip named {missing[0]!r} (the clips: {', '.join(names)})")
        pairs.append((names.index(words[0]), names.index(words[1])))
    if not pairs:
        raise BetwixtError(f"{path}: no pairs in it")
    return pairs


def all_pairs(count):
    """Every ordered pair of ``count`` clips, a clip to itself left out."""
    return [(s, t) for s in range(count) for t in range(count) if s != t]


def frame_choice(text, first_or_last):
    """``"auto"``, ``first_or_last`` ("first" or "last") or a frame number, from a command's argument."""
    if text in ("auto", first_or_last):
        return text
    try:
        return int(text)
    except ValueError:
        raise BetwixtError(f"{text!r} is not auto, {first_or_last} or a frame number") from None


def joins(clips, pairs, layout, leave="auto", enter="auto", window=WINDOW):
    """A :class:`Join` per ``(source, target)`` of ``pairs`` (indices into ``clips``, Motions): ``leave``
    "auto", "last" or a frame of every source; ``enter`` "auto", "first" or a frame of every target;
    "auto" searches the frames within ``window`` seconds of the clip's end (or start), but its last (first)
    :data:`JOIN` seconds (:func:`_candidates`), for the pair of frames whose poses and velocities fit best
    (:func:`match_features`, :func:`match_costs`), the other side held where it is given."""
    for side, choice in (("leave", leave), ("enter", enter)):
        if isinstance(choice, int):
            short = [c for c in clips if not 0 <= choice < c.n_frames]
            if short:
                raise BetwixtError(f"--{side} {choice}: {short[0].name} has frames 0 to {short[0].n_frames - 1}")
    features = [match_features(c, layout) for c in clips]
    out = []
    for s, t in pairs:
        leaving = _candidates(clips[s].n_frames, leave, window, clips[s].fps, end=True)
        entering = _candidates(clips[t].n_frames, enter, window, clips[t].fps, end=False)
        costs = match_costs(features[s][leaving], features[t][entering])
        i, j = np.unravel_index(np.argmin(costs), costs.shape)
        out.append(Join(s, t, int(leaving[i]), int(entering[j]), float(np.sqrt(costs[i, j] / len(clips[s].skeleton)))))
    return out


def _candidates(n_frames, choice, window, fps, end):
    """The frames (array) a side may join at: the one given, the clip's end (``end``) or start, or
    every frame within ``window`` seconds of it for "auto" but the last (first) :data:`JOIN` seconds, where
    the window holds more: a cut there leaves the clip's own motion on one side of it only, so that a
    transition lands a foot the clip was about to land and is judged beside the clip's frames before the
    landing alone."""
    if isinstance(choice, int):
        return np.array([choice])
    edge = n_frames - 1 if end else 0
    if choice != "auto":
        return np.array([edge])
    reach = min(int(round(window * fps)), n_frames - 1)
    inside = int(round(JOIN * fps)) if reach > int(round(JOIN * fps)) else 0
    return np.arange(n_frames - 1 - reach, n_frames - inside) if end else np.arange(inside, reach + 1)


def match_features(motion, layout):
    """(F, J * 6): each frame's joints seen from its own trajectory joint on the ground, facing +X
    (heights kept), and their world velocities turned alike, weighed by :data:`VELOCITY`; all in body
    heights, so that a squared distance between two rows is how far apart two poses and their motion are
    wherever and whichever way each clip stands."""
    rot, pos = motion.rotations, motion.positions
    world = forward_kinematics(rot, pos, motion.skeleton.parents)[1]                     # (F, J, 3)
    turn, origin = canonical_frame(rot, pos, motion.skeleton.parents, layout)             # (F, 4), (F, 3)
    velocity = np.gradient(world, axis=0) * motion.fps if motion.n_frames > 1 else np.zeros_like(world)
    seen = quat.rotate(turn[:, None], world - origin[:, None])
    moving = quat.rotate(turn[:, None], velocity) * VELOCITY
    return np.concatenate([seen, moving], axis=-1).reshape(motion.n_frames, -1) / layout.height


def match_costs(a, b):
    """(A, B) squared distances between the rows of ``a`` (A, D) and ``b`` (B, D)."""
    return np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None] - 2 * a @ b.T, 0.0)


def place(source, leave, target, enter, length, layout, floors=None):
    """``target`` moved rigidly on the ground to continue ``source``: on its enter frame the trajectory
    joint faces as the source's does on its leave frame, and stands where the source's would after the
    ``length + 1`` steps of the transition at the mean of the two clips' ground velocities there (read over
    :data:`STEADY` frames either side); its floor (the lowest its feet reach, :func:`..inbetween.floor`; ``floors``, the
    source's and the target's, where known) raised or lowered onto the source's."""
    up = layout.up
    floors = floors or (floor(source, [], "XYZ"[up]), floor(target, [], "XYZ"[up]))
    turn_s, origin_s = canonical_frame(source.rotations[leave][None], source.positions[leave][None],
                                       source.skeleton.parents, layout)
    turn_t, origin_t = canonical_frame(target.rotations[enter][None], target.positions[enter][None],
                                       target.skeleton.parents, layout)
    align = quat.mul(quat.inv(turn_s), turn_t)                                           # (1, 4)
    v_source = _ground_velocity(source, leave, layout)
    v_target = quat.rotate(align[0], _ground_velocity(target, enter, layout))
    lands = origin_s[0] + 0.5 * (v_source + v_target) * (length + 1)
    rot, pos = move(target.rotations[None], target.positions[None], turn_t, origin_t)
    rot, pos = unmove(rot, pos, turn_s, lands[None])
    pos[0, :, 0, up] += floors[0] - floors[1]
    return replace(target, rotations=rot[0], positions=pos[0])


def _ground_velocity(motion, frame, layout):
    """(3,) the trajectory joint's mean velocity on the ground (a frame) over the :data:`STEADY` frames either
    side of ``frame`` (as many as the clip has): a step's sway averaged out, the clip's own motion at the cut
    whichever side of it the take keeps; zero in a single frame."""
    lo, hi = max(frame - STEADY, 0), min(frame + STEADY, motion.n_frames - 1)
    if lo == hi:
        return np.zeros(3)
    ends = chain_transform(motion.rotations[[lo, hi]], motion.positions[[lo, hi]], motion.skeleton.parents,
                           layout.trajectory)[1]
    step = (ends[1] - ends[0]) / (hi - lo)
    step[layout.up] = 0.0
    return step


def generate(model, clips, chosen, length, k, variation=1.0, seed=0, planted=True, progress=None):
    """The library: a :class:`Take` per join of ``chosen`` and variant (join-major), ``k`` variants of
    ``length`` frames each, in batched calls of ``model`` (an RTN, :meth:`..rtn.runtime.RTNModel.fill` of
    every join and variant; one call for up to :data:`BATCH` of them); joins eased (:func:`eased`); feet planted (:func:`..contacts.plant`) unless
    not ``planted``. ``progress(done, total)`` after each take is put together (it may raise to stop).

    A variant differs by the RTN's noise (``variation`` times it, drawn from ``seed``) and by where its target
    lands: the RTN must meet the target's key, so its noise alone changes the way there but never where the
    transition ends; each variant's target is moved on the ground by ``variation`` times :data:`LANDING` of
    the body's height (a normal draw a ground axis, from ``seed`` too), so that the variants cover more or less
    ground, or drift aside, as takes of one transition by a performer do."""
    lay = model.layout
    shown = int(round(SHOWN * lay.fps))
    up = "XYZ"[lay.up]
    floors = {i: floor(clips[i], [], up) for i in {j.source for j in chosen} | {j.target for j in chosen}}
    placed = [place(clips[j.source], j.leave, clips[j.target], j.enter, length, lay,
                    (floors[j.source], floors[j.target])) for j in chosen]
    rng = np.random.default_rng(seed)
    landing = np.zeros((len(chosen), k, 3))
    landing[..., [a for a in range(3) if a != lay.up]] = variation * LANDING * lay.height * rng.standard_normal(
        (len(chosen), k, 2))
    rows = [(join, v) for join in chosen for v in range(k)]
    reach = max(shown, model.past + 2)   # the target's frames a take reads, from its enter frame
    targets = [_moved(t.frames(j.enter, j.enter + reach), landing[b, v])
               for b, (j, t) in enumerate(zip(chosen, placed)) for v in range(k)]
    gap, levels = _batch(model, clips, [j for j, _ in rows], targets, length, floors)
    noise = rng.standard_normal((len(rows), model.noise_dim))
    made = [model.fill(gap.rows(part), variation=variation, noise=noise[part])
            for part in np.array_split(np.arange(len(rows)), -(-len(rows) // BATCH))]
    rot, pos = np.concatenate([r for r, _ in made]), np.concatenate([p for _, p in made])
    pos[..., 0, lay.up] += levels[:, None]                                                   # (B K, n, J, ·)
    before = np.stack([np.maximum([j.leave - 1, j.leave], 0) for j, _ in rows])
    after = np.stack([np.minimum([0, 1], t.n_frames - 1) for t in targets])
    rot, pos = eased(rot, pos, (np.stack([clips[j.source].rotations[f] for (j, _), f in zip(rows, before)]),
                                np.stack([clips[j.source].positions[f] for (j, _), f in zip(rows, before)])),
                     (np.stack([t.rotations[f] for t, f in zip(targets, after)]),
                      np.stack([t.positions[f] for t, f in zip(targets, after)])), EASE)
    takes = []
    for i, ((join, v), target) in enumerate(zip(rows, targets)):
        source = clips[join.source]
        first = max(0, join.leave - shown + 1)
        a = join.leave - first
        r = np.concatenate([source.rotations[first:join.leave + 1], rot[i], target.rotations[:shown]])
        p = np.concatenate([source.positions[first:join.leave + 1], pos[i], target.positions[:shown]])
        motion = replace(source, rotations=quat.unroll(r), positions=p, name=f"{source.name} -> {target.name} {v + 1}")
        if planted:
            motion = plant(motion, [(a, a + length + 1)], lay.height)
        takes.append(Take(join, v, motion, (a, a + length + 1)))
        if progress is not None:
            progress(len(takes), len(rows))
    return takes


def _moved(motion, offset):
    """``motion`` carried by ``offset`` (3,) in the world (its root's translation moved)."""
    positions = motion.positions.copy()
    positions[:, 0] += offset
    return replace(motion, positions=positions)


def _batch(model, clips, chosen, targets, length, floors):
    """``(gap, levels)``: one :class:`..transition.Gap` of every join of ``chosen`` (the model's ``past``
    frames of the source up to its leave frame; the first frame of its target in ``targets``, placed and cut
    from its enter frame on, and ``past`` frames after it; each side's end frame repeated where the clip has
    fewer), lowered by ``levels`` (B,), how far each source's floor (``floors``, per clip) is above the one
    the model learned on, as :func:`..inbetween.on_model_floor` lowers a fill's."""
    past, up = model.past, model.layout.up
    before = np.stack([np.clip(np.arange(j.leave - past + 1, j.leave + 1), 0, None) for j in chosen])   # (B, P)
    after = np.stack([np.minimum(np.arange(past + 1), t.n_frames - 1) for t in targets])              # (B, P + 1)
    past_r = np.stack([clips[j.source].rotations[f] for j, f in zip(chosen, before)])
    past_p = np.stack([clips[j.source].positions[f] for j, f in zip(chosen, before)])
    next_r = np.stack([t.rotations[f] for t, f in zip(targets, after)])
    next_p = np.stack([t.positions[f] for t, f in zip(targets, after)])
    levels = np.array([floors[j.source] for j in chosen]) - model.floor
    past_p[..., 0, up] -= levels[:, None]
    next_p[..., 0, up] -= levels[:, None]
    gap = Gap(clips[0].skeleton, past_r, past_p, next_r[:, 0], next_p[:, 0], length, next_r[:, 1:], next_p[:, 1:])
    return gap, levels


# --- measures ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Own:
    """A clip's own measures, beside which its transitions are judged: foot skating (units a frame),
    the share of frames with a foot on the ground, its fastest joint (units a second), and ``world``
    (F, J, 3) to read its acceleration at a cut."""

    skating: float
    contacts: float
    fastest: float
    world: np.ndarray


def own(motion, height, up):
    """:class:`Own` of a whole clip, its feet's ground the lowest few percent of their heights in it."""
    world = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    joints = feet(motion.skeleton.names)
    given = np.ones(motion.n_frames, dtype=bool)
    return Own(_skating(world, joints, given, slice(None), height, up),
               _contact_share(world, joints, given, slice(None), height, up, motion.fps),
               float(_speeds(world, motion.fps).max(initial=0.0)), world)


def measure(take, clips, height, up, owns=None):
    """One row of the report for ``take``: each measure of its transition beside its clips' own, and the
    flags (names of :data:`POOR`, or "not finite") where it is poor. ``clips`` the library's Motions,
    ``owns`` their :func:`own` (computed here when not given), ``height`` the body's height in the
    clips' units, ``up`` the up axis (0-2).

    - skating: mean over the feet and steps from the leave frame to the enter frame (feet's ground from
      the take's shown clip frames), beside the mean of the two clips' own;
    - contacts: the share of the transition's frames with a foot on the ground (:func:`..contacts.contacts`),
      beside the mean of the clips';
    - fastest: the fastest joint (units a second) over those steps, beside the faster clip's fastest;
    - leave_join, enter_join: the largest joint acceleration (units a second squared) within :data:`JOIN`
      of each join, beside the clips' own within as much of the frames they are cut at (the larger of the
      two: a transition from a run to a stand must slow down, which the stand's own motion never does)."""
    join, motion = take.join, take.motion
    owns = owns or {i: own(clips[i], height, up) for i in {join.source, join.target}}
    a, b = take.gap
    src, tgt = owns[join.source], owns[join.target]
    finite = bool(np.isfinite(motion.rotations).all() and np.isfinite(motion.positions).all())
    world = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    joints = feet(motion.skeleton.names)
    given = np.ones(motion.n_frames, dtype=bool)
    given[a + 1:b] = False
    cuts = max(_acceleration(src.world, join.leave, motion.fps), _acceleration(tgt.world, join.enter, motion.fps))
    row = {"source": clips[join.source].name, "target": clips[join.target].name, "variant": take.variant + 1,
           "leave": join.leave, "enter": join.enter, "cost": join.cost, "finite": finite,
           "skating": [_skating(world, joints, given, slice(a, b + 1), height, up), 0.5 * (src.skating + tgt.skating)],
           "contacts": [_contact_share(world, joints, given, slice(a + 1, b), height, up, motion.fps),
                        0.5 * (src.contacts + tgt.contacts)],
           "fastest": [float(_speeds(world[a:b + 1], motion.fps).max()), max(src.fastest, tgt.fastest)],
           "leave_join": [_acceleration(world, a, motion.fps), cuts],
           "enter_join": [_acceleration(world, b, motion.fps), cuts]}
    row["flags"] = flags(row)
    return row


def flags(row):
    """The measures of a report row past :data:`POOR` times its clips' own (or "not finite")."""
    if not row["finite"]:
        return ["not finite"]
    out = [name for name in ("skating", "fastest") if row[name][0] > POOR[name] * row[name][1]]
    out += [f"{side} join" for side in ("leave", "enter")
            if row[f"{side}_join"][0] > POOR["join"] * row[f"{side}_join"][1]]
    return out + (["contacts"] if row["contacts"][0] < POOR["contacts"] * row["contacts"][1] else [])


def report(takes, clips, height, up):
    """``{"transitions": [row per take], "pairs": [...]}``: :func:`measure` of every take, and per join
    the spread of its variants (:func:`spread`: at the transition's middle and at one second into it)."""
    owns = {i: own(c, height, up) for i, c in enumerate(clips)}
    rows = [measure(t, clips, height, up, owns) for t in takes]
    pairs = []
    by_join = {}
    for t in takes:
        by_join.setdefault(t.join, []).append(t)
    for join, group in by_join.items():
        a, b = group[0].gap
        pairs.append({"source": clips[join.source].name, "target": clips[join.target].name,
                      "spread_middle": spread(group, a + (b - a) // 2, up),
                      "spread_1s": spread(group, min(a + int(round(group[0].motion.fps)), b), up)})
    return {"transitions": rows, "pairs": pairs}


def spread(group, frame, up):
    """How far apart the variants of one transition (``group``, its takes) are at ``frame`` of their
    motions: the mean distance on the ground between their trajectory roots (joint 0), over every two."""
    at = np.stack([np.delete(t.motion.positions[frame, 0], up) for t in group])          # (K, 2)
    if len(at) < 2:
        return 0.0
    d = np.linalg.norm(at[:, None] - at[None], axis=-1)
    return float(d[np.triu_indices(len(at), 1)].mean())


def table(results, units="units"):
    """The report as text: a line a transition (each measure as transition / clips'), then the flagged ones
    counted."""
    head = (f"{'transition':<34} {'skating':>13} {'contacts':>11} {'fastest':>13} {'leave acc':>15} "
            f"{'enter acc':>15}  flags")
    lines = [head, f"{'':<34} {units + '/frame':>13} {'share':>11} {units + '/s':>13} {units + '/s2':>15} "
                   f"{units + '/s2':>15}"]
    for r in results["transitions"]:
        name = f"{r['source']} -> {r['target']} {r['variant']}"
        lines.append(f"{name[:34]:<34} {_pair(r['skating'], 3):>13} {_pair(r['contacts'], 2):>11} "
                     f"{_pair(r['fastest'], 0):>13} {_pair(r['leave_join'], 0):>15} {_pair(r['enter_join'], 0):>15}  "
                     f"{', '.join(r['flags'])}")
    flagged = sum(bool(r["flags"]) for r in results["transitions"])
    lines.append(f"{flagged} of {len(results['transitions'])} transitions flagged ("
                 + ", ".join(f"{k} {'under' if k == 'contacts' else 'past'} {v:g}x" for k, v in POOR.items())
                 + " the clips' own)")
    return "\n".join(lines)


def _pair(values, digits):
    return f"{values[0]:.{digits}f}/{values[1]:.{digits}f}"


def _skating(world, joints, given, steps, height, up):
    """Mean foot skating over the ``steps`` frames of ``world`` (F, J, 3): each foot joint's horizontal
    step times clamp(2 - 2^(h / H), 0, 1), h its height above its ground (its lowest few percent in the
    ``given`` frames) over the two frames, H :data:`SKATE` of ``height`` (../shared/docs/metrics.md)."""
    if not joints:
        return 0.0
    base = ground(world, given, joints, "XYZ"[up], GROUND)
    path = world[steps][:, joints]
    step = np.linalg.norm(np.diff(np.delete(path, up, axis=-1), axis=0), axis=-1)
    h = 0.5 * (path[1:, :, up] + path[:-1, :, up]) - base
    return float((step * np.clip(2 - 2 ** (h / (SKATE * height)), 0, 1)).mean()) if len(step) else 0.0


def _contact_share(world, joints, given, frames, height, up, fps):
    """The share of the ``frames`` of ``world`` where a foot joint is on the ground (found as the planting
    finds it, :func:`..contacts.contacts`, each joint's ground from the ``given`` frames)."""
    if not joints:
        return 0.0
    touching = contacts(world[:, joints], ground(world, given, joints, "XYZ"[up], GROUND), up, height, fps)
    return float(touching[frames].any(axis=1).mean()) if len(touching[frames]) else 0.0


def _speeds(world, fps):
    """(F - 1, J) each joint's speed between consecutive frames, units a second."""
    return np.linalg.norm(np.diff(world, axis=0), axis=-1) * fps


def _acceleration(world, frame, fps):
    """The largest joint acceleration (units a second squared) of ``world`` (F, J, 3) centred within
    :data:`JOIN` seconds of ``frame``, where the frames either side exist: at a join, a kink the easing
    spreads over the next frames is still read."""
    reach = int(round(JOIN * fps))
    centres = np.arange(max(frame - reach, 1), min(frame + reach + 1, len(world) - 1))
    if not len(centres):
        return 0.0
    second = world[centres + 1] - 2 * world[centres] + world[centres - 1]
    return float(np.linalg.norm(second, axis=-1).max() * fps * fps)


# --- contact sheet -----------------------------------------------------------------------------------------


def sheet(takes, height, up, columns=None):
    """The contact sheet's drawing: ``(segments (N, 2, 2), shades (N,), cells, size)``: each transition's
    :data:`STRIP` poses from the leave frame to the enter frame as bone segments in a side view (body heights),
    each pose along the way the root travels and a little apart, so that a pose standing still is seen, its
    shade its time (0 to 1); the variants of a pair side by side (``columns``: the variants), a pair a row;
    ``cells`` the lower left corner of each take's cell, ``size`` (width, height) of a cell."""
    columns = columns or max(t.variant for t in takes) + 1
    ground_axes = [x for x in range(3) if x != up]
    strips = []
    for take in takes:
        frames = np.linspace(*take.gap, STRIP).round().astype(int)
        world = forward_kinematics(take.motion.rotations[frames], take.motion.positions[frames],
                                   take.motion.skeleton.parents)[1] / height              # (S, J, 3)
        travel = world[-1, 0, ground_axes] - world[0, 0, ground_axes]
        length = np.linalg.norm(travel)
        travel = travel / length if length > 1e-6 else np.array([1.0, 0.0])
        x = (world[..., ground_axes] - world[0, 0, ground_axes]) @ travel + 0.35 * np.arange(STRIP)[:, None]
        strips.append((x - x.min(), world[..., up] - world[..., up].min()))
    width = max(x.max() for x, _ in strips) + 0.4
    tall = max(y.max() for _, y in strips) + 0.35
    parents = takes[0].motion.skeleton.parents
    bones = np.flatnonzero(parents >= 0)
    segments, cells = [], []
    for i, (x, y) in enumerate(strips):
        dx, dy = (i % columns) * width, -(i // columns) * tall
        cells.append((dx, dy))
        segments.append(np.stack([np.stack([x[:, parents[bones]] + dx, y[:, parents[bones]] + dy], -1),
                                  np.stack([x[:, bones] + dx, y[:, bones] + dy], -1)], axis=2).reshape(-1, 2, 2))
    shades = np.tile(np.repeat(np.linspace(0, 1, STRIP), len(bones)), len(takes))
    return np.concatenate(segments), shades, np.array(cells), (width, tall)


def contact_sheet(takes, path, height, up, flagged=None, columns=None):
    """One PNG of the library at ``path`` (:func:`sheet`, matplotlib): a take with ``flagged`` (a list of flags
    a take, as :func:`report` rows carry them) titled in red with them. One axes and one collection of lines for
    the whole page, so that fifty pairs draw in about a second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    flagged = flagged or [[] for _ in takes]
    columns = columns or max(t.variant for t in takes) + 1
    segments, shades, cells, (width, tall) = sheet(takes, height, up, columns)
    rows = -(-len(takes) // columns)
    fig, ax = plt.subplots(figsize=(1.1 * width * columns, 1.1 * tall * rows))
    for (dx, dy), take, flags_of in zip(cells, takes, flagged):
        ax.plot([dx, dx + width - 0.4], [dy, dy], color="grey", lw=0.5)
        ax.text(dx, dy + tall - 0.3, take.motion.name + (f"  ({', '.join(flags_of)})" if flags_of else ""),
                fontsize=7, color="red" if flags_of else "black", va="bottom")
    ax.add_collection(LineCollection(segments, colors=plt.cm.viridis(shades), linewidths=0.8))
    ax.set_xlim(-0.1, width * columns)
    ax.set_ylim(-(rows - 1) * tall - 0.1, tall)
    ax.set_aspect("equal")
    ax.set_axis_off()
    fig.subplots_adjust(0, 0, 1, 1)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72)
    plt.close(fig)
    return Path(path)


def sheet_pixels(takes, height, up, flagged=None, columns=None, scale=60):
    """The contact sheet as RGBA pixels (H, W, 4) in 0-1, bottom row first (as Blender's images hold them),
    ``scale`` pixels a body height, drawn in numpy alone (Blender has no matplotlib): :func:`sheet`'s bones
    from dark blue (the leave frame) to yellow (the enter frame) on white, each cell's floor line grey, or red
    where the take is ``flagged`` (no titles: the add-on lists the transitions with their flags)."""
    flagged = flagged or [[] for _ in takes]
    columns = columns or max(t.variant for t in takes) + 1
    segments, shades, cells, (width, tall) = sheet(takes, height, up, columns)
    rows = -(-len(takes) // columns)
    bottom = -(rows - 1) * tall - 0.1
    size = (int(np.ceil((tall - bottom) * scale)) + 1, int(np.ceil((width * columns + 0.1) * scale)) + 1)
    out = np.ones(size + (4,))
    floors = np.array([[[dx, dy], [dx + width - 0.4, dy]] for dx, dy in cells])
    lines = [(floors, np.where(np.array([bool(f) for f in flagged])[:, None], [1.0, 0.0, 0.0], [0.6, 0.6, 0.6]))]
    low, high = np.array([0.27, 0.0, 0.33]), np.array([0.99, 0.91, 0.14])    # viridis' ends
    lines.append((segments, low + shades[:, None] * (high - low)))
    for ends, colour in lines:
        steps = max(2, int(np.ceil(np.abs(np.diff(ends, axis=1)).max(initial=0.0) * scale)) + 1)
        t = np.linspace(0.0, 1.0, steps)[None, :, None]
        points = ends[:, :1] + t * (ends[:, 1:] - ends[:, :1])                  # (N, steps, 2)
        col = np.round((points[..., 0] + 0.1) * scale).astype(np.int64)
        row = np.round((points[..., 1] - bottom) * scale).astype(np.int64)
        inside = (row >= 0) & (row < size[0]) & (col >= 0) & (col < size[1])
        out[row[inside], col[inside], :3] = np.broadcast_to(colour[:, None], row.shape + (3,))[inside]
    return out
