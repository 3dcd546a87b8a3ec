"""The keys' own spline and the lean toward it tried on probes (inference/keyspline.py, edit.fill's ``around``)."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inference import edit, keyspline, quat
from inference.bvh import parse_bvh
from inference.modelfile import open_model
from inference.motion import forward_kinematics
from inference.retarget import Retargeting, natural_pose
from commands import clip_of

MODELS = Path(__file__).resolve().parents[1] / "inference" / "models"


@pytest.fixture(scope="module")
def model():
    return open_model(MODELS / "rtn-human.onnx")


@pytest.fixture(scope="module")
def walk(lafan1_zip):
    return clip_of(lafan1_zip, "obstacles1_subject5")


def steady(motion, n=60):
    """``n`` frames of ``motion``'s first pose carried along at a constant velocity, its joints' turns fixed."""
    rotations = np.repeat(motion.rotations[:1], n, axis=0)
    positions = np.repeat(motion.positions[:1], n, axis=0)
    positions[:, 0] += np.arange(n)[:, None] * np.array([1.5, 0.0, -0.7])
    return replace(motion, rotations=rotations, positions=positions)


def test_a_motion_at_constant_velocity_is_its_keys_spline(walk):
    still = steady(walk)
    rotations, root = keyspline.spline(still, 20, 35)
    assert rotations.shape == (14, len(walk.skeleton), 4) and root.shape == (14, 3)
    assert np.abs(np.abs(np.sum(rotations * still.rotations[21:35], -1)) - 1).max() < 1e-9
    assert np.abs(root - still.positions[21:35, 0]).max() < 1e-9
    # a captured stretch is not: the spline is a guess from the keys and their neighbours alone
    rotations, root = keyspline.spline(walk, 1000, 1015)
    assert np.abs(root - walk.positions[1001:1015, 0]).max() > 0.5                # cm


def test_a_lean_goes_from_the_fill_to_the_spline(walk):
    towards = keyspline.spline(walk, 1000, 1015)
    fill = (-walk.rotations[1001:1015], walk.positions[1001:1015, 0])   # the other sign: the same turns
    for share in (0.0, 1.0):
        rotations, root = keyspline.leaned(*fill, towards, share)
        want = fill if share == 0 else towards
        assert np.abs(np.abs(np.sum(rotations * want[0], -1)) - 1).max() < 1e-9
        assert np.abs(root - want[1]).max() < 1e-9
    halfway = keyspline.leaned(*fill, towards, 0.5)[1]
    assert np.allclose(halfway, (fill[1] + towards[1]) / 2)


def test_probes_are_the_nearest_gaps_of_each_length_clear_of_gaps_and_of_each_other():
    gaps = [(50, 65), (120, 150), (200, 210)]
    found = keyspline.probes(gaps, [0, 1], 0, 300, 10, 10)
    # the first gap's: just before its context and just after its end key; the second has no room before it
    # (the first gap and its probe after) and none is cut for the third, which was not asked for
    assert found == [(0, (25, 40)), (0, (75, 90)), (1, (160, 190))]
    assert keyspline.probes(gaps, [0], 30, 300, 10, 10) == [(0, (75, 90))]   # the read starts too late


def test_leaning_takes_gaps_whose_keys_velocities_are_the_animators(walk):
    gaps = [(10, 25), (25, 40), (60, 75), (100, 116)]
    # the first two meet at a key (each one's velocity there is the other's fill), the last is over half a second
    assert keyspline.leaning(gaps, None, 0, 200, 30) == [2]
    assert keyspline.leaning(gaps, [True, True, False, True], 0, 200, 30) == []
    assert keyspline.leaning([(0, 15)], None, 0, 200, 30) == []                 # no frame before its first key


def test_shares_are_the_probes_least_error(walk):
    still = steady(walk)
    parents = walk.skeleton.parents
    off = still.rotations.copy()
    off[21:35, 5] = quat.normalize(off[21:35, 5] + 0.3)                         # a fill that errs, the spline not
    tried = replace(still, rotations=off)
    assert keyspline.shares(still, tried, 0, [(0, (20, 35))], parents) == {0: 1.0}
    assert keyspline.shares(still, still, 0, [(0, (20, 35))], parents) == {0: 0.0}   # a tie keeps the fill


def _errors(model, motion, length, every=40, count=12):
    """Mean joint error (cm) of gaps of ``length`` frames cut every ``every`` frames of ``motion``, each filled
    alone as Fill Gaps fills it, without and with the frames around it (``edit.surround``) for the probes."""
    parents = motion.skeleton.parents
    truth = forward_kinematics(motion.rotations, motion.positions, parents)[1]
    out = []
    for a in range(12, motion.n_frames - length - 12, every)[:count]:
        gap = [(a, a + length)]
        first, last = (max(f, 0) if i == 0 else min(f, motion.n_frames - 1)
                       for i, f in enumerate(edit.window(model, gap, motion.fps)))
        near, far = edit.surround(model, gap, motion.fps)
        near, far = max(near, 0), min(far, motion.n_frames - 1)
        inside = np.arange(a + 1, a + length)
        row = []
        for around in (None, (motion.frames(near, far + 1), near)):
            filled = edit.fill(model, motion.frames(first, last + 1), first, gap, motion.fps, around=around)
            got = forward_kinematics(filled.rotations[inside - first], filled.positions[inside - first], parents)[1]
            row.append(np.linalg.norm(got - truth[inside], axis=-1).mean())
        out.append(row)
    return np.mean(out, axis=0)


def test_on_another_labs_capture_the_lean_brings_short_fills_nearer(model, mocap):
    """CMU's 01_01 (jumps, turns; never trained on) onto the model's skeleton: its half-second fills lean
    toward the keys' spline and come nearer the capture; session 52 measured 0.80 of the plain fill's error
    over 405 such gaps of 30 CMU clips."""
    cmu = parse_bvh((mocap / "cmu-01_01.bvh").read_bytes(), "cmu-01_01.bvh").frames(1, 2752).resample(30)
    reference = np.asarray(json.loads(model.metadata["betwixt.reference_pose"]))
    onto = Retargeting.build(cmu.skeleton, model.skeleton, natural_pose([cmu]), reference, name=cmu.name)(cmu)
    plain, leaned = _errors(model, onto, 15)
    assert leaned < 0.9 * plain, (plain, leaned)


def test_on_the_model_s_own_test_subject_the_lean_loses_nothing(model, walk):
    """LaFAN1's subject 5 (the benchmark's held-out subject of the model's own capture), half-second gaps over
    the whole clip: the probes keep the fill where it is nearer (measured: 0.96 of its error; the clip's first
    12 gaps alone, where the subject stands, 1.05)."""
    plain, leaned = _errors(model, walk, 15, every=80, count=None)
    assert leaned < plain, (plain, leaned)
