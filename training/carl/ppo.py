"""Proximal policy optimisation (Schulman et al. 2017) on one simulated dog: roll-outs of a fixed number
of policy steps, advantages by GAE, clipped surrogate and value regression over a few epochs.

An episode that falls ends (no value after it); one cut at its clip's end or its time limit goes on
in its value, read at the observation it was cut on; a roll-out that stops mid-episode goes on in the
next one from where it stopped.

The policy's learning rate adapts to how far each update moves the policy: after the epochs, the mean
KL divergence of the policy's Gaussians from the roll-out's, over the roll-out's observations, is
measured; above twice ``Settings.kl`` the next update's rate is divided by ``KL_FACTOR``, under half
of it multiplied, within ``LR_RANGE``. A fixed rate has to be picked by hand for each spread of the
policy (a 60-dimensional Gaussian's likelihood ratios leave PPO's clip after small moves of its means
where the spread is small), and a run's spread changes as it learns.
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
    kl: float = 0.02         # the KL divergence an update's learning rate aims at; 0: a fixed rate


KL_FACTOR = 1.5
LR_RANGE = (1e-6, 1e-3)


class Roller:
    """Keeps each environment's episode going across roll-outs; the environments (:mod:`.workers`: here or
    in worker processes) step in lockstep, so that one batched pass of the policy serves all of them (a pass
    for one observation costs about as much as the physics of a policy step)."""

    def __init__(self, envs, rng):
        self.envs, self.rng = envs, rng
        self.obs = envs.reset()
        self.episode = [[0.0, 0] for _ in range(len(envs))]   # each episode's return and length so far

    def collect(self, policy, value, n):
        """``n`` steps of ``policy`` (n // len(envs) from each environment), each environment's run of
        steps after the last's: a dict of arrays (obs (n, O), act (n, A), logp, mu, sigma, val, rew,
        next_val, end (n,)) and the roll-out's statistics (mean reward and terms, falls, finished
        episodes' mean return and length). An environment's last step ends its run (``end``) and goes on
        in the value of where it stopped. Values are read in one batch at the end."""
        k = len(self.envs)
        steps = n // k
        size, acts = len(self.obs[0]), policy.act
        obs = np.empty((k, steps, size), np.float32)
        act, mu, sigma = (np.empty((k, steps, acts), np.float32) for _ in range(3))
        logp, rew = np.empty((k, steps), np.float32), np.empty((k, steps), np.float32)
        fell, end = np.zeros((k, steps), bool), np.zeros((k, steps), bool)
        after = {}                  # (env, step) -> the observation an episode was cut on
        returns, lengths, terms = [], [], []
        with torch.no_grad():
            for t in range(steps):
                now = np.stack(self.obs)
                mean, std = (y.numpy() for y in policy(torch.as_tensor(now)))
                noise = self.rng.standard_normal(mean.shape).astype(np.float32)
                obs[:, t], act[:, t], mu[:, t], sigma[:, t] = now, mean + std * noise, mean, std
                logp[:, t] = (-0.5 * np.sum(noise ** 2, axis=1) - np.sum(np.log(std), axis=1)
                              - 0.5 * acts * np.log(2 * np.pi))
                for e, (seen, reward, fallen, cut, term, following) in enumerate(self.envs.step(act[:, t])):
                    rew[e, t], fell[e, t], self.obs[e] = reward, fallen, following
                    terms.append(term)
                    episode = self.episode[e]
                    episode[0] += rew[e, t]
                    episode[1] += 1
                    if fell[e, t] or cut:
                        end[e, t] = True
                        if cut:
                            after[e, t] = seen
                        returns.append(episode[0])
                        lengths.append(episode[1])
                        self.episode[e] = [0.0, 0]
            val = value(torch.as_tensor(obs.reshape(k * steps, size))).numpy().reshape(k, steps)
            tail = value(torch.as_tensor(np.stack(self.obs + list(after.values())))).numpy()
        next_val = np.concatenate([val[:, 1:], tail[:k, None]], axis=1)
        for (e, t), v in zip(after, tail[k:]):
            next_val[e, t] = v
        next_val[fell] = 0.0
        end[:, -1] = True
        stats = {"reward": float(rew.mean()), "falls": int(fell.sum()), "episodes": len(lengths),
                 **{f"r_{key}": float(np.mean([t[key] for t in terms])) for key in terms[0]}}
        if lengths:
            stats.update(episode_return=float(np.mean(returns)), episode_steps=float(np.mean(lengths)))
        flat = lambda a: a.reshape(k * steps, *a.shape[2:])
        return {"obs": flat(obs), "act": flat(act), "logp": flat(logp), "mu": flat(mu), "sigma": flat(sigma),
                "val": flat(val), "rew": flat(rew), "next_val": flat(next_val), "end": flat(end)}, stats


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
    obs, act, old, mu, sigma = (torch.as_tensor(batch[k]) for k in ("obs", "act", "logp", "mu", "sigma"))
    group = optimiser.param_groups[0]      # the policy's
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
    with torch.no_grad():
        kl = float(torch.distributions.kl_divergence(torch.distributions.Normal(mu, sigma), policy.distribution(obs))
                   .sum(-1).mean())
    lr = group["lr"]
    if settings.kl > 0:
        if kl > 2.0 * settings.kl:
            group["lr"] = max(lr / KL_FACTOR, LR_RANGE[0])
        elif kl < 0.5 * settings.kl:
            group["lr"] = min(lr * KL_FACTOR, LR_RANGE[1])
    policy_loss, value_loss, clipped, std = np.mean(seen, axis=0)
    return {"policy_loss": float(policy_loss), "value_loss": float(value_loss), "clipped": float(clipped), "std": float(std),
            "kl": kl, "lr": lr}
