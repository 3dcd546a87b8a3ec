"""The Motion VAE's control, with a tiny model trained by our own training command (the fixtures of
test_mvae.py): the floor step that keeps a walk's feet on the floor, variants that reach a key, and bad
requests refused with one clear error."""

from dataclasses import replace

import numpy as np
import pytest

from inference.bvh import read_bvh
from inference.inbetween import floor
from tests.test_mvae import clip, model, run  # noqa: F401  (fixtures: a subject 5 clip, the tiny model)

FEET = ("LeftToe", "RightToe", "LeftFoot", "RightFoot")


def lowest_feet(motions, skeleton, first):
    """(K, F) the lowest foot's height in each motion's frames from ``first`` on."""
    feet = [skeleton.index(f) for f in FEET]
    return np.array([m.global_transforms()[1][first:, feet, 1].min(axis=1) for m in motions])


def test_the_floor_step_keeps_every_foot_on_the_floor(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    ground = floor(motion.frames(100 + 1 - model.past, 101), [])
    sunk = lowest_feet(model.walk(motion, 100, 60, k=4, seed=0, grounded=False), motion.skeleton, 101) - ground
    assert (sunk < -1.0).mean() > 0.5      # the tiny model sinks without it (measured: 99 % of frames)
    walks = model.walk(motion, 100, 60, k=4, seed=0)
    standing = lowest_feet(walks, motion.skeleton, 101) - ground
    assert standing.min() > -1e-3           # cm: float32 poses
    assert (standing < 0.5).mean() > 0.5    # lifted onto the floor, not thrown up
    np.testing.assert_allclose(walks[0].rotations[:101], motion.rotations[:101], atol=1e-12)


def test_a_walk_stands_on_the_floor_under_the_start(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    positions = motion.positions.copy()
    positions[:, 0, 1] += 50.0             # the armature raised half a metre
    raised = model.walk(replace(motion, positions=positions), 100, 30, k=2, seed=1)
    walks = model.walk(motion, 100, 30, k=2, seed=1)
    for a, b in zip(raised, walks):
        np.testing.assert_allclose(a.positions[101:, 0], b.positions[101:, 0] + [0, 50, 0], atol=1e-6)
        np.testing.assert_allclose(a.rotations, b.rotations, atol=1e-9)
