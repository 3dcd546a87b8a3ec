"""Skeleton, Motion and the kinematics on them, on random rigs and on the shared motion capture."""

import zipfile

import numpy as np
import pytest

from inference import quat
from inference.bvh import parse_bvh
from inference.errors import BetwixtError
from inference.motion import (Motion, Skeleton, forward_kinematics, forward_positions, guess_up_axis, height,
                              inverse_kinematics)
from rotations import angle_between, random_quats, same_rotation

Y_UP_TO_Z_UP = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # Blender's BVH import: (x, y, z) -> (x, -z, y)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def random_motion(rng, frames=9, joints=12):
    parents = [-1] + [int(rng.integers(0, j)) for j in range(1, joints)]
    offsets = rng.normal(size=(joints, 3)) * 10
    skeleton = Skeleton([f"j{j}" for j in range(joints)], parents, offsets)
    positions = np.broadcast_to(offsets, (frames, joints, 3)).copy()
    positions[:, 0] = rng.normal(size=(frames, 3)) * 100
    return Motion(skeleton, random_quats(rng, frames, joints), positions, fps=30.0)


@pytest.fixture(scope="module")
def cmu(mocap):
    return parse_bvh((mocap / "cmu-01_01.bvh").read_bytes(), "cmu-01_01.bvh")


@pytest.fixture(scope="module")
def dog(mocap):
    with zipfile.ZipFile(mocap / "dog-mann.zip") as archive:
        return parse_bvh(archive.read("D1_001_KAN01_001.bvh"), "D1_001_KAN01_001.bvh")


@pytest.fixture(scope="module")
def lafan(mocap):
    with zipfile.ZipFile(mocap / "lafan1-27.zip") as archive:
        return [parse_bvh(archive.read(n), n) for n in ("walk4_subject1.bvh", "push1_subject2.bvh")]


# --- kinematics ---------------------------------------------------------------------------------

def naive_fk(motion):
    """World joint positions by 4x4 matrices, one frame and one joint at a time."""
    sk = motion.skeleton
    out = np.zeros(motion.positions.shape)
    for f in range(motion.n_frames):
        world = []
        for j, p in enumerate(sk.parents):
            local = np.eye(4)
            local[:3, :3] = quat.to_matrix(motion.rotations[f, j])
            local[:3, 3] = motion.positions[f, j]
            world.append(local if p < 0 else world[p] @ local)
            out[f, j] = world[j][:3, 3]
    return out


def test_forward_kinematics_matches_matrix_chains(rng):
    motion = random_motion(rng)
    grot, gpos = motion.global_transforms()
    assert np.abs(gpos - naive_fk(motion)).max() < 1e-10
    assert np.allclose(np.linalg.norm(grot, axis=-1), 1.0, atol=1e-14)
    # a joint's world rotation is its parent's times its own
    for j, p in enumerate(motion.skeleton.parents[1:], 1):
        assert same_rotation(grot[:, j], quat.mul(grot[:, p], motion.rotations[:, j])) < 1e-15


def test_forward_kinematics_on_real_data(cmu):
    clip = cmu.frames(0, 300)
    assert np.abs(clip.global_transforms()[1] - naive_fk(clip)).max() < 1e-9


def test_forward_positions_are_forward_kinematics_to_the_32_bit_inputs_the_network_reads(rng, cmu):
    """The matrix route to world positions (a fill's target key and the frame after it) agrees with the
    quaternions' to the last bits, so that the network's 32-bit inputs are the same."""
    for motion in (random_motion(rng), cmu.frames(0, 300)):
        gpos = motion.global_transforms()[1]
        fast = forward_positions(motion.rotations, motion.positions, motion.skeleton.parents)
        assert fast.shape == gpos.shape and np.abs(fast - gpos).max() < 1e-12 * np.abs(gpos).max()
        assert np.mean(fast.astype(np.float32) == gpos.astype(np.float32)) > 0.999
    batch = forward_positions(np.stack([motion.rotations[:4]] * 2), np.stack([motion.positions[:4]] * 2),
                              motion.skeleton.parents)
    assert np.array_equal(batch[1], forward_positions(motion.rotations[:4], motion.positions[:4],
                                                      motion.skeleton.parents))


def test_rest_pose_is_the_sum_of_offsets():
    sk = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 0], [[1, 2, 3], [0, 1, 0], [0, 0, 2], [5, 0, 0]])
    motion = Motion(sk, np.tile([1.0, 0, 0, 0], (2, 4, 1)), np.tile(sk.offsets, (2, 1, 1)), fps=24)
    _, gpos = motion.global_transforms()
    assert np.allclose(gpos, [[1, 2, 3], [1, 3, 3], [1, 3, 5], [6, 2, 3]], atol=0)


def test_inverse_kinematics_undoes_forward_kinematics(rng):
    motion = random_motion(rng, frames=20, joints=15)
    grot, gpos = motion.global_transforms()
    rot, pos = inverse_kinematics(grot, gpos, motion.skeleton.parents)
    assert np.abs(rot - motion.rotations).max() < 1e-14  # no sign flips either
    assert np.abs(pos - motion.positions).max() < 1e-12
    grot2, gpos2 = forward_kinematics(rot, pos, motion.skeleton.parents)
    assert np.abs(grot2 - grot).max() < 1e-14 and np.abs(gpos2 - gpos).max() < 1e-12


def test_inverse_kinematics_on_real_data(cmu, dog):
    for motion in (cmu, dog):
        grot, gpos = motion.global_transforms()
        rot, pos = inverse_kinematics(grot, gpos, motion.skeleton.parents)
        assert np.abs(rot - motion.rotations).max() < 1e-12
        assert np.abs(pos - motion.positions).max() < 1e-9 * np.abs(motion.positions).max()


def test_kinematics_broadcast_over_a_batch(rng):
    motions = [random_motion(rng, frames=5, joints=6) for _ in range(3)]
    parents = motions[0].skeleton.parents
    rot = np.stack([m.rotations for m in motions])
    pos = np.stack([m.positions for m in motions])
    grot, gpos = forward_kinematics(rot, pos, parents)
    assert grot.shape == (3, 5, 6, 4) and gpos.shape == (3, 5, 6, 3)
    for b, m in enumerate(motions):
        g1, p1 = forward_kinematics(m.rotations, m.positions, parents)
        assert np.abs(grot[b] - g1).max() < 1e-15 and np.abs(gpos[b] - p1).max() < 1e-12
    back_rot, back_pos = inverse_kinematics(grot, gpos, parents)
    assert np.abs(back_rot - rot).max() < 1e-14 and np.abs(back_pos - pos).max() < 1e-12


# --- resampling ---------------------------------------------------------------------------------

def check_coinciding_frames(original, resampled, step):
    """Resampled frame k sits at original frame ``step * k``: the very same pose."""
    n = resampled.n_frames
    assert same_rotation(resampled.rotations, original.rotations[::step][:n]) < 1e-12
    assert np.abs(resampled.positions - original.positions[::step][:n]).max() < 1e-12


def test_resample_cmu_120_to_30(cmu):
    assert (cmu.n_frames, cmu.fps) == (2752, 120.0)
    low = cmu.resample(30)
    assert low.fps == 30.0 and low.n_frames == 688  # times 0, 1/30 .. 687/30 s <= 2751/120 s
    assert low.skeleton is cmu.skeleton
    check_coinciding_frames(cmu, low, 4)


def test_resample_dog_60_to_30(dog):
    assert (dog.n_frames, dog.fps) == (1531, 60.0)
    low = dog.resample(30)
    assert low.fps == 30.0 and low.n_frames == 766
    check_coinciding_frames(dog, low, 2)


@pytest.mark.parametrize("fps", [24, 25, 29.97, 50, 59.94, 90, 240, 1.5])
def test_resample_covers_the_clip_and_no_more(dog, fps):
    out = dog.resample(fps)
    last = (dog.n_frames - 1) / dog.fps
    assert (out.n_frames - 1) / fps <= last + 1e-9 < out.n_frames / fps
    assert np.allclose(np.linalg.norm(out.rotations, axis=-1), 1.0, atol=1e-12)
    assert np.all(np.sum(out.rotations[1:] * out.rotations[:-1], axis=-1) >= 0)  # unrolled
    assert same_rotation(out.rotations[0], dog.rotations[0]) < 1e-15


def test_upsampling_puts_slerp_and_lerp_midpoints_between_frames(dog):
    clip = dog.frames(0, 200)
    high = clip.resample(120)
    assert high.n_frames == 2 * clip.n_frames - 1
    assert same_rotation(high.rotations[::2], clip.rotations) < 1e-12
    assert np.abs(high.positions[::2] - clip.positions).max() < 1e-12
    mid = high.rotations[1::2]
    before, after = clip.rotations[:-1], clip.rotations[1:]
    assert np.abs(angle_between(before, mid) - angle_between(mid, after)).max() < 1e-7
    assert np.abs(angle_between(before, mid) + angle_between(mid, after)
                  - angle_between(before, after)).max() < 1e-7
    assert np.abs(high.positions[1::2] - 0.5 * (clip.positions[:-1] + clip.positions[1:])).max() < 1e-12


def test_resample_up_and_back_down_is_exact(dog, cmu):
    for motion in (dog, cmu.frames(0, 500)):
        back = motion.resample(2 * motion.fps).resample(motion.fps)
        assert back.n_frames == motion.n_frames and back.fps == motion.fps
        assert same_rotation(back.rotations, motion.rotations) < 1e-12
        assert np.abs(back.positions - motion.positions).max() < 1e-10


@pytest.mark.parametrize("clip, fps", [("cmu", 30), ("cmu", 60), ("dog", 30), ("dog", 24)])
def test_resample_down_and_back_up_stays_close(request, clip, fps):
    """What downsampling loses comes back as interpolation: close, measured in world positions.

    The mean and 99th percentile, not the maximum: CMU's first frame is a different pose from the
    second (a 136-degree jump at the forearm) and no resampling can keep such a jump.
    """
    motion = request.getfixturevalue(clip)
    back = motion.resample(fps).resample(motion.fps)
    assert back.fps == motion.fps
    assert motion.n_frames - motion.fps / fps < back.n_frames <= motion.n_frames
    world = motion.global_transforms()[1]
    size = height(world)
    error = np.linalg.norm(back.global_transforms()[1] - world[:back.n_frames], axis=-1)
    assert error.mean() < 1e-3 * size
    assert np.percentile(error, 99) < 1e-2 * size
    coinciding = round(motion.fps) // np.gcd(round(motion.fps), fps)  # every 4th of 120 for 30, 5th of 60 for 24
    assert error[::coinciding].max() < 1e-9 * size
    assert error.max() > 1e-6 * size  # the in-between frames did move


def test_resample_single_frame_and_names(rng):
    one = random_motion(rng, frames=1)
    out = one.resample(60)
    assert out.n_frames == 1 and out.fps == 60
    assert same_rotation(out.rotations, one.rotations) < 1e-15
    assert out.name == one.name and out.up == one.up


@pytest.mark.parametrize("fps", [0, -30, float("nan"), float("inf")])
def test_resample_refuses_bad_rates(rng, fps):
    with pytest.raises(BetwixtError, match="resample"):
        random_motion(rng).resample(fps)


# --- the Motion and Skeleton types --------------------------------------------------------------

def test_motion_accessors(cmu):
    assert cmu.duration == pytest.approx(2752 / 120)
    assert np.array_equal(cmu.root_positions, cmu.positions[:, 0])
    part = cmu.frames(100, 250)
    assert part.n_frames == 150 and part.fps == cmu.fps and part.skeleton is cmu.skeleton
    assert np.array_equal(part.rotations, cmu.rotations[100:250])
    assert cmu.frames(-10).n_frames == 10


def test_skeleton_lookups(cmu, dog):
    sk = cmu.skeleton
    assert len(sk) == 31 and sk.names[0] == "Hips"
    assert sk.index("LeftUpLeg") == 2
    assert [sk.names[c] for c in sk.children(0)] == ["LHipJoint", "RHipJoint", "LowerBack"]
    assert sk.children(sk.index("LeftToeBase")) == []
    with pytest.raises(BetwixtError, match="Tail"):
        sk.index("Tail")
    copy = Skeleton(sk.names, sk.parents.copy(), sk.offsets * 2)
    assert sk.same_hierarchy(copy)
    assert not sk.same_hierarchy(dog.skeleton)
    assert not sk.same_hierarchy(Skeleton(sk.names, [-1] + [0] * 30, sk.offsets))


def test_skeleton_default_channels():
    sk = Skeleton(["root", "a"], [-1, 0], np.zeros((2, 3)))
    assert sk.channels[0] == ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation")
    assert sk.channels[1] == ("Zrotation", "Yrotation", "Xrotation")


@pytest.mark.parametrize("names, parents, offsets, channels", [
    (["a", "b"], [-1, 0], np.zeros((3, 3)), None),             # offsets for three joints
    (["a", "b"], [-1, 0, 0], np.zeros((2, 3)), None),          # parents for three joints
    (["a", "b"], [-1, 0], np.zeros((2, 2)), None),             # 2-d offsets
    (["a", "b"], [-1, 0], np.zeros((2, 3)), (("Xrotation",),)),  # channels for one joint
    (["a", "b"], [0, -1], np.zeros((2, 3)), None),             # root not first
    (["a", "b"], [-1, -1], np.zeros((2, 3)), None),            # two roots
    (["a", "b", "c"], [-1, 2, 0], np.zeros((3, 3)), None),     # child before parent
    (["a", "b"], [-1, 1], np.zeros((2, 3)), None),             # own parent
    ([], [], np.zeros((0, 3)), ()),                            # no joints
])
def test_skeleton_validation(names, parents, offsets, channels):
    with pytest.raises(BetwixtError):
        Skeleton(names, parents, offsets, channels=channels)


@pytest.mark.parametrize("change", [
    dict(rotations=lambda r: r[:, :2]),           # joints missing
    dict(positions=lambda p: p[:3]),              # frames disagree
    dict(rotations=lambda r: r[..., :3]),         # not quaternions
    dict(positions=lambda p: p[:, :, :2]),        # 2-d positions
    dict(positions=lambda p: p[:, 0]),            # root-only positions
    dict(rotations=lambda r: r.reshape(4, 12)),   # flat
    dict(fps=0), dict(fps=-24), dict(fps=float("nan")), dict(fps=float("inf")),
    dict(up="W"), dict(up="y"), dict(up=""), dict(up="XY"),
], ids=["joints missing", "frames disagree", "not quaternions", "2-d positions", "root-only positions", "flat",
        "fps=0", "fps=-24", "fps=nan", "fps=inf", "up=W", "up=y", "up=''", "up=XY"])   # the same in every worker
def test_motion_validation(rng, change):
    good = random_motion(rng, frames=4, joints=3)
    args = dict(skeleton=good.skeleton, rotations=good.rotations, positions=good.positions, fps=30.0, up="Y")
    for key, value in change.items():
        args[key] = value(args[key]) if callable(value) else value
    with pytest.raises(BetwixtError):
        Motion(**args)


def test_motion_accepts_every_axis_and_any_positive_rate(rng):
    good = random_motion(rng, frames=4, joints=3)
    for up in "XYZ":
        assert Motion(good.skeleton, good.rotations, good.positions, fps=0.5, up=up).up == up
    assert Motion(good.skeleton, good.rotations, good.positions, fps=29.97).fps == 29.97


def test_errors_are_betwixt_errors():
    from inference.errors import BVHError
    e = BVHError("some/file.bvh", "something is wrong", 12)
    assert isinstance(e, BetwixtError) and str(e) == "some/file.bvh, line 12: something is wrong"
    assert (e.path, e.line) == ("some/file.bvh", 12)
    assert str(BVHError("f.bvh", "bad")) == "f.bvh: bad"


# --- up axis and height -------------------------------------------------------------------------

def test_up_axis_and_height_of_real_clips(lafan, cmu):
    for motion in lafan + [cmu]:
        world = motion.global_transforms()[1]
        assert guess_up_axis(world) == "Y", motion.name
        z_up = world @ Y_UP_TO_Z_UP.T
        assert guess_up_axis(z_up) == "Z", motion.name
        assert height(z_up, "Z") == pytest.approx(height(world, "Y"), rel=1e-12)
    assert 130 < height(lafan[0].global_transforms()[1]) < 190    # centimetres, an adult
    assert 20 < height(cmu.global_transforms()[1]) < 30           # CMU's own unit (inches / 2.54)


def test_up_axis_of_a_still_clip_is_bvh_convention(rng):
    still = np.repeat(rng.normal(size=(1, 10, 3)), 20, axis=0)
    assert guess_up_axis(still) == "Y"


def test_height_is_robust_to_a_few_odd_frames():
    world = np.zeros((100, 3, 3))
    world[:, 1, 1] = 170.0
    world[:3, 1, 1] = 400.0  # three glitched frames out of a hundred
    assert height(world) == pytest.approx(170.0)
    assert height(world[..., [0, 2, 1]], "Z") == pytest.approx(170.0)
