"""Whether a motion stands on the floor, as an animator sees it (issue 43): measures for the benches.

Foot skating (:mod:`.metrics`) weighs only feet near their ground, so a motion whose feet hover a
few centimetres up, or slide while they touch, can score as well as the capture. These see it, per
leg (a person's ankle and toe joints together, metrics.md's four foot joints; a quadruped's paw, the
End Site under its foot), from world joint positions in the data's units, Y up:

- contact: the share of frames in which a leg touches the floor (a joint of it within NEAR of the
  body's size above its ground) and is nearly still (it moves less than STILL sizes a second
  horizontally); touch: the share in which it touches at all;
- floating: the share of frames, of those in which the body is upright (the hips more than UPRIGHT of
  its size above the floor), in which every foot joint is more than FLOAT of its size above its
  ground (5 cm for a person of 157 cm, 2.7 cm for the dog);
- slide: the mean horizontal speed (units a frame) of a foot joint while it touches, however fast it
  goes (a measure over the contact frames alone could not exceed STILL);
- the longest time (s) a leg stays off the floor without touching (over all the motions pooled, and
  the mean of each motion's longest);
- the hips' (root joint's) height range, and jitter: the mean change of the hips' velocity from frame
  to frame (the norm of their second difference, units a frame per frame);
- keys: the largest acceleration of any joint (units a frame per frame) within KEY_SPAN frames of
  each key, where a fill meets its keys.

Every foot joint's ground is its resting height, the GROUND percentile of its height over the capture
it is compared with (metrics.md's), given to the capture and the model alike; so is the body's size
(:func:`body_size`: a person's height, twice a quadruped's leg). The capture's own values, flat walking
and the benches' references, are in docs/experiments.md ("The floor"). Measured by the benches only;
numpy alone.
"""

from dataclasses import dataclass

import numpy as np

from inference import quat
from inference.anatomy import is_quadruped, legs
from inference.contacts import LOW, SLOW
from inference.motion import height

# fractions of the body's size (:func:`body_size`); NEAR and STILL: where the planting enters a person's contact
NEAR = LOW       # above a foot joint's ground: it touches the floor (4 cm for a person, 2.2 cm for the dog)
STILL = SLOW     # a second, horizontally: a touching leg slower than this is in contact
FLOAT = 0.03     # every foot joint higher than this over its ground: the body floats (5 cm, 2.7 cm)
UPRIGHT = 0.35   # hips higher than this above the lowest ground: the body stands (or would)
KEY_SPAN = 3     # frames either side of a key
GROUND = 2.0     # percentile of a foot joint's height in the capture: its ground


@dataclass(frozen=True)
class Feet:
    """The foot points of a skeleton: K joints (or the End Sites below them), grouped into legs."""

    names: tuple         # (L,) a leg's foot joint's name
    joints: np.ndarray   # (K,) joint indices
    sites: np.ndarray    # (K, 3) offset of the point below its joint (zero for a joint itself)
    legs: tuple          # (L,) tuples of indices into the K points


def feet_of(skeleton):
    """The :class:`Feet` of ``skeleton``: each leg's foot and toe joints (``anatomy.legs``), or its paw."""
    joints, sites, groups = [], [], []
    for leg in legs(skeleton):
        here = [leg.foot] + ([leg.toe] if leg.toe >= 0 else [])
        groups.append(tuple(range(len(joints), len(joints) + len(here))))
        joints += here
        sites += [leg.paw if leg.paw else (0.0, 0.0, 0.0)] + [(0.0, 0.0, 0.0)] * (len(here) - 1)
    names = tuple(skeleton.names[leg.foot] for leg in legs(skeleton))
    return Feet(names, np.array(joints, dtype=int), np.array(sites, dtype=np.float64).reshape(-1, 3), tuple(groups))


def foot_points(feet, grot, gpos):
    """(..., K, 3) the foot points from global rotations (..., J, 4) and positions (..., J, 3)."""
    return gpos[..., feet.joints, :] + quat.rotate(grot[..., feet.joints, :], feet.sites)


def ground_of(points):
    """(K,) each foot point's ground: the GROUND percentile of its height over all frames of ``points``
    (..., K, 3)."""
    return np.percentile(points[..., 1].reshape(-1, points.shape[-2]), GROUND, axis=0)


def body_size(skeleton, world):
    """The length (units) the thresholds are fractions of: a person's standing height in world positions
    (..., F, J, 3) (:func:`inference.motion.height`); a quadruped's twice its longest leg, shoulder or hip to paw,
    since a person's legs are about half their height (``contacts.py`` scales a paw's thresholds so) and
    a dog's height, its head up, says little of its legs."""
    if not is_quadruped(skeleton):
        return height(world.reshape(-1, *world.shape[-2:]))
    off = skeleton.offsets
    return 2 * max(np.linalg.norm(leg.paw) + np.linalg.norm(off[leg.foot]) + np.linalg.norm(off[leg.knee])
                   for leg in legs(skeleton) if leg.paw)


def speed_band(hips, fps, low, high, span=0.5):
    """(F,) bool: the frames where the hips (F, 3) travel on the ground at ``low`` to ``high`` units a
    second, over ``span`` seconds about each frame (a gait's sway cancels): the capture at a gait."""
    half = max(int(round(0.5 * span * fps)), 1)
    ground = hips[:, [0, 2]]
    ahead = np.pad(ground, ((0, half), (0, 0)), mode="edge")[half:]
    behind = np.pad(ground, ((half, 0), (0, 0)), mode="edge")[:len(ground)]
    speed = np.linalg.norm(ahead - behind, axis=-1) * fps / (2 * half)
    return (speed >= low) & (speed < high)


def row(world, points, feet, ground, size, fps, frames=None, upright=None, keys=()):
    """What one motion contributes (sums, pooled by :func:`pooled`): world joint positions (F, J, 3), its
    foot points (F, K, 3) of ``feet``, their ``ground`` (K,), the body's ``size`` (:func:`body_size`).
    ``frames`` (F,) bool: the frames measured (None: all); ``upright`` (F,) bool: where the body stands
    or would (None: where its own hips are high enough); ``keys``: frame indices whose neighbourhood's
    largest acceleration is found (over all F frames). None where no frame is measured."""
    frames = np.ones(len(world), dtype=bool) if frames is None else frames
    if not frames.any():
        return None
    hips = world[:, 0]
    if upright is None:
        upright = hips[:, 1] - ground.min() > UPRIGHT * size
    up = points[..., 1] - ground                                            # (F, K)
    step = frames[1:] & frames[:-1]                                         # (F - 1,) counted steps
    near = 0.5 * (up[1:] + up[:-1]) < NEAR * size                           # (F - 1, K)
    moved = np.linalg.norm(np.diff(points[..., [0, 2]], axis=0), axis=-1)   # (F - 1, K)
    still = near & (moved < STILL * size / fps)
    touch = np.stack([near[:, list(g)].any(axis=1) for g in feet.legs], axis=1)   # (F - 1, L)
    contact = np.stack([still[:, list(g)].any(axis=1) for g in feet.legs], axis=1)
    slid = near & step[:, None]
    counted = upright & frames
    accel = np.linalg.norm(np.diff(world, 2, axis=0), axis=-1).max(axis=1)  # (F - 2,) at frames 1..F-2
    steady = frames[2:] & frames[1:-1] & frames[:-2]
    jolt = np.linalg.norm(np.diff(hips, 2, axis=0), axis=-1)[steady]
    return {"legs": list(feet.names), "frames": int(frames.sum()), "steps": int(step.sum()),
            "touch": touch[step].sum(axis=0), "contact": contact[step].sum(axis=0),
            "slide_sum": np.array([moved[:, list(g)][slid[:, list(g)]].sum() for g in feet.legs]),
            "slide_n": np.array([slid[:, list(g)].sum() for g in feet.legs]),
            "longest": np.array([_longest(~touch[:, k] & step) for k in range(len(feet.legs))]) / fps,
            "upright": int(counted.sum()), "floating": int((counted & (up.min(axis=1) > FLOAT * size)).sum()),
            "hips_min": float(hips[frames, 1].min()), "hips_max": float(hips[frames, 1].max()),
            "jitter_sum": float(jolt.sum()), "jitter_n": len(jolt),
            "keys": [float(accel[max(k - KEY_SPAN - 1, 0):max(k + KEY_SPAN, 0)].max(initial=0.0)) for k in keys]}


def _longest(flags):
    """The longest run of True in ``flags`` (N,) bool."""
    edges = np.diff(np.concatenate([[0], flags.astype(int), [0]]))
    return int((np.flatnonzero(edges < 0) - np.flatnonzero(edges > 0)).max(initial=0))


def pooled(rows):
    """The measures over several motions' :func:`row` s, every frame counting once: per leg (lists in the
    order of ``legs``) and over the legs; None where there is no row, and the slide None where no foot
    touches."""
    rows = [r for r in rows if r is not None and r["steps"]]
    if not rows:
        return None
    steps = sum(r["steps"] for r in rows)
    contact = sum(r["contact"] for r in rows) / steps
    touch = sum(r["touch"] for r in rows) / steps
    slid, touched = sum(r["slide_sum"] for r in rows), sum(r["slide_n"] for r in rows)
    longest = np.max([r["longest"] for r in rows], axis=0)
    upright = sum(r["upright"] for r in rows)
    keys = [k for r in rows for k in r["keys"]]
    jitter_n = sum(r["jitter_n"] for r in rows)
    return {"legs": rows[0]["legs"], "frames": sum(r["frames"] for r in rows), "contact": float(contact.mean()),
            "contact_legs": contact.tolist(), "touch": float(touch.mean()),
            "slide": float(slid.sum() / touched.sum()) if touched.sum() else None,
            "slide_legs": [float(a / b) if b else None for a, b in zip(slid, touched)], "longest_off": float(longest.max()), "longest_off_legs": longest.tolist(),
            "longest_off_mean": float(np.mean([r["longest"].max() for r in rows])),
            "upright": upright / sum(r["frames"] for r in rows),
            "floating": sum(r["floating"] for r in rows) / upright if upright else 0.0,
            "hips_min": min(r["hips_min"] for r in rows), "hips_max": max(r["hips_max"] for r in rows),
            "jitter": sum(r["jitter_sum"] for r in rows) / jitter_n if jitter_n else float("nan"),
            "key_accel": float(np.mean(keys)) if keys else None, "key_accel_max": max(keys) if keys else None}


def measure(motion, feet, ground, size, frames=None, upright=None, keys=()):
    """:func:`row` of a :class:`~.motion.Motion`."""
    grot, gpos = motion.global_transforms()
    return row(gpos, foot_points(feet, grot, gpos), feet, ground, size, motion.fps, frames, upright, keys)


HEADER = ("contact (per leg)", "floating", "slide", "longest off (mean)", "hips", "jitter", "keys")


def columns(m):
    """The pooled measures ``m`` as the benches print them (the data's units: cm), one string per HEADER
    entry."""
    if m is None:
        return ["-"] * len(HEADER)
    keys = "-" if m["key_accel"] is None else f"{m['key_accel']:.2f} (max {m['key_accel_max']:.1f})"
    return [f"{m['contact']:.2f} ({' '.join(f'{c:.2f}' for c in m['contact_legs'])})", f"{m['floating']:.1%}",
            "-" if m["slide"] is None else f"{m['slide']:.2f} cm/f", f"{m['longest_off']:.2f} ({m['longest_off_mean']:.2f}) s",
            f"{m['hips_min']:.0f}-{m['hips_max']:.0f}", f"{m['jitter']:.3f}", keys]


def table(named, indent="  "):
    """Lines: a header, then one row per ``(name, pooled measures)`` of ``named``, aligned; without the
    keys' column where no motion has keys."""
    keyed = any(m and m["key_accel"] is not None for _, m in named)
    shown = len(HEADER) if keyed else len(HEADER) - 1
    cells = [("",) + HEADER[:shown]] + [(name,) + tuple(columns(m)[:shown]) for name, m in named]
    widths = [max(len(c[i]) for c in cells) for i in range(shown + 1)]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
