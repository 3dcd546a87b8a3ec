"""Decompress on the floor (issue 43): held-out clips rebuilt from a key every ``every`` frames, every frame
between generated and planted as ``python -m inference superres`` and Blender's Decompress give them, measured
by :mod:`.floor_metrics` beside the capture's same frames.

Beside the floor table's measures, *aloft*: the share of the frames where the capture stands (its hips
upright) in which the lowest foot joint is more than FLOAT of the body's size (5 cm for a person) higher
than the capture's lowest at the same frame: a hop, or a walk on air, that the keys did not ask for. Unlike
floating it reads the capture's own boxes as the ground they are, so a fill standing on a box is not aloft and
one walking a box's height above the floor between boxes is.
"""

from inference.contacts import plant
from inference.edit import superres
from inference.inbetween import sparse_keys
from . import floor_metrics


def aloft(points, capture_points, upright, size):
    """``(aloft, upright)``: of the frames ``upright`` (F,) bool, how many have the lowest of the foot points
    (F, K, 3) more than FLOAT of ``size`` above the lowest of ``capture_points`` (F, K, 3)."""
    above = points[..., 1].min(axis=1) - capture_points[..., 1].min(axis=1) > floor_metrics.FLOAT * size
    return int((above & upright).sum()), int(upright.sum())


def measure(model, clips, every):
    """``{"capture", "raw", "planted"}``: pooled :func:`.floor_metrics.row` s, and ``aloft`` (:func:`aloft`)
    for the fills, over ``clips`` (Motions of ``model``'s skeleton) Decompressed from a key every ``every``
    frames; each clip's grounds, size and upright frames the capture's, its keys' neighbourhoods measured."""
    rows = {"capture": [], "raw": [], "planted": []}
    counts = {"raw": [0, 0], "planted": [0, 0]}
    for clip in clips:
        keys = sparse_keys(clip.n_frames, every)
        raw = superres(model, clip, every)
        planted = plant(raw, list(zip(keys[:-1], keys[1:])), model.layout.height, model.floored)
        feet = floor_metrics.feet_of(clip.skeleton)
        grot, world = clip.global_transforms()
        capture_points = floor_metrics.foot_points(feet, grot, world)
        ground = floor_metrics.ground_of(capture_points)
        size = floor_metrics.body_size(clip.skeleton, world)
        upright = world[:, 0, 1] - ground.min() > floor_metrics.UPRIGHT * size
        for name, motion in (("capture", clip), ("raw", raw), ("planted", planted)):
            g, w = motion.global_transforms()
            points = floor_metrics.foot_points(feet, g, w)
            rows[name].append(floor_metrics.row(w, points, feet, ground, size, clip.fps, None, upright, keys))
            if name in counts:
                counts[name] = [a + b for a, b in zip(counts[name], aloft(points, capture_points, upright, size))]
    out = {name: floor_metrics.pooled(r) for name, r in rows.items()}
    for name, (high, stands) in counts.items():
        out[name]["aloft"] = high / stands if stands else 0.0
    out["capture"]["aloft"] = 0.0
    return out


def table(results):
    """Lines: the floor table of :func:`measure`'s results, with the aloft share."""
    named = [(name, results[name]) for name in ("capture", "raw", "planted")]
    lines = floor_metrics.table(named)
    width = max(len(line) for line in lines)
    return "\n".join([lines[0].ljust(width) + "  aloft"] + [line.ljust(width) + f"  {results[name]['aloft']:.1%}"
                                                           for line, (name, _) in zip(lines[1:], named)])
