"""A fill's ends (inference/ends.py): eased at keys whose frames beyond are the user's, on benchmark-like
30-frame gaps of LaFAN1's test subject, the joints accelerate near the keys at most 1.5x as fast as the
capture does there (issue 43), and the feet that stand in the model's fill stay where they stand; keys
between two fills (Decompress's) met smoothly as well."""

import numpy as np
import pytest

from inference.contacts import contacts
from inference.edit import superres
from inference.ends import ends, joined
from inference.inbetween import fill_gaps, gap_in, sparse_keys
from inference.modelfile import open_model, shipped
from inference.motion import Motion, Skeleton, forward_kinematics
from commands import clip_of

GAP = 30
STARTS = range(150, 2400, 300)   # eight gaps a second and more apart, each key with the capture either side
SPAN = 3                         # frames either side of a key, as the benchmark's floor table reads them


@pytest.fixture(scope="module")
def filled(lafan1_zip):
    """``(model, capture, fill_gaps's motion, the same with no key eased, gaps)``."""
    model = open_model(shipped("rtn")[0])
    capture = clip_of(lafan1_zip, "obstacles1_subject5")
    gaps = [(s, s + GAP + 1) for s in STARTS]
    return model, capture, fill_gaps(model, capture, gaps), fill_gaps(model, capture, gaps, beyond=[(False, False)] * len(gaps)), gaps


def key_acceleration(rotations, positions, parents, gaps):
    """The largest acceleration of any joint (units a frame per frame) within SPAN frames of each key, over
    the keys."""
    world = forward_kinematics(rotations, positions, parents)[1]
    accel = np.linalg.norm(world[2:] - 2 * world[1:-1] + world[:-2], axis=-1).max(axis=1)   # at frames 1..F-2
    return np.array([accel[k - SPAN - 1:k + SPAN].max() for gap in gaps for k in gap])


def test_the_joints_near_the_keys_accelerate_at_most_half_again_the_captures(filled):
    model, capture, out, raw, gaps = filled
    parents = capture.skeleton.parents
    captured = key_acceleration(capture.rotations, capture.positions, parents, gaps).mean()
    eased = key_acceleration(out.rotations, out.positions, parents, gaps).mean()
    raw = key_acceleration(raw.rotations, raw.positions, parents, gaps).mean()
    assert eased <= 1.5 * captured, (eased, captured)
    assert eased < 0.9 * raw, (eased, raw)   # the ease, not the model, makes the bound


def test_the_feet_standing_in_the_models_fill_stay_where_they_stand(filled):
    model, capture, out, raw, gaps = filled
    parents = capture.skeleton.parents
    feet = [capture.skeleton.names.index(n) for n in ("LeftFoot", "RightFoot", "LeftToe", "RightToe")]
    before = forward_kinematics(raw.rotations, raw.positions, parents)[1][:, feet]
    eased = forward_kinematics(out.rotations, out.positions, parents)[1][:, feet]
    floor = before[[f for gap in gaps for f in gap]].min(axis=0)[:, 1]
    standing = contacts(before, floor, 1, model.layout.height, capture.fps)
    inside = np.zeros(capture.n_frames, dtype=bool)
    for start, end in gaps:
        inside[start + 1:end] = True
    standing &= inside[:, None]
    moved = np.linalg.norm(eased - before, axis=-1)
    assert standing.sum() > 50                       # the gaps hold standing feet to keep
    assert np.median(moved[standing]) < 0.5, np.median(moved[standing])   # cm
    assert moved[~standing & inside[:, None]].max() > 2.0   # while the ease moves the rest of the legs


def test_a_key_without_a_frame_beyond_it_is_left_as_the_model_made_it(filled):
    model, capture, _, _, gaps = filled
    start, end = gaps[0]
    gap = gap_in(capture, start, end, model.past)
    rot, pos = model.fill(gap)
    both = ends(gap, rot, pos, model.layout)
    neither = ends(gap, rot, pos, model.layout, first=False, last=False)
    assert np.array_equal(neither[0], rot) and np.array_equal(neither[1], pos)
    assert np.abs(both[0] - rot).max() > 1e-3


def test_decompress_meets_its_keys_as_smoothly_as_the_capture_and_no_further_from_it(filled, monkeypatch):
    """Every key of a Decompressed stretch lies between two fills: each fill's start carries on at the
    velocity of the frames before its key and the network's own velocity takes over a frame later, a jolt
    through the whole body (the shipped transformer's: 1.3x the capture's acceleration there; an RTN's more than
    1.5x), which :func:`joined` smooths to under half of it."""
    model, capture, *_ = filled
    stretch = capture.frames(900, 1621)
    keys = sparse_keys(stretch.n_frames, 30)
    gaps = list(zip(keys[:-1], keys[1:]))
    out = superres(model, stretch, 30)
    monkeypatch.setattr("inference.inbetween.joined", lambda motion, gaps: motion)
    kinked = superres(model, stretch, 30)
    parents = capture.skeleton.parents
    captured, smooth, raw = (key_acceleration(m.rotations, m.positions, parents, gaps[1:]).mean()
                             for m in (stretch, out, kinked))
    assert smooth <= 1.5 * captured and smooth < 0.5 * raw, (smooth, captured, raw)
    assert np.array_equal(out.rotations[keys], stretch.rotations[keys])
    assert np.array_equal(out.positions[keys], stretch.positions[keys])
    world = [forward_kinematics(m.rotations, m.positions, parents)[1] for m in (stretch, out, kinked)]
    errors = [np.linalg.norm(w - world[0], axis=-1).mean() for w in world[1:]]
    assert errors[0] <= errors[1], errors


def test_a_corner_at_a_key_between_two_fills_is_rounded_off_near_it_alone():
    """A root travelling at 2 then 6 units a frame, keyed at frame 20 between fills of frames 1-19 and 21-39:
    the frames within JOIN of the key take the corner smoothly; the key and the frames further out stay."""
    skeleton = Skeleton(["Hips"], np.array([-1]), np.zeros((1, 3)))
    frames = np.arange(41, dtype=np.float64)
    x = np.where(frames <= 20, 2 * frames, 40 + 6 * (frames - 20))
    motion = Motion(skeleton, np.tile([1.0, 0, 0, 0], (41, 1, 1)), np.stack([x, 0 * x, 0 * x], -1)[:, None], 30)
    out = joined(motion, [(0, 20), (20, 40)]).positions[:, 0, 0]
    accel = np.abs(np.diff(out, 2))
    assert accel.max() < 0.35 * np.diff(x, 2).max(), accel.max()   # the corner's 4 spread over the frames near it
    assert out[20] == 20 * 2 and np.array_equal(out[:14], x[:14]) and np.array_equal(out[27:], x[27:])
