"""The Motion VAE's training data: every clip's poses (:mod:`inference.mvae.features`) end to end, and
the roll-outs a batch is cut from.

A roll-out is ``rollout + 1`` consecutive poses of one clip: the first is the condition of the first
step, the others the steps' targets. Training cuts them from the first nine tenths of every clip of
the training subjects and their mirror images; validation from the held-out last tenth (with the one
frame before it, which its first pose needs).
"""

from dataclasses import dataclass

import numpy as np

from inference.errors import DataError
from inference.mvae.features import hips_pair, layout, poses
from ..clips import clips


@dataclass
class Part:
    """The poses of one part of the data, clips end to end (N, D) float32, the first frame of every
    roll-out that lies within one clip (M,), and where they came from."""

    poses: np.ndarray
    starts: np.ndarray
    files: list
    reflections: object
    layout: dict
    on_device: tuple = None   # (device, poses as a tensor there), for MVAEFamily.batch


def concatenated(motions, steps, pair):
    """``(poses, starts)`` of ``motions``: their poses end to end, and where a roll-out of ``steps`` can
    start without leaving its clip."""
    chunks, starts, at = [], [], 0
    for motion in motions:
        pose = poses(motion, pair)[0].astype(np.float32)
        chunks.append(pose)
        starts.append(at + np.arange(max(len(pose) - steps, 0)))
        at += len(pose)
    starts = np.concatenate(starts)
    if not len(starts):
        raise DataError(f"no clip is longer than a roll-out of {steps + 1} frames")
    return np.concatenate(chunks), starts


def parts(data, chosen, mirrored, speeds, steps):
    """(training, validation) :class:`Part` of a cached data set, roll-outs of ``steps`` steps."""
    pair = hips_pair(data.skeleton)
    lay = layout(data.skeleton, data.fps)
    train = clips(data, "train", chosen, mirrored, speeds)
    held = clips(data, "validation", chosen, mirrored=False, context=1)
    return (Part(*concatenated(train.motions, steps, pair), train.files, train.reflections, lay),
            Part(*concatenated(held.motions, steps, pair), held.files, None, lay))
