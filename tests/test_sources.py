"""One RTN trained on several data sets (LaFAN1's training subjects and Bandai-1) on one skeleton, and
bodies of other proportions: the data side of the default human model."""

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from commands import run_training
from inference.errors import DataError
from lab.dataset import Selection, load_motion_set, load_sources, subject_of
from training.rtn.sampler import GROUPS, Transitions, proportion_groups


pytestmark = pytest.mark.slow   # every test reads both data sets (Bandai retargeted) or trains
SUBJECTS = [1, 2, 3, 4]
CHOSEN = Selection(SUBJECTS)


@pytest.fixture(scope="module")
def sources(lafan1_zip, mocap):
    return [lafan1_zip, mocap / "bandai1.zip"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def both(sources, cache):
    return load_sources(sources, cache, chosen=CHOSEN)


def bandai(name):
    return subject_of(name) is None


def test_sources_on_the_first_one_s_skeleton_each_cached_once_and_compact(both, sources, cache):
    lafan = load_motion_set(sources[0], cache)
    assert both.skeleton.same_hierarchy(lafan.skeleton)
    assert np.array_equal(both.skeleton.offsets, lafan.skeleton.offsets)
    assert both.names[:len(lafan.names)] == lafan.names                       # LaFAN1 as it is
    assert sum(bandai(n) for n in both.names) == 174 and both.fps == 30
    assert both.translated.tolist() == [0]                                     # Bandai's now moves the hips only
    files = sorted(cache.iterdir())
    assert len(files) == 2 and sum(f.stat().st_size for f in files) < 32 * 2**20   # measured: 28.4 MiB
    # the caches stand for their sources where those are not at hand (a GPU machine)
    again = load_sources(files[::-1] if "lafan1" in files[1].name else files, chosen=CHOSEN)
    assert again.names == both.names and np.array_equal(again.rotations, both.rotations)
    assert sorted(cache.iterdir()) == files


def test_subject_rules_per_source(both):
    """LaFAN1 trains on subjects 1-4 only; Bandai, which has no subject numbers, on every clip."""
    train = Transitions(both, "train", CHOSEN)
    assert {subject_of(f) for f in train.files} == {1, 2, 3, 4, None}
    assert sum(bandai(f) for f in train.files) == 174


def test_the_sampler_draws_from_both_in_proportion_to_their_frames(both):
    train = Transitions(both, "train", CHOSEN, mirrored=False)
    clip, _ = train.draw(4000, 40, np.random.default_rng(0))
    share = np.mean([bandai(train.names[c]) for c in clip])
    room = np.maximum(train.lengths - 40 + 1, 0)
    expected = room[[bandai(n) for n in train.names]].sum() / room.sum()
    assert 0.1 < expected < 0.3 and abs(share - expected) < 0.03


def test_shares_draw_each_data_set_as_often_as_asked_at_every_gap_length(both):
    """--shares 3,1: a quarter of the windows from Bandai, mirrored and faster copies included, where in
    proportion to their frames its short clips would give long gaps hardly any."""
    from training.rtn.family import shares_of

    train = Transitions(both, "train", CHOSEN, speeds=(0.9, 1.0, 1.1), shares=np.array([0.75, 0.25]))
    assert [bandai(n) for n in np.array(train.names)[train.origins == 1]] == [True] * (train.origins == 1).sum()
    for width in (17, 72, 132):
        clip, _ = train.draw(4000, width, np.random.default_rng(0))
        assert abs(np.mean(train.origins[clip] == 1) - 0.25) < 0.03
    args = SimpleNamespace(shares="3,1", data=["a", "b"])
    np.testing.assert_allclose(shares_of(args), [0.75, 0.25])
    for bad in ("3", "3,1,1", "a,b", "-1,2", "0,0"):
        with pytest.raises(DataError, match=f"--shares {bad}"):
            shares_of(SimpleNamespace(shares=bad, data=["a", "b"]))


def test_proportions_scale_bones_within_the_range_and_leave_rotations(both):
    plain = Transitions(both, "train", CHOSEN)
    varied = Transitions(both, "train", CHOSEN, proportions=0.1, layout=plain.layout)
    a = plain.sample(256, 20, np.random.default_rng(3))
    b = varied.sample(256, 20, np.random.default_rng(3))
    assert np.array_equal(a["truth"][..., 3:], b["truth"][..., 3:])
    assert np.array_equal(a["past"][..., 3:], b["past"][..., 3:])
    groups = proportion_groups(both.skeleton, plain.layout.trajectory)
    bones = np.flatnonzero(np.linalg.norm(a["base"], axis=-1).min(axis=0) > 1e-3)
    bones = bones[bones != plain.layout.trajectory]
    ratio = np.linalg.norm(b["base"][:, bones], axis=-1) / np.linalg.norm(a["base"][:, bones], axis=-1)   # (B, bones)
    assert ratio.min() >= 0.9 - 1e-5 and ratio.max() <= 1.1 + 1e-5
    for g, name in enumerate(GROUPS):    # one factor per window and group, both sides alike
        mine = ratio[:, groups[bones] == g]
        assert mine.shape[1] >= 3, name
        np.testing.assert_allclose(mine, mine[:, :1].repeat(mine.shape[1], 1), rtol=1e-5)
        assert np.ptp(mine[:, 0]) > 0.15, name      # spread over the range
    legs = ratio[:, groups[bones] == 0][:, 0]
    # the hips stand higher on longer legs: the trajectory joint's height (in heights) scales with them
    np.testing.assert_allclose(b["past"][:, -1, 1], a["past"][:, -1, 1] * legs, rtol=1e-4)
    assert {GROUPS[g] for g in groups[[both.skeleton.index(n) for n in ("LeftLeg", "RightFoot", "Hips")]]} == {"legs"}
    assert {GROUPS[g] for g in groups[[both.skeleton.index(n) for n in ("LeftForeArm", "RightHand")]]} == {"arms"}


def test_a_short_run_on_both_trains_validates_and_exports(sources, cache, tmp_path):
    run = tmp_path / "run"
    data = [arg for s in sources for arg in ("--data", str(s))]
    run_training([sys.executable, "-m", "training", "rtn", *data, "--subjects", "1,2,3,4", "--out", str(run),
                  "--steps", "3", "--batch", "8", "--max-gap", "12", "--validate-every", "3", "--proportions", "0.1",
                  "--validation-windows", "16",
                  "--cache", str(cache), "--threads", "1"], check=True)
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    meta = state["meta"]
    assert meta["data"] == [str(s) for s in sources] and meta["subjects"] == SUBJECTS
    assert {subject_of(f) for f in meta["data_files"]} == {1, 2, 3, 4, None}
    assert "LaFAN1" in meta["licence"] and "Bandai" in meta["licence"]
    [(step, scores)] = state["history"]["validation"]
    assert step == 3 and len(scores) == 8 and all(np.isfinite(v) for v in scores.values())
    model = tmp_path / "m.onnx"
    run_training([sys.executable, "-m", "training", "export", str(run / "checkpoint.pt"), "-o", str(model)], check=True)
    import onnx
    props = {p.key: p.value for p in onnx.load(str(model)).metadata_props}
    assert json.loads(props["betwixt.data"])["source"] == "lafan1-27.zip + bandai1.zip"
    assert "Trained on `lafan1-27.zip` + `bandai1.zip`" in model.with_suffix(".md").read_text()


def test_a_model_of_both_stands_on_the_first_ones_floor(sources, cache, both):
    """Bandai's retargeted clips keep their capture's floor, some 4 cm above LaFAN1's: the model's floor
    is the first data set's, not the median over every clip, which Bandai's 174 short clips would own."""
    from inference.inbetween import data_floor
    from training.export import floor_of

    meta = {"subjects": SUBJECTS}
    mixed = float(floor_of([str(s) for s in sources], cache, meta))
    assert mixed == float(floor_of([str(sources[0])], cache, meta))
    every = data_floor([both.clip(i) for i, n in enumerate(both.names) if CHOSEN.keeps(n)])
    assert -1.5 < mixed < 1.5 < 3.0 < every


def test_another_skeleton_given_by_a_file(lafan1_zip, mocap, tmp_path):
    """``--skeleton``: LaFAN1's training subjects on Bandai's skeleton, its natural pose from the file's frames."""
    import zipfile
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        (tmp_path / "bandai.bvh").write_bytes(z.read("dataset-1_walk_normal_001.bvh"))
    data = load_sources([lafan1_zip], tmp_path / "cache", skeleton=tmp_path / "bandai.bvh", chosen=CHOSEN)
    assert data.skeleton.names[:2] == ("joint_Root", "Hips") and data.fps == 30
    assert len(data.names) == 27 and len(data.translated) == 22       # as Bandai's files key them
    train = Transitions(data, "train", CHOSEN)
    assert {subject_of(f) for f in train.files} == {1, 2, 3, 4}
    clip = data.clip(0)
    hips = data.skeleton.index("Hips")
    moved = np.ptp(clip.positions, axis=0).max(axis=-1)   # only the hips travel; bones keep Bandai's lengths
    assert moved[hips] > 10.0 and np.delete(moved, hips).max() < 1e-3
    np.testing.assert_allclose(clip.positions[0, hips + 1:], data.skeleton.offsets[hips + 1:], atol=1e-4)
