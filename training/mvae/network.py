"""The Motion VAE (Ling, Zinno, Cheng, van de Panne 2020): an autoregressive conditional VAE whose
decoder maps the previous pose and a latent z to the next pose.

Encoder: (previous pose, pose) -> two hidden layers of 256 (ELU) -> the mean and log variance of a
32-D latent. Decoder: a mixture of 6 experts (three layers: 256, 256, the pose; ELU between) whose
outputs a gating network (two hidden layers of 64, ELU, softmax, on z and the previous pose) blends;
z is concatenated to the input of every expert layer, so that the decoder cannot drop it after the
first layer (the paper's measure against posterior collapse). A layer's blend of the experts' outputs
is the blend of their weights applied (the layer is linear in them), as in MANN (:class:`..mann.network.Experts`).

The module takes and gives raw poses (:mod:`inference.mvae.features`): it holds their normalisation and
z-scores inside, so the ONNX graphs need nothing around them. ``z`` is in the prior's units, N(0, I).
"""

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from ..mann.network import Experts
from ..onnx_tools import traced

DECODER_INPUTS, DECODER_OUTPUTS = ["previous", "z"], ["pose", "experts"]
ENCODER_INPUTS, ENCODER_OUTPUTS = ["previous", "pose"], ["mean", "logvar"]


@dataclass
class MVAEConfig:
    pose: int = 267
    latent: int = 32
    experts: int = 6
    hidden: int = 256
    gating_hidden: int = 64


class MVAE(nn.Module):
    def __init__(self, config, pose_mean, pose_std):
        super().__init__()
        self.config = config
        for name, value in (("pose_mean", pose_mean), ("pose_std", pose_std)):
            self.register_buffer(name, torch.as_tensor(np.asarray(value), dtype=torch.float32))
        d, z, h, g, k = config.pose, config.latent, config.hidden, config.gating_hidden, config.experts
        self.encoder = nn.Sequential(nn.Linear(2 * d, h), nn.ELU(), nn.Linear(h, h), nn.ELU(), nn.Linear(h, 2 * z))
        self.gating = nn.Sequential(nn.Linear(z + d, g), nn.ELU(), nn.Linear(g, g), nn.ELU(), nn.Linear(g, k),
                                    nn.Softmax(dim=-1))
        self.layers = nn.ModuleList([Experts(k, z + d, h), Experts(k, z + h, h), Experts(k, z + h, d)])

    def normalised(self, pose):
        return (pose - self.pose_mean) / self.pose_std

    def encode(self, previous, pose):
        """z-scored poses (B, D) each -> the posterior's mean and log variance (B, latent) each."""
        return self.encoder(torch.cat([previous, pose], dim=-1)).chunk(2, dim=-1)

    def decode(self, previous, z):
        """The next pose (B, D), z-scored, and the experts' blending weights (B, K), from the z-scored
        previous pose (B, D) and z (B, latent)."""
        alpha = self.gating(torch.cat([z, previous], dim=-1))
        h = previous
        for i, layer in enumerate(self.layers):
            h = layer(torch.cat([z, h], dim=-1), alpha)
            if i < len(self.layers) - 1:
                h = nn.functional.elu(h)
        return h, alpha

    def forward(self, previous, pose):
        """Training's step on z-scored poses: (prediction, mean, logvar), z drawn from the posterior."""
        mean, logvar = self.encode(previous, pose)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * logvar)
        return self.decode(previous, z)[0], mean, logvar


class DecoderStep(nn.Module):
    """The model file's graph: raw previous pose and z in, raw next pose and the experts' weights out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, previous, z):
        pose, alpha = self.model.decode(self.model.normalised(previous), z)
        return pose * self.model.pose_std + self.model.pose_mean, alpha


class EncoderStep(nn.Module):
    """The encoder's graph: raw previous pose and pose in, the posterior's mean and log variance out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, previous, pose):
        return self.model.encode(self.model.normalised(previous), self.model.normalised(pose))


def decoder_graph(model):
    """The ONNX ModelProto of one decoder step (:class:`DecoderStep`), the batch a dynamic axis."""
    return _traced(model, DecoderStep(model), (model.config.pose, model.config.latent), DECODER_INPUTS, DECODER_OUTPUTS)


def encoder_graph(model):
    """The ONNX ModelProto of the encoder (:class:`EncoderStep`), the batch a dynamic axis."""
    return _traced(model, EncoderStep(model), (model.config.pose, model.config.pose), ENCODER_INPUTS, ENCODER_OUTPUTS)


def _traced(model, step, sizes, inputs, outputs):
    was_training = model.training
    model.eval()
    try:
        return traced(step, tuple(torch.zeros(1, n, device=model.pose_mean.device) for n in sizes), inputs, outputs)
    finally:
        model.train(was_training)
