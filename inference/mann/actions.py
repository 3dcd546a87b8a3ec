"""The MANN paper's six actions, derived from the motion itself: the dog data carries no labels. One
definition for training, which learns from them (``python -m training labels`` draws them per clip),
and the runtime, which reads them off the motion a path or a fill starts from.

Every frame gets one action from what its body does, measured against the ground under the paws, in
lengths of the back leg (hip joint to paw, 44.8 cm for the dog) so that the rules hold in any units:

- jump: all four paws off the ground (the lowest above JUMP_AIR) for JUMP_FRAMES or more, widened to
  the whole airborne stretch and by JUMP_MARGIN for take-off and landing; a gallop's short, low flight
  phases stay below it;
- stand (on the hind legs): both front paws above STAND_FRONT for STAND_FRAMES or more while the
  hind paws are down and the hips up (not below LOW_HIPS: a sitting dog begging with its paws up
  sits), widened to where the front paws are above STAND_EXTENT;
- sit / lie: the hips below LOW_HIPS; lie where the neck is low too (below LIE_NECK), sit where the
  front legs hold the neck up;
- move: the root's speed over half a second above MOVE_SPEED (leg lengths per second), staying move
  until it drops below IDLE_SPEED;
- idle: anything else (standing, looking round, turning on the spot).

Earlier rules win. Then a majority filter over MAJORITY seconds and the merging of every stretch shorter
than MIN_SEGMENT seconds into its neighbour keep a label from flickering.
"""

import numpy as np

from .features import bones_of, leg_length, rolling, world

ACTIONS = ("idle", "move", "jump", "sit", "stand", "lie")
IDLE, MOVE, JUMP, SIT, STAND, LIE = range(len(ACTIONS))

# thresholds in back-leg lengths (L; the dog's is 44.8 cm) and seconds
GROUND_WINDOW = 1.0   # s: the ground is the median height of the lowest paw over this window
JUMP_AIR = 0.2        # L: lowest paw above the ground: airborne (9 cm for the dog)
JUMP_FRAMES = 0.1     # s: ... for at least this long is a jump
JUMP_EXTENT = 0.05    # L: a jump lasts while the lowest paw stays above this
JUMP_MARGIN = 0.2     # s: take-off and landing
STAND_FRONT = 0.5     # L: both front paws this high ...
STAND_HIND = 0.25     # L: ... with both hind paws below this: on the hind legs
STAND_FRAMES = 0.25   # s: ... for at least this long (a paw put up on a ledge is shorter)
STAND_EXTENT = 0.25   # L: ... lasting while the front paws stay above this
LOW_HIPS = 0.45       # L: hips below this: sitting or lying (20 cm; standing hips are at ~46 cm)
LIE_NECK = 0.6        # L: ... with the neck below this: lying (27 cm; sitting dogs hold it at ~38 cm)
MOVE_SPEED = 0.5      # L/s: root speed from which the dog moves (22 cm/s) ...
IDLE_SPEED = 0.3      # L/s: ... and below which it stops (13 cm/s)
SPEED_WINDOW = 0.5    # s: speed is the root's displacement over this window
MAJORITY = 0.2        # s
MIN_SEGMENT = 0.3     # s


def signals(motion, bones=None):
    """What the labels are read from, per frame (F,), heights above the ground in the data's units:
    ``speed`` (units/s), ``hips``, ``neck``, ``front`` (the lower front paw), ``hind`` (the higher hind
    paw), ``air`` (the lowest paw), ``ground``; and ``leg``, the back leg's length."""
    bones = bones or bones_of(motion.skeleton)
    pos, _ = world(motion, bones)
    fps, sk = motion.fps, motion.skeleton
    paws = pos[:, bones.paws, 1]
    ground = rolling(paws.min(axis=1), GROUND_WINDOW * fps, np.median)
    root = pos[:, bones.index("Hips"), :][:, [0, 2]]
    half = max(int(SPEED_WINDOW * fps / 2), 1)
    ahead = np.pad(root, ((0, half), (0, 0)), mode="edge")[half:]
    behind = np.pad(root, ((half, 0), (0, 0)), mode="edge")[:len(root)]
    return {"speed": np.linalg.norm(ahead - behind, axis=-1) * fps / (2 * half),
            "hips": pos[:, bones.index("Hips"), 1] - ground,
            "neck": pos[:, bones.index("Neck"), 1] - ground,
            "front": paws[:, :2].min(axis=1) - ground,
            "hind": paws[:, 2:].max(axis=1) - ground,
            "air": paws.min(axis=1) - ground,
            "ground": ground, "leg": leg_length(sk, bones)}


def runs(mask):
    """(start, stop) of every run of True in ``mask``."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def _widened(core, extent, margin=0):
    """Frames of ``extent`` runs holding a ``core`` frame, each widened by ``margin`` frames."""
    out = np.zeros_like(core)
    for a, b in runs(extent | core):
        if core[a:b].any():
            out[max(a - margin, 0):b + margin] = True
    return out


def lasting(mask, frames):
    """``mask`` without its runs shorter than ``frames``."""
    out = np.zeros_like(mask)
    for a, b in runs(mask):
        out[a:b] = b - a >= frames
    return out


def _hysteresis(x, high, low):
    """True from where ``x`` rises above ``high`` until it falls below ``low``."""
    out = np.zeros(len(x), dtype=bool)
    on = False
    for i, v in enumerate(x):
        on = v > high if not on else v >= low
        out[i] = on
    return out


def classify(sig, fps):
    """Each frame's action (F,) by the rules, before smoothing."""
    leg = sig["leg"]
    jump = _widened(lasting(sig["air"] > JUMP_AIR * leg, JUMP_FRAMES * fps), sig["air"] > JUMP_EXTENT * leg,
                    int(round(JUMP_MARGIN * fps)))
    low = sig["hips"] < LOW_HIPS * leg
    up = (sig["hind"] < STAND_HIND * leg) & ~low     # a sitting dog begging with its front paws up sits
    stand = _widened(lasting((sig["front"] > STAND_FRONT * leg) & up, STAND_FRAMES * fps),
                     (sig["front"] > STAND_EXTENT * leg) & up)
    lie = low & (sig["neck"] < LIE_NECK * leg)
    move = _hysteresis(sig["speed"], MOVE_SPEED * leg, IDLE_SPEED * leg)
    label = np.full(len(jump), IDLE, dtype=np.int8)
    for action, mask in ((MOVE, move), (SIT, low), (LIE, lie), (STAND, stand), (JUMP, jump)):   # later wins
        label[mask] = action
    return label


def smooth(label, fps):
    """``label`` (F,) without flicker: a majority over MAJORITY seconds, then every stretch shorter
    than MIN_SEGMENT seconds merged into the longer of its neighbours (shortest first)."""
    counts = np.stack([rolling((label == a).astype(np.float32), MAJORITY * fps, np.sum) for a in range(len(ACTIONS))])
    label = np.where(counts.max(axis=0) > counts[label, np.arange(len(label))], counts.argmax(axis=0), label)
    label = label.astype(np.int8)
    shortest = MIN_SEGMENT * fps
    while True:
        segments = segments_of(label)
        if len(segments) < 2:
            return label
        k = min(range(len(segments)), key=lambda i: segments[i][1] - segments[i][0])
        a, b, _ = segments[k]
        if b - a >= shortest:
            return label
        neighbours = [segments[i] for i in (k - 1, k + 1) if 0 <= i < len(segments)]
        label[a:b] = max(neighbours, key=lambda s: s[1] - s[0])[2]


def segments_of(label):
    """[(start, stop, action)] of the runs of one action in ``label``."""
    cuts = np.flatnonzero(np.diff(label)) + 1
    starts, stops = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(label)]])
    return [(int(a), int(b), int(label[a])) for a, b in zip(starts, stops)]


def labels(motion, bones=None):
    """The action of every frame of ``motion`` (F,) int8, an index into ACTIONS."""
    return smooth(classify(signals(motion, bones), motion.fps), motion.fps)


def thresholds():
    """The rules' constants by name, for the model card and labels.json."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, float)}
