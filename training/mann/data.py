"""MANN's per-frame input and output vectors, as the paper's reference exporter writes them.

The root frame, the bones and the twelve trajectory samples are defined once, for training and the
runtime, in :mod:`inference.mann.features`; this module lays them out as the network's vectors.

For frame ``t`` (the network steps from t to t + 1):

input x (480 for the dog) =
  for each trajectory sample s of t, in t's root frame: position (x, z), direction (x, z), velocity
  (x, z; units/s), desired speed (the root's path length over the following second, units/s), the six
  action values;
  for each of the 27 bones at t, in the root frame of t - 1: position, forward and up (the bone's world
  rotation applied to its local +Z and +Y; an End Site turns with its joint), velocity (units/s);
output y (363) =
  the trajectory of t + 1, its samples from t + 1 itself on (6..11), in t + 1's root frame: position,
  direction, velocity (x, z each);
  the 27 bones at t + 1 in t's root frame, as above;
  the root's motion from t to t + 1 in t's root frame: dx, dz (units/s), dtheta (radians/s about +Y,
  positive turning +Z towards +X).

So the bones a step reads are the ones the step before predicted, and the trajectory of t + 1 is what
the next step reads again (after the runtime's blend with the user's path). Trajectory samples before
a clip's first frame or after its last are its root's point reflection there (the reference's rule):
the root keeps its velocity through the clip's ends.

The arrays are kept deduplicated per frame (:class:`Frames`): x and y of a frame share the next
frame's pose and trajectory, so a batch is gathered from three per-frame arrays.
"""

from dataclasses import dataclass

import numpy as np
import torch

from inference.errors import DataError
from inference.mann import actions as labelling
from inference.mann.features import (BONE_DIM, BONE_FIELDS, CURRENT, OUT_SAMPLE_DIM, OUT_SAMPLE_FIELDS, ROOT_FIELDS,
                                     SAMPLE_DIM, SAMPLE_FIELDS, SAMPLES, SPEED_HORIZON, bones_of, leg_length, one_hot,
                                     pose, root, sample_frames, trajectory, turn, world)
from lab.dataset import Selection, clip_stem, motion_set
from ..clips import HOLD_OUT, clips

# The test split: never trained or validated on, absent from the model card's file list.
TEST_CLIPS = ("D1_008_KAN01_002", "D1_009_KAN01_002", "D1_010_KAN01_003", "D1_ex04_KAN02_003", "D1_058_KAN01_001")

# Stretches where every paw stays this high (leg lengths) for this long are on a box or a platform,
# not in a jump (jumps in the data are airborne at most 0.52 s, standing on something at least
# 0.85 s): the runtime walks on flat ground, so they (and MARGIN around them) are not learned from.
ELEVATED, ELEVATED_FOR, MARGIN = 0.2, 0.7, 0.25


def layout(bones, fps, units_per_metre):
    """The feature layout as plain values (the model file's ``betwixt.layout``)."""
    n, samples = len(bones), len(SAMPLES)
    out_samples = samples - CURRENT
    x_bones = samples * SAMPLE_DIM
    y_bones = out_samples * OUT_SAMPLE_DIM
    y_root = y_bones + n * BONE_DIM
    return {
        "fps": float(fps), "units_per_metre": float(units_per_metre), "up": "Y",
        "root": {"origin": "Hips projected to the floor (y = 0)",
                 "facing": "+Z: horizontal direction from Hips to Neck", "axes": "+Y up, +X = Y x Z"},
        "features": {
            "raw": "x and y are in the data's units; the graph z-scores inside (betwixt.normalisation)",
            "trajectory": "the root at each sample: position and facing direction in the reference root's frame, its "
                          "horizontal velocity (backward difference, units/s), the desired speed (the root's path "
                          "length over the next speed_horizon seconds, per second) and the action values (one-hots "
                          "averaged over a quarter of a second, summing to 1)",
            "bones": "position; forward and up: the bone's world rotation applied to its local +Z and +Y (an End Site "
                     "turns with its joint); velocity: world displacement from the previous frame times fps",
            "root": "the next frame's root in this frame's root frame: dx, dz times fps; dtheta, the turn about "
                    "+Y (positive turns +Z towards +X), times fps"},
        "samples": {"seconds": list(SAMPLES), "frames": sample_frames(fps).tolist(), "current": CURRENT,
                    "speed_horizon": SPEED_HORIZON},
        "actions": list(labelling.ACTIONS),
        "bones": list(bones.names), "joints": [int(j) for j in bones.joints], "paws": list(bones.paws),
        "input": {"size": x_bones + n * BONE_DIM,
                  "trajectory": {"start": 0, "count": samples, "stride": SAMPLE_DIM, "fields": SAMPLE_FIELDS,
                                 "frame": "this frame's root"},
                  "bones": {"start": x_bones, "count": n, "stride": BONE_DIM, "fields": BONE_FIELDS,
                            "frame": "the previous frame's root"}},
        "output": {"size": y_root + 3,
                   "trajectory": {"start": 0, "count": out_samples, "first_sample": CURRENT, "stride": OUT_SAMPLE_DIM,
                                  "fields": OUT_SAMPLE_FIELDS, "frame": "the next frame's root"},
                   "bones": {"start": y_bones, "count": n, "stride": BONE_DIM, "fields": BONE_FIELDS,
                             "frame": "this frame's root (the next frame's bones)"},
                   "root": {"start": y_root, "fields": ROOT_FIELDS,
                            "units": "dx, dz in units per second; dtheta in radians per second"}},
        "gating": gating_indices(bones),
    }


def gating_indices(bones):
    """What the gating network reads, as indices into x: the paws' velocities, then the current
    trajectory sample's desired speed and action values (the reference's 19 inputs)."""
    start = len(SAMPLES) * SAMPLE_DIM
    paws = [start + p * BONE_DIM + BONE_FIELDS["velocity"][0] + k for p in bones.paws for k in range(3)]
    first = CURRENT * SAMPLE_DIM + SAMPLE_FIELDS["speed"][0]
    return paws + list(range(first, CURRENT * SAMPLE_DIM + SAMPLE_FIELDS["actions"][1]))


@dataclass
class Frames:
    """Per-frame arrays of one part of the data, clips end to end, from which x and y are gathered.

    ``trajectory`` (F, 12, 13) in each frame's own root frame; ``pose`` (F, B, 12) each frame's bones in
    the previous frame's root frame; ``root`` (F, 3) the root's motion to the next frame; ``samples``
    (N,) the frames t that are learned from (t - 1 and t + 1 in the same clip, on flat ground);
    ``actions`` (F,) each frame's label.
    """

    trajectory: np.ndarray
    pose: np.ndarray
    root: np.ndarray
    samples: np.ndarray
    actions: np.ndarray

    def x(self, t):
        """Inputs (len(t), 480) of frames ``t`` (numpy or torch: the arrays' kind)."""
        return _cat([self.trajectory[t].reshape(len(t), -1), self.pose[t].reshape(len(t), -1)])

    def y(self, t):
        """Outputs (len(t), 363) of frames ``t``."""
        return _cat([self.trajectory[t + 1, CURRENT:, :OUT_SAMPLE_DIM].reshape(len(t), -1),
                     self.pose[t + 1].reshape(len(t), -1), self.root[t]])

    def to(self, device):
        """The same arrays as torch tensors on ``device``."""
        arrays = (self.trajectory, self.pose, self.root, self.samples.astype(np.int64), self.actions)
        return Frames(*(torch.as_tensor(a).to(device) for a in arrays))


def _cat(parts):
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts, axis=1)
    return torch.cat(parts, dim=1)


def features(motion, bones, label=None):
    """The :class:`Frames` of one motion (samples are indices into it), with its labels (F,), derived
    from the motion when not given."""
    fps, n = motion.fps, motion.n_frames
    pos, rot = world(motion, bones)
    ground, theta, velocity = root(pos, bones, fps)
    label = labelling.labels(motion, bones) if label is None else label
    samples = trajectory(ground, theta, velocity, one_hot(label, fps, len(labelling.ACTIONS)), fps)
    motion_of_root = np.zeros((n, 3))
    if n > 1:
        motion_of_root[:-1, :2] = turn(theta[:-1], np.diff(ground, axis=0)) * fps
        motion_of_root[:-1, 2] = np.diff(theta) * fps
    flat = on_flat_ground(pos[:, bones.paws, 1], fps, leg_length(motion.skeleton, bones))
    t = np.arange(1, n - 1)
    t = t[flat[t - 1] & flat[t] & flat[t + 1]]
    return Frames(samples.astype(np.float32), pose(pos, rot, ground, theta, fps).astype(np.float32),
                  motion_of_root.astype(np.float32), t, np.asarray(label, dtype=np.int8))


def on_flat_ground(paw_heights, fps, leg):
    """(F,) False where the dog stands on something (every paw above ELEVATED leg lengths for
    ELEVATED_FOR seconds or more), and MARGIN seconds either side."""
    up = labelling.lasting(paw_heights.min(axis=1) > ELEVATED * leg, ELEVATED_FOR * fps)
    margin = int(round(MARGIN * fps))
    out = np.ones(len(up), dtype=bool)
    for a, b in labelling.runs(up):
        out[max(a - margin, 0):b + margin] = False
    return out


def concatenated(parts):
    """One :class:`Frames` of several motions' (their samples shifted to index the whole)."""
    starts = np.cumsum([0] + [len(p.root) for p in parts[:-1]])
    joined = [np.concatenate([getattr(p, k) for p in parts]) for k in ("trajectory", "pose", "root")]
    return Frames(*joined, np.concatenate([p.samples + s for p, s in zip(parts, starts)]),
                  np.concatenate([p.actions for p in parts]))


@dataclass
class Part:
    """One part of the data (training or validation): its frames and where they came from."""

    frames: Frames
    files: list
    reflections: object
    layout: dict
    on_device: tuple = None   # (device, the frames as tensors there), for MANNFamily.batch


def without_test(data):
    """The data set ``data`` less the test split's clips, repacked as a data set."""
    keep = [i for i, name in enumerate(data.names) if clip_stem(name) not in TEST_CLIPS]
    if not keep:
        raise DataError(f"{data.source}: every clip is in MANN's test split")
    return motion_set([data.clip(i) for i in keep], source=data.source)


def parts(data, chosen=Selection(), mirrored=True, speeds=(1.0,), units_per_metre=100.0):
    """(training, validation) :class:`Part` of a cached data set, the test split left out: the first nine
    tenths of every other clip (and their mirror images and other speeds), and the last tenth of each
    with a second of context before it, of which only the held-out frames are learned from."""
    data = without_test(data)
    bones = bones_of(data.skeleton)
    lay = layout(bones, data.fps, units_per_metre)
    train = clips(data, "train", chosen, mirrored, speeds)
    context = int(round(data.fps))
    held = clips(data, "validation", chosen, mirrored=False, context=context)
    frames = concatenated([features(m, bones) for m in train.motions])
    validation = []
    for motion, name in zip(held.motions, held.files):
        n = motion.n_frames
        full = int(data.starts[data.names.index(name) + 1] - data.starts[data.names.index(name)])
        f = features(motion, bones)
        f.samples = f.samples[f.samples >= n - (full - int(round(full * (1 - HOLD_OUT))))]
        validation.append(f)
    return (Part(frames, train.files, train.reflections, lay),
            Part(concatenated(validation), held.files, None, lay))
