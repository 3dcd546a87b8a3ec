"""The three blends that put an RTN's frames onto the keys, and their lengths.

Training measures its loss after them (``--blends``) and the runtime applies them, so they are
written once, as plain arithmetic on arrays: numpy in the runtime, torch tensors in training. Each
is linear in the network's frames, ``frames + ramp * miss``; the ramps are numpy vectors, which the
caller hands over as arrays of the kind of its frames. Frames are raw features (B, T, 3 + 4J): the
trajectory position, then every joint's quaternion. Lengths were chosen on the held-out tenth of
the training subjects (docs/experiments.md).
"""

import numpy as np

BLEND = 10          # the target blend's length in frames
START_BLEND = 30    # the start blend's


def start_ramp(steps, length=START_BLEND):
    """(steps,) falling linearly from 1 on the first generated frame to 0 after ``length`` frames
    (none at all for a length of 0)."""
    if length < 1:
        return np.zeros(steps)
    return np.clip(1.0 - np.arange(steps) / int(length), 0.0, 1.0)


def target_ramp(steps, blend=None):
    """(steps,) rising linearly to 1 on the last frame over ``blend`` frames (default BLEND)."""
    blend = int(np.clip(BLEND if blend is None else blend, 1, steps))
    return np.clip((np.arange(1, steps + 1) - (steps - blend)) / blend, 0.0, 1.0)


def end_ramp(steps):
    """(steps,) rising linearly over the whole gap to 1 on its last frame, 0 on the key itself."""
    ramp = np.arange(1, steps + 1) / (steps - 1)
    ramp[-1] = 0.0
    return ramp


def start_blend(frames, past, ramp):
    """ỹ_t = ŷ_t + ω_t (2 x₀ − x₋₁ − ŷ₁): the first generated frame moved to where the last key's
    velocity carries it, the correction fading out along ``ramp`` (see start_ramp); ``past`` (B, P,
    3 + 4J), signs continuous. Without it a fill starts with a hitch on the key. Where the past is a
    single frame the key's velocity is unknown and nothing changes."""
    if past.shape[1] < 2:
        return frames
    miss = 2 * past[:, -1] - past[:, -2] - frames[:, 0]
    return frames + ramp[None, :, None] * miss[:, None]


def target_blend(frames, target, ramp):
    """ỹ_t = ŷ_t + ω_t (y_T − ŷ_T) (Harvey & Pal 2018, §5.1): the last frame's miss of the key
    (B, 3 + 4J) spread back along ``ramp`` (see target_ramp), so the last frame is the key."""
    error = signed_like(target, frames[:, -1]) - frames[:, -1]
    return frames + ramp[None, :, None] * error[:, None]


def end_blend(frames, target, after, ramp):
    """ỹ_t = ŷ_t + ω_t (2 y_T − y_{T+1} − ŷ_{T−1}): the start blend's mirror image, where the frame
    after the key (B, 3 + 4J) is known: the last in-between frame moved to where the key's velocity
    says the motion comes from, along ``ramp`` (see end_ramp). ``frames`` come after the target
    blend, their last the key."""
    last = frames[:, -1]
    miss = 2 * signed_like(target, last) - signed_like(after, last) - frames[:, -2]
    return frames + ramp[None, :, None] * miss[:, None]


def signed_like(features, reference):
    """Raw features (B, 3 + 4J) with each quaternion in the sign nearer ``reference``'s."""
    b = features.shape[0]
    q, r = features[:, 3:].reshape(b, -1, 4), reference[:, 3:].reshape(b, -1, 4)
    flipped = (q * r).sum(-1)[..., None] < 0
    signed = features * 1.0   # a copy, of the arrays' own kind
    signed[:, 3:] = (q - 2 * flipped * q).reshape(b, -1)
    return signed
