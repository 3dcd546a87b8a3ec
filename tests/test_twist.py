"""Limb twists read from the hinges' planes (inference/twist.py), on LaFAN1's test subject and the shipped model."""

import json
import zipfile

import numpy as np
import pytest

from inference import twist
from inference.bvh import parse_bvh
from inference.modelfile import MODELS, open_model
from inference.motion import forward_kinematics

LIMBS = ("LeftUpLeg", "LeftLeg", "RightArm")


@pytest.fixture(scope="module")
def walk(mocap):
    """Subject 5 walking over obstacles (never trained on), the shipped human model's skeleton and reference pose."""
    model = open_model(MODELS / "rtn-human.onnx")
    with zipfile.ZipFile(mocap / "lafan1-27.zip") as z:
        name = next(n for n in z.namelist() if n.endswith("obstacles1_subject5.bvh"))
        motion = parse_bvh(z.read(name), name).frames(0, 900)
    assert list(motion.skeleton.names) == list(model.skeleton.names)
    return motion, model.skeleton, np.asarray(json.loads(model.metadata["betwixt.reference_pose"]))


def degrees(a, b):
    return np.degrees(2 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0.0, 1.0)))


def twisted(motion, skeleton, reference, angles):
    """``motion``'s rotations with the LIMBS' bones turned about their own length by ``angles`` (F, limbs)."""
    found = {turn.joint: turn for turn in twist.turns(skeleton, reference)}
    return twist._turned(motion.rotations, motion.positions, skeleton, tuple(found[skeleton.index(n)] for n in LIMBS),
                         angles)


def test_a_turn_about_a_bone_moves_no_joint_and_writing_undoes_the_reading(walk):
    motion, skeleton, reference = walk
    for fps in (24.0, 60.0):
        read, turns = twist.untwisted(motion.rotations, motion.positions, skeleton, reference, fps)
        before = forward_kinematics(motion.rotations, motion.positions, skeleton.parents)[1]
        after = forward_kinematics(read, motion.positions, skeleton.parents)[1]
        assert np.abs(after - before).max() < 1e-4
        assert len(turns.turns) == 6   # thighs and shins by their knees, upper arms by their elbows
        back = turns.undone(read, motion.positions, np.arange(motion.n_frames))
        assert degrees(back, motion.rotations).max() < 1e-4


def test_a_rig_s_constant_twist_reads_as_the_capture(walk):
    """Thighs and an upper arm turned 40 degrees about their length (a calibration between unlike rest poses)."""
    motion, skeleton, reference = walk
    clean = twist.untwisted(motion.rotations, motion.positions, skeleton, reference, 30.0)[0]
    wrong = twisted(motion, skeleton, reference, np.full((motion.n_frames, len(LIMBS)), np.radians(40.0)))
    read = twist.untwisted(wrong, motion.positions, skeleton, reference, 30.0)[0]
    limbs = [skeleton.index(n) for n in LIMBS]
    assert degrees(wrong, motion.rotations)[:, limbs].mean() > 35.0
    assert degrees(read, clean)[:, limbs].mean() < 3.0
    # the capture's own twists are the hinges' within a few degrees
    assert degrees(clean, motion.rotations)[:, limbs].mean() < 10.0


def test_a_control_rig_s_changing_twist_is_followed_frame_by_frame(walk):
    """An IK solver's twist: 60 degrees swinging to and fro once a second, read at 30 fps."""
    motion, skeleton, reference = walk
    t = np.arange(motion.n_frames) / 30.0
    swing = np.radians(60.0) * np.sin(2 * np.pi * t)[:, None] * np.ones(len(LIMBS))
    wrong = twisted(motion, skeleton, reference, swing)
    clean = twist.untwisted(motion.rotations, motion.positions, skeleton, reference, 30.0)[0]
    read = twist.untwisted(wrong, motion.positions, skeleton, reference, 30.0)[0]
    limbs = [skeleton.index(n) for n in LIMBS]
    assert degrees(wrong, clean)[:, limbs].mean() > 30.0
    assert degrees(read, clean)[:, limbs].mean() < 12.0


def test_a_reference_with_straight_limbs_leaves_the_read_as_it_is(walk):
    motion, skeleton, _ = walk
    rest = np.tile([1.0, 0.0, 0.0, 0.0], (len(skeleton), 1))
    read, turns = twist.untwisted(motion.rotations, motion.positions, skeleton, rest, 30.0)
    assert turns.turns == () and read is motion.rotations


def test_a_dog_s_shins_are_turned_by_their_knees(mocap):
    """A dog's legs end in paws the model's skeleton has no joint for, so no ankle gives its shins' plane; a
    knee bends about one axis of both its bones, so the knee's plane turns the shin as well as the thigh
    (Rigify's wolf read its shins and forearms 12-50 degrees off the capture's twist)."""
    model = open_model(MODELS / "rtn-dog.onnx")
    reference = np.asarray(json.loads(model.metadata["betwixt.reference_pose"]))
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        name = next(n for n in z.namelist() if n.endswith("D1_008_KAN01_002.bvh"))
        motion = parse_bvh(z.read(name), name).frames(0, 600)
    skeleton = model.skeleton
    shins = [skeleton.index(n) for n in ("LeftForeArm", "RightForeArm", "LeftLeg", "RightLeg")]
    found = {turn.joint: turn for turn in twist.turns(skeleton, reference)}
    assert set(shins) <= set(found) and all(found[j].hinge[1] == j for j in shins)   # each by its own knee
    wrong = twist._turned(motion.rotations, motion.positions, skeleton, tuple(found[j] for j in shins),
                          np.full((motion.n_frames, len(shins)), np.radians(40.0)))
    clean = twist.untwisted(motion.rotations, motion.positions, skeleton, reference, 60.0)[0]
    read = twist.untwisted(wrong, motion.positions, skeleton, reference, 60.0)[0]
    assert degrees(wrong, clean)[:, shins].mean() > 35.0
    assert degrees(read, clean)[:, shins].mean() < 5.0
