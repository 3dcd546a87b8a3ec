"""Body parts by joint names and hierarchy (inference/anatomy.py), on the skeletons of the real captures."""

import zipfile

import pytest

from inference.anatomy import PAWS, feet, hands, hinges, is_quadruped, leg_joints, legs, pelvis, stance_joints
from inference.bvh import parse_bvh


def _skeleton(path, member=None):
    if member is None:
        return parse_bvh(path.read_bytes(), path.name).skeleton
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(member))
        return parse_bvh(z.read(name), name).frames(0, 2).skeleton


@pytest.fixture(scope="module")
def skeletons(mocap):
    return {"lafan1": _skeleton(mocap / "lafan1-27.zip", "walk4_subject1.bvh"),
            "bandai": _skeleton(mocap / "bandai1.zip", "dataset-1_walk_active_001.bvh"),
            "cmu": _skeleton(mocap / "cmu-01_01.bvh"),
            "dog": _skeleton(mocap / "dog-mann.zip", "D1_008_KAN01_002.bvh")}


def names(sk, joints):
    return [sk.names[j] for j in joints]


def test_a_person_stands_on_two_legs_with_toes(skeletons):
    for key, (foot, toe, hip) in {"lafan1": ("LeftFoot", "LeftToe", "LeftUpLeg"),
                                  "bandai": ("Foot_L", "Toes_L", "UpperLeg_L"),
                                  "cmu": ("LeftFoot", "LeftToeBase", "LeftUpLeg")}.items():
        sk = skeletons[key]
        found = legs(sk)
        assert len(found) == 2 and not is_quadruped(sk), key
        assert (sk.names[found[0].foot], sk.names[found[0].toe], sk.names[found[0].hip]) == (foot, toe, hip)
        assert all(leg.paw == () for leg in found)
        assert names(sk, stance_joints(sk))[:2] == [sk.names[found[0].toe], sk.names[found[1].toe]]


def test_the_pelvis_is_where_legs_and_spine_part(skeletons):
    # Bandai's joint_Root carries its Hips; CMU's Hips has LHipJoint, RHipJoint and LowerBack below it
    assert {key: sk.names[pelvis(sk)] for key, sk in skeletons.items()} == {
        "lafan1": "Hips", "bandai": "Hips", "cmu": "Hips", "dog": "Hips"}
    assert skeletons["bandai"].names[0] != "Hips"


def test_the_dog_stands_on_four_paws_and_its_legs_leave_the_body_at_shoulder_and_hip(skeletons):
    sk = skeletons["dog"]
    assert is_quadruped(sk)
    assert names(sk, [leg.foot for leg in legs(sk)]) == list(PAWS)
    assert all(leg.toe == -1 and len(leg.paw) == 3 for leg in legs(sk))
    assert names(sk, leg_joints(sk)) == [f"{side}{part}" for side in ("Left", "Right")
                                         for part in ("Shoulder", "Arm", "ForeArm", "Hand")] + \
        [f"{side}{part}" for side in ("Left", "Right") for part in ("UpLeg", "Leg", "Foot")]
    assert names(sk, hands(sk.names)) == ["LeftHand", "RightHand"]


def test_feet_are_every_joint_named_as_a_foot_toe_or_ankle(skeletons):
    assert names(skeletons["lafan1"], feet(skeletons["lafan1"].names)) == ["LeftFoot", "LeftToe", "RightFoot",
                                                                            "RightToe"]
    assert names(skeletons["lafan1"], leg_joints(skeletons["lafan1"])) == [
        f"{side}{part}" for side in ("Left", "Right") for part in ("UpLeg", "Leg", "Foot", "Toe")]


def test_the_hinges_are_knees_ankles_with_toes_and_a_person_s_elbows(skeletons):
    found = {key: [tuple(skeletons[key].names[j] for j in h) for h in hinges(skeletons[key])] for key in skeletons}
    assert found["lafan1"] == [("LeftUpLeg", "LeftLeg", "LeftFoot"), ("LeftLeg", "LeftFoot", "LeftToe"),
                               ("RightUpLeg", "RightLeg", "RightFoot"), ("RightLeg", "RightFoot", "RightToe"),
                               ("LeftArm", "LeftForeArm", "LeftHand"), ("RightArm", "RightForeArm", "RightHand")]
    assert ("UpperLeg_L", "LowerLeg_L", "Foot_L") in found["bandai"] and len(found["bandai"]) == 6
    # the dog's legs end in paws below its feet and hands: a knee each, no ankle with a toe beyond it
    assert sorted(found["dog"]) == sorted([(f"{s}{a}", f"{s}{b}", f"{s}{c}") for s in ("Left", "Right")
                                           for a, b, c in (("Arm", "ForeArm", "Hand"), ("UpLeg", "Leg", "Foot"))])
