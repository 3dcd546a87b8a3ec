"""The Motion VAE runtime: continuations of a pose by a random walk in the latent space (Ling et al.
2020, §4.1), several at once.

From a pose of a motion (and the frame before it, which its velocities need), every frame of K
continuations is one onnxruntime call of batch K: each continuation's last pose and a z drawn from
N(0, I) give its next pose. The poses then go back to motions (:func:`.features.motion_of`): the root
integrated from where the start stood, each joint's rotation from its forward and up vectors, at the
model's frame rate.
"""

import base64
from dataclasses import replace

import numpy as np

from .. import quat
from ..modelfile import Model, ModelError, session
from .features import hips_pair, motion_of, poses

MAX_K = 256             # continuations of one request
MAX_FRAMES = 36_000     # frames of one continuation: 20 minutes at 30 fps
MAX_TOTAL = 1_000_000   # generated frames of one request (poses of 267 values: 2 GiB in float64)


class MVAEModel(Model):
    """A Motion VAE model file, checked and ready (opened by :func:`..modelfile.open_model`)."""

    TITLE = "Continuations (Motion VAE)"
    SERVES = ("continue",)

    def __init__(self, file, session):
        super().__init__(file, session)
        try:
            self.layout = file.json("betwixt.layout")
            self.latent = int(file.metadata["betwixt.latent"])
            self.fps = float(file.fps)
            self.pair = tuple(self.skeleton.index(name) for name in self.layout["facing"])
            size = int(self.layout["size"])
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{file.path}: incomplete model metadata ({e}); export it again") from None
        if len(file.normalisation.get("pose_mean", ())) != size or hips_pair(self.skeleton) != self.pair:
            raise ModelError(f"{file.path}: normalisation or facing does not match the pose layout; export it again")
        self._encoder = None

    def walk(self, motion, frame, frames, k=1, seed=None):
        """K random walks of ``frames`` frames from ``frame`` of ``motion`` (a frame number of the motion as
        given; it and the frame before it are the start): K motions at the model's frame rate, each the motion
        up to ``frame`` then the generated frames. ``seed``: a numpy Generator's seed (None: fresh)."""
        motion, frame = self._start(motion, frame, frames, k)
        start, origin, theta = poses(motion.frames(frame - 1, frame + 1), self.pair)
        rng = np.random.default_rng(seed)
        pose = np.repeat(start.astype(np.float32), k, axis=0)
        walked = np.empty((k, frames, start.shape[1]), dtype=np.float32)
        for t in range(frames):
            z = rng.standard_normal((k, self.latent), dtype=np.float32)
            pose = self.session.run(["pose"], {"previous": pose, "z": z})[0]
            walked[:, t] = pose
        return [self._joined(motion, frame, walked[i].astype(np.float64), origin[1], theta[1], i) for i in range(k)]

    def encode(self, previous, pose):
        """The posterior's mean and log variance (B, latent) each of raw poses ``previous`` and ``pose``
        (B, D) each: the encoder, which the file carries in its metadata, run on demand."""
        if self._encoder is None:
            graph = base64.b64decode(self.metadata["betwixt.encoder"])
            self._encoder = session(graph)
        return self._encoder.run(None, {"previous": np.asarray(previous, np.float32),
                                        "pose": np.asarray(pose, np.float32)})

    def _start(self, motion, frame, frames, k):
        """The motion at the model's frame rate and the start frame in it, once the request is checked."""
        self.check_skeleton(motion.skeleton)
        n = motion.n_frames
        if not 1 <= frame < n:
            raise ModelError(f"{motion.name or 'the motion'}: start frame {frame} is outside frames 1 to {n - 1} (a "
                             "continuation starts from a frame and the one before it); choose a frame in that range")
        for name, value, most in (("frames", frames, MAX_FRAMES), ("continuations (k)", k, MAX_K)):
            if not 1 <= value <= most:
                raise ModelError(f"{value} {name}: give 1 to {most:,}")
        if frames * k > MAX_TOTAL:
            raise ModelError(f"{k} continuations of {frames:,} frames are {frames * k:,} frames, more than "
                             f"{MAX_TOTAL:,} in one request; ask for fewer or shorter ones")
        for label, values in (("rotation", motion.rotations), ("position", motion.positions)):
            bad = np.argwhere(~np.isfinite(values[frame - 1:frame + 1]))
            if len(bad):
                f, j = bad[0][:2]
                raise ModelError(f"{motion.name or 'the motion'}: frame {frame - 1 + f}, joint "
                                 f"{motion.skeleton.names[j]!r}: its {label} is not a number (NaN or infinite); fix "
                                 "the start pose")
        if motion.fps != self.fps:
            at = int(round(frame * self.fps / motion.fps))
            motion = motion.resample(self.fps)
            frame = min(max(at, 1), motion.n_frames - 1)
        return motion, frame

    def _joined(self, motion, frame, walked, origin, theta, i):
        """``motion`` up to ``frame`` and then the poses ``walked`` (N, D) generated from there."""
        generated = motion_of(walked, origin, theta, motion.skeleton, self.fps)
        positions = np.repeat(motion.positions[frame:frame + 1], len(walked), axis=0)
        positions[:, 0] = generated.positions[:, 0]          # the rest keep the start's local translations
        rotations = np.concatenate([motion.rotations[:frame + 1], generated.rotations])
        return replace(motion, rotations=quat.unroll(rotations), positions=np.concatenate(
            [motion.positions[:frame + 1], positions]), name=f"{motion.name} walk {i + 1} by {self.name}")
