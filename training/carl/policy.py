"""The tracking policy and its critic: plain MLPs, a Gaussian policy with a learned, state-independent
standard deviation per action. (CARL's policy is a mixture of multiplicative primitives with a gating
network; this plain one comes first.) Both read observations normalised by running statistics.
"""

import numpy as np
import torch
from torch import nn

CLIP = 5.0   # normalised observations are clipped to +- this many standard deviations


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
    """Observation (N, obs) -> the mean action (N, act); ``log_std`` (act,) is the Gaussian's spread."""

    def __init__(self, obs, act, hidden, log_std=-1.0):
        super().__init__()
        self.norm = Normaliser(obs)
        self.net = mlp([obs, *hidden, act])
        self.log_std = nn.Parameter(torch.full((act,), float(log_std)))
        with torch.no_grad():   # small first actions: the body starts by following the reference
            self.net[-1].weight.mul_(0.01)
            self.net[-1].bias.zero_()

    def forward(self, obs):
        return self.net(self.norm(obs))

    def distribution(self, obs):
        return torch.distributions.Normal(self(obs), self.log_std.exp())


class Value(nn.Module):
    """Observation (N, obs) -> the expected discounted return (N,), read through the policy's normaliser."""

    def __init__(self, obs, hidden, norm):
        super().__init__()
        self.norm = norm
        self.net = mlp([obs, *hidden, 1])

    def forward(self, obs):
        return self.net(self.norm(obs)).squeeze(-1)
