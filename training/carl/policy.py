"""The tracking policy, CARL's multiplicative compositional policy (MCP, Peng et al. 2019), and its critic.

K primitives, each a Gaussian over the action read from the body's own state alone, are multiplied,
each raised to a weight that a gating network reads from the state and the goal (the reference frames
ahead): the product is a Gaussian whose precision is the weighted sum of the primitives' precisions,

    sigma = (sum_i w_i / sigma_i^2)^(-1/2),   mu = sigma^2 sum_i w_i mu_i / sigma_i^2,

so that the primitives learn reusable motor skills and the gate composes them (CARL reuses them under
its speed and heading control). Both networks, and the critic, read observations normalised by running
statistics.
"""

import numpy as np
import torch
from torch import nn

CLIP = 5.0        # normalised observations are clipped to +- this many standard deviations
LOG_STD = (-5.0, 1.0)
# the product's least precision: no wider than a primitive may be. Where the gate shut every primitive (a falling
# body's states) its spread grew without bound (to 80 in a roll-out whose median was 0.07) and its actions were noise
LEAST_PRECISION = float(np.exp(-2.0 * LOG_STD[1]))


def mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class Normaliser(nn.Module):
    """Running mean and variance of the observations (Chan's parallel update), as buffers so that they
    travel in the state dict."""

    def __init__(self, size):
        super().__init__()
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("var", torch.ones(size, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def update(self, x):
        """Fold a batch of observations ``x`` (N, size) into the statistics."""
        x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
        n, mean, var = x.shape[0], x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = mean - self.mean
        self.var.copy_((self.var * self.count + var * n + delta ** 2 * self.count * n / total) / total)
        self.mean.add_(delta * n / total)
        self.count.copy_(total)

    def forward(self, x):
        std = torch.sqrt(self.var).clamp_min(1e-4)
        return ((x - self.mean) / std).clamp(-CLIP, CLIP).float()


class Policy(nn.Module):
    """Observation (N, obs), its first ``state`` values the body's, the rest the goal -> the composite
    Gaussian's mean and standard deviation (N, act) over ``primitives`` primitives."""

    def __init__(self, obs, state, act, hidden, primitives=8, spread=0.4):
        super().__init__()
        self.state, self.act, self.primitives = state, act, primitives
        self.norm = Normaliser(obs)
        self.body = nn.Sequential(mlp([state, *hidden]), nn.ReLU())
        self.heads = nn.Linear(hidden[-1], primitives * 2 * act)
        self.gate = nn.Sequential(mlp([obs, *hidden, primitives]), nn.Sigmoid())
        with torch.no_grad():   # small first actions, the composite's spread ``spread`` at the gate's 0.5: the body starts by following the reference
            self.heads.weight.mul_(0.01)
            self.heads.bias.view(primitives, 2, act)[:, 0].zero_()
            self.heads.bias.view(primitives, 2, act)[:, 1].fill_(float(np.log(spread) + 0.5 * np.log(0.5 * primitives)))

    def forward(self, obs):
        x = self.norm(obs)
        heads = self.heads(self.body(x[:, :self.state])).view(-1, self.primitives, 2, self.act)
        mu, log_std = heads[:, :, 0], heads[:, :, 1].clamp(*LOG_STD)
        w = self.gate(x)[..., None]                          # (N, K, 1)
        precision = w / torch.exp(2.0 * log_std)              # (N, K, act)
        total = precision.sum(1).clamp_min(LEAST_PRECISION)
        return (precision * mu).sum(1) / total, total.rsqrt()

    def distribution(self, obs):
        return torch.distributions.Normal(*self(obs))

    def weights(self, obs):
        """(N, K) the gate's weight on each primitive."""
        return self.gate(self.norm(obs))


class Value(nn.Module):
    """Observation (N, obs) -> the expected discounted return (N,), read through the policy's normaliser."""

    def __init__(self, obs, hidden, norm):
        super().__init__()
        self.norm = norm
        self.net = mlp([obs, *hidden, 1])

    def forward(self, obs):
        return self.net(self.norm(obs)).squeeze(-1)
