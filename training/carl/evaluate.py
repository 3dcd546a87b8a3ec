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


def joint_error(env):
    """The mean distance (m) between the simulated joints and the reference's, both taken from their
    root (the issue's tracking error, root aligned), at the frame ``env`` is at."""
    pos = env.sim.pose()[0]
    ref = env.references[env.clip].positions[env.t]
    return float(np.mean(np.linalg.norm((pos - pos[0]) - (ref - ref[0]), axis=-1)))


def evaluate(policy, env):
    """{"tracked_s": mean seconds tracked before a fall or the episode's end, "falls": the share of
    episodes that fell, "reward": mean reward per step, "joint_error_cm": mean joint position error,
    root aligned, over the steps before a fall} of ``policy``'s mean action on ``env``, a Tracking
    without pushes or randomisation."""
    tracked, fell_count, rewards, errors = [], 0, [], []
    with torch.no_grad():
        for clip, frame in starts(env):
            obs = env.reset(clip, frame)
            for step in range(int(SECONDS * POLICY_RATE)):
                mean, _ = policy(torch.as_tensor(obs)[None])
                obs, reward, fell, cut, _ = env.step(mean[0].numpy())
                rewards.append(reward)
                if fell or cut:
                    break
                errors.append(joint_error(env))
            tracked.append((step + 1) / POLICY_RATE)
            fell_count += fell
    return {"tracked_s": float(np.mean(tracked)), "falls": fell_count / len(tracked), "reward": float(np.mean(rewards)),
            "joint_error_cm": 100.0 * float(np.mean(errors)) if errors else float("nan")}
