"""Planted paws (inference/contacts.py) on the dog: the four legs found on a real clip of the capture,
and the shipped mann-dog's fills of gaps in a test-split clip, which it never trained on, planted."""

import zipfile

import numpy as np
import pytest

from inference.anatomy import legs
from inference.bvh import parse_bvh
from inference.contacts import GROUND, held_contacts, locks, plant
from inference.guard import ground
from inference.inbetween import fill_gaps
from lab import metrics
from inference.modelfile import MODELS, open_model

WALK = "D1_008_KAN01_002"   # a test clip: walking, then sitting down
N = 59                      # in-between frames of a 1 s gap


@pytest.fixture(scope="module")
def model():
    return open_model(MODELS / "mann-dog.onnx")


@pytest.fixture(scope="module")
def walk(mocap):
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        member = next(n for n in z.namelist() if n.endswith(WALK + ".bvh"))
        return parse_bvh(z.read(member), member).frames(0, 600)


@pytest.fixture(scope="module")
def filled(walk, model):
    """Three 1 s gaps of the walk, each with its own second of context on either side, filled by the
    model, and the fill planted."""
    gaps = [(s, s + N + 1) for s in range(model.past, walk.n_frames - N - model.past - 1, N + 2 * model.past)]
    fill = fill_gaps(model, walk, gaps)
    return gaps, fill, plant(fill, gaps, model.layout.height)


def test_the_dog_has_four_legs_standing_on_its_paws(walk):
    sk = walk.skeleton
    found = {sk.names[leg.foot]: (sk.names[leg.hip], sk.names[leg.knee], leg.toe, leg.paw) for leg in legs(sk)}
    front, back = (7.2, 0.0, 0.0), (0.0, -10.8, 0.0)    # the End Sites' offsets in the dog's BVH
    assert found == {"LeftHand": ("LeftArm", "LeftForeArm", -1, front),
                     "RightHand": ("RightArm", "RightForeArm", -1, front),
                     "LeftFoot": ("LeftUpLeg", "LeftLeg", -1, back), "RightFoot": ("RightUpLeg", "RightLeg", -1, back)}


def test_planted_paws_skate_less_and_only_generated_frames_change(walk, filled):
    gaps, fill, planted = filled
    floor = metrics.paw_ground(metrics.paws(walk))   # the capture's ground for every version (metrics.md)

    def skating(motion):
        paws = metrics.paws(motion)
        return np.mean([metrics.foot_skating(paws[s:e + 1], floor).mean() for s, e in gaps])

    assert skating(planted) < 0.8 * skating(fill), (skating(planted), skating(fill), skating(walk))
    made = np.zeros(walk.n_frames, dtype=bool)
    for s, e in gaps:
        made[s + 1:e] = True
    assert np.array_equal(planted.rotations[~made], fill.rotations[~made])
    assert np.array_equal(planted.rotations[~made], walk.rotations[~made])
    assert np.array_equal(planted.positions, fill.positions)      # IK turns joints, moves none
    assert not np.allclose(planted.rotations[made], fill.rotations[made])


def test_a_paw_in_contact_stays_at_its_lock(walk, filled, model):
    """On every generated frame of a contact found in the fill (cut into steps), the planted paw stands
    where the contact is locked (the key's spot, or the step's mean, on the ground), as far as the leg
    reaches."""
    gaps, fill, planted = filled
    made = np.zeros(walk.n_frames, dtype=bool)
    for s, e in gaps:
        made[s + 1:e] = True
    paws = metrics.paws(fill)
    floor = ground(paws, ~made, slice(None), percentile=GROUND)
    on = held_contacts(paws, floor, made, 1, model.layout.height, walk.fps, True)
    held = on & made[:, None]
    lock = locks(paws, on, made)
    lock[..., 1] = np.maximum(lock[..., 1], floor)     # never below the ground
    miss = np.linalg.norm(metrics.paws(planted) - lock, axis=-1)[held]
    crept = np.linalg.norm(paws - lock, axis=-1)[held]
    assert held.sum() > 100, held.sum()
    assert np.median(miss) < 0.01 and np.percentile(miss, 95) < 0.5, (np.median(miss), np.percentile(miss, 95))  # cm
    assert np.percentile(crept, 95) > 1.0, np.percentile(crept, 95)   # where the model's paws crept away


def test_follow_path_plants_the_paws_unless_told_not_to(walk, model, tmp_path):
    """``follow-path`` from a frame of the walk: the start pose as the capture has it, the paws planted on
    every frame after it (skating over their own ground lower), and left as they come with --no-contacts."""
    from inference.bvh import read_bvh, write_bvh
    from inference.cli import main

    start, csv = tmp_path / "walk.bvh", tmp_path / "path.csv"
    write_bvh(walk, start)
    csv.write_text("time,x,y\n0,0,0\n4,0,4\n")   # 4 m at a walk
    outs = {}
    for flag in ([], ["--no-contacts"]):
        out = tmp_path / f"out{len(flag)}.bvh"
        assert main(["follow-path", str(csv), "-o", str(out), "--model", str(model.path),
                     "--start", f"{start}:120"] + flag) == 0
        outs[bool(flag)] = read_bvh(out)
    planted, raw = outs[False], outs[True]
    assert np.abs(planted.rotations[0] - raw.rotations[0]).max() < 1e-4     # the start pose, to the file's precision
    floor = metrics.paw_ground(metrics.paws(raw))
    skating = {k: metrics.foot_skating(metrics.paws(m), floor).mean() for k, m in (("planted", planted), ("raw", raw))}
    assert skating["planted"] < 0.9 * skating["raw"], skating              # measured 0.114 -> 0.086 cm/frame
