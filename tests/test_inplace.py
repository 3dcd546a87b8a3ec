"""In-place cycles: a walk whose root is held on one spot, as games export it, is filled stepping on the
spot, not standing still, and not drifting away from the spot."""

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from inference.bvh import parse_bvh
from inference.inbetween import fill_gaps
from inference.inplace import treadmill
from inference.modelfile import find_model
from inference.motion import forward_kinematics

GAP = (100, 130)


@pytest.fixture(scope="module")
def walk(lafan1_zip):
    with zipfile.ZipFile(lafan1_zip) as z:
        return parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1000, 1300)


def held(motion):
    positions = motion.positions.copy()
    positions[:, 0, [0, 2]] = positions[0, 0, [0, 2]]
    return replace(motion, positions=positions)


def test_only_motion_whose_feet_slide_under_a_still_root_is_carried(walk):
    model = find_model(walk.skeleton, kind="rtn")
    assert treadmill(walk, [GAP], model.layout.height) is None              # it travels by itself
    shift = treadmill(held(walk), [GAP], model.layout.height)
    assert shift is not None and np.allclose(shift[:, 1], 0.0)               # along the ground only
    speed = np.linalg.norm(shift[1] - shift[0]) * walk.fps                   # cm a second
    truth = np.linalg.norm(walk.positions[GAP[1] + 30, 0, [0, 2]] - walk.positions[GAP[0] - 30, 0, [0, 2]]) \
        * walk.fps / (GAP[1] - GAP[0] + 60)
    assert 0.5 * truth < speed < 1.5 * truth                                  # the walk's own pace
    still = replace(walk, rotations=np.repeat(walk.rotations[:1], walk.n_frames, 0),
                    positions=np.repeat(held(walk).positions[:1], walk.n_frames, 0))
    assert treadmill(still, [GAP], model.layout.height) is None               # standing is not a stride


def test_an_in_place_walk_is_filled_stepping_on_the_spot(walk):
    model = find_model(walk.skeleton, kind="rtn")
    motion = held(walk)
    a, b = GAP
    out = fill_gaps(model, motion, [GAP])
    root = out.positions[a + 1:b, 0][:, [0, 2]]
    assert np.abs(root - motion.positions[a, 0, [0, 2]]).max() < 15.0         # cm: it stays on its spot
    world = forward_kinematics(out.rotations, out.positions, out.skeleton.parents)[1]
    truth = forward_kinematics(motion.rotations, motion.positions, motion.skeleton.parents)[1]
    feet = [out.skeleton.index(n) for n in ("LeftFoot", "RightFoot")]
    travel = np.abs(np.diff(world[a:b + 1, feet][..., [0, 2]], axis=0)).sum(axis=(0, 2))
    assert travel.min() > 0.5 * np.abs(np.diff(truth[a:b + 1, feet][..., [0, 2]], axis=0)).sum(axis=(0, 2)).min()
    error = np.linalg.norm(world[a + 1:b] - truth[a + 1:b], axis=-1).mean()
    import inference.inbetween as inbetween
    plain = inbetween.treadmill
    try:
        inbetween.treadmill = lambda *args: None
        standing = fill_gaps(model, motion, [GAP])
    finally:
        inbetween.treadmill = plain
    standing = forward_kinematics(standing.rotations, standing.positions, standing.skeleton.parents)[1]
    assert error < 0.95 * np.linalg.norm(standing[a + 1:b] - truth[a + 1:b], axis=-1).mean()


def test_keys_a_second_apart_carry_an_in_place_walk_at_the_pace_their_poses_tell(walk):
    """Decompress: keys every 30 frames leave no two frames in a row to see a foot slide in. The poses at the
    keys (which foot leads, how far apart along the hips' facing) give the pace; a stance whose same foot
    leads at every key, and motion whose root moves from key to key (a dance stepping about), are not carried."""
    model = find_model(walk.skeleton, kind="rtn")
    keys = list(range(0, walk.n_frames, 30)) + [walk.n_frames - 1]
    gaps = list(zip(keys[:-1], keys[1:]))
    shift = treadmill(held(walk), gaps, model.layout.height)
    assert shift is not None and np.allclose(shift[:, 1], 0.0)
    carried = np.linalg.norm(np.diff(shift[:, [0, 2]], axis=0), axis=-1).sum()
    walked = np.linalg.norm(np.diff(walk.positions[:, 0, [0, 2]], axis=0), axis=-1).sum()
    assert 0.7 * walked < carried < 1.6 * walked                               # measured 1.26x the path walked
    assert treadmill(walk, gaps, model.layout.height) is None                  # it travels by itself
    stance = held(walk)
    stance = replace(stance, rotations=np.repeat(stance.rotations[keys[6]:keys[6] + 1], walk.n_frames, 0))
    assert treadmill(stance, gaps, model.layout.height) is None                # one foot ahead throughout
