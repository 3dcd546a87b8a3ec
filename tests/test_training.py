"""The training command: the shared loop (checkpoints and resume, curves, multi-process training),
the RTN family's data and losses, ONNX export, and converting what an earlier version wrote."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from commands import run_training
from lab.dataset import Selection
from training.card import hardware

ROOT = Path(__file__).resolve().parents[1]
SUBJECT_1 = Selection((1,))   # LaFAN1's subject 1: what the sampler tests cut windows from


def load(path):
    """A checkpoint, read as every reader in the project reads it: tensors and plain values only."""
    return torch.load(path, map_location="cpu", weights_only=True)


def shipped_network(state):
    from training.export import loaded

    return loaded(state)[1]


def test_run_writes_checkpoint_curves_and_validation(trained_rtn):
    state = load(trained_rtn["checkpoint"])
    assert state["step"] == 4
    history = json.loads((trained_rtn["run"] / "history.json").read_text())
    assert history["validation"] and history["validation"][-1][0] == 4
    assert sorted(history["validation"][-1][1]) == sorted(f"{kind}@{n}" for n in (5, 15, 30, 45)
                                                          for kind in ("rotations", "positions"))
    assert state["family"] == "rtn" and state["history"]["runs"][0]["argv"][0] == "rtn"   # the command as typed
    assert (trained_rtn["run"] / "loss.png").read_bytes()[:4] == b"\x89PNG"
    files = state["meta"]["data_files"]
    assert len(files) == 24 and not any("subject5" in f for f in files)


def test_resume_continues_where_the_run_stopped(trained_rtn, lafan1_zip, tmp_path):
    run = tmp_path / "resumed"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(trained_rtn["checkpoint"].read_bytes())
    before = load(run / "checkpoint.pt")
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(run)
    args[args.index("--steps") + 1] = "6"
    args += ["--bf16", "--lr", "1e-3"]            # a resumed run may change precision and rate
    result = run_training(args)
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stderr and "at step 4" in result.stderr
    after = load(run / "checkpoint.pt")
    assert after["step"] == 6
    assert after["optimiser"]["state"][0]["step"] == before["optimiser"]["state"][0]["step"] + 2
    assert not torch.equal(after["model"]["R.weight"], before["model"]["R.weight"])
    np.testing.assert_array_equal(after["stats"]["frame_mean"], before["stats"]["frame_mean"])
    assert after["optimiser"]["param_groups"][0]["lr"] == 1e-3
    assert [r["from_step"] for r in after["history"]["runs"]] == [0, 4]

    model = run / "resumed.onnx"
    run_training([sys.executable, "-m", "training", "export", str(run / "checkpoint.pt"), "-o", str(model),
                  "--weights", "int8", "--data", str(lafan1_zip), "--cache", str(trained_rtn["cache"])], check=True)
    meta = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"]).get_modelmeta()
    assert meta.custom_metadata_map["betwixt.weights"] == "int8"
    card = model.with_suffix(".md").read_text()
    assert f"-o {model.name} --weights int8`: weights in 8 bits" in card
    first, second = (line for line in card.splitlines() if line.startswith("- Steps "))
    assert first.startswith("- Steps 0 to 4: `python -m training rtn --data") and "--bf16" not in first
    assert second.startswith("- Steps 4 to 6:") and "--bf16" in second and "--lr 1e-3" in second
    # each stretch names the machine it ran on, recorded by the run itself (a card written elsewhere,
    # after a GPU's stretch, does not put this machine in its place)
    assert first.endswith(", on " + hardware("cpu")) and second.endswith(", on " + hardware("cpu"))
    assert "- 6 optimiser steps." in card
    # validation on the held-out tenth, beside interpolation on the same windows
    rows = [line.split(" | ") for line in card.splitlines() if line.startswith(("| 5 |", "| 15 |", "| 30 |", "| 45 |"))]
    assert len(rows) == 4 and "## Validation" in card
    for row in rows:
        values = list(map(float, [c.strip(" |") for c in row[1:]]))
        for error, interpolation, ratio in (values[:3], values[3:]):   # printed to 3 decimals
            assert error > 0 and interpolation > 0
            assert abs(error / interpolation - ratio) <= 5e-4 * (1 + (1 + ratio) / interpolation)
    # interpolation's errors grow with the gap; an untrained network is no judge of that
    interp = [float(row[5].strip(" |")) for row in rows]
    assert interp == sorted(interp)


def test_a_run_keeps_a_moving_average_of_its_weights_and_ships_it(trained_rtn, tmp_path):
    """Each step moves the average (decay d) toward the new weights; resumed, the average goes on;
    the network a checkpoint ships, to export and validation, is the average."""
    (tmp_path / "checkpoint.pt").write_bytes(trained_rtn["checkpoint"].read_bytes())
    before = load(tmp_path / "checkpoint.pt")
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(tmp_path)
    args[args.index("--steps") + 1] = "5"
    result = run_training(args + ["--average", "0.5"])
    assert result.returncode == 0, result.stderr
    after = load(tmp_path / "checkpoint.pt")
    assert not torch.equal(before["average"]["R.weight"], before["model"]["R.weight"])   # it lags
    for name in ("R.weight", "E.0.weight", "D.4.bias"):
        torch.testing.assert_close(after["average"][name], 0.5 * before["average"][name] + 0.5 * after["model"][name])
    assert torch.equal(shipped_network(after).R.weight.detach(), after["average"]["R.weight"])


def test_init_starts_a_new_run_from_another_runs_weights(trained_rtn, tmp_path):
    """--init: a fine-tune in its own folder goes on from the source's weights, units and step
    count, with a fresh optimiser, and keeps the source's record of how its weights were made."""
    source = load(trained_rtn["checkpoint"])
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(tmp_path)
    args[args.index("--steps") + 1] = "5"
    result = run_training(args + ["--init", str(trained_rtn["checkpoint"]), "--lr", "1e-4"])
    assert result.returncode == 0, result.stderr
    assert f"starting from the weights of {trained_rtn['checkpoint']} at step 4" in result.stderr
    after = load(tmp_path / "checkpoint.pt")
    assert after["step"] == 5
    assert after["optimiser"]["state"][0]["step"] == 1                      # one step of its own
    change = (after["model"]["R.weight"] - source["average"]["R.weight"]).abs().max()
    assert 0 < change < 1e-3                        # one small step away from the weights it ships
    for name, value in source["stats"].items():
        np.testing.assert_array_equal(after["stats"][name], value)
    assert [r["from_step"] for r in after["history"]["runs"]] == [0, 4]
    assert after["history"]["runs"][1]["argv"][-2:] == ["--lr", "1e-4"]


def test_init_refuses_what_is_not_a_checkpoint(trained_rtn, tmp_path):
    card = trained_rtn["model"].with_suffix(".md")
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(tmp_path / "run")
    result = run_training(args + ["--init", str(card)])
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {card}: not a training checkpoint")
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_max_gap_caps_the_gaps_a_model_file_fills_and_its_card_says_so(trained_rtn, tmp_path):
    """``--max-gap``: an RTN file that refuses gaps longer than asked (so a longer one goes to another model
    of its skeleton); beyond what its network reaches, one clear error and nothing written."""
    from inference.modelfile import ModelError, open_model
    from inference.transition import Gap

    model = tmp_path / "capped.onnx"
    export = [sys.executable, "-m", "training", "export", str(trained_rtn["checkpoint"]), "-o"]
    run_training(export + [str(model), "--max-gap", "12"], check=True)
    opened = open_model(model)
    assert opened.max_gap == 12 and open_model(trained_rtn["model"]).max_gap > 12
    assert "--max-gap 12`" in model.with_suffix(".md").read_text() and "gaps of 1 to 12 frames" in \
        model.with_suffix(".md").read_text()
    past_r, past_p = np.zeros((1, opened.past, len(opened.skeleton), 4)), np.zeros((1, opened.past, len(opened.skeleton), 3))
    past_r[..., 0] = 1.0
    gap = Gap(opened.skeleton, past_r, past_p, past_r[:, -1], past_p[:, -1], 13)
    with pytest.raises(ModelError, match="a gap of 13 frames is outside what model capped fills \\(1 to 12\\)"):
        opened.fill(gap)
    result = run_training(export + [str(tmp_path / "far.onnx"), "--max-gap", "100000"])
    assert result.returncode == 2 and "--max-gap 100000: give 1 to" in result.stderr
    assert not (tmp_path / "far.onnx").exists()
    # the cap set anew on the model file, as far as its network trained (the shipped file has no checkpoint)
    convert = [sys.executable, "-m", "training", "convert", str(model), "-o"]
    run_training(convert + [str(tmp_path / "uncapped.onnx"), "--max-gap", "20"], check=True)
    assert open_model(tmp_path / "uncapped.onnx").max_gap == 20
    assert "convert --max-gap 20`" in (tmp_path / "uncapped.md").read_text()
    result = run_training(convert + [str(tmp_path / "far.onnx"), "--max-gap", "21"])
    assert result.returncode == 2 and "--max-gap 21: give 1 to 20" in result.stderr
    assert not (tmp_path / "far.onnx").exists()


def test_a_model_file_keeps_its_skeleton_s_end_sites_and_an_older_one_gains_them(trained_rtn, tmp_path, lafan1_zip):
    """Where a quadruped's paws stand are its skeleton's End Sites: the in-betweener's files kept none, so the
    dog's fills were planted as a person's feet. An export keeps them; ``convert --data`` gives a file exported
    before that its data's, and nothing else of it changes."""
    import onnx
    from inference.modelfile import open_model

    kept = open_model(trained_rtn["model"]).skeleton.end_sites
    assert len(kept) == 5                                   # LaFAN1's head, hands and toes
    proto = onnx.load(str(trained_rtn["model"]))
    meta = {p.key: p.value for p in proto.metadata_props}
    skeleton = json.loads(meta["betwixt.skeleton"])
    del skeleton["end_sites"]
    meta["betwixt.skeleton"] = json.dumps(skeleton)
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, meta)
    onnx.save(proto, str(tmp_path / "older.onnx"))
    assert open_model(tmp_path / "older.onnx").skeleton.end_sites == ()
    run_training([sys.executable, "-m", "training", "convert", str(tmp_path / "older.onnx"), "-o",
                  str(tmp_path / "newer.onnx"), "--data", str(lafan1_zip), "--cache", str(trained_rtn["cache"])],
                 check=True)
    gained = open_model(tmp_path / "newer.onnx")
    assert [j for j, _ in gained.skeleton.end_sites] == [j for j, _ in kept]
    np.testing.assert_array_equal([o for _, o in gained.skeleton.end_sites], [o for _, o in kept])
    assert gained.metadata["betwixt.weights"] == meta["betwixt.weights"]
    result = run_training([sys.executable, "-m", "training", "convert", str(tmp_path / "newer.onnx"), "-o",
                           str(tmp_path / "again.onnx"), "--data", str(lafan1_zip)])
    assert result.returncode == 2 and "nothing to convert" in result.stderr


@pytest.mark.parametrize("weights", ["float32", "mixed"])
def test_init_from_a_model_file_starts_from_the_weights_it_ships(trained_rtn, tmp_path, weights):
    """A technical animator has the shipped model files, not our runs: --init from one rebuilds the
    network it ships (R's matrix from the two export splits it into, quantised matrices as a fill
    multiplies by them), its statistics and its record, and fine-tunes it."""
    from training.checkpoint import arrays, of_model_file
    from training.family import family

    source = load(trained_rtn["checkpoint"])
    model = tmp_path / f"rtn-{weights}.onnx"
    run_training([sys.executable, "-m", "training", "export", str(trained_rtn["checkpoint"]), "-o", str(model),
                  "--weights", weights], check=True)
    state = of_model_file(model, family("rtn"))
    assert state["step"] == source["step"] and state["config"] == json.loads(json.dumps(source["config"]))
    for name in ("frame_mean", "frame_std", "target_mean", "target_std", "reference_pose"):
        np.testing.assert_allclose(state["stats"][name], source["stats"][name], rtol=1e-6)
    rtn = family("rtn")
    rebuilt, shipped = rtn.network(state["config"], arrays(state["stats"])), shipped_network(source)
    rebuilt.load_state_dict(state["model"])
    # the rebuilt network computes what the file does about as closely as the network it was exported from
    # (within 1.0-1.4x of it over inputs and a 4-step run's weights in 4 bits); a weight read back wrong is far off
    assert rtn.check_export(rebuilt.eval(), model) <= 2 * rtn.check_export(shipped, model) + 1e-5
    if weights == "float32":
        for name, value in source["average"].items():
            torch.testing.assert_close(state["model"][name], value, rtol=0, atol=1e-7)

    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(tmp_path / "tuned")
    args[args.index("--steps") + 1] = "5"
    result = run_training(args + ["--init", str(model), "--lr", "1e-4"])
    assert result.returncode == 0, result.stderr
    assert f"starting from the weights of {model} at step 4" in result.stderr
    after = load(tmp_path / "tuned" / "checkpoint.pt")
    assert after["step"] == 5 and after["optimiser"]["state"][0]["step"] == 1
    assert 0 < (after["model"]["R.weight"] - state["model"]["R.weight"]).abs().max() < 1e-3
    np.testing.assert_array_equal(after["stats"]["frame_std"], state["stats"]["frame_std"])
    assert (after["stats"]["world_std"] > 0).all()          # the loss's units, measured on the new data
    assert [r["from_step"] for r in after["history"]["runs"]] == [0, 4]


def test_the_targets_pose_is_normalised_as_a_frame(trained_rtn):
    """So that goal - pose, which the network reads and walks a straight line along, is the offset."""
    stats = load(trained_rtn["checkpoint"])["stats"]
    d = len(stats["frame_mean"])
    np.testing.assert_array_equal(stats["target_mean"][:d], stats["frame_mean"])
    np.testing.assert_array_equal(stats["target_std"][:d], stats["frame_std"])
    assert (stats["target_std"][d:-1] != 1).any()                           # the velocities: their own


def test_two_processes_with_gloo(lafan1_zip, trained_rtn, tmp_path):
    """DistributedDataParallel under torchrun, on the CPU: the path a multi-GPU run takes."""
    torchrun = Path(sys.executable).with_name("torchrun")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "training", "rtn", "--data", str(lafan1_zip),
         "--subjects", "1,2,3,4", "--out", str(tmp_path), "--steps", "2", "--batch", "4", "--max-gap", "10",
         "--validate-every", "100", "--validation-windows", "16", "--cache", str(trained_rtn["cache"]),
         "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    state = load(tmp_path / "checkpoint.pt")
    assert state["step"] == 2
    assert all(torch.isfinite(v).all() for v in state["model"].values())


def test_export_carries_metadata_and_matches_torch(trained_rtn):
    session = onnxruntime.InferenceSession(str(trained_rtn["model"]), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["betwixt.kind"] == "rtn" and meta["betwixt.version"] == "2"
    assert all(key.startswith("betwixt.") for key in meta)          # one namespace
    assert json.loads(meta["betwixt.skeleton"])["names"][0] == "Hips"
    assert "CC BY-NC-ND 4.0" in meta["betwixt.licence"]
    data = json.loads(meta["betwixt.data"])
    assert data["source"] == "lafan1-27.zip" and data["subjects"] == [1, 2, 3, 4]
    assert not any("subject5" in f for f in data["files"])
    assert json.loads(meta["betwixt.config"])["past"] == 10 and json.loads(meta["betwixt.gaps"])["max"] >= 60
    assert trained_rtn["model"].stat().st_size < 15e6
    # the reflections the run mirrored its clips with, for the runtime's average with the mirror image
    reflections = np.array(json.loads(meta["betwixt.mirror"])["reflections"])
    assert reflections.shape == (22, 3) and (reflections == [1, 1, -1]).all()   # LaFAN1: one Z flip
    assert meta["betwixt.backward"] == "true"     # trained on windows played backwards too (--reverse)

    state = load(trained_rtn["checkpoint"])
    model = shipped_network(state)
    cf = model.config
    gen = torch.Generator().manual_seed(0)
    past = torch.randn(3, cf.past, cf.pose_dim, generator=gen)
    target = torch.randn(3, cf.target_dim, generator=gen)
    with torch.no_grad():
        expected = model(past, target, 30).numpy()
    got = session.run(["frames"], {"past": past.numpy(), "target": target.numpy(), "gap": np.array(30),
                                   "noise": np.zeros((3, cf.future_dim), np.float32)})[0]
    assert got.shape == expected.shape == (3, 31, cf.pose_dim)
    assert np.abs(got - expected).max() < 1e-4


def test_a_bad_data_set_is_one_clear_error(tmp_path):
    result = run_training([sys.executable, "-m", "training", "rtn", "--data", str(tmp_path / "none.zip"),
                           "--out", str(tmp_path / "run")])
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {tmp_path / 'none.zip'}: no such file or folder; --data takes a " \
                                    "folder or a .zip/.tar.xz of BVH files"


def test_validation_gaps_lie_in_the_held_out_tenth(lafan1_zip, trained_rtn):
    """Every missing frame and target of a validation window comes from the last tenth of its clip;
    only the past context may reach back before it. Found by the non-root joints' local rotations,
    which canonicalising the pose leaves alone."""
    from lab.dataset import load_motion_set
    from training.clips import HOLD_OUT
    from training.rtn.sampler import Transitions

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    val = Transitions(data, "validation", SUBJECT_1, mirrored=False)
    clips = [data.clip(i) for i, name in enumerate(data.names) if name.endswith("subject1")]
    frames = np.concatenate([c.rotations[:, 1:].reshape(c.n_frames, -1) for c in clips])
    held_out = np.concatenate([np.arange(c.n_frames) >= round(c.n_frames * (1 - HOLD_OUT)) for c in clips])
    batch = val.sample(512, 30, np.random.default_rng(0))

    def poses(q):   # each pose's joint rotations, up to each one's sign, to four decimals: a pose's key
        q = np.asarray(q, dtype=np.float32).reshape(len(q), -1, 4)
        q = np.round(np.where(q[..., :1] < 0, -q, q), 4) + 0.0     # + 0.0: no negative zeros
        return [row.tobytes() for row in q.reshape(len(q), -1)]

    frame_of = dict(zip(poses(frames), range(len(frames))))

    def held_out_frames(window):   # root position, root rotation, then the joints' rotations
        q = window[..., 7:].reshape(-1, frames.shape[1])
        return held_out[[frame_of[pose] for pose in poses(q)]].reshape(window.shape[:-1])

    assert held_out_frames(batch["truth"][:16]).all()          # the gap and the target: held out
    assert not held_out_frames(batch["past"][:, 0]).all()      # some past context starts before the cut


def test_training_targets_carry_the_sign_the_motion_turns_by(lafan1_zip, trained_rtn):
    """Training: the target is the truth's last frame, signs and all, so the straight line to it
    follows the way a joint turns. Validation: as the runtime sees keys, the short way round."""
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    d = 3 + 4 * len(data.skeleton.names)
    train = Transitions(data, "train", SUBJECT_1, mirrored=False).sample(256, 90, np.random.default_rng(0))
    np.testing.assert_array_equal(train["target"][:, :d], train["truth"][:, -1])
    quats = lambda frame: frame[:, 3:d].reshape(len(frame), -1, 4)                       # noqa: E731
    assert (np.sum(quats(train["target"]) * quats(train["past"][:, -1]), axis=-1) < 0).any()   # turned far
    val = Transitions(data, "validation", SUBJECT_1, mirrored=False).sample(256, 90, np.random.default_rng(0))
    assert (np.sum(quats(val["target"]) * quats(val["past"][:, -1]), axis=-1) >= 0).all()


def test_speeds_add_clips_played_faster_and_slower(lafan1_zip, trained_rtn):
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    one = Transitions(data, "train", SUBJECT_1, mirrored=False)
    three = Transitions(data, "train", SUBJECT_1, mirrored=False, speeds=(1.0, 0.5, 2.0))
    n = len(one.lengths)
    assert len(three.lengths) == 3 * n
    np.testing.assert_array_equal(three.lengths[n:2 * n], 2 * one.lengths - 1)     # half speed: twice the frames
    np.testing.assert_array_equal(three.lengths[2 * n:], (one.lengths - 1) // 2 + 1)
    first = one.rotations[:one.lengths[0]]
    slow = three.rotations[three.starts[n]:three.starts[n] + three.lengths[n]]
    fast = three.rotations[three.starts[2 * n]:three.starts[2 * n] + three.lengths[2 * n]]
    same = lambda a, b: np.abs(np.sum(a * b, axis=-1)).min() > 1 - 1e-5   # noqa: E731 (up to sign)
    assert same(slow[::2], first) and same(fast, first[::2])
    halfway = slow[1::2]                 # between two captured frames: neither of them
    assert not same(halfway, first[:-1]) and not same(halfway, first[1:])


def test_reverse_plays_windows_backwards(lafan1_zip, trained_rtn):
    """A backward window is the window of the clip played backwards: its past the frames after the
    gap, its target the key before it."""
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    n, width, first = 20, 10 + 20 + 2, 3000
    backward = Transitions(data, "train", SUBJECT_1, mirrored=False, reverse=1.0)
    played_back = Transitions(data, "train", SUBJECT_1, mirrored=False)
    # one clip of exactly one window (mid-motion), so that both draw the same start
    for t, frames in ((backward, slice(first, first + width)), (played_back, slice(first + width - 1, first - 1, -1))):
        t.rotations, t.positions = t.rotations[frames], t.positions[frames]
        t.lengths, t.starts = np.array([width]), np.array([0])
    a = backward.sample(4, n, np.random.default_rng(0), keep_after=1.0)
    b = played_back.sample(4, n, np.random.default_rng(0), keep_after=1.0)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-6)
    forward = Transitions(data, "train", SUBJECT_1, mirrored=False)
    forward.rotations, forward.positions = backward.rotations, backward.positions
    forward.lengths, forward.starts = backward.lengths, backward.starts
    assert np.abs(forward.sample(4, n, np.random.default_rng(0), keep_after=1.0)["past"] - a["past"]).max() > 0.1


def test_the_l2_loss_counts_each_frames_error_in_proportion(lafan1_zip, trained_rtn):
    """--loss l2 averages each frame's error norm, the benchmark's measure; the paper's MSE averages
    its square. One frame off by e, then another also off by 2e: l2 triples, MSE grows fivefold."""
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions
    from training.loop import Normaliser
    from training.rtn.family import frames_loss, to_torch

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    batch = to_torch(Transitions(data, "train", SUBJECT_1, mirrored=False).sample(4, 9, np.random.default_rng(0)), "cpu")
    state = load(trained_rtn["checkpoint"])
    norm, parents = Normaliser(state["stats"]), [int(p) for p in data.skeleton.parents]
    one, two = batch["truth"].clone(), batch["truth"].clone()
    one[:, 0, 0] += 0.05                      # the root 5 % of a height off on the first frame
    two[:, 0, 0] += 0.05
    two[:, 5, 0] += 0.10                      # and twice that on the sixth
    (_, r1, l2_one), (_, r2, l2_two) = (frames_loss(o, batch, norm, parents, 0, squared=False) for o in (one, two))
    (_, _, mse_one), (_, _, mse_two) = (frames_loss(o, batch, norm, parents, 0) for o in (one, two))
    assert r1 < 1e-3 and r2 < 1e-3          # the rotations are the truth's (up to the floor of the norm)
    assert l2_one > 0 and mse_one > 0
    np.testing.assert_allclose(l2_two / l2_one, 3.0, rtol=1e-3)   # the other frames: float noise
    np.testing.assert_allclose(mse_two / mse_one, 5.0, rtol=1e-3)


def test_the_acceleration_term_weighs_a_kick_at_the_key_and_a_jitter_above_a_smooth_drift(lafan1_zip, trained_rtn):
    """--acceleration adds the second difference of each frame's position error, the key's frames erring by
    nothing: the root drifting off 1 % of a height a frame from the key costs it one frame's step; off by the
    same on every frame from the first (a kick at the key), or by that much to and fro (a jitter), far more, at the
    same position error."""
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions
    from training.loop import Normaliser
    from training.rtn.family import frames_loss, to_torch

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    batch = to_torch(Transitions(data, "train", SUBJECT_1, mirrored=False).sample(4, 9, np.random.default_rng(0)), "cpu")
    state = load(trained_rtn["checkpoint"])
    norm, parents = Normaliser(state["stats"]), [int(p) for p in data.skeleton.parents]
    frames = batch["truth"].shape[1]
    drift, kick, jitter = batch["truth"].clone(), batch["truth"].clone(), batch["truth"].clone()
    drift[:, :, 0] += 0.01 * torch.arange(1, frames + 1)
    kick[:, :, 0] += 0.01 * (frames + 1) / 2
    jitter[:, :, 0] += 0.01 * (frames + 1) / 2 * (-1.0) ** torch.arange(frames)

    def term(out):
        plain, with_it = (frames_loss(out, batch, norm, parents, 0, squared=False, acceleration=a)[0] for a in (0, 1))
        return float(with_it - plain)

    error = [float(frames_loss(o, batch, norm, parents, 0, squared=False)[2]) for o in (drift, kick, jitter)]
    np.testing.assert_allclose(error, error[1], rtol=0.01)            # the same mean error norm
    costs = [term(o) for o in (drift, kick, jitter)]
    assert 0 < costs[0] < 0.5 * costs[1] and costs[1] < 0.5 * costs[2], costs


def test_the_loss_after_the_blends_is_measured_on_the_runtimes_blends(lafan1_zip, trained_rtn):
    """--blends: training's torch blends are the runtime's numpy ones, the end blend only where the
    network was given the frame after the target, and the loss's gradient goes through them."""
    from lab.dataset import load_motion_set
    from inference.rtn.blends import BLEND, end_blend, end_ramp, start_blend, start_ramp, target_blend, target_ramp
    from training.rtn.sampler import Transitions
    from training.loop import Normaliser
    from training.rtn.family import blended, frames_loss, to_torch

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    sample = Transitions(data, "train", SUBJECT_1, mirrored=False).sample(64, 20, np.random.default_rng(0))
    assert 0 < sample["after_known"].sum() < 64          # keep_after drops the frame after for some
    batch = to_torch(sample, "cpu")
    frames = (batch["truth"] + 0.05 * torch.randn(batch["truth"].shape, generator=torch.Generator().manual_seed(0)))
    frames.requires_grad_(True)
    out = blended(frames, batch, BLEND)
    key = sample["target"][:, :frames.shape[-1]]
    steps = frames.shape[1]
    through = target_blend(start_blend(frames.detach().double().numpy(), sample["past"], start_ramp(steps)), key,
                           target_ramp(steps, BLEND))
    known = sample["after_known"] == 1
    ended = end_blend(through, key, sample["after"], end_ramp(steps))
    np.testing.assert_allclose(out.detach().numpy()[known], ended[known], atol=1e-5)
    np.testing.assert_allclose(out.detach().numpy()[~known], through[~known], atol=1e-5)
    state = load(trained_rtn["checkpoint"])
    loss, _, _ = frames_loss(out, batch, Normaliser(state["stats"]), [int(p) for p in data.skeleton.parents], 0)
    loss.backward()
    assert torch.isfinite(frames.grad).all() and frames.grad[:, 1:-1].abs().sum() > 0


def test_the_relative_loss_is_the_loss_over_interpolations(lafan1_zip, trained_rtn):
    """--relative: each term divided by straight-line interpolation's total on the same batch, which
    grows with the gap, so a long gap's step pulls the weights no harder than a short one's."""
    from lab.dataset import load_motion_set
    from training.rtn.sampler import Transitions
    from training.loop import Normaliser
    from training.rtn.family import frames_loss, interpolated, to_torch, transition_loss

    data = load_motion_set(lafan1_zip, trained_rtn["cache"])
    state = load(trained_rtn["checkpoint"])
    model, norm, parents = shipped_network(state), Normaliser(state["stats"]), [int(p) for p in data.skeleton.parents]
    sample = Transitions(data, "train", SUBJECT_1, mirrored=False).sample
    scales = []
    for n in (5, 60):
        batch = to_torch(sample(16, n, np.random.default_rng(n)), "cpu")
        torch.manual_seed(0)
        raw = transition_loss(model, norm, batch, n, parents, 0, teacher=False, squared=False)
        torch.manual_seed(0)
        relative = transition_loss(model, norm, batch, n, parents, 0, teacher=False, squared=False, relative=True)
        scale = frames_loss(interpolated(batch, n), batch, norm, parents, 0, squared=False)[0]
        for r, q in zip(raw, relative):
            torch.testing.assert_close(q, r / scale)
        scales.append(float(scale))
    assert scales[1] > 3 * scales[0]


def earlier(state):
    """``state`` as Betwixt wrote checkpoints before this version: numpy statistics, the arguments as
    strings, curves as bare lists, the network's experimental inputs in its config, and no format."""
    history = state["history"]
    return {
        "model": state["model"], "optimiser": state["optimiser"], "average": state["average"], "step": state["step"],
        "config": {**state["config"], "velocity": False, "extra_dim": 0},
        "stats": {k: v.numpy().astype(np.float32) for k, v in state["stats"].items()},
        "meta": {**{k: v for k, v in state["meta"].items() if k != "args"},
                 "args": {"command": "rtn", **{k: str(v) for k, v in state["meta"]["args"].items()}}},
        "history": {"train": [[s, v["loss"], v["rotations"], v["positions"]] for s, v in history["train"]],
                    "validation": [[s, *v.values()] for s, v in history["validation"]],
                    "runs": [{"from_step": 0, "args": {"command": "rtn", **{k: str(v) for k, v in
                                                                            state["meta"]["args"].items()}}}]},
    }


def test_a_checkpoint_that_would_run_code_is_refused_unread(trained_rtn, tmp_path):
    """Checkpoints are read with weights_only=True: a pickled object is never built, so its code never runs."""
    marker = tmp_path / "ran"
    torch.save({"model": Exploit(str(marker))}, tmp_path / "evil.pt")
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(tmp_path / "run")
    for command in (args + ["--init", str(tmp_path / "evil.pt")],
                    [sys.executable, "-m", "training", "export", str(tmp_path / "evil.pt"), "-o", str(tmp_path / "m.onnx")]):
        result = run_training(command)
        assert result.returncode == 2 and "not a checkpoint this version reads safely" in result.stderr, result.stderr
    assert not marker.exists() and not (tmp_path / "m.onnx").exists()


class Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_an_earlier_checkpoint_is_converted_once_then_resumes_and_exports(trained_rtn, tmp_path):
    old = tmp_path / "old.pt"
    torch.save(earlier(load(trained_rtn["checkpoint"])), old)
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").write_bytes(old.read_bytes())
    args = list(trained_rtn["train"])
    args[args.index("--out") + 1] = str(run)
    args[args.index("--steps") + 1] = "5"
    refused = run_training(args)
    assert refused.returncode == 2 and "python -m training convert" in refused.stderr
    run_training([sys.executable, "-m", "training", "convert", str(old), "-o", str(run / "checkpoint.pt")], check=True)
    converted, source = load(run / "checkpoint.pt"), load(trained_rtn["checkpoint"])
    assert converted["config"] == source["config"] and converted["history"]["validation"] == source["history"]["validation"]
    assert converted["history"]["runs"][0]["argv"][:3] == ["rtn", "--subjects", "1,2,3,4"]
    resumed = run_training(args)
    assert resumed.returncode == 0 and "resuming" in resumed.stderr, resumed.stderr
    assert load(run / "checkpoint.pt")["step"] == 5
    run_training([sys.executable, "-m", "training", "export", str(run / "checkpoint.pt"), "-o",
                  str(tmp_path / "m.onnx")], check=True)
    assert "- Steps 0 to 4: `python -m training rtn --subjects 1,2,3,4" in (tmp_path / "m.md").read_text()


def test_an_earlier_model_file_is_refused_with_what_to_do_and_converted_once(trained_rtn, tmp_path):
    """Format 1 kept the network's keys under rtn.* and a context length beside the config; converted,
    the same graph and weights fill exactly as before."""
    import onnx

    from inference.errors import BetwixtError
    from inference.modelfile import open_model
    from inference.transition import Gap

    proto = onnx.load(str(trained_rtn["model"]))
    meta = {p.key: p.value for p in proto.metadata_props}
    config = json.loads(meta.pop("betwixt.config"))
    meta.update({"betwixt.version": "1", "betwixt.past": "10", "rtn.graph": meta.pop("betwixt.graph"),
                 "rtn.weights": meta.pop("betwixt.weights"),
                 "rtn.config": json.dumps({**config, "velocity": False, "extra_dim": 0})})
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, meta)
    onnx.save(proto, str(tmp_path / "old.onnx"))
    with pytest.raises(BetwixtError, match="format version 1.*python -m training convert old.onnx"):
        open_model(tmp_path / "old.onnx")
    run_training([sys.executable, "-m", "training", "convert", str(tmp_path / "old.onnx"), "-o",
                  str(tmp_path / "new.onnx")], check=True)
    new, original = open_model(tmp_path / "new.onnx"), open_model(trained_rtn["model"])
    rng = np.random.default_rng(0)
    rot = rng.standard_normal((1, 10, 22, 4))
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)
    pos = np.repeat(original.skeleton.offsets[None, None], 10, axis=1)
    gap = Gap(original.skeleton, rot, pos, rot[:, -1], pos[:, -1], 12)
    for a, b in zip(new.fill(gap), original.fill(gap)):
        np.testing.assert_array_equal(a, b)


def test_validation_measures_as_many_held_out_windows_as_asked(lafan1_zip, trained_rtn):
    """--validation-windows: each length's score is the mean over that many fixed held-out windows, drawn a batch
    of 64 at a time (the default 256: the four batches validation always drew), a smaller last batch weighed by its
    size."""
    from lab.dataset import load_motion_set
    from training.loop import Normaliser
    from training.rtn.family import (VALIDATION_BATCH, VALIDATION_LENGTHS, VALIDATION_WINDOWS, frames_loss, predicted,
                                     to_torch, validate)
    from training.rtn.sampler import Transitions

    state = load(trained_rtn["checkpoint"])
    model, norm = shipped_network(state), Normaliser(state["stats"])
    val = Transitions(load_motion_set(lafan1_zip, trained_rtn["cache"]), "validation", SUBJECT_1, mirrored=False)
    parents = [int(q) for q in val.parents]

    def by_hand(sizes):
        rng, scores = np.random.default_rng(1234), []
        for n in VALIDATION_LENGTHS:
            terms = []
            for size in sizes:
                b = to_torch(val.sample(size, n, rng, keep_after=1.0), torch.device("cpu"))
                with torch.no_grad():
                    terms.append([t.item() * size for t in frames_loss(predicted(model, norm, b, n), b, norm, parents,
                                                                       val.layout.trajectory)[1:]])
            scores += list(np.sqrt(np.sum(terms, axis=0) / sum(sizes)))
        return scores

    device = torch.device("cpu")
    assert (VALIDATION_WINDOWS, VALIDATION_BATCH) == (256, 64)
    eighty, sixteen = validate(model, norm, val, device, 80), validate(model, norm, val, device, 16)
    np.testing.assert_allclose(eighty, by_hand([64, 16]), rtol=1e-9)
    np.testing.assert_allclose(sixteen, by_hand([16]), rtol=1e-9)
    assert not np.allclose(sixteen, eighty, rtol=1e-3)
