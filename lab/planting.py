"""A benchmark's fills planted as the user gets them: each gap's feet planted in its clip, with the model's
past on either side as the add-on's context (bench-mann, bench-mvae)."""

from dataclasses import replace

from inference.contacts import plant


def plant_windows(clip, starts, rotations, positions, past, height, floored=False):
    """The local rotations of filled windows (B, n + 2, J, 4) (translations (B, n + 2, J, 3)) of ``clip``, the
    keys at ``starts`` (B,) and n + 1 frames after each at either end, after each gap's feet are planted in
    the clip with ``past`` of its frames on either side: a benchmark's gaps planted as the add-on plants a
    fill, whose context on either side is the model's past (``addon/transitions.margins``); ``floored``: the
    model keeps a floor of its own (:func:`inference.contacts.plant`)."""
    out = rotations.copy()
    n = rotations.shape[1] - 2
    for b, s in enumerate(starts):
        window = slice(s + 1 - past, s + n + 2 + past)
        r, p = clip.rotations[window].copy(), clip.positions[window].copy()
        r[past - 1:past + n + 1], p[past - 1:past + n + 1] = rotations[b], positions[b]
        planted = plant(replace(clip, rotations=r, positions=p), [(past - 1, past + n)], height, floored)
        out[b] = planted.rotations[past - 1:past + n + 1]
    return out
