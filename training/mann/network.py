"""Mode-Adaptive Neural Network (Zhang, Starke, Komura, Saito 2018): a motion network whose weights are
blended, per frame, from K experts by a gating network.

The gating network (3 layers of 32, ELU, softmax) reads a few of the normalised inputs (the paws'
velocities, the desired speed and the action values) and gives K blending weights ``alpha``; the
motion network (3 layers of 512, ELU) computes with the weights ``sum_k alpha_k W_k`` and biases
``sum_k alpha_k b_k``. A layer is linear in its weights, so ``(sum_k alpha_k W_k) h + sum_k alpha_k b_k =
sum_k alpha_k (W_k h + b_k)``: it is computed that way, as one product with all K experts' matrices side
by side and the blend of their outputs. It reads the same weights as blending them first, at every
batch size, and in ONNX it is one MatMul per layer that onnxruntime's weight quantisation understands.
Dropout (0.3) drops inputs of every layer of both networks in training, as the reference does.

The module takes and gives raw features (x and y in the data's units, :mod:`.data`): it holds their
normalisation and z-scores inside, so the ONNX step graph needs nothing around it.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn

from ..onnx_tools import traced

INPUTS, OUTPUTS = ["x"], ["y", "experts"]


@dataclass
class MANNConfig:
    input: int = 480
    output: int = 363
    gating: list = field(default_factory=list)   # indices of x the gating network reads
    experts: int = 8
    hidden: int = 512
    gating_hidden: int = 32
    dropout: float = 0.3


class Experts(nn.Module):
    """One layer of the motion network: K experts' weights (K, out, in) and biases (K, out), blended."""

    def __init__(self, k, n_in, n_out):
        super().__init__()
        self.k, self.n_out = k, n_out
        bound = float(np.sqrt(6.0 / (n_in + n_out)))   # the reference's (Glorot's) uniform initialisation
        self.weight = nn.Parameter(torch.empty(k * n_out, n_in).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.zeros(k * n_out))

    def forward(self, h, alpha):
        """h (B, in), alpha (B, K) -> (B, out)."""
        each = nn.functional.linear(h, self.weight, self.bias).reshape(-1, self.k, self.n_out)
        return (alpha.unsqueeze(-1) * each).sum(dim=-2)


class MANN(nn.Module):
    def __init__(self, config, x_mean, x_std, y_mean, y_std):
        super().__init__()
        self.config = config
        for name, value in (("x_mean", x_mean), ("x_std", x_std), ("y_mean", y_mean), ("y_std", y_std)):
            self.register_buffer(name, torch.as_tensor(np.asarray(value), dtype=torch.float32))
        self.register_buffer("gates", torch.as_tensor(config.gating, dtype=torch.int64))
        k, h, g = config.experts, config.hidden, config.gating_hidden
        self.gating = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(len(config.gating), g), nn.ELU(),
                                    nn.Dropout(config.dropout), nn.Linear(g, g), nn.ELU(),
                                    nn.Dropout(config.dropout), nn.Linear(g, k), nn.Softmax(dim=-1))
        for layer in self.gating:
            if isinstance(layer, nn.Linear):   # as the reference: Glorot's uniform, zero biases
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        self.layers = nn.ModuleList([Experts(k, config.input, h), Experts(k, h, h), Experts(k, h, config.output)])
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x, raw=True):
        """One frame step: x (B, input) -> y (B, output) and the experts' blending weights (B, K).
        Raw features in and out; z-scored ones with ``raw=False`` (training: the loss is measured there)."""
        xn = (x - self.x_mean) / self.x_std if raw else x
        alpha = self.gating(xn.index_select(-1, self.gates))
        h = xn
        for i, layer in enumerate(self.layers):
            h = layer(self.drop(h), alpha)
            if i < len(self.layers) - 1:
                h = nn.functional.elu(h)
        return (h * self.y_std + self.y_mean if raw else h), alpha


class Step(nn.Module):
    """The module the step graph is traced from: raw x in, raw y and the blending weights out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


def graph(model):
    """The ONNX ModelProto of one frame step: x (B, input) -> y (B, output), experts (B, K); the batch
    is a dynamic axis."""
    was_training = model.training
    model.eval()
    try:
        return traced(Step(model), (torch.zeros(1, model.config.input, device=model.x_mean.device),), INPUTS, OUTPUTS)
    finally:
        model.train(was_training)
