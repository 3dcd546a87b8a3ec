"""Motions of one skeleton on another's (inference/retarget.py), on the real captures of ../shared."""


import numpy as np
import pytest

from inference import quat
from inference.bvh import parse_bvh
from lab.dataset import read_motions, subject_of
from inference.errors import DataError
from lab.metrics import foot_skating
from inference.motion import Skeleton, forward_kinematics
from inference.anatomy import pelvis
from inference.retarget import Retargeting, direction_error, natural_pose, standing_height

LAFAN_FEET = ["LeftFoot", "RightFoot", "LeftToe", "RightToe"]
BANDAI_FEET = ["Foot_L", "Foot_R", "Toes_L", "Toes_R"]
LIMBS = ["LeftLeg", "LeftFoot", "LeftToe", "RightLeg", "RightFoot", "RightToe", "LeftArm", "LeftForeArm",
         "LeftHand", "RightArm", "RightForeArm", "RightHand", "Head"]


@pytest.fixture(scope="module")
def lafan(lafan1_zip):
    """Three training clips of LaFAN1 (never subject 5) and the natural pose of all its training subjects."""
    clips = [m for m in read_motions(lafan1_zip) if subject_of(m.name) in (1, 2, 3, 4)]
    return clips[:3], natural_pose(clips)


@pytest.fixture(scope="module")
def bandai(mocap):
    clips = read_motions(mocap / "bandai1.zip")
    return clips, natural_pose(clips)


def skating(motion, feet):
    """The capture-style foot skating (../shared/docs/metrics.md), averaged over the four foot joints."""
    _, world = motion.global_transforms()
    f = world[:, [motion.skeleton.index(n) for n in feet]]
    return float(foot_skating(f, np.percentile(f[..., 1], 2, axis=0)).mean())


def test_a_clip_onto_its_own_skeleton_is_the_clip(lafan):
    clips, pose = lafan
    clip = clips[0]
    onto = Retargeting.build(clip.skeleton, clip.skeleton, pose, pose)
    out = onto(clip)
    assert len(onto.joints) == len(clip.skeleton) and onto.scale == 1.0
    assert np.minimum(np.abs(out.rotations - clip.rotations), np.abs(out.rotations + clip.rotations)).max() < 1e-12
    np.testing.assert_allclose(out.positions, clip.positions, atol=1e-9)


def test_a_retargeted_motion_goes_back_to_its_source_s_world_pose(lafan, bandai):
    """Bandai's walk onto LaFAN1's skeleton and back (``to_world``, as the add-on writes a rig): each mapped
    joint's counterpart turns in the world as the source's joint did, and the hips stand where the source's did."""
    clips, lafan_pose = lafan
    walk = next(m for m in bandai[0] if "_walk_" in m.name).frames(0, 60)
    onto = Retargeting.build(walk.skeleton, clips[0].skeleton, bandai[1], lafan_pose)
    out = onto(walk)
    rotations, heads = onto.to_world(out.rotations, out.positions)
    grot, gpos = walk.global_transforms()
    np.testing.assert_allclose(rotations, quat.to_matrix(grot[:, onto.bones]), atol=1e-9)
    hips = [k for k, j in enumerate(onto.joints) if j in onto.positional]
    np.testing.assert_allclose(heads[:, hips], gpos[:, onto.bones[hips]], atol=1e-6)


def test_the_natural_pose_stands_upright(lafan, bandai):
    """Walks in every direction average into one body standing on its feet: head above hips above toes."""
    for clips, pose in (lafan, bandai):
        sk = clips[0].skeleton
        _, world = forward_kinematics(pose, sk.offsets, sk.parents)
        head = sk.index("Head")
        toes = [j for j, n in enumerate(sk.names) if "Toe" in n]
        assert world[head, 1] > world[pelvis(sk), 1] > world[toes, 1].max()
        assert standing_height(sk, pose) > 0.8 * np.ptp(world[:, 1])


def test_bandai_walks_onto_lafan1_with_its_bones_directions_and_feet(lafan, bandai):
    clips, lafan_pose = lafan
    walks = [m for m in bandai[0] if "_walk_" in m.name or "_run_" in m.name]
    onto = Retargeting.build(bandai[0][0].skeleton, clips[0].skeleton, bandai[1], lafan_pose)
    target = clips[0].skeleton
    heights = standing_height(target, lafan_pose), standing_height(walks[0].skeleton, bandai[1])
    assert onto.scale == pytest.approx(heights[1] / heights[0])   # source units per target unit
    source_skate = target_skate = frames = 0.0
    for walk in walks:
        out = onto(walk)
        assert out.skeleton is target and out.fps == walk.fps and out.n_frames == walk.n_frames
        # bones point where the source's do: limbs exactly, the hips' and chest's branches to a fit
        # of two skeletons whose pelvis and shoulders are built differently (measured: 2.55 degrees)
        assert direction_error(walk, out, onto).max() < 3.0
        _, world = out.global_transforms()
        _, source = walk.global_transforms()
        for name in LIMBS:
            j = target.index(name)
            b = onto.bones[list(onto.joints).index(j)]
            p, pb = target.parents[j], walk.skeleton.parents[b]
            t, s = world[:, j] - world[:, p], source[:, b] - source[:, pb]
            cos = np.sum(t * s, -1) / np.linalg.norm(t, axis=-1) / np.linalg.norm(s, axis=-1)
            assert cos.min() > np.cos(np.radians(0.1)), name   # measured: 0.06 at most
        # the hips carried as the source's, scaled by the ratio of heights
        np.testing.assert_allclose(world[:, 0], source[:, walk.skeleton.index("Hips")] / onto.scale, atol=1e-9)
        source_skate += skating(walk, BANDAI_FEET) * walk.n_frames
        target_skate += skating(out, LAFAN_FEET) * walk.n_frames
        frames += walk.n_frames
    # feet slide no more than the capture's (measured: 0.86 of it, in cm, over these 45 walks and runs)
    assert target_skate / frames < 0.9 * source_skate / frames


def test_cmu_at_120_fps_onto_lafan1(mocap, lafan):
    clips, lafan_pose = lafan
    cmu = parse_bvh((mocap / "cmu-01_01.bvh").read_bytes(), "cmu-01_01").resample(30)
    onto = Retargeting.build(cmu.skeleton, clips[0].skeleton, natural_pose([cmu]), lafan_pose)
    out = onto(cmu)
    assert out.fps == 30 and len(onto.joints) == len(clips[0].skeleton)   # every LaFAN1 joint has a CMU bone
    assert direction_error(cmu, out, onto).max() < 8.0     # measured: 5.6 mean, 6.9 at most
    _, world = out.global_transforms()
    assert 60.0 < np.median(world[:, 0, 1]) < 120.0         # CMU's units become LaFAN1's centimetres


def test_a_skeleton_that_does_not_map_is_one_clear_error(lafan):
    clips, pose = lafan
    odd = Skeleton(("Bone", "Bone.001", "Bone.002"), [-1, 0, 1], np.eye(3))
    with pytest.raises(DataError, match=r"stranger\.zip: its joints \(Bone, Bone\.001"):
        Retargeting.build(odd, clips[0].skeleton, np.tile([1.0, 0, 0, 0], (3, 1)), pose, name="stranger.zip")


def test_natural_pose_and_retargeting_leave_the_source_unchanged(bandai, lafan):
    clips, lafan_pose = lafan
    walk = bandai[0][-1]
    before = walk.rotations.copy(), walk.positions.copy()
    Retargeting.build(walk.skeleton, clips[0].skeleton, natural_pose([walk]), lafan_pose)(walk)
    assert np.array_equal(before[0], walk.rotations) and np.array_equal(before[1], walk.positions)


def test_a_foot_without_its_toe_is_aimed_by_its_bone_s_tail(lafan):
    """A rig without toes that stands at rest with its feet pitched 30 degrees from the model's natural
    stance (a T-pose's foot against a walker's): each foot bone points at where its toe would be, and
    calibration reads the foot by that tail, so the model sees the rig's rest feet pitched as they are;
    without the tails it would take them for its own, 30 degrees off for every pose after."""
    from inference import quat
    from inference.retarget import calibrate
    clips, pose = lafan
    sk = clips[0].skeleton
    grot, heads = forward_kinematics(pose, sk.offsets, sk.parents)
    feet, toes = [sk.index("LeftFoot"), sk.index("RightFoot")], [sk.index("LeftToe"), sk.index("RightToe")]
    joints = np.array([j for j in range(len(sk)) if j not in toes])
    slot = {int(j): k for k, j in enumerate(joints)}
    rest, tails = quat.to_matrix(grot[joints]), heads[joints].copy()
    for f, t in zip(feet, toes):
        toe = heads[t] - heads[f]
        axis = np.cross(toe, [0.0, 1.0, 0.0])
        pitch = quat.to_matrix(quat.from_angle_axis(np.radians(30.0), axis / np.linalg.norm(axis)))
        rest[slot[f]] = pitch @ rest[slot[f]]
        tails[slot[f]] = heads[f] + pitch @ toe          # the foot bone points at where its toe would be
    for given, expected in ((tails, 30.0), (None, 0.0)):
        offsets, _ = calibrate(sk, joints, rest, heads[joints], [pose], given)
        seen = rest @ offsets                            # the model's view of the rig's feet at rest
        angles = [np.degrees(np.arccos(np.clip((np.trace(seen[slot[f]].T @ quat.to_matrix(grot[f])) - 1) / 2, -1, 1)))
                  for f in feet]
        assert np.allclose(angles, expected, atol=1.0), (given is not None, angles)


def test_a_rig_s_calibration_is_kept_for_the_same_rig_and_made_again_for_another(lafan):
    """Every operation reads the rig again; its calibration is worked out once per rest pose, read-only (a caller's
    change would be the next caller's), and a rig whose rest pose moved is calibrated anew."""
    from inference.retarget import calibrate, calibrated
    clips, pose = lafan
    sk = clips[0].skeleton
    grot, heads = forward_kinematics(pose, sk.offsets, sk.parents)
    joints = np.arange(len(sk))
    rest = quat.to_matrix(grot)
    first, misfit = calibrate(sk, joints, rest, heads, [pose])
    again, _ = calibrate(sk, joints, rest.copy(), heads.copy(), [pose.copy()])
    assert again is first and not first.flags.writeable
    np.testing.assert_array_equal(first, calibrated(sk, joints, rest, heads, [pose])[0])
    moved = heads.copy()
    moved[sk.index("LeftHand")] += 5.0
    other, other_misfit = calibrate(sk, joints, rest, moved, [pose])
    assert other is not first and other_misfit > misfit
    np.testing.assert_array_equal(other, calibrated(sk, joints, rest, moved, [pose])[0])
