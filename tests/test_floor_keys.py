"""Decompress on the floor (issue 43): planting lifts a swinging foot clear of the floor, but two feet that glide
together are not both lifted into a hop the keys did not ask for (inference/contacts.py's ``hops``), on the shipped
rtn-lafan1 Decompressing LaFAN1's test subject from a key a second."""

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from inference.bvh import parse_bvh
from inference.contacts import hops, plant
from inference.edit import superres
from inference.inbetween import fill_gaps, sparse_keys
from inference.modelfile import MODELS, open_model
from lab import floor_metrics


@pytest.fixture(scope="module")
def model():
    return open_model(MODELS / "rtn-lafan1.onnx")


def lowest_above_ground(motion, capture):
    """(F,) the lowest foot joint of ``motion`` above its ground, the ``capture``'s (cm)."""
    feet = floor_metrics.feet_of(capture.skeleton)

    def points(m):
        grot, gpos = m.global_transforms()
        return floor_metrics.foot_points(feet, grot, gpos)

    return (points(motion)[..., 1] - floor_metrics.ground_of(points(capture))).min(axis=1)


def test_decompress_feet_gliding_together_are_not_lifted_into_a_hop(lafan1_zip, model):
    """The fall-and-get-up's walk off, 4 s from a key a second: the fill's feet glide together near the floor
    (its lowest foot at most 4.3 cm up) and full arcs over both lifted them into hops, the lowest foot up to
    19.8 cm, 49 frames more than 5 cm above the capture's lowest; held low where no other leg stands, 7.2 cm
    and 9 frames."""
    with zipfile.ZipFile(lafan1_zip) as z:
        capture = parse_bvh(z.read("fallAndGetUp1_subject5.bvh"), "fallAndGetUp1_subject5").frames(3150, 3270)
    keys = sparse_keys(capture.n_frames, 30)
    raw = superres(model, capture, 30)
    planted = plant(raw, list(zip(keys[:-1], keys[1:])), model.layout.height)
    fill, truth = lowest_above_ground(raw, capture), lowest_above_ground(planted, capture)
    assert fill.max() < 6.0                                   # the network's own feet: on the floor
    assert truth.max() < 10.0, truth.max()
    assert np.count_nonzero(truth - lowest_above_ground(capture, capture) > 5.0) <= 15


def test_a_swing_clears_the_floor_fully_only_while_another_leg_stands():
    """Two legs' arcs over 30 frames: where the other leg stands, each keeps its arc; where neither stands, both
    are held at the low bound, fading between over the fade's frames."""
    frames, fade, low = 30, 3, 4.0
    arc = 20.0 * np.sin(np.pi * np.arange(1, frames + 1) / (frames + 1))
    clear = np.stack([arc, arc], axis=1)
    stands = np.zeros((frames, 2), dtype=bool)
    assert hops(clear, stands, low, fade).max() == pytest.approx(low)          # both swing: no hop
    stands[:, 1] = True                                                        # the right leg stands throughout
    out = hops(clear, stands, low, fade)
    np.testing.assert_allclose(out[:, 0], arc)                                 # the left swings over it
    assert out[:, 1].max() == pytest.approx(low)
    stands[:15, 1] = False                                                     # the right leg lands at frame 15
    out = hops(clear, stands, low, fade)
    assert out[:12, 0].max() == pytest.approx(low) and np.allclose(out[15:, 0], arc[15:])
    rise = np.diff(out[11:16, 0])                                              # 16 cm onto the arc
    assert np.all(rise > 0) and rise.max() < 5.0                               # in four steps, not one


def test_a_dog_s_paws_keep_their_arcs_where_no_other_paw_stands(dog_zip, monkeypatch):
    """A quadruped's strides fly (a trot's, a canter's): the hop bound is a person's. The dog's in-betweener
    stores no End Sites, so its legs have no paw offsets; planted as a person's, its paws were held low through
    the flight and the rig suite's dog rows skated 2-7 times as much (dog-010 0.071 -> 0.362 cm a frame)."""
    import inference.contacts as contacts
    model = open_model(MODELS / "rtn-dog.onnx")
    with zipfile.ZipFile(dog_zip) as z:
        name = next(n for n in z.namelist() if n.endswith("D1_010_KAN01_003.bvh"))
        capture = parse_bvh(z.read(name), name)
    capture = replace(capture, skeleton=model.skeleton)   # as the add-on reads a rig: the model's joints
    gaps = [(10, 70), (70, 130), (130, 190)]   # the rig suite's 1 s gaps
    raw = fill_gaps(model, capture, gaps)
    planted = plant(raw, gaps, model.layout.height)
    monkeypatch.setattr(contacts, "HOP", np.inf)   # no bound at all
    unbounded = plant(raw, gaps, model.layout.height)
    np.testing.assert_array_equal(planted.rotations, unbounded.rotations)
