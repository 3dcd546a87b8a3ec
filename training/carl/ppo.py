"""Proximal policy optimisation (Schulman et al. 2017) on one simulated dog: roll-outs of a fixed number
of policy steps, advantages by GAE, clipped surrogate and value regression over a few epochs.

An episode that falls ends (no value after it); one cut at its clip's end or its time limit goes on
in its value, read at the observation it was cut on; a roll-out that stops mid-episode goes on in the
next one from where it stopped.
"""

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Settings:
    samples: int = 4096      # policy steps per roll-out
    epochs: int = 5
    minibatch: int = 256
    gamma: float = 0.95
    lam: float = 0.95
    clip: float = 0.2
    max_grad: float = 1.0


class Roller:
    """Keeps one environment's episode going across roll-outs."""

    def __init__(self, env):
        self.env = env
        self.obs = env.reset()
        self.episode = [0.0, 0]   # this episode's return and length so far

    def collect(self, policy, value, n):
        """``n`` steps of ``policy``: a dict of arrays (obs (n, O), act (n, A), logp, val, rew, next_val,
        end (n,)) and the finished episodes' returns and lengths, the reward terms' means."""
        env = self.env
        obs = np.empty((n, env.observation_size), np.float32)
        act = np.empty((n, env.action_size), np.float32)
        logp, val, rew, next_val = (np.empty(n, np.float32) for _ in range(4))
        end = np.zeros(n, bool)
        returns, lengths, falls, terms = [], [], 0, []
        with torch.no_grad():
            v = float(value(torch.as_tensor(self.obs)[None]))
            for t in range(n):
                x = torch.as_tensor(self.obs)[None]
                dist = policy.distribution(x)
                a = dist.sample()
                obs[t], act[t], logp[t], val[t] = self.obs, a[0].numpy(), float(dist.log_prob(a).sum()), v
                self.obs, r, fell, cut, term = env.step(act[t])
                rew[t] = r
                terms.append(term)
                self.episode[0] += r
                self.episode[1] += 1
                v = 0.0 if fell else float(value(torch.as_tensor(self.obs)[None]))
                next_val[t] = v
                if fell or cut:
                    end[t] = True
                    falls += fell
                    returns.append(self.episode[0])
                    lengths.append(self.episode[1])
                    self.episode = [0.0, 0]
                    self.obs = env.reset()
                    v = float(value(torch.as_tensor(self.obs)[None]))
        stats = {"reward": float(rew.mean()), "falls": falls,
                 **{f"r_{k}": float(np.mean([t[k] for t in terms])) for k in terms[0]}}
        if lengths:
            stats.update(episode_return=float(np.mean(returns)), episode_steps=float(np.mean(lengths)))
        return {"obs": obs, "act": act, "logp": logp, "val": val, "rew": rew, "next_val": next_val, "end": end}, stats


def advantages(batch, gamma, lam):
    """(n,) GAE advantages of a roll-out: the recursion starts afresh after each episode's end."""
    n = len(batch["rew"])
    adv = np.zeros(n, np.float32)
    delta = batch["rew"] + gamma * batch["next_val"] - batch["val"]
    running = 0.0
    for t in range(n - 1, -1, -1):
        running = delta[t] + (0.0 if batch["end"][t] else gamma * lam * running)
        adv[t] = running
    return adv


def update(policy, value, optimiser, batch, settings, rng):
    """The PPO epochs over one roll-out; the mean losses and the policy's spread."""
    adv = advantages(batch, settings.gamma, settings.lam)
    ret = torch.as_tensor(adv + batch["val"])
    adv = torch.as_tensor((adv - adv.mean()) / (adv.std() + 1e-8))
    obs, act, old = (torch.as_tensor(batch[k]) for k in ("obs", "act", "logp"))
    seen = []
    for _ in range(settings.epochs):
        order = rng.permutation(len(obs))
        for s in range(0, len(obs), settings.minibatch):
            i = torch.as_tensor(order[s:s + settings.minibatch])
            ratio = torch.exp(policy.distribution(obs[i]).log_prob(act[i]).sum(-1) - old[i])
            surrogate = torch.min(ratio * adv[i], ratio.clamp(1 - settings.clip, 1 + settings.clip) * adv[i])
            policy_loss = -surrogate.mean()
            value_loss = ((value(obs[i]) - ret[i]) ** 2).mean()
            optimiser.zero_grad(set_to_none=True)
            (policy_loss + 0.5 * value_loss).backward()
            torch.nn.utils.clip_grad_norm_([p for g in optimiser.param_groups for p in g["params"]], settings.max_grad)
            optimiser.step()
            seen.append((policy_loss.item(), value_loss.item(), float(((ratio - 1).abs() > settings.clip).float().mean())))
    policy_loss, value_loss, clipped = np.mean(seen, axis=0)
    return {"policy_loss": float(policy_loss), "value_loss": float(value_loss), "clipped": float(clipped),
            "std": float(policy.log_std.detach().exp().mean())}
