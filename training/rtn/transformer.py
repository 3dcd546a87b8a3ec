"""A transformer over the whole transition, the RTN's alternative (``--network transformer``).

Every frame of the window is a token: the past frames as they are, each missing frame as the straight
line from the last past frame to the key, and the key itself with the target's whole vector (its
velocities, the frame after it). An encoder of a few layers reads them all at once and corrects the
line where motion departs from it (in the manner of SILK, Akhoundi et al. 2024, and the Two-stage
Transformer's first stage, Qin et al. 2022). Where the RTN walks to the key one LSTM step a frame, this
is one pass of a few large products over every frame of every gap: fewer, larger operations for
onnxruntime, and on a GPU a training step with no loop over frames.

It keeps the RTN's interface: :meth:`TransitionTransformer.forward` is called as ``RTN.forward`` is (it
has no teacher forcing: no frame depends on a predicted one), and its ONNX graph has the RTN rollout's
inputs and output, so the family trains, validates and exports it, and the runtime runs it, as the RTN.
Variation noise enters every missing frame's token through its own projection, faded out near the
target as the RTN fades it (so that every variant still lands on the key).
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from ..onnx_tools import traced
from .network import nearer, pose_units, sinusoid


@dataclass
class TransformerConfig:
    pose_dim: int = 91      # frame vector, as RTNConfig's
    target_dim: int = 158   # target vector: the key's frame features first
    offset_dim: int = 91    # leading features shared by frame and target (what the line joins)
    rotations: int = 0      # quaternions right after the first 3 pose features (0: none)
    past: int = 10          # past frames of context
    width: int = 256        # every token's size
    layers: int = 6         # encoder layers
    heads: int = 8          # attention heads per layer
    feedforward: int = 1024  # hidden size of each layer's feed-forward part
    noise_dim: int = 64     # the variation noise's size
    tta_max: int = 120      # frames to the target are clamped here before they are embedded
    noise_near: int = 5     # noise is off within this many frames of the target ...
    noise_far: int = 30     # ... and at full strength from this many frames away
    network: str = "transformer"

    def __post_init__(self):
        if not 0 < self.offset_dim <= min(self.pose_dim, self.target_dim):
            raise ValueError("offset_dim must be in 1..min(pose_dim, target_dim)")
        if self.width % (2 * self.heads):
            raise ValueError("width must be a multiple of twice the heads")
        if not 0 <= self.noise_near < self.noise_far <= self.tta_max:
            raise ValueError("need 0 <= noise_near < noise_far <= tta_max")


class Layer(nn.Module):
    """One pre-norm encoder layer, its attention written out (softmax of scaled products) so that the
    ONNX exporter sees plain products whatever the window's length."""

    def __init__(self, width, heads, feedforward):
        super().__init__()
        self.heads, self.width = heads, width
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.ff = nn.Sequential(nn.Linear(width, feedforward), nn.GELU(), nn.Linear(feedforward, width))

    def forward(self, x):
        b, width, part = x.shape[0], self.width, self.width // self.heads
        q, k, v = self.qkv(self.norm1(x)).reshape(b, -1, 3, self.heads, part).permute(2, 0, 3, 1, 4).unbind(0)
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(part), dim=-1)
        x = x + self.out((weights @ v).transpose(1, 2).reshape(b, -1, width))
        return x + self.ff(self.norm2(x))


class TransitionTransformer(nn.Module):

    def __init__(self, config: TransformerConfig, frame_mean=None, frame_std=None):
        """``frame_mean`` and ``frame_std``: as the RTN's, for the line's quaternion signs."""
        super().__init__()
        cf = self.config = config
        if cf.rotations:
            pose_units(self, cf, frame_mean, frame_std)
        w = cf.width
        self.frame_in = nn.Linear(cf.pose_dim, w)
        self.target_in = nn.Linear(cf.target_dim, w)
        self.noise_in = nn.Linear(cf.noise_dim, w)
        self.kinds = nn.Parameter(torch.zeros(3, w))   # past, missing, key
        self.encoder = nn.ModuleList(Layer(w, cf.heads, cf.feedforward) for _ in range(cf.layers))
        self.norm = nn.LayerNorm(w)
        self.frame_out = nn.Linear(w, cf.pose_dim)
        nn.init.zeros_(self.frame_out.weight)   # the untrained network is the straight line
        nn.init.zeros_(self.frame_out.bias)
        # each token's place: half the width for its frames to the target, half for its frames since the
        # window's first, as tables indexed by the (clamped) count
        t = torch.arange(cf.tta_max + cf.past + 1, dtype=torch.float32)
        self.register_buffer("places", sinusoid(t, w // 2), persistent=False)
        fade = ((t - cf.noise_near) / (cf.noise_far - cf.noise_near)).clamp(0, 1)
        self.register_buffer("fade", fade.unsqueeze(-1), persistent=False)

    def transition(self, past, target, gap, noise):
        """Frames (B, gap + 1, pose_dim) (the missing frames, then the key) for past (B, P, pose_dim),
        target (B, target_dim), gap () int64 and noise (B, noise_dim), scaled."""
        cf = self.config
        last, goal = past[:, -1:], target[:, None, :cf.offset_dim]
        pose = last[..., :cf.offset_dim]
        along = torch.arange(1, gap + 2, device=past.device)                         # 1 .. gap + 1
        share = (along.to(past.dtype) / (gap + 1).to(past.dtype))[None, :, None]
        line = pose + share * (nearer(self, goal, pose) - pose)
        if cf.offset_dim < cf.pose_dim:
            line = torch.cat([line, last[..., cf.offset_dim:].expand(-1, line.shape[1], -1)], dim=-1)
        # frames to the target and frames since the window's first, every token
        to_key = torch.cat([gap + cf.past - torch.arange(cf.past, device=past.device), gap + 1 - along])
        since = torch.arange(cf.past, device=past.device)
        since = torch.cat([since, since[-1] + along])
        places = torch.cat([self.places[to_key.clamp(0, cf.tta_max + cf.past)],
                            self.places[since.clamp(0, cf.tta_max + cf.past)]], dim=-1)
        tokens = self.frame_in(torch.cat([past, line], dim=1)) + places
        kinds = self.kinds[torch.cat([torch.zeros_like(since[:cf.past]), torch.ones_like(along[:-1]),
                                      torch.full_like(along[-1:], 2)])]
        noisy = self.fade[(gap + 1 - along).clamp(0, cf.tta_max)] * self.noise_in(noise)[:, None]
        keyed = torch.cat([noisy[:, :-1], self.target_in(target)[:, None]], dim=1)
        x = tokens + kinds + torch.cat([torch.zeros_like(tokens[:, :cf.past]), keyed], dim=1)
        for layer in self.encoder:
            x = layer(x)
        return line + self.frame_out(self.norm(x[:, cf.past:]))

    def forward(self, past, target, n, truth=None, z=None, variation=0.0, teacher_forcing=None):
        """Predictions (B, n + 1, pose_dim), called as ``RTN.forward`` (``truth`` and
        ``teacher_forcing`` are read by the RTN alone)."""
        if variation and z is None:
            z = torch.randn(past.shape[0], self.config.noise_dim, device=past.device)
        noise = past.new_zeros(past.shape[0], self.config.noise_dim) if not variation else variation * z
        return self.transition(past, target, torch.tensor(n, device=past.device), noise)

    def num_params(self):
        return sum(p.numel() for p in self.parameters())


class _Rollout(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, past, target, gap, noise):
        return self.model.transition(past, target, gap, noise)


def rollout(model):
    """The ModelProto of the transition, with the RTN rollout's inputs and output:
    past (B, P, pose_dim), target (B, target_dim), gap () int64, noise (B, noise_dim)
    -> frames (B, gap + 1, pose_dim)."""
    cf = model.config
    device = next(model.parameters()).device
    args = [torch.randn(1, cf.past, cf.pose_dim, device=device), torch.randn(1, cf.target_dim, device=device),
            torch.tensor(30, device=device), torch.zeros(1, cf.noise_dim, device=device)]
    was_training = model.training
    model.eval()
    try:
        return traced(_Rollout(model), args, ["past", "target", "gap", "noise"], ["frames"],
                      axes={"gap": {}, "frames": {0: "batch", 1: "frames"}})
    finally:
        model.train(was_training)
