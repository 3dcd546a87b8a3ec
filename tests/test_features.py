"""Network features: the trajectory joint of each data set, the canonical frame, and decoding."""

import numpy as np
import pytest

from inference import quat
from inference.features import (canonical_frame, choose_layout, decode_features, frame_features, move,
                                target_features, unmove)
from inference.motion import forward_kinematics
from lab.dataset import load_motion_set


@pytest.fixture(scope="module", params=["lafan1-27.zip", "bandai1.zip"])
def data(request, mocap, tmp_path_factory):
    d = load_motion_set(mocap / request.param, tmp_path_factory.mktemp("cache"))
    sk = d.skeleton
    clips = [d.clip(i) for i in range(0, len(d.names), max(1, len(d.names) // 12))]
    rot = np.concatenate([c.rotations for c in clips])
    pos = np.concatenate([c.positions for c in clips])
    return request.param, sk, rot, pos, choose_layout(rot, pos, sk.parents, d.translated, d.fps)


def test_trajectory_joint_is_the_hips(data):
    name, sk, _, _, layout = data
    assert sk.names[layout.trajectory] == "Hips"     # Bandai: under joint_Root, which mostly stays put
    assert layout.up == 1 and 120 < layout.height < 200 and layout.fps == 30


def test_canonical_frame_puts_the_hips_at_the_origin_facing_x(data):
    _, sk, rot, pos, layout = data
    frames = np.arange(0, len(rot), 97)
    turn, origin = canonical_frame(rot[frames], pos[frames], sk.parents, layout)
    r, p = move(rot[frames][:, None], pos[frames][:, None], turn, origin)
    grot, gpos = forward_kinematics(r[:, 0], p[:, 0], sk.parents)
    hips = gpos[:, layout.trajectory]
    np.testing.assert_allclose(hips[:, [0, 2]], 0.0, atol=1e-6)
    np.testing.assert_allclose(hips[:, 1], forward_kinematics(rot[frames], pos[frames], sk.parents)[1][:, layout.trajectory, 1])
    heading = quat.rotate(grot[:, layout.trajectory], np.eye(3)[layout.facing_axis])
    assert np.all(heading[:, 0] > 0) and np.allclose(heading[:, 2], 0.0, atol=1e-6)   # float32 cache
    back_r, back_p = unmove(r, p, turn, origin)
    np.testing.assert_allclose(back_p[:, 0], pos[frames], atol=1e-9)
    np.testing.assert_allclose(back_r[:, 0], rot[frames], atol=1e-12)


def test_decoding_features_gives_back_the_pose(data):
    _, sk, rot, pos, layout = data
    frames = np.arange(5, len(rot), 101)
    features = frame_features(rot[frames], pos[frames], sk.parents, layout)
    assert features.shape == (len(frames), layout.frame_dim)
    # decode with the translations of other frames: only the trajectory joint's may differ, and the
    # world positions come out right because it is placed in the world, not relative to its parent
    r, p = decode_features(features, pos[frames - 5], sk.parents, layout)
    np.testing.assert_allclose(r, quat.normalize(rot[frames]), atol=1e-12)
    _, world = forward_kinematics(r, p, sk.parents)
    _, truth = forward_kinematics(rot[frames], np.where(np.arange(len(sk))[:, None] == layout.trajectory,
                                                        pos[frames], pos[frames - 5]), sk.parents)
    np.testing.assert_allclose(world[:, layout.trajectory], truth[:, layout.trajectory], atol=1e-6)
    target = target_features(rot[frames], pos[frames], sk.parents, layout, after=(rot[frames + 1], pos[frames + 1]))
    assert target.shape == (len(frames), layout.target_dim) and np.all(target[:, -1] == 1)
    assert np.all(target_features(rot[frames], pos[frames], sk.parents, layout)[:, layout.frame_dim:] == 0)
