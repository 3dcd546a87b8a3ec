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

    def __init__(self, env, rng):
        self.env, self.rng = env, rng
        self.obs = env.reset()
        self.episode = [0.0, 0]   # this episode's return and length so far

    def collect(self, policy, value, n):
        """``n`` steps of ``policy``: a dict of arrays (obs (n, O), act (n, A), logp, val, rew, next_val,
        end (n,)) and the roll-out's statistics (mean reward and terms, falls, finished episodes' mean
        return and length). Values are read in one batch at the end: the policy alone runs per step."""
        env = self.env
        obs = np.empty((n, env.observation_size), np.float32)
        act = np.empty((n, env.action_size), np.float32)
        logp, rew = np.empty(n, np.float32), np.empty(n, np.float32)
        fell, end = np.zeros(n, bool), np.zeros(n, bool)
        after = {}                  # step -> the observation an episode was cut on
        returns, lengths, terms = [], [], []
        with torch.no_grad():
            for t in range(n):
                mean, std = (y[0].numpy() for y in policy(torch.as_tensor(self.obs)[None]))
                noise = self.rng.standard_normal(mean.shape).astype(np.float32)
                obs[t], act[t] = self.obs, mean + std * noise
                logp[t] = -0.5 * np.sum(noise ** 2) - np.sum(np.log(std)) - 0.5 * len(std) * np.log(2 * np.pi)
                self.obs, rew[t], fell[t], cut, term = env.step(act[t])
                terms.append(term)
                self.episode[0] += rew[t]
                self.episode[1] += 1
                if fell[t] or cut:
                    end[t] = True
                    if cut:
                        after[t] = self.obs
                    returns.append(self.episode[0])
                    lengths.append(self.episode[1])
                    self.episode = [0.0, 0]
                    self.obs = env.reset()
            val = value(torch.as_tensor(obs)).numpy()
            last = [self.obs] + list(after.values())
            tail = value(torch.as_tensor(np.stack(last))).numpy()
        next_val = np.append(val[1:], tail[0])
        next_val[list(after)] = tail[1:]
        next_val[fell] = 0.0
        stats = {"reward": float(rew.mean()), "falls": int(fell.sum()),
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
            dist = policy.distribution(obs[i])
            ratio = torch.exp(dist.log_prob(act[i]).sum(-1) - old[i])
            surrogate = torch.min(ratio * adv[i], ratio.clamp(1 - settings.clip, 1 + settings.clip) * adv[i])
            policy_loss = -surrogate.mean()
            value_loss = ((value(obs[i]) - ret[i]) ** 2).mean()
            optimiser.zero_grad(set_to_none=True)
            (policy_loss + 0.5 * value_loss).backward()
            torch.nn.utils.clip_grad_norm_([p for g in optimiser.param_groups for p in g["params"]], settings.max_grad)
            optimiser.step()
            seen.append((policy_loss.item(), value_loss.item(), float(((ratio - 1).abs() > settings.clip).float().mean()),
                         float(dist.scale.detach().mean())))
    policy_loss, value_loss, clipped, std = np.mean(seen, axis=0)
    return {"policy_loss": float(policy_loss), "value_loss": float(value_loss), "clipped": float(clipped), "std": float(std)}
