"""Feet that stay planted: contacts found in a fill and held by foot IK, after any model's fill.

A learned fill smears contacts: a foot that should stand still on the ground creeps along it, or
dips below it, since the network averages where feet land. So after the model, and outside it (any
family's fill gets it), each foot joint (ankle and toe) of each leg goes through five steps, on
the generated frames only (keys and the frames outside gaps are never changed):

1. its ground: the lowest it reaches in the frames the user gave (keys and context), so the floor
   is found from the rig's feet, not assumed at zero height (:func:`.guard.ground`);
2. contacts: a joint within ``LOW`` of its ground and slower than ``SLOW`` enters a contact, which lasts
   while it stays within ``LOW_RELEASE`` and below ``SLOW_RELEASE`` (hysteresis, so contacts do not
   flicker), and in a fill between keys (by a model without a floor of its own) a person's joint nearly
   still (``HOVER_SLOW``) a little higher (``HOVER``) stands too: a network averages a standing foot's
   height, and its feet hover a few centimetres up where the capture stands; contacts are found on the
   whole motion, so one that begins on a key or in the context carries on into the gap;
3. steps: where a contact's path strays further than ``REACH`` from where it began (a network's foot
   creeps while it stands), the contact ends, and a new one begins after a swing as long as a fade;
4. each contact is locked where it touches the user's frames (on both sides of a gap: moving straight from
   one to the other), else at its mean position, a person's foot in a fill settling flat onto its ground
   while it stands (a paw in a motion generated to its end at its lowest height); the offset from the
   joint's own path to its lock fades out (a cubic, which the held foot leaves and enters at the lock's
   velocity) over ``FADE`` seconds on either side (never past a user frame, where it is zero; between two
   contacts closer than that, it moves from one lock to the next), no joint goes below its ground, and a
   foot off the ground on generated frames for at most ``MAX_SWING`` clears it by an arc as high as
   ``LIFT`` of the way it travels there (a network's foot glides along the floor where the capture steps or
   jumps; after a key with the foot in the air, the rest of that arc; a person's foot by at most ``HOP``
   where no other leg stands, so two feet gliding together do not hop), its toe by as much but never more
   than its ankle clears the ankle's ground (a network's toe may scrape the floor under a raised ankle),
   and a toe standing on its own under a standing body is not taken up with its foot (a heel lifted off it)
   where the body travels over it (a push-off) or it stands still (a pivot on the ball of the foot);
5. two-bone IK (hip, knee, ankle: :mod:`.leg_ik`) puts the ankle on its target, the knee turning in the
   plane of the leg (a person's knee's bend blurred over a few frames where the leg is nearly straight and
   the ankle is not held or landed within ``LANDING``, :func:`.leg_ik.smoothed`: held exactly from the frame it
   lands, a leg landing nearly straight snapped its knee in one frame); the foot keeps its world rotation but
   turns so that its toe reaches the toe's target. Where a toe is held and its ankle is not, the ankle's target is first
   moved onto the foot's length about the toe's (:func:`.leg_ik.pivoted`), so the foot pivots on the held
   toe rather than dragging it.

A quadruped's leg without a toe joint stands on its *paw*, the End Site below its foot (the dog's: under
``LeftHand``, ``RightHand`` in front, ``LeftFoot``, ``RightFoot`` behind), and the paw is the point
found in contact and locked: three segments above it (upper arm, forearm and pastern in front;
thigh, shin and the metatarsus below the hock behind), of which the IK bends the upper two and keeps
the lowest's world rotation, so the ankle's target is the paw's less that segment (see :func:`plant`).
In a motion generated to its end (Follow Path), a paw that skims the floor at the lowest frame of a
stride, too high or too fast to be found standing, is brought down onto it there (:func:`touchdowns`).

Legs and paws are found by name (:func:`.anatomy.legs`); a skeleton without them is left alone.
"""

import math
from dataclasses import replace

import numpy as np

from . import quat
from .anatomy import is_quadruped, legs
from .guard import ground
from .leg_ik import pivoted, reachable, smoothed, solve_leg
from .motion import AXES, forward_kinematics

LOW, LOW_RELEASE = 0.025, 0.035   # of the body's height above a joint's ground
SLOW, SLOW_RELEASE = 0.35, 0.5    # body heights a second, horizontally
HOVER, HOVER_SLOW = 1.5 * LOW, 0.25 * SLOW  # a person's foot this low and this slow stands, hovering
GROUND = 2.0                      # percentile of a joint's height in the user's frames: its ground
FADE = 0.2                        # seconds over which a lock's offset fades in and out
REACH = 0.05                      # of the body's height: how far a path may stray from its step's start
LIFT, LIFT_HIGH = 0.2, 0.15       # a swing's clearance: of the way it travels, at most this of the body's height
TOE_LIFT_HIGH = 0.08              # a toe's, less: lifted higher, the foot turns faster than the capture's ever do
ARC = 6.0                         # body heights a second squared: the most a swing's arc accelerates a foot
STANDING = 0.35                   # of the body's height: hips this far above a toe's ground stand on it
TRAVELS = 0.15                    # body heights a second: hips this fast travel over a standing toe (a push-off)
STILL = 0.05                      # body heights a second: a toe this slow stands still (a pivot on its ball)
MAX_SWING = 2.0                   # seconds: a foot off the ground longer is not stepping (a swing lasts under one)
LANDING = 0.1                     # seconds: a hold's first frames, its nearly straight knee's bend still blurred
HOP = LOW                         # of the body's height: the most a swing clears its ground while no other leg stands
# a quadruped's paws: of its leg's length (MANN's Placement height), a person's thresholds in leg lengths
# (about half the body's height) for LOW, looser for SLOW (experiments.md, "Planted paws")
PAW_LOW, PAW_LOW_RELEASE = 0.05, 0.07
PAW_SLOW, PAW_SLOW_RELEASE = 1.5, 2.0
PAW_FADE = 0.1                    # seconds: a trot's contacts are short (six frames at the dog's 60 fps)
PAW_TOUCH = 0.15                  # of a leg's length: a stride's lowest frame this near its ground touches it
PAW_STANCE = 3                    # frames it stands
PAW_SWING = 0.5                   # seconds: a paw's longest swing (the capture's 90th percentile)


def plant(motion, gaps, height, floored=False):
    """``motion`` with feet planted on the frames strictly inside each ``(start, end)`` key pair;
    ``height`` the body's height in the motion's units; a quadruped's thresholds are in its longest leg's
    length (MANN's Placement height) whatever model made the motion (an RTN's layout holds the
    standing height). ``[(0, F)]`` plants a motion generated from its first frame (Follow Path, from its
    start pose): each foot's ground is then found in all its frames (one frame cannot tell it: a paw
    may be lifted), its contacts locked where the first frame has them or at their mean positions;
    ``[(s, F)]`` a motion generated after its frame ``s`` (Continue's walks): the frames up to ``s`` are
    the context, as a gap's past is, and a contact at the end is locked at its mean position.
    ``floored``: the model keeps its motion on a floor of its own (the Motion VAE's floor step), so its
    generated frames show where the floor is as the user's do, and each foot joint's ground is the lower of
    the two (:func:`grounds`): around a gap the user's frames may stand on a box or kneel where the model's
    stand on the floor. A model without one (an RTN) sinks its feet here and there, and its grounds are the
    user's frames' alone (found in its fill too, the rig suite's dances skated 2-3.5x as much). Unchanged
    where no leg is found.

    A leg stands on its ankle (and toe), or on its paw: the paw's target, less the lowest segment as
    the model turned it, is the ankle's, since :func:`.leg_ik.solve_leg` keeps the foot's world rotation. That
    keeps the leg's shape: a dog's hock or pastern angled as in the model's stride, only hip and knee
    (shoulder and elbow) bending, in the leg's plane; an IK over all three segments would be free to
    straighten or buckle the lowest joint, which the network, trained on real strides, set."""
    found = legs(motion.skeleton)
    if not found or not gaps:
        return motion
    generated = np.zeros(motion.n_frames, dtype=bool)
    for start, end in gaps:
        generated[start + 1:end] = True
    # where feet find their ground: the user's frames, or all of a motion generated to its end (a path
    # followed, a continuation), whose start may stand on a step that its own floor soon leaves
    seen = ~generated if not generated[-1] and np.count_nonzero(~generated) > 1 else np.ones_like(generated)
    parents = motion.skeleton.parents
    grot, gpos = forward_kinematics(motion.rotations, motion.positions, parents)
    u = AXES.index(motion.up)
    below, stands, paws, height = standing(motion.skeleton, found, grot, gpos, height)
    floor = grounds(stands, seen, slice(None), motion.up, floored)
    toed = [k for k, leg in enumerate(found) if leg.toe >= 0]
    toes = [found[k].toe for k in toed]
    toe_floor = grounds(gpos, seen, toes, motion.up, floored)
    on_toes = held_contacts(gpos[:, toes], toe_floor, generated, u, height, motion.fps)
    # a person's leg stands on its ankle or its toe while the other swings; a quadruped's paws keep their arcs
    # (a trot's and a canter's strides fly) and are the dog's own (no ARC)
    others = None
    if not paws.any() and not is_quadruped(motion.skeleton):   # a skeleton without End Sites has no paws
        others = np.zeros((motion.n_frames, len(found)), dtype=bool)
        others[:, toed] = on_toes
    # a person's foot settles flat onto its ground, less its heel's rise over its toe: a foot hovering flat
    # comes down whole, the raised heel of a pivot on the ball of the foot stays up (held down with its toe,
    # it dragged the foot 3 cm round); in a fill between keys: a model on a floor of its own stands on it already,
    # and a motion generated to its end (a continuation, a path) finds its ground in its own frames
    settle = None
    if others is not None and not floored and not generated[-1]:
        settle = np.repeat(floor[None], motion.n_frames, axis=0)
        settle[:, toed] += np.maximum((stands[:, toed, u] - floor[toed]) - (gpos[:, toes, u] - toe_floor), 0.0)
    held, stood = _held(stands, floor, generated, u, height, motion.fps, paws,
                        sharpest=np.inf if paws.any() else ARC, standing=others, touchdown=bool(generated[-1]),
                        settle=settle)
    # a toe moves with its foot's target where it has no contact of its own, and is lifted no higher off
    # its ground than its ankle is off the ankle's (a foot in the air is not stood on its tip)
    # where the toe stands on its own in a standing body (a heel lifted off it), it stays where it stands
    # however its foot is lifted: taken up with the ankle's arc, it floated a body pushing off its toes
    tiptoe = on_toes & (gpos[:, [found[k].hip for k in toed], u] - toe_floor > STANDING * height)
    # and the body travels over it (a push-off) or it stands still (a pivot on the ball of the foot): a toe
    # creeping along the floor under still hips is the network's smear of a dancer's foot, which held in steps
    # of its own apart from its foot's slid more than the capture's feet, so it goes with its foot
    hips = gpos[:, [leg.hip for leg in found]].mean(axis=1, keepdims=True)
    tiptoe &= (speeds(hips, u, motion.fps) > TRAVELS * height) | (speeds(gpos[:, toes], u, motion.fps) < STILL * height)
    fade = fade_frames(motion.fps, FADE)
    own = np.stack([nearness(tiptoe[:, i], fade) for i in range(len(toes))], axis=1)[..., None] if toes else 0.0
    path = gpos[:, toes] + (1.0 - own) * (held[:, toed] - stands[:, toed])
    ankle_clear = np.maximum(held[:, toed, u] - floor[toed], 0.0)
    toe_held, toe_on = _held(path, toe_floor, generated, u, height, motion.fps, high=TOE_LIFT_HIGH,
                             ceiling=ankle_clear, sharpest=np.inf, standing=None if others is None else stood[:, toed],
                             settle=None if settle is None else np.broadcast_to(toe_floor, path.shape[:2]))
    for i, k in enumerate(toed):
        length = np.linalg.norm(motion.skeleton.offsets[toes[i]])
        # fading onto or off its lock, a toe stays within its foot's length of its ankle's target: slowed onto
        # the lock while the ankle swung on, the two drifted apart and the pivot below bent a straight knee
        near = nearness(toe_on[:, i], fade)
        fading = (near > 0.0) & (near < 1.0)
        toe_held[fading, i] = within(held[fading, k], toe_held[fading, i], length)
        weight = near * (1.0 - nearness(stood[:, k], fade))
        held[:, k] = pivoted(held[:, k], toe_held[:, i], length, weight)
    toe_targets = dict(zip(toed, np.moveaxis(toe_held, 1, 0)))
    rows = np.flatnonzero(generated)
    solved, g, p = motion.rotations[rows], grot[rows], gpos[rows]   # each leg turns joints of its own
    for k, leg in enumerate(found):
        ankle = reachable(gpos[:, leg.hip], gpos[:, leg.foot], held[:, k] - below[:, k], motion.skeleton.offsets, leg)
        if not leg.paw:
            free = ~stood[:, k] | landing(stood[:, k], fade_frames(motion.fps, LANDING))
            ankle = smoothed(gpos[:, leg.hip], gpos[:, leg.knee], gpos[:, leg.foot], ankle, motion.fps, free)
        toe = toe_targets[k][rows] if k in toe_targets else None
        solved = solve_leg(solved, g, p, parents, leg, ankle[rows], toe, u)
    rotations = motion.rotations.copy()
    rotations[rows] = solved
    return replace(motion, rotations=rotations)


def grounds(points, seen, joints, up, floored=False):
    """(K,) the ground of each of ``joints`` of ``points`` (F, J, 3): the GROUND percentile of its height in the
    frames ``seen`` (F,) bool, or, ``floored``, the lower of that and the same in the other frames (:func:`plant`)."""
    own = ground(points, seen, joints, up, GROUND)
    return np.minimum(own, ground(points, ~seen, joints, up, GROUND)) if floored and (~seen).any() else own


def standing(skeleton, found, grot, gpos, height):
    """``(below, stands, paws, height)``: per leg of ``found`` (L) on the world rotations and positions ``grot``,
    ``gpos`` (F, J, ·), the way (F, L, 3) from its foot joint to where it stands (its paw, or nothing), those
    points (F, L, 3), whether each is a paw (L,), and the length the thresholds are in: ``height`` (the
    body's), or a quadruped's longest leg's (MANN's Placement height)."""
    below = np.stack([quat.rotate(grot[:, leg.foot], np.asarray(leg.paw)) if leg.paw else np.zeros_like(gpos[:, 0])
                      for leg in found], axis=1)                    # (F, L, 3): the foot joint to where it stands
    stands = gpos[:, [leg.foot for leg in found]] + below
    paws = np.array([bool(leg.paw) for leg in found])
    if paws.any():
        offsets = skeleton.offsets
        height = max(np.linalg.norm(leg.paw) + np.linalg.norm(offsets[leg.foot]) + np.linalg.norm(offsets[leg.knee])
                     for leg in found if leg.paw)
    return below, stands, paws, height


def _held(path, lowest, generated, up, height, fps, paws=False, high=LIFT_HIGH, ceiling=np.inf, sharpest=ARC,
          standing=None, touchdown=False, settle=None):
    """(F, K, 3) the points ``path`` (F, K, 3) held where they are in contact (:func:`contacts` with their
    grounds ``lowest`` (K,), :func:`offsets`), in steps (:func:`steps`), never below their grounds and clear
    of them on the way between steps (:func:`lifts`, at most ``high`` of the body's height and ``ceiling``
    (F, K) above them, accelerating them by at most ``sharpest`` body heights a second squared: a toe's arc is
    bounded by its ankle's clearance already); and (F, K) bool, the frames held (:func:`held_contacts`).
    ``standing`` (F, K) bool, where given (a person's legs, one point each): the frames each leg stands on
    another of its joints (its toe, or its ankle); a swing clears its ground by at most ``HOP`` of the body's
    height but where another leg stands (:func:`hops`). ``touchdown``: paws that skim the floor are brought down
    onto it (:func:`touchdowns`), in a motion generated to its end (Follow Path) whose paws no key shows
    standing; in a fill between keys, stopped there, the legs of the rig suite's 2 s dog fills jerked and erred
    more (experiments.md, "A canter's paws brought down onto the floor"). ``settle`` (F, K): the heights onto
    which contacts that hold no user frame settle (:func:`locks`; a person's feet in a fill), found hovering too
    (:func:`contacts`), or None."""
    fade = fade_frames(fps, PAW_FADE if np.any(paws) else FADE)
    contact = held_contacts(path, lowest, generated, up, height, fps, paws, hover=settle is not None)
    swing = round(PAW_SWING * fps) if np.any(paws) else None
    on_path = swing is not None and touchdown   # paws in a motion generated to its end
    if on_path:
        path, contact = touchdowns(path, contact, generated, up, height, fps, round(MAX_SWING * fps), swing, lowest,
                                   fade)
    # a paw standing in a path's motion stands on its lowest height there: at its mean, a canter's paws stood 2 cm up
    held = path + offsets(path, contact, generated, fade, up if on_path or settle is not None else None, settle)
    clear = lifts(held, contact, generated, up, height, fps, round(MAX_SWING * fps), high, sharpest, swing, lowest)
    clear = np.minimum(clear, ceiling)
    if standing is not None:
        clear = hops(clear, contact | standing, HOP * height, fade)
    held[..., up] = np.maximum(held[..., up], lowest + clear)
    return held, contact


def touchdowns(path, contact, generated, up, height, fps, longest, swing, floor, fade):
    """``(path, contact)`` with each paw that comes within ``PAW_TOUCH`` of the leg's ``height`` of its ground
    ``floor`` (K,) at the lowest frame of a stride (:func:`strides`) brought down onto it there, over ``fade``
    frames each side, and standing there for ``PAW_STANCE`` frames: the network's paws skim the floor through
    a canter's stances a few centimetres up and lifted stride by stride stayed off it twice as long as a dog's
    ever do; brought down without standing, they slid along it (experiments.md, "A canter's paws brought down
    onto the floor"). A run off contact longer than ``longest`` frames is taken in strides too where the paw
    travels faster than ``PAW_SLOW`` over it (a canter's skimming strides), and left as it is where it does not
    (a paw held up while the dog stands)."""
    path, contact = path.copy(), contact.copy()
    free = ~contact & generated[:, None]
    window = 0.5 * (1 + np.cos(np.pi * np.arange(-fade, fade + 1) / (fade + 1)))
    half = PAW_STANCE // 2
    for k in range(path.shape[1]):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], free[:, k].astype(np.int8), [0]])))
        for s, e in zip(edges[::2], edges[1::2]):
            if e - s > longest and speeds(path[s:e, k:k + 1], up, fps).mean() < PAW_SLOW * height:
                continue
            parts = strides(s, e, path[:, k, up], swing)
            for (_, a), (b, _) in zip(parts[:-1], parts[1:]):
                above = path[a, k, up] - floor[k]
                if b != a + 1 or not 0 < above < PAW_TOUCH * height:
                    continue
                lo, hi = max(a - fade, s), min(a + fade + 1, e)
                path[lo:hi, k, up] -= above * window[lo - a + fade:hi - a + fade]
                contact[max(a - half, s):min(a + half + 1, e), k] = True
    return path, contact


def hops(clear, stands, low, fade):
    """(F, K) the clearances ``clear`` (F, K) of K legs, each at most ``low`` where no other leg ``stands`` (F, K)
    bool, fading to its own over ``fade`` frames from another's contact (:func:`nearness`): a person lifts a
    foot while the other stands on the floor. Both feet off the floor at once is a jump or a run's flight,
    which the network's own heights show (an arc keeps them where they are higher); full arcs over two feet
    that glide together (a shuffle where the capture steps, a floor move) lifted both a hand's width at once, a
    hop the keys did not ask for (experiments.md, "Keys above the floor"), where held low they still clear it."""
    out = clear.copy()
    for k in range(clear.shape[1]):
        near = nearness(np.delete(stands, k, axis=1).any(axis=1), fade)
        out[:, k] = near * clear[:, k] + (1.0 - near) * np.minimum(clear[:, k], low)
    return out


def within(centre, point, radius):
    """(F, 3) ``point`` (F, 3) moved straight toward ``centre`` (F, 3) until it is no further than ``radius``."""
    way = point - centre
    far = np.linalg.norm(way, axis=-1, keepdims=True)
    return centre + way * np.minimum(1.0, radius / np.maximum(far, 1e-9))


def landing(contact, frames):
    """(F,) bool: the first ``frames`` frames of each run of ``contact`` (F,) bool that begins after a frame without it:
    a foot landing."""
    out = np.zeros_like(contact)
    for start in np.flatnonzero(contact[1:] & ~contact[:-1]) + 1:
        out[start:start + frames] = contact[start:start + frames]
    return out


def nearness(contact, fade):
    """(F,) 1 on the frames of ``contact`` (F,) bool, falling linearly to 0 at ``fade`` + 1 frames from the
    nearest of them: a weight that comes and goes with a contact as its lock's offset does."""
    on = np.flatnonzero(contact)
    if not len(on):
        return np.zeros(len(contact))
    index = np.arange(len(contact))
    after = np.minimum(np.searchsorted(on, index), len(on) - 1)
    distance = np.minimum(np.abs(on[after] - index), np.abs(index - on[np.maximum(after - 1, 0)]))
    return np.clip(1.0 - distance / (fade + 1), 0.0, 1.0)


def held_contacts(path, lowest, generated, up, height, fps, paws=False, hover=False):
    """(F, K) bool: the frames on which each of the points ``path`` (F, K, 3) is held: its :func:`contacts`
    with its ground ``lowest`` (K,), cut into :func:`steps` no longer than ``REACH`` of the body's height,
    with swings as long as a lock's fade; ``hover`` as :func:`contacts` says."""
    fade = fade_frames(fps, PAW_FADE if np.any(paws) else FADE)
    return steps(path, contacts(path, lowest, up, height, fps, paws, hover), generated, up, REACH * height, fade)


def steps(path, contact, generated, up, reach, swing):
    """``contact`` with each contact cut into steps: where a joint's ``path`` strays further than ``reach``
    (horizontally) from where its step began, the step ends and, after ``swing`` generated frames off the
    ground, the next begins there. A network's foot creeping along the floor stays slow enough to count
    as standing, and one lock held across its creep leaves it far from the body, then drags it back
    along the floor; steps keep each lock near the path and move the foot between them in the air."""
    out = contact.copy()
    frames = len(path)
    for k in range(path.shape[1]):
        # plain floats, a frame at a time: two lists of them, not a list a frame (tens of thousands of lists
        # on a long Decompress, and in Blender's crowded heap the garbage collections they set off)
        xs, ys = np.delete(path[:, k], up, axis=-1).T.tolist()
        t, anchor = 0, None
        while t < frames:
            if not out[t, k]:
                t, anchor = t + 1, None
                continue
            if anchor is None or math.hypot(xs[t] - anchor[0], ys[t] - anchor[1]) <= reach:
                anchor = (xs[t], ys[t]) if anchor is None else anchor
                t += 1
                continue
            # a swing: ``swing`` generated frames from t (or, at a user frame, before it), then a new step
            if generated[t]:
                end = t
                while end < min(t + swing, frames) and generated[end]:
                    end += 1
                out[t:end, k] = False
                t, anchor = end, None
            else:
                begin = t
                while begin > max(t - swing, 0) and generated[begin - 1] and out[begin - 1, k]:
                    begin -= 1
                out[begin:t, k] = False
                anchor = (xs[t], ys[t])
                t += 1
    return out


def lifts(held, contact, generated, up, height, fps, longest, high=LIFT_HIGH, sharpest=ARC, swing=None, floor=0.0):
    """(F, K) the least height above its ground of each joint on its generated frames off the ground: an arc
    over each swing (a run of them between contacts or user frames) of at most ``longest`` frames, as high
    as ``LIFT`` of the way it travels, at most ``high`` of the body's ``height``, so a foot that travels
    clears the floor, as a stepping or jumping foot does, rather than sliding along it; a swing the network
    lifts higher keeps its own height. The arc accelerates the joint by at most ``sharpest`` body heights a
    second squared (:data:`ARC`, about what a walking foot's does on its tenth sharpest frame): the few frames
    between a key and a foot landing are the tail of a swing, and a full arc squeezed into them kicks the
    knee up and down again. A longer run is a foot gliding where no contact was found (a Motion VAE's walk:
    runs of seconds), and an arc over it would only float the foot above its glide. Where ``swing`` (frames)
    is given (a quadruped's paws), a run longer than it is that many strides: the network's paws skim the floor
    through a trot's or a canter's stances too fast to be found standing, and one arc over the run held a paw
    up for a second or more; each stride is lifted from the run's lowest frames (:func:`strides`). Where no
    ``sharpest`` bounds the arc (a toe's), a run of at most twice ``FADE`` that begins on a key with the joint in
    the air (more than ``LOW`` above its ground ``floor`` (K,)) and coming down is the landing of the key's own
    swing, too short for a step of its own, and is not lifted: an arc from the floor rose above the landing toe
    and kicked it up again (an ankle's arc over so few frames is held low by ``ARC``)."""
    out = np.zeros(held.shape[:2])
    frames = len(held)
    floor = np.broadcast_to(floor, held.shape[1:2])
    free = ~contact & generated[:, None]
    flat = np.delete(held, up, axis=-1)
    for k in range(held.shape[1]):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], free[:, k].astype(np.int8), [0]])))
        runs = list(zip(edges[::2], edges[1::2]))          # frames s .. e - 1
        if swing is not None:
            runs = [part for s, e in runs for part in (strides(s, e, held[:, k, up], swing) if e - s <= longest
                                                       else [(s, e)])]
        for s, e in runs:
            if e - s > longest:
                continue
            way = np.linalg.norm(flat[min(e, frames - 1), k] - flat[max(s - 1, 0), k])
            span = (e - s + 1) / fps
            peak = min(LIFT * way, high * height, sharpest * height * span * span / np.pi ** 2)
            key = s - 1
            if np.isinf(sharpest) and 0 < key and not generated[key] and e - s <= 2 * fade_frames(fps) \
                    and held[key, k, up] - floor[k] > LOW * height and held[key, k, up] < held[key - 1, k, up]:
                continue                                   # the landing of the key's own swing: not lifted
            out[s:e, k] = peak * np.sin(np.pi * np.arange(1, e - s + 1) / (e - s + 1))
    return out


def strides(start, end, height, longest):
    """Frames ``start`` .. ``end`` - 1 as runs of at most ``longest`` frames: a longer run is cut at its lowest
    frame by ``height`` (F,), which keeps its own height (no arc lifts it), and each side so in turn."""
    runs, out = [(start, end)], []
    while runs:
        s, e = runs.pop()
        if e - s <= longest or e - s < 3:
            out.append((s, e))
            continue
        at = s + 1 + int(np.argmin(height[s + 1:e - 1]))
        runs += [(s, at), (at + 1, e)]
    return sorted(out)


def contacts(feet, floor, up, height, fps, paws=False, hover=False):
    """(F, K) bool: frames where each of the K joints ``feet`` (F, K, 3) is in contact with its ground
    ``floor`` (K,): low and slow to enter (``LOW``, ``SLOW``), within the looser release thresholds to stay;
    ``paws`` (bool, or (K,)) where they are a quadruped's paws, ``height`` then its leg's length (``PAW_*``);
    ``hover``: a joint nearly still a little higher (``HOVER``, ``HOVER_SLOW``) enters and stays too."""
    h = (feet[..., up] - floor) / height
    speed = speeds(feet, up, fps) / height
    hover = hover & (h < HOVER) & (speed < HOVER_SLOW)
    enter = (h < np.where(paws, PAW_LOW, LOW)) & (speed < np.where(paws, PAW_SLOW, SLOW)) | hover
    stay = (h < np.where(paws, PAW_LOW_RELEASE, LOW_RELEASE)) \
        & (speed < np.where(paws, PAW_SLOW_RELEASE, SLOW_RELEASE)) | hover
    frame = np.arange(len(h))[:, None]
    # in contact: staying, and entered since the last frame that did not stay
    last_enter = np.maximum.accumulate(np.where(enter, frame, -1), axis=0)
    last_break = np.maximum.accumulate(np.where(stay, -1, frame), axis=0)
    return stay & (last_enter > last_break)


def speeds(points, up, fps):
    """(F, K) how fast each of the points ``points`` (F, K, 3) moves horizontally, units a second: each frame's
    mean of its steps in and out (the first and last frame's one step; none in a one-frame motion)."""
    step = np.linalg.norm(np.diff(np.delete(points, up, axis=-1), axis=0), axis=-1) * fps    # (F - 1, K)
    return np.concatenate([step[:1], 0.5 * (step[1:] + step[:-1]), step[-1:]]) if len(step) else \
        np.zeros(points.shape[:2])


def fade_frames(fps, seconds=FADE):
    """A fade of ``seconds`` in frames at ``fps``: as long in time at any rate (at 120 fps six frames
    moved a released toe 19 cm in one frame in the rig suite's CMU case)."""
    return max(1, round(seconds * fps))


def offsets(feet, contact, generated, fade, down=None, ground=None):
    """(F, K, 3) what to add to each joint's path ``feet`` (F, K, 3): on a contact's generated frames,
    the way to its lock (see :func:`locks`, which ``down`` and ``ground`` are handed to); elsewhere fading to
    zero over ``fade`` frames (directly from one lock to the next where two contacts are closer than ``fade`` each
    side: a fade-out reaching into the next one's fade-in would move the joint onto that lock in one frame)
    and zero on every frame that is not ``generated``; each fade a cubic that begins and ends with the
    velocity of what it joins (the way to the lock changing as the joint's own path moves on, or none), so
    that the held foot's velocity does not step where a fade begins and ends: a smoothstep left the foot its
    own path's velocity on a contact's first and last frames, which it then lost (or gained) in one frame."""
    frames = len(feet)
    out = np.zeros_like(feet)
    lock = locks(feet, contact, generated, down, ground, fade)
    index = np.arange(frames)
    for k in range(feet.shape[1]):
        on = contact[:, k] & generated
        edges = np.concatenate([np.flatnonzero(on[1:] & ~on[:-1]) - fade,       # fade + 1 before a start
                                np.flatnonzero(on[:-1] & ~on[1:]) + fade + 1])  # and after an end
        edges = edges[(edges >= 0) & (edges < frames)]
        count = np.concatenate([[0], np.cumsum(on)])
        near = count[np.minimum(index + fade + 1, frames)] > count[np.maximum(index - fade, 0)]   # within fade of one
        anchor = on | ~generated
        anchor[edges[~near[edges]]] = True
        at = np.flatnonzero(anchor)
        miss = lock[:, k] - feet[:, k]                                       # on a contact's frames
        before, after = np.r_[False, on[:-1]], np.r_[on[1:], False]
        # the offset's slope (a frame) at a contact's first and last frames, from within the contact
        slope = np.where((on & after)[:, None], np.roll(miss, -1, axis=0) - miss,
                         np.where((on & before)[:, None], miss - np.roll(miss, 1, axis=0), 0.0))[at]
        value = np.where(on[at, None], miss[at], 0.0)
        segment = np.clip(np.searchsorted(at, index, side="right") - 1, 0, len(at) - 2)
        span = np.maximum(at[segment + 1] - at[segment], 1)[:, None]
        t = np.clip((index[:, None] - at[segment, None]) / span, 0.0, 1.0)
        out[:, k] = ((1 + 2 * t) * (1 - t) ** 2 * value[segment] + t * (1 - t) ** 2 * span * slope[segment]
                     + t * t * (3 - 2 * t) * value[segment + 1] - t * t * (1 - t) * span * slope[segment + 1])
    return out


def locks(feet, contact, generated, down=None, ground=None, fade=0):
    """(F, K, 3) where each joint is held on the frames of its contacts: the user's positions where a
    contact holds user frames (between two of them, moving straight from one to the next), else the
    contact's mean position; or, along the axis ``down`` where given (the up axis), its lowest height there:
    a network's paw standing 1-2 cm over the floor, held at its mean, stood off it (experiments.md, "A
    paw stood at its lowest"); or, ``ground`` (F, K) given too, settling from its mean height onto that height
    over the contact's first and last ``fade`` frames, so that it lands and lifts off still: a person's foot
    held at its mean or its lowest height stood a hovering network's feet off the floor, and brought down over
    the fade, it slid along it (experiments.md, "Feet settled on their ground")."""
    frames, joints = contact.shape
    index = np.arange(frames)[:, None]
    start = contact & ~np.vstack([np.zeros((1, joints), bool), contact[:-1]])
    run = np.where(contact, np.cumsum(start, axis=0), 0)                   # contact number, per joint
    user = contact & ~generated[:, None]
    before = np.maximum.accumulate(np.where(user, index, -1), axis=0)
    after = np.minimum.accumulate(np.where(user, index, frames)[::-1], axis=0)[::-1]
    k = np.broadcast_to(np.arange(joints), contact.shape)
    has_before = (before >= 0) & (run[np.maximum(before, 0), k] == run)
    has_after = (after < frames) & (run[np.minimum(after, frames - 1), k] == run)
    p0 = feet[np.maximum(before, 0), k]
    p1 = feet[np.minimum(after, frames - 1), k]
    span = np.maximum(after - before, 1)
    t = ((index - before) / span)[..., None]
    out = np.where((has_before & has_after)[..., None], p0 + t * (p1 - p0),
                   np.where(has_before[..., None], p0, p1))
    free = contact & ~has_before & ~has_after
    key = run * joints + k                                                 # one label per joint's contact
    count = np.bincount(key[free], minlength=run.max(initial=0) * joints + joints)
    for c in range(3):
        total = np.bincount(key[free], weights=feet[..., c][free], minlength=len(count))
        out[..., c] = np.where(free, (total / np.maximum(count, 1))[key], out[..., c])
    if ground is not None and free.any():
        inside = 1.0 - np.stack([nearness(~contact[:, j], fade) for j in range(joints)], axis=1)
        out[..., down] += np.where(free, inside * (ground - out[..., down]), 0.0)
    elif down is not None and free.any():
        least = np.full(len(count), np.inf)
        np.minimum.at(least, key[free], feet[..., down][free])
        out[..., down] = np.where(free, least[key], out[..., down])
    return out
