"""How well the policy's mean action tracks, without exploration's noise: the first frame of the
first ``STARTS_PER_GAIT`` stretches of each gait, no pushes, the nominal body and floor, at most
``SECONDS`` each. Cheap enough to run every few roll-outs, so the run's curve shows the policy as it
would be used, which the roll-outs' noisy returns do not."""

import numpy as np
import torch

from inference.carl.simulation import POLICY_RATE

STARTS_PER_GAIT = 4
SECONDS = 5.0


def starts(env):
    """[(clip, frame)] the episodes evaluation runs on ``env`` (a Tracking)."""
    picked = []
    for gait in sorted(set(env.gaits)):
        picked += [(i, 0) for i, g in enumerate(env.gaits) if g == gait][:STARTS_PER_GAIT]
    return picked


def evaluate(policy, env):
    """{"tracked_s": mean seconds tracked before a fall or the episode's end, "falls": the share of
    episodes that fell, "reward": mean reward per step} of ``policy``'s mean action on ``env``, a
    Tracking without pushes or randomisation."""
    tracked, fell_count, rewards = [], 0, []
    with torch.no_grad():
        for clip, frame in starts(env):
            obs = env.reset(clip, frame)
            for step in range(int(SECONDS * POLICY_RATE)):
                mean, _ = policy(torch.as_tensor(obs)[None])
                obs, reward, fell, cut, _ = env.step(mean[0].numpy())
                rewards.append(reward)
                if fell or cut:
                    break
            tracked.append((step + 1) / POLICY_RATE)
            fell_count += fell
    return {"tracked_s": float(np.mean(tracked)), "falls": fell_count / len(tracked), "reward": float(np.mean(rewards))}
