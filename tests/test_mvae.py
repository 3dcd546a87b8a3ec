"""The Motion VAE on LaFAN1: its pose and back, a few steps of our own training command and the export
of their checkpoint, random walks with the exported file (batched, seeded), ``python -m inference walk``,
its feet planted (inference/contacts.py) unless --no-contacts, and bad requests refused with one clear
error and nothing written."""

import json
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inference.bvh import read_bvh
from inference.cli import main
from inference.modelfile import ModelError, open_model

ROOT = Path(__file__).resolve().parents[1]


def extracted(archive, name, folder):
    path = folder / name
    with zipfile.ZipFile(archive) as z:
        path.write_bytes(z.read(name))
    return path


@pytest.fixture(scope="module")
def clip(lafan1_zip, tmp_path_factory):
    """A test-subject clip (subject 5) as a BVH file."""
    return extracted(lafan1_zip, "obstacles1_subject5.bvh", tmp_path_factory.mktemp("clip"))


@pytest.fixture(scope="module")
def run(mvae_run):
    """The tiny Motion VAE that conftest's ``mvae_run`` trains once per test run (six optimiser steps of
    ``python -m training mvae`` on two clips, roll-outs of 3 steps, scheduled sampling ramping over steps 2-3,
    the skating term on, and ``python -m training export`` of the checkpoint)."""
    return mvae_run


@pytest.fixture(scope="module")
def model(run):
    return open_model(run["model"], kind="mvae")


def test_pose_and_back_reproduce_the_capture(clip):
    from inference.mvae.features import fields, motion_of, poses

    motion = read_bvh(clip)
    pose, origin, theta = poses(motion)
    assert pose.shape == (motion.n_frames - 1, 267) and np.isfinite(pose).all()
    _, world = motion.global_transforms()
    # the root's speed on the floor is the hips' horizontal speed; its positions lie in its own frame
    hips = np.linalg.norm(np.diff(world[:, 0, [0, 2]], axis=0), axis=-1) * motion.fps
    np.testing.assert_allclose(np.linalg.norm(pose[:, :2], axis=-1), hips, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pose[:, 3:6], np.c_[np.zeros(len(pose)), world[1:, 0, 1], np.zeros(len(pose))],
                               atol=1e-9)
    for dtype in (np.float64, np.float32):   # float32: what the network reads and writes
        back = motion_of(pose.astype(dtype).astype(np.float64), origin[0], theta[0], motion.skeleton, motion.fps)
        error = np.linalg.norm(back.global_transforms()[1] - world[1:], axis=-1)
        assert error.max() < 1e-3, (dtype, error.max())    # cm, over 5,000 integrated frames (measured 1.7e-4)
    assert fields(22)["orientations"] == [135, 267]


def test_the_skating_term_is_the_benchmarks_skating_of_the_feet(clip):
    """Training's skating term, from each pose to the next, is bench-mvae's measure of the same feet
    over the same frames (their world positions, the same grounds)."""
    import torch

    from lab.metrics import foot_skating
    from lab.mvae_bench import foot_positions
    from inference.mvae.features import poses
    from training.mvae.family import Feet

    motion = read_bvh(clip)
    pose = poses(motion)[0]
    feet = Feet.of(type("Part", (), {"poses": pose}), motion.skeleton, motion.fps)
    term = feet.skating(torch.as_tensor(pose[:-1], dtype=torch.float32), torch.as_tensor(pose[1:], dtype=torch.float32))
    measured = foot_skating(foot_positions(motion.global_transforms()[1][1:], motion.skeleton), feet.ground.numpy())
    assert measured.min() > 0.005                                        # the capture's feet do slide a little
    np.testing.assert_allclose(term.mean(0).numpy(), measured, rtol=1e-3)


def test_with_skate_root_only_the_roots_step_learns_from_the_skating_term(clip):
    """A skating term that the feet learn from stills them by sending the walks down (docs/experiments.md);
    with ``--skate-root`` its gradient reaches the predicted root's step alone, every other pose value's
    only from the reconstruction, the same with the term as without it."""
    from argparse import Namespace

    import torch

    from inference.mvae.features import ROOT, poses
    from training.loop import Normaliser
    from training.mvae.family import Feet, MVAEFamily
    from training.mvae.network import MVAE, MVAEConfig

    motion = read_bvh(clip)
    pose = poses(motion)[0].astype(np.float32)
    family = MVAEFamily()
    stats = family.statistics(type("Part", (), {"poses": pose}), None, None)
    feet = Feet.of(type("Part", (), {"poses": pose}), motion.skeleton, motion.fps)
    # every foot counted: an untrained network's feet float at the data's mean height, above the term's reach
    family.feet = Feet(feet.columns, feet.ground + 1000.0, feet.fps)
    torch.manual_seed(0)
    net, norm = MVAE(MVAEConfig(pose=pose.shape[1]), stats["pose_mean"], stats["pose_std"]), Normaliser(stats)
    starts = np.arange(100, 1100, 100)
    batch = (torch.as_tensor(pose[starts[:, None] + np.arange(4)]), torch.zeros((len(starts), 3), dtype=torch.bool))

    def output_gradient(skate, root):
        """The loss's gradient at the decoder's last layer's output, every step's (steps x B, D)."""
        outputs = []
        hook = net.layers[-1].register_forward_hook(lambda module, inputs, output: outputs.append(output))
        torch.manual_seed(1)   # the same z drawn from the posterior every time
        loss, _ = family.loss(net, norm, batch, Namespace(skate=skate, skate_root=root, beta=0.05))
        hook.remove()
        return torch.cat(torch.autograd.grad(loss, outputs))

    without = output_gradient(0.0, False)
    for root in (False, True):
        term = (output_gradient(1.0, root) - without).abs()
        assert term[:, :ROOT].max() > 1e-4, root                 # the root's step learns from the term
        assert (term[:, ROOT:].max() > 1e-4) != root, root       # the feet only without --skate-root


def test_training_logs_the_latent_and_exports_one_file(run):
    import torch

    from training.mvae.family import sampling

    history = json.loads((run["out"] / "history.json").read_text())
    assert [s for s, _ in history["validation"]] == [3, 6]
    scores = history["validation"][-1][1]
    assert len(scores["kl_dims"]) == 32 and scores["kl"] == pytest.approx(np.mean(scores["kl_dims"]))
    assert scores["active"] == sum(k > 0.01 for k in scores["kl_dims"]) and 0 <= scores["active_mean"] <= 32
    assert [s for s, _ in history["train"]] == [6] and {"recon", "kl", "student", "skate"} <= set(history["train"][0][1])
    state = torch.load(run["out"] / "checkpoint.pt", weights_only=True)
    assert state["step"] == 6 and state["optimiser"]["param_groups"][0]["lr"] == pytest.approx(1e-4 / 6)
    assert state["meta"]["data"] == [str(run["data"])]
    args = type("Args", (), {"steps": 6, "supervised": 2, "ramp": 2})
    assert [sampling(s, args) for s in range(6)] == [0.0, 0.0, 0.5, 1.0, 1.0, 1.0]

    meta = open_model(run["model"]).metadata
    assert meta["betwixt.kind"] == "mvae" and meta["betwixt.graph"] == "step" and meta["betwixt.latent"] == "32"
    files = json.loads(meta["betwixt.data"])["files"]
    assert sorted(Path(f).stem for f in files) == ["push1_subject2", "walk4_subject1"]
    card = run["model"].with_suffix(".md").read_text()
    assert "active (mean KL above 0.01 nats)" in card and "betwixt.encoder" in card
    assert state["config"]["hidden"] == 64 and "decoder 6 experts of 3 layers (64, 64, the pose" in card   # --hidden


def test_the_encoder_travels_in_the_file_and_agrees_with_torch(run, model, clip):
    import torch

    from inference.mvae.features import poses
    from training.export import loaded

    pose = poses(read_bvh(clip).frames(0, 40))[0].astype(np.float32)
    mean, logvar = model.encode(pose[:-1], pose[1:])
    assert mean.shape == logvar.shape == (38, 32)
    _, network = loaded(torch.load(run["out"] / "checkpoint.pt", weights_only=True))
    with torch.no_grad():
        previous, following = (network.normalised(torch.from_numpy(p)) for p in (pose[:-1], pose[1:]))
        want = network.encode(previous, following)
    np.testing.assert_allclose(mean, want[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(logvar, want[1].numpy(), atol=1e-4)


def test_random_walks_are_batched_seeded_and_differ(model, clip):
    motion = read_bvh(clip)
    walks = model.walk(motion, 100, 30, k=3, seed=7)
    assert len(walks) == 3 and all(w.n_frames == 131 and w.fps == 30.0 for w in walks)
    for w in walks:
        assert np.isfinite(w.rotations).all() and np.isfinite(w.positions).all()
        np.testing.assert_allclose(w.rotations[:101], motion.rotations[:101], atol=1e-12)
        np.testing.assert_array_equal(w.positions[:101], motion.positions[:101])
    again = model.walk(motion, 100, 30, k=3, seed=7)
    other = model.walk(motion, 100, 30, k=3, seed=8)
    for a, b, c in zip(walks, again, other):
        np.testing.assert_array_equal(a.rotations, b.rotations)
        assert np.abs(a.rotations[101:] - c.rotations[101:]).max() > 1e-3
    assert np.abs(walks[0].rotations[101:] - walks[1].rotations[101:]).max() > 1e-3   # one batch, K walks
    # the first generated frame moves on from the start (the network's own step, not a copy)
    assert np.abs(walks[0].rotations[101] - motion.rotations[100]).max() > 0


def test_a_clip_at_another_rate_walks_at_the_models(model, clip):
    motion = read_bvh(clip)
    fast = motion.resample(60.0)
    walk = model.walk(fast, 200, 10, k=1, seed=0)[0]
    assert walk.fps == 30.0 and walk.n_frames == 101 + 10
    np.testing.assert_allclose(walk.global_transforms()[1][:101], motion.global_transforms()[1][:101], atol=1e-6)


def test_walk_command_writes_k_files(run, clip, tmp_path):
    out = tmp_path / "walks"
    assert main(["walk", str(clip), "--from", "50", "--frames", "20", "-k", "2", "-o", str(out), "--seed", "3",
                 "--model", str(run["model"])]) == 0
    files = sorted(out.glob("*.bvh"))
    assert [f.name for f in files] == ["obstacles1_subject5-walk01.bvh", "obstacles1_subject5-walk02.bvh"]
    written, source = read_bvh(files[0]), read_bvh(clip)
    assert written.n_frames == 71 and written.skeleton.same_hierarchy(source.skeleton)
    np.testing.assert_allclose(written.global_transforms()[1][:51], source.global_transforms()[1][:51], atol=1e-3)


def test_walk_command_plants_the_feet_unless_no_contacts(run, clip, tmp_path):
    """The command's walks have their feet planted: with --no-contacts they are the runtime's own walks;
    planted, the frames up to --from and the body above the legs stay as they were, and the legs move. The
    tiny model's walks already stand where the floor step stood them (inference/mvae/stance.py); that
    planting holds the shipped model's feet, test_mvae_floor.py measures."""
    source = read_bvh(clip)
    made = {}
    for name, flags in (("planted", []), ("raw", ["--no-contacts"])):
        out = tmp_path / name
        assert main(["walk", str(clip), "--from", "400", "--frames", "150", "-k", "2", "-o", str(out), "--seed", "3",
                     "--model", str(run["model"]), *flags]) == 0
        made[name] = [read_bvh(f).global_transforms()[1] for f in sorted(out.glob("*.bvh"))]
    walks = open_model(run["model"]).walk(source, 400, 150, 2, seed=3)
    legs = [j for j, n in enumerate(source.skeleton.names) if any(w in n for w in ("Leg", "Foot", "Toe"))]
    rest = [j for j in range(len(source.skeleton)) if j not in legs]
    for walk, raw, planted in zip(walks, made["raw"], made["planted"]):
        np.testing.assert_allclose(raw, walk.global_transforms()[1], atol=1e-3)   # cm: BVH's decimals
        np.testing.assert_allclose(planted[:401], raw[:401], atol=1e-9)
        np.testing.assert_allclose(planted[:, rest], raw[:, rest], atol=1e-9)
        assert np.abs(planted - raw).max() > 1.0


@pytest.mark.parametrize("frame, frames, k, words", [
    (0, 10, 2, "start frame 0 is outside frames 1 to"),
    (99999, 10, 2, "start frame 99999 is outside frames 1 to"),
    (-1, 10, 2, "start frame -1 is outside"),
    (10, 0, 2, "0 frames: give 1 to 36,000"),
    (10, 50_000, 2, "50000 frames: give 1 to 36,000"),
    (10, 10, 0, "0 continuations (k): give 1 to 256"),
    (10, 10, 1000, "1000 continuations (k): give 1 to 256"),
    (10, 36_000, 100, "more than 1,000,000 in one request"),
])
def test_bad_requests_are_refused(model, clip, frame, frames, k, words):
    with pytest.raises(ModelError, match=words.replace("(", r"\(").replace(")", r"\)")):
        model.walk(read_bvh(clip), frame, frames, k)


def test_a_walk_that_blows_up_is_refused_rather_than_returned_with_nan(model, clip):
    """A start far outside anything the network saw (the hips 1e37 cm up, beyond its 32-bit inputs) gives
    no finite output: one clear error naming the walk and the frame, no motion with NaN in it."""
    from inference.mvae.runtime import BlewUp

    motion = read_bvh(clip)
    positions = motion.positions.copy()
    positions[:, 0] *= 1e37
    with pytest.raises(BlewUp, match=r"walk 1 of model \S+ blew up at its generated frame \d+ of 30 .* another seed"):
        model.walk(replace(motion, positions=positions), 100, 30, k=2, seed=0)
    assert all(np.isfinite(w.rotations).all() for w in model.walk(motion, 100, 30, k=2, seed=0))


def test_a_walk_started_far_outside_the_data_is_held_within_its_range(model, clip):
    """A start whose hips jump a hundred metres in a frame (finite, but far beyond anything the network
    saw) is not carried further off: every generated frame's root moves no faster than the training
    data's fastest, widened by the runtime's margin."""
    motion = read_bvh(clip)
    positions = motion.positions.copy()
    positions[100, 0, 0] += 10_000.0
    low, high = model.bounds
    fastest = np.hypot(*np.maximum(-low[:2], high[:2])) / motion.fps   # cm a frame, (dx, dz) at their widest
    for walk in model.walk(replace(motion, positions=positions), 100, 30, k=2, seed=0, grounded=False):
        step = np.linalg.norm(np.diff(walk.positions[100:, 0, [0, 2]], axis=0), axis=-1)
        assert np.isfinite(step).all() and step.max() <= fastest * (1 + 1e-4), (step.max(), fastest)


def test_nan_in_the_start_pose_is_refused(model, clip):
    motion = read_bvh(clip)
    rotations = motion.rotations.copy()
    rotations[99, 17] = np.nan
    with pytest.raises(ModelError, match="frame 99, joint 'LeftHand': its rotation is not a number"):
        model.walk(replace(motion, rotations=rotations), 100, 10, 2)
    model.walk(replace(motion, rotations=rotations), 101, 10, 2)   # the frames before the start do not matter


def test_command_refuses_an_unknown_skeleton_and_another_kind(run, mocap, clip, tmp_path, capsys):
    out = tmp_path / "walks"
    assert main(["walk", str(mocap / "cmu-01_01.bvh"), "--from", "10", "--frames", "5", "-o", str(out),
                 "--model", str(run["model"])]) == 2
    assert "does not match model mvae" in capsys.readouterr().err
    rtn = ROOT / "inference" / "models" / "rtn-lafan1.onnx"
    assert main(["walk", str(clip), "--from", "10", "--frames", "5", "-o", str(out), "--model", str(rtn)]) == 2
    assert "a 'rtn' model where a 'mvae' model is needed" in capsys.readouterr().err
    assert main(["walk", str(clip), "--from", "0", "--frames", "5", "-o", str(out), "--model", str(run["model"])]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not out.exists()
