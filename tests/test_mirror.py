"""Mirroring: name pairing for every rig we meet, and the world-space property on real capture.

The property is the definition of a mirror image: the world position of each joint's partner in the
mirrored clip is the world reflection of the joint's position in the original. It holds exactly on
a symmetric skeleton; on the real ones, which keep their own (slightly lopsided) offsets, it holds up
to their asymmetry summed along each chain.
"""

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from inference import quat
from inference.bvh import parse_bvh, read_bvh
from inference.errors import BetwixtError
from inference.mirror import REFLECTIONS, local_reflections, mirror, mirror_map, world_reflection
from inference.motion import Motion, Skeleton, height

X, Y, Z, XYZ = (tuple(r) for r in REFLECTIONS.tolist())

# One clip per source, 300 frames or the whole clip: (archive or file, member, expected reflections).
CLIPS = {
    "lafan1": ("lafan1-27.zip", "walk4_subject1.bvh", {"*": Z}),
    "bandai": ("bandai1.zip", "dataset-1_walk_normal_001.bvh",
               {"joint_Root": X, "Hips": Y, "Spine": Z, "Chest": Z, "Neck": Z, "Head": Z, "*": XYZ}),
    "dog": ("dog-mann.zip", "D1_003_KAN01_001.bvh",
            {"Head": Y, "LeftShoulder": Y, "RightShoulder": Y, "*": Z}),
    "cmu": ("cmu-01_01.bvh", None, {"*": X}),
}


@pytest.fixture(scope="module")
def clips(mocap):
    out = {}
    for key, (source, member, _) in CLIPS.items():
        if member is None:
            motion = read_bvh(mocap / source)
        else:
            with zipfile.ZipFile(mocap / source) as archive:
                motion = parse_bvh(archive.read(member), member)
        out[key] = motion.frames(0, 300)
    return out


def pairs(names):
    partner = mirror_map(names)
    return {names[i]: names[p] for i, p in enumerate(partner) if p != i}


def centre(names):
    partner = mirror_map(names)
    return {names[i] for i, p in enumerate(partner) if p == i}


# ---- names -------------------------------------------------------------------------------------

def test_the_names_of_every_source_pair(clips):
    limbs = ["Shoulder", "Arm", "ForeArm", "Hand", "UpLeg", "Leg", "Foot"]
    lafan = clips["lafan1"].skeleton.names
    assert pairs(lafan) == {f"{a}{n}": f"{b}{n}" for n in limbs + ["Toe"]
                            for a, b in (("Left", "Right"), ("Right", "Left"))}
    assert centre(lafan) == {"Hips", "Spine", "Spine1", "Spine2", "Neck", "Head"}

    bandai = clips["bandai"].skeleton.names
    parts = ["Shoulder", "UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot", "Toes"]
    assert pairs(bandai) == {f"{n}_{a}": f"{n}_{b}" for n in parts for a, b in (("L", "R"), ("R", "L"))}
    assert centre(bandai) == {"joint_Root", "Hips", "Spine", "Chest", "Neck", "Head"}

    dog = clips["dog"].skeleton.names
    assert pairs(dog) == {f"{a}{n}": f"{b}{n}" for n in limbs
                          for a, b in (("Left", "Right"), ("Right", "Left"))}
    assert centre(dog) == {"Hips", "Spine", "Spine1", "Neck", "Head", "Tail", "Tail1"}

    cmu = clips["cmu"].skeleton.names
    parts = ["Shoulder", "Arm", "ForeArm", "Hand", "FingerBase", "UpLeg", "Leg", "Foot", "ToeBase"]
    expected = {f"{a}{n}": f"{b}{n}" for n in parts for a, b in (("Left", "Right"), ("Right", "Left"))}
    expected.update({f"{a}{n}": f"{b}{n}" for n in ("HipJoint", "Fingers", "Thumb")
                     for a, b in (("L", "R"), ("R", "L"))})
    assert pairs(cmu) == expected
    assert centre(cmu) == {"Hips", "LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head"}


@pytest.mark.parametrize("names, expected", [
    (["mixamorig:Hips", "mixamorig:LeftUpLeg", "mixamorig:RightUpLeg", "mixamorig:LeftHandThumb1",
      "mixamorig:RightHandThumb1", "mixamorig:HeadTop_End"],
     {"mixamorig:LeftUpLeg": "mixamorig:RightUpLeg",
      "mixamorig:LeftHandThumb1": "mixamorig:RightHandThumb1"}),
    (["DEF-spine", "DEF-spine.001", "DEF-upper_arm.L", "DEF-upper_arm.R", "DEF-upper_arm.L.001",
      "DEF-upper_arm.R.001", "DEF-f_index.01.L", "DEF-f_index.01.R", "DEF-pelvis.L", "DEF-pelvis.R"],
     {"DEF-upper_arm.L": "DEF-upper_arm.R", "DEF-upper_arm.L.001": "DEF-upper_arm.R.001",
      "DEF-f_index.01.L": "DEF-f_index.01.R", "DEF-pelvis.L": "DEF-pelvis.R"}),
    (["root", "hand.L", "hand.R", "forearm.l", "forearm.r", "thigh_L", "thigh_R", "calf_l", "calf_r"],
     {"hand.L": "hand.R", "forearm.l": "forearm.r", "thigh_L": "thigh_R", "calf_l": "calf_r"}),
    (["spine", "left_arm", "right_arm", "l_leg", "r_leg", "L_foot", "R_foot", "hand_left", "hand_right"],
     {"left_arm": "right_arm", "l_leg": "r_leg", "L_foot": "R_foot", "hand_left": "hand_right"}),
    (["Bip01", "Bip01 Pelvis", "Bip01 L Thigh", "Bip01 R Thigh", "HandLeft", "HandRight", "LEFT_EYE",
      "RIGHT_EYE"],
     {"Bip01 L Thigh": "Bip01 R Thigh", "HandLeft": "HandRight", "LEFT_EYE": "RIGHT_EYE"}),
])
def test_naming_schemes_pair(names, expected):
    expected = {**expected, **{b: a for a, b in expected.items()}}
    assert pairs(names) == expected


def test_words_that_only_contain_a_side_are_centre_joints():
    names = ["Root", "Upright", "Bright", "Cleft", "LowerBack", "Lumbar", "Ribs", "joint_Root", "LODGroup"]
    assert centre(names) == set(names)


@pytest.mark.parametrize("names, joint, side", [
    (["Hips", "LeftUpLeg", "RightUpLeg", "LeftHand"], "LeftHand", "left"),
    (["root", "hand.L"], "hand.L", "left"),
    (["mixamorig:Hips", "mixamorig:RightFoot"], "mixamorig:RightFoot", "right"),
    (["Hips", "LHipJoint", "RHipJoint", "LThumb"], "LThumb", "left"),
])
def test_an_unpaired_sided_joint_is_an_error_naming_it(names, joint, side):
    with pytest.raises(BetwixtError, match=rf"joint {joint!r} is a {side} joint .* no partner"):
        mirror_map(names)


# ---- the rule on a toy skeleton ----------------------------------------------------------------

def toy_motion(rng, frames=4):
    names = ["Hips", "LeftLeg", "RightLeg", "Spine", "LeftArm", "RightArm"]
    offsets = [[0, 90, 0], [10, 0, 0], [-10, 0, 0], [0, 10, 0], [15, 5, 0], [-15, 5, 0]]
    skeleton = Skeleton(names, [-1, 0, 0, 0, 3, 3], offsets)
    rotations = quat.normalize(rng.normal(size=(frames, 6, 4)))
    positions = np.broadcast_to(skeleton.offsets, (frames, 6, 3)).copy()
    positions[:, 0] = rng.normal(size=(frames, 3)) * 50
    return Motion(skeleton, rotations, positions, 30.0)


def test_a_centre_joint_reflected_across_x_turns_as_w_x_minus_y_minus_z():
    motion = toy_motion(np.random.default_rng(0))
    mirrored = mirror(motion, reflections=np.tile(X, (6, 1)))
    flip = np.array([1.0, 1.0, -1.0, -1.0])
    for j in (0, 3):  # the root (M = L = flip X) and the spine
        assert np.allclose(np.abs(np.sum(mirrored.rotations[:, j] * motion.rotations[:, j] * flip, -1)), 1)
    assert np.allclose(np.abs(np.sum(mirrored.rotations[:, 1] * motion.rotations[:, 2] * flip, -1)), 1)
    assert np.allclose(mirrored.positions[:, 0], motion.positions[:, 0] * [-1, 1, 1])
    assert np.array_equal(mirrored.positions[:, 1:], motion.positions[:, 1:])


def test_the_toy_skeleton_is_found_lateral_in_x_and_mirrors_exactly():
    motion = toy_motion(np.random.default_rng(1))
    assert np.array_equal(local_reflections(motion)[[0, 3]], [X, X])
    _, before = motion.global_transforms()
    _, after = mirror(motion).global_transforms()
    assert np.allclose(after[:, mirror_map(motion.skeleton.names)], before * [-1, 1, 1], atol=1e-9)


def test_a_skeleton_whose_partners_hang_from_different_parents_cannot_be_mirrored():
    motion = toy_motion(np.random.default_rng(2))
    skeleton = replace(motion.skeleton, parents=np.array([-1, 0, 0, 0, 3, 0]))
    with pytest.raises(BetwixtError, match="'LeftArm' and 'RightArm' are partners but their parents"):
        mirror(replace(motion, skeleton=skeleton))


def test_bad_axes_and_reflections_are_refused():
    motion = toy_motion(np.random.default_rng(3))
    with pytest.raises(BetwixtError, match="not the up axis Y"):
        mirror(motion, axis="Y")
    with pytest.raises(BetwixtError, match="reflections must be"):
        mirror(motion, reflections=np.ones((6, 3)))


# ---- real capture ------------------------------------------------------------------------------

def asymmetry(motion, reflections):
    """Per joint, how far the offset it keeps is from the exact mirror of its partner's."""
    sk = motion.skeleton
    partner = mirror_map(sk.names)
    still = np.array([not any(c.endswith("position") for c in chans) for chans in sk.channels])
    above = np.where((sk.parents < 0)[:, None], world_reflection(motion.up), reflections[sk.parents])
    gap = np.linalg.norm(sk.offsets - above * sk.offsets[partner], axis=-1)
    return np.where(still, gap, 0.0)


def symmetrised(motion, reflections):
    """The clip on its skeleton made exactly symmetric: each kept offset averaged with its mirror."""
    sk = motion.skeleton
    partner = mirror_map(sk.names)
    still = np.array([not any(c.endswith("position") for c in chans) for chans in sk.channels])
    above = np.where((sk.parents < 0)[:, None], world_reflection(motion.up), reflections[sk.parents])
    offsets = np.where(still[:, None], 0.5 * (sk.offsets + above * sk.offsets[partner]), sk.offsets)
    positions = motion.positions.copy()
    positions[:, still] = offsets[still]
    return replace(motion, skeleton=replace(sk, offsets=offsets), positions=positions)


@pytest.mark.parametrize("key", CLIPS)
def test_each_joint_gets_the_reflection_of_its_rig(clips, key):
    motion = clips[key]
    expected = CLIPS[key][2]
    found = [tuple(r) for r in local_reflections(motion).tolist()]
    assert found == [expected.get(n, expected["*"]) for n in motion.skeleton.names]


@pytest.mark.parametrize("key, largest", [("lafan1", 1e-3), ("bandai", 0.0), ("dog", 0.16), ("cmu", 0.31)])
def test_world_positions_are_the_mirror_of_the_originals(clips, key, largest):
    motion = clips[key]
    partner = mirror_map(motion.skeleton.names)
    reflect = world_reflection(motion.up)
    reflections = local_reflections(motion)
    _, before = motion.global_transforms()
    scale = height(before, motion.up)

    exact = symmetrised(motion, reflections)
    _, exact_before = exact.global_transforms()
    _, exact_after = mirror(exact).global_transforms()
    assert np.abs(exact_after[:, partner] - exact_before * reflect).max() < 1e-6 * scale

    # On the real skeleton, off by no more than its asymmetry summed from the root down.
    gap = asymmetry(motion, reflections)
    assert gap.max() <= largest
    bound = gap.copy()
    for j, p in enumerate(motion.skeleton.parents):
        if p >= 0:
            bound[j] += bound[p]
    _, after = mirror(motion).global_transforms()
    error = np.linalg.norm(after[:, partner] - before * reflect, axis=-1)
    assert np.all(error <= bound[partner] + 1e-9 * scale)


@pytest.mark.parametrize("key", CLIPS)
def test_mirroring_twice_gives_the_clip_back_on_the_same_skeleton(clips, key):
    motion = clips[key]
    once = mirror(motion)
    twice = mirror(once)
    assert once.skeleton is motion.skeleton and once.fps == motion.fps and once.up == motion.up
    assert np.abs(np.sum(twice.rotations * motion.rotations, axis=-1)).min() > 1.0 - 1e-12
    assert np.allclose(twice.positions, motion.positions, rtol=0, atol=1e-9)
    # Bones keep their length: translations stay the offsets, or (Bandai, animated) within 0.05 cm.
    assert np.abs(once.positions[:, 1:] - motion.positions[:, 1:]).max(axis=0)[
        np.ptp(motion.positions[:, 1:], axis=0).max(-1) < 1e-3].max() <= 0.05


def test_another_world_axis_gives_the_same_mirror_turned_round(clips):
    motion = clips["lafan1"]
    _, across_x = mirror(motion, axis="X").global_transforms()
    _, across_z = mirror(motion, axis="Z").global_transforms()
    assert np.allclose(across_z, across_x * [-1, 1, -1], atol=1e-6)


def test_reflections_of_a_whole_data_set_mirror_any_window_alike(mocap):
    with zipfile.ZipFile(mocap / "dog-mann.zip") as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".bvh"))[:8]
        motions = [parse_bvh(archive.read(n), n) for n in names]
    reflections = local_reflections(motions)
    names = motions[0].skeleton.names
    expected = CLIPS["dog"][2]
    assert [tuple(r) for r in reflections.tolist()] == [expected.get(n, expected["*"]) for n in names]
    frame = motions[0].frames(100, 101)
    twice = mirror(mirror(frame, reflections=reflections), reflections=reflections)
    assert np.abs(np.sum(twice.rotations * frame.rotations, axis=-1)).min() > 1.0 - 1e-12
