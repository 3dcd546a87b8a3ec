"""MANN's training side on the real dog data: the derived action labels, the feature vectors and the
test split, a few steps of the shared loop, and the one-step ONNX graph and its metadata."""

import json
import math
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from commands import run_training, train_and_export

ROOT = Path(__file__).resolve().parents[1]
TEST_CLIPS = {"D1_008_KAN01_002", "D1_009_KAN01_002", "D1_010_KAN01_003", "D1_ex04_KAN02_003", "D1_058_KAN01_001"}
RESTART = 4e-4   # a warm-restart cycle of a few steps, so that four steps show the schedule at work


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def dog(dog_zip, cache):
    from lab.dataset import load_motion_set

    return load_motion_set(dog_zip, cache)


@pytest.fixture(scope="module")
def split(dog):
    from training.mann.data import parts

    return parts(dog)


@pytest.fixture(scope="module")
def run(dog_zip, cache, tmp_path_factory):
    """Four real optimiser steps and the export of their checkpoint, of a network 64 units wide (``--hidden``;
    the paper's 512 takes under a second longer here, and what these tests check is the same)."""
    out = tmp_path_factory.mktemp("mann")
    model = train_and_export("mann", ["--data", str(dog_zip), "--steps", "4", "--batch", "8", "--validate-every", "4",
                                      "--restart-epochs", str(RESTART), "--hidden", "64", "--cache", str(cache),
                                      "--threads", "1"],
                             out, "mann-dog.onnx")
    return {"out": out, "checkpoint": out / "checkpoint.pt", "model": model}


def fractions(dog, name):
    from inference.mann.actions import ACTIONS, labels

    label = labels(dog.clip(dog.names.index(name)))
    return dict(zip(ACTIONS, np.bincount(label, minlength=len(ACTIONS)) / len(label))), label


@pytest.mark.slow
def test_labels_follow_what_the_dog_does(dog):
    from inference.mann.actions import ACTIONS, MIN_SEGMENT, segments_of

    assert fractions(dog, "D1_053_KAN01_001")[0]["move"] > 0.7        # walking and trotting about
    assert fractions(dog, "D1_003_KAN01_001")[0]["sit"] > 0.95        # sits the whole clip
    assert fractions(dog, "D1_005_KAN01_001")[0]["lie"] > 0.7         # lies, then gets up
    gallop = fractions(dog, "D1_010_KAN01_002")[0]
    assert gallop["move"] == 1.0                                      # a gallop's flight phases are no jump
    share, label = fractions(dog, "D1_ex04_KAN02_002")
    jumps = [(a / 60, b / 60) for a, b, k in segments_of(label) if ACTIONS[k] == "jump"]
    assert any(a < 7.1 and b > 7.3 for a, b in jumps)                 # airborne from 7.0 s to 7.3 s
    assert fractions(dog, "D1_059_KAN01_001")[0]["stand"] > 0.02      # rears up on its hind legs
    for name in ("D1_053_KAN01_001", "D1_059_KAN01_001", "D1_047z_KAN01_003"):
        segments = segments_of(fractions(dog, name)[1])
        assert min(b - a for a, b, _ in segments) >= MIN_SEGMENT * 60 - 1e-9   # no flicker


@pytest.mark.slow
def test_labels_command_draws_a_timeline_per_clip(dog_zip, tmp_path):
    clip = tmp_path / "D1_059_KAN01_001.bvh"
    with zipfile.ZipFile(dog_zip) as z:
        member = next(n for n in z.namelist() if n.endswith("D1_059_KAN01_001.bvh"))
        clip.write_bytes(z.read(member))
    out = tmp_path / "labels"
    result = run_training([sys.executable, "-m", "training", "labels", "--data", str(clip), "--out", str(out),
                           "--cache", str(tmp_path / "cache")])
    assert result.returncode == 0, result.stderr
    assert (out / "D1_059_KAN01_001.png").read_bytes()[:4] == b"\x89PNG"
    segments = json.loads((out / "labels.json").read_text())["clips"]["D1_059_KAN01_001"]
    assert segments[0][0] == 0 and segments[-1][1] == 3025
    assert {s[2] for s in segments} >= {"idle", "move", "sit", "stand"}


@pytest.mark.slow
def test_features_have_the_documented_layout_and_no_test_clip(dog, split):
    from inference.mann.features import bones_of, world
    from training.mann.data import HOLD_OUT

    train, validation = split
    lay = train.layout
    assert (lay["input"]["size"], lay["output"]["size"], len(lay["bones"])) == (480, 363, 27)
    assert lay["samples"]["frames"] == [-60, -50, -40, -30, -20, -10, 0, 12, 24, 36, 48, 60]
    assert [lay["bones"][p] for p in lay["paws"]] == ["LeftHandSite", "RightHandSite", "LeftFootSite", "RightFootSite"]
    assert not TEST_CLIPS & set(train.files) and not TEST_CLIPS & set(validation.files)
    assert len(train.files) == len(dog.names) - len(TEST_CLIPS) == 41
    lengths = {n: int(dog.starts[i + 1] - dog.starts[i]) for i, n in enumerate(dog.names)}
    # nine tenths of every other clip, and their mirror images: not a frame of a test clip
    cut = sum(int(round(n * (1 - HOLD_OUT))) for name, n in lengths.items() if name not in TEST_CLIPS)
    assert len(train.frames.root) == 2 * cut
    assert 0.9 * (sum(lengths.values()) - sum(lengths[n] for n in TEST_CLIPS) - cut) < len(validation.frames.samples) \
        <= sum(lengths.values()) - sum(lengths[n] for n in TEST_CLIPS) - cut

    f = train.frames
    t = f.samples[::997]
    x, y = f.x(t), f.y(t)
    assert x.shape == (len(t), 480) and y.shape == (len(t), 363) and np.isfinite(x).all() and np.isfinite(y).all()
    now = x[:, 6 * 13:7 * 13]                                  # the current sample, in its own root frame
    np.testing.assert_allclose(now[:, :4], np.tile([0.0, 0.0, 0.0, 1.0], (len(t), 1)), atol=1e-5)
    np.testing.assert_allclose(x[:, 7 * 13 + 7:7 * 13 + 13].sum(1), 1.0, atol=1e-5)   # action values
    # what a step predicts is what the next step reads: y's bones at t are x's bones at t + 1
    np.testing.assert_array_equal(y[:, 36:360], f.x(t + 1)[:, 156:])
    # the gating network reads the paws' velocities: their speed, from forward kinematics here
    name = train.files[0]
    motion = dog.clip(dog.names.index(name))
    pos, _ = world(motion, bones_of(dog.skeleton))
    k = 500
    paw = pos[k, lay["paws"]] - pos[k - 1, lay["paws"]]
    gated = f.x(np.array([k]))[0, lay["gating"][:12]].reshape(4, 3)
    np.testing.assert_allclose(np.linalg.norm(gated, axis=1), np.linalg.norm(paw, axis=1) * 60, rtol=1e-4, atol=1e-3)
    # the root's dx, dz, dtheta, stepped through twelve frames, land on the trajectory's +12-frame sample
    t, p, phi = 500, np.zeros(2), 0.0
    for k in range(12):
        dx, dz, dtheta = f.root[t + k] / 60
        p += [np.cos(phi) * dx + np.sin(phi) * dz, -np.sin(phi) * dx + np.cos(phi) * dz]
        phi += dtheta
    np.testing.assert_allclose(f.trajectory[t, 7, :4], [*p, np.sin(phi), np.cos(phi)], atol=1e-3)


def test_frames_on_a_box_or_platform_are_not_learned_from(dog):
    from inference.mann.features import bones_of
    from training.mann.data import features

    name = "D1_ex03_KAN02_006"   # more than half of it on a platform 76 cm up
    frames = features(dog.clip(dog.names.index(name)), bones_of(dog.skeleton))
    assert 0.3 < len(frames.samples) / len(frames.root) < 0.5
    assert len(features(dog.clip(dog.names.index("D1_053_KAN01_001")), bones_of(dog.skeleton)).samples) == 4336 - 2


def test_warm_restarts():
    from training.mann.family import restart_factor

    assert restart_factor(0, 10, 2) == 1.0 and restart_factor(5, 10, 2) == pytest.approx(0.5)
    assert restart_factor(9.999, 10, 2) < 1e-6 and restart_factor(10, 10, 2) == 1.0     # restart
    assert restart_factor(20, 10, 2) == pytest.approx(0.5) and restart_factor(30, 10, 2) == 1.0
    assert restart_factor(149.99, 10, 2) < 1e-6 and restart_factor(3, 0, 2) == 1.0      # 10 + 20 + 40 + 80


def test_a_few_steps_write_a_checkpoint(run, split):
    from training.mann.family import restart_factor

    state = torch.load(run["checkpoint"], map_location="cpu", weights_only=True)
    assert state["family"] == "mann" and state["step"] == 4
    assert not TEST_CLIPS & set(state["meta"]["data_files"]) and len(state["meta"]["data_files"]) == 41
    assert state["stats"]["x_mean"].shape == (480,) and state["stats"]["y_std"].shape == (363,)
    assert state["config"]["hidden"] == 64 and tuple(state["model"]["layers.0.weight"].shape) == (8 * 64, 480)
    history = json.loads((run["out"] / "history.json").read_text())
    step, scores = history["validation"][-1]
    assert step == 4 and {"mse", "trajectory", "bones", "root", "position", "experts", "per_frame"} <= set(scores)
    assert 1.0 <= scores["experts"] <= 8.0 and 0 < scores["mse"] < 10
    # the fourth step's rate came from the warm-restart schedule (the loop asks the family each step)
    frames = len(split[0].frames.samples)
    rate = state["optimiser"]["param_groups"][0]["lr"]
    assert rate == pytest.approx(1e-4 * restart_factor(3 * 8 / frames, RESTART, 2.0), rel=1e-6) and rate < 0.9e-4


def test_export_is_one_step_that_matches_torch(run, split):
    from training.export import loaded

    state = torch.load(run["checkpoint"], map_location="cpu", weights_only=True)
    _, model = loaded(state)
    session = onnxruntime.InferenceSession(str(run["model"]), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["x"]
    assert [o.name for o in session.get_outputs()] == ["y", "experts"]
    val = split[1].frames
    x = val.x(val.samples[::500]).astype(np.float32)
    y, experts = session.run(None, {"x": x})
    with torch.no_grad():
        want, alpha = model(torch.from_numpy(x))
    assert np.abs(y - want.numpy()).max() < 1e-4
    assert np.abs(experts - alpha.numpy()).max() < 1e-5
    np.testing.assert_allclose(experts.sum(1), 1.0, atol=1e-5)

    meta = session.get_modelmeta().custom_metadata_map
    assert meta["betwixt.kind"] == "mann" and meta["betwixt.graph"] == "step" and meta["betwixt.fps"] == "60.0"
    lay = json.loads(meta["betwixt.layout"])
    assert lay["input"]["size"] == 480 and lay["output"]["size"] == 363 and len(lay["gating"]) == 19
    assert lay["actions"] == ["idle", "move", "jump", "sit", "stand", "lie"]
    assert sorted(json.loads(meta["betwixt.normalisation"])) == ["x_mean", "x_std", "y_mean", "y_std"]
    assert set(json.loads(meta["betwixt.test_clips"])) == TEST_CLIPS
    assert not TEST_CLIPS & set(json.loads(meta["betwixt.data"])["files"])
    assert "research and education only" in meta["betwixt.licence"]
    card = run["model"].with_suffix(".md").read_text()
    assert "## Actions" in card and "research and education only" in card
    files = next(line for line in card.splitlines() if line.startswith("- Files:"))
    assert not any(name in files for name in TEST_CLIPS)


def test_a_run_from_another_runs_weights_takes_its_dropout_unless_given(run, dog_zip, cache, split, tmp_path):
    """``--init`` keeps the network's shape; dropout only training reads, so the new command may change it.
    A run given the data set's cache (as it travels to a GPU) records the data set it stands for. Each run
    says which --steps end a warm-restart cycle at its batch (there the rate reaches zero)."""
    made = {}
    carried = next(cache.glob("dog-mann-*.npz"))
    for name, data, extra in (("kept", carried, []), ("given", dog_zip, ["--dropout", "0.1"])):
        out = tmp_path / name
        result = run_training([sys.executable, "-m", "training", "mann", "--data", str(data), "--out", str(out),
                               "--init", str(run["checkpoint"]), "--steps", "5", "--batch", "8",
                               "--validate-every", "100", "--cache", str(cache), "--threads", "1", *extra])
        assert result.returncode == 0, result.stderr[-2000:]
        assert f"150: {math.ceil(150 * len(split[0].frames.samples) / 8)}, 310:" in result.stderr
        made[name] = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)
    source = torch.load(run["checkpoint"], map_location="cpu", weights_only=True)
    assert source["config"]["dropout"] == 0.3
    assert made["kept"]["config"] == source["config"] and made["kept"]["step"] == 5
    assert made["given"]["config"] == {**source["config"], "dropout": 0.1}
    assert made["kept"]["meta"]["data"] == made["given"]["meta"]["data"] == [str(dog_zip)]


def test_a_run_starts_from_a_mann_model_file(run, dog_zip, cache, tmp_path):
    """A technical animator with the shipped mann-dog.onnx and their own dog's capture fine-tunes the
    file itself: --init rebuilds the network it ships (int8 matrices as the runtime multiplies by them),
    which computes what the file does, and trains on from its step at the dropout the command gives; a
    --steps that does not reach past that step is refused rather than training nothing."""
    from training.checkpoint import arrays, of_model_file
    from training.export import loaded
    from training.family import family

    model = tmp_path / "mann-int8.onnx"
    run_training([sys.executable, "-m", "training", "export", str(run["checkpoint"]), "-o", str(model),
                  "--weights", "int8"], check=True)
    mann = family("mann")
    state = of_model_file(model, mann)
    source = torch.load(run["checkpoint"], map_location="cpu", weights_only=True)
    assert state["step"] == source["step"] == 4
    assert state["meta"]["layout"] == json.loads(json.dumps(source["meta"]["layout"]))
    rebuilt = mann.network(state["config"], arrays(state["stats"]))
    rebuilt.load_state_dict(state["model"])
    assert mann.check_export(rebuilt.eval(), model) <= 1.1 * mann.check_export(loaded(source)[1], model) + 1e-5

    out = tmp_path / "tuned"
    result = run_training([sys.executable, "-m", "training", "mann", "--data", str(dog_zip), "--out", str(out),
                           "--init", str(model), "--dropout", "0", "--steps", "6", "--batch", "8",
                           "--validate-every", "100", "--cache", str(cache), "--threads", "1"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"starting from the weights of {model} at step 4" in result.stderr
    tuned = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=True)
    assert tuned["step"] == 6 and tuned["config"] == {**source["config"], "dropout": 0.0}
    moved = (tuned["model"]["layers.0.weight"] - state["model"]["layers.0.weight"]).abs().max()
    assert 0 < moved < 1e-2

    # a fine-tune of N steps is --steps 4 + N
    result = run_training([sys.executable, "-m", "training", "mann", "--data", str(dog_zip), "--out",
                           str(tmp_path / "short"), "--init", str(model), "--steps", "4", "--cache", str(cache)])
    assert result.returncode == 2 and "its weights are at step 4 and --steps counts the whole run" in result.stderr
    assert not (tmp_path / "short").exists()

    rtn = tmp_path / "not-a-dog.onnx"
    rtn.write_bytes((ROOT / "inference" / "models" / "rtn-human.onnx").read_bytes())
    result = run_training([sys.executable, "-m", "training", "mann", "--data", str(dog_zip), "--out",
                           str(tmp_path / "refused"), "--init", str(rtn), "--steps", "6", "--cache", str(cache)])
    assert result.returncode == 2 and f"{rtn}: a rtn model; --init needs a mann model" in result.stderr
    assert not (tmp_path / "refused").exists()
