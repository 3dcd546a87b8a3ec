"""CARL's imitation reward: 0.65 pose + 0.1 velocity + 0.1 centre of mass + 0.15 contact, each term
an exponential of its error as in DeepMimic (Peng et al. 2018), so each is 1 where the body matches
the reference and falls toward 0 as it departs.

- pose: the squared angles (rad) between the simulated and the reference rotation of every joint,
  the root's world rotation and each ball joint's local one, summed;
- velocity: the squared differences of the joints' angular velocities (``qvel`` past the root's six);
- centre of mass: the squared distance (m) between the two centres of mass;
- contact: the number of paws whose contact with the floor differs from the reference's.
"""

import numpy as np

WEIGHTS = {"pose": 0.65, "velocity": 0.1, "com": 0.1, "contact": 0.15}
# DeepMimic's scales, but for velocity: the dog's 60 joint velocities lag a 30 Hz reference by about
# 500 (rad/s)^2 in all under PD alone, where DeepMimic's 0.1 leaves the term at 0, without a gradient
SCALES = {"pose": 2.0, "velocity": 0.005, "com": 10.0, "contact": 1.0}


def rotations(qpos, ball):
    """(J, 4) the root's world rotation and each ball joint's local rotation in ``qpos`` (nq,);
    ``ball`` (J-1,) holds the ball joints' addresses in qpos."""
    return np.concatenate([qpos[None, 3:7], qpos[ball[:, None] + np.arange(4)]])


def angles(a, b):
    """(...,) the angle in radians between rotations ``a`` and ``b`` (..., 4)."""
    dot = np.abs(np.sum(a * b, axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def errors(sim, ref, ball):
    """Each term's error between the simulated state ``sim`` and the reference's ``ref``: dicts of
    ``qpos`` (nq,), ``qvel`` (nv,), ``com`` (3,), ``contacts`` (4,) bool."""
    return {"pose": float(np.sum(angles(rotations(sim["qpos"], ball), rotations(ref["qpos"], ball)) ** 2)),
            "velocity": float(np.sum((sim["qvel"][6:] - ref["qvel"][6:]) ** 2)),
            "com": float(np.sum((sim["com"] - ref["com"]) ** 2)),
            "contact": float(np.sum(sim["contacts"] != ref["contacts"]))}


def reward(error):
    """The reward (a float in [0, 1]) and each term's value, of the errors :func:`errors` measured."""
    terms = {k: float(np.exp(-SCALES[k] * error[k])) for k in WEIGHTS}
    return sum(WEIGHTS[k] * terms[k] for k in WEIGHTS), terms

