"""The Recurrent Transition Network: shapes, the maths of a step, training signal, ONNX export.

Real torch and real onnxruntime throughout; small networks except where the shipped size matters.
"""

import json

import numpy as np
import onnxruntime as ort
import pytest
import torch

from training.onnx_tools import write
from training.rtn.network import RTN, RTNConfig, graph

SMALL = dict(pose_dim=12, target_dim=18, offset_dim=9, past=4, frame_hidden=64, future_hidden=16,
             lstm=64, decoder_hidden=(32, 16), init_hidden=16)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small(**kw):
    torch.manual_seed(0)
    cf = RTNConfig(**{**SMALL, **kw})
    units = (np.linspace(-0.2, 0.2, cf.pose_dim), np.linspace(0.5, 1.5, cf.pose_dim))
    return RTN(cf, *units) if cf.rotations else RTN(cf)


def inputs(cf, batch=2, n=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    return dict(past=torch.randn(batch, cf.past, cf.pose_dim, generator=g),
                target=torch.randn(batch, cf.target_dim, generator=g),
                truth=torch.randn(batch, n + 1, cf.pose_dim, generator=g),
                z=torch.randn(batch, cf.future_dim, generator=g))


def export_onnx(model, path, metadata, name="rollout", weights="float32"):
    write(graph(model, name), path, metadata, weights)


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def test_default_size_fits_the_shipped_model_budget():
    model = RTN(RTNConfig())
    assert model.num_params() < 3.5e6  # float32: under 14 MB
    assert model.R.weight.shape == (4 * 512, 512 + 512 + 256)  # W, U and C in one matrix


def test_config_rejects_an_offset_longer_than_the_frame():
    with pytest.raises(ValueError):
        RTNConfig(pose_dim=10, target_dim=20, offset_dim=11)


def test_shapes():
    model = small().eval()
    cf, n = model.config, 6
    x = inputs(cf, batch=3, n=n)
    with torch.no_grad():
        out = model(x["past"], x["target"], n)
        gap = torch.full((3,), n)
        h, c = model.init(x["past"], x["target"], gap, torch.zeros(3, cf.future_dim))
        y, h2, c2 = model.step(x["past"][:, -1], h, c, x["target"], gap + 1,
                               torch.zeros(3, cf.future_dim))
    assert out.shape == (3, n + 1, cf.pose_dim)
    assert h.shape == c.shape == h2.shape == c2.shape == (3, cf.lstm)
    assert y.shape == (3, cf.pose_dim)
    torch.testing.assert_close(y, out[:, 0])


def test_decoder_corrects_a_straight_line_to_the_target():
    """x_{t+1} = x_t + (goal - x_t) / tta + D(h_t): with D silent the frames walk the straight line
    to the key and the last step (tta = 1) lands on it; the features after the pose stay put."""
    model = small().eval()
    cf = model.config
    x = inputs(cf)
    noise = torch.zeros(2, cf.future_dim)
    h, c = torch.randn(2, cf.lstm), torch.randn(2, cf.lstm)
    frame, goal = x["past"][:, -1], x["target"][:, :cf.offset_dim]
    line = torch.cat([(goal - frame[:, :cf.offset_dim]) / 5, torch.zeros(2, cf.pose_dim - cf.offset_dim)], -1)
    with torch.no_grad():
        y, h2, _ = model.step(frame, h, c, x["target"], torch.full((2,), 5), noise)
        torch.testing.assert_close(y, frame + line + model.D(h2))
        model.D[-1].weight.zero_()
        model.D[-1].bias.zero_()
        y, _, _ = model.step(frame, h, c, x["target"], torch.full((2,), 5), noise)
        torch.testing.assert_close(y, frame + line)
        y, _, _ = model.step(frame, h, c, x["target"], torch.full((2,), 1), noise)
    torch.testing.assert_close(y[:, :cf.offset_dim], goal)
    torch.testing.assert_close(y[:, cf.offset_dim:], frame[:, cf.offset_dim:])


def test_the_line_to_the_target_takes_each_quaternions_nearer_sign():
    """A joint that turned the long way round reaches its key's rotation as -q: the step goes to
    -q, the same rotation, not through the zero quaternion to q."""
    cf = RTNConfig(**{**SMALL, "pose_dim": 11, "offset_dim": 11, "target_dim": 14, "rotations": 2})
    torch.manual_seed(0)
    mean, std = np.linspace(-0.3, 0.4, 11), np.linspace(0.5, 1.5, 11)
    model = RTN(cf, mean, std).eval()
    model.D[-1].weight.data.zero_()
    model.D[-1].bias.data.zero_()
    q = torch.tensor([0.6, 0.0, 0.8, 0.0])
    raw_frame = torch.cat([torch.zeros(3), q, q])
    raw_goal = torch.cat([torch.ones(3), -q, q])           # joint 1 as -q, joint 2 as q
    frame = ((raw_frame - torch.as_tensor(mean)) / torch.as_tensor(std)).float()[None]
    goal = ((raw_goal - torch.as_tensor(mean)) / torch.as_tensor(std)).float()
    target = torch.cat([goal, torch.zeros(3)])[None]
    with torch.no_grad():
        y, _, _ = model.step(frame, torch.zeros(1, cf.lstm), torch.zeros(1, cf.lstm), target,
                             torch.full((1,), 2), torch.zeros(1, cf.future_dim))
    raw = y[0].double() * torch.as_tensor(std) + torch.as_tensor(mean)
    torch.testing.assert_close(raw, torch.cat([torch.full((3,), 0.5), q, q]).double(), atol=1e-6, rtol=0)
    with pytest.raises(ValueError):
        RTN(cf)                                             # rotations need the frame's units


def test_teacher_forcing_with_probability_one_reads_the_truth():
    model = small().train()
    cf, n = model.config, 6
    x = inputs(cf, n=n)
    forced = model(x["past"], x["target"], n, truth=x["truth"], teacher_forcing=1.0)
    noise = torch.zeros(2, cf.future_dim)
    gap = torch.full((2,), n)
    h, c = model.init(x["past"], x["target"], gap, noise)
    frames = [x["past"][:, -1]] + list(x["truth"].unbind(1))
    expected = []
    for k in range(n + 1):
        y, h, c = model.step(frames[k], h, c, x["target"], gap + 1 - k, noise)
        expected.append(y)
    torch.testing.assert_close(forced, torch.stack(expected, 1))
    # Without teacher forcing, or in eval mode, the network reads its own predictions.
    free = model(x["past"], x["target"], n)
    assert not torch.allclose(forced[:, 1:], free[:, 1:])
    torch.testing.assert_close(free[:, 0], forced[:, 0])
    model.eval()
    torch.testing.assert_close(model(x["past"], x["target"], n, truth=x["truth"],
                                     teacher_forcing=1.0), free)


def test_variation():
    model = small().eval()
    cf, n = model.config, 40
    x = inputs(cf, n=n)
    with torch.no_grad():
        plain = model(x["past"], x["target"], n)
        torch.testing.assert_close(model(x["past"], x["target"], n, z=x["z"], variation=0.0), plain)
        torch.testing.assert_close(model(x["past"], x["target"], n, z=torch.zeros_like(x["z"]),
                                         variation=1.0), plain)
        varied = model(x["past"], x["target"], n, z=x["z"], variation=0.5)
        assert (varied - plain).abs().amax() > 1e-3
        # Noise fades: none within noise_near frames of the target, all of it from noise_far on.
        fade = model.fade_table.squeeze(-1)
        assert fade[:cf.noise_near + 1].eq(0).all() and fade[cf.noise_far:].eq(1).all()
        assert fade.diff().ge(0).all()
        # So the step that predicts the target (tta = 1) ignores the noise altogether.
        h, c = torch.randn(2, cf.lstm), torch.randn(2, cf.lstm)
        frame = x["past"][:, -1]
        for tta, affected in ((1, False), (cf.noise_near, False), (cf.noise_far, True)):
            quiet = model.step(frame, h, c, x["target"], torch.full((2,), tta), 0 * x["z"])
            loud = model.step(frame, h, c, x["target"], torch.full((2,), tta), 10 * x["z"])
            assert (not torch.equal(quiet[0], loud[0])) == affected


def test_time_to_target_changes_the_prediction():
    model = small().eval()
    x = inputs(model.config)
    with torch.no_grad():
        a = model(x["past"], x["target"], 10)[:, 0]
        b = model(x["past"], x["target"], 30)[:, 0]
    assert (a - b).abs().amax() > 1e-4


@pytest.mark.slow
def test_overfits_one_batch():
    model = small().train()
    cf, n = model.config, 8
    torch.manual_seed(2)
    # A smooth transition: the past and the truth lie on one line towards the target.
    t = torch.linspace(0, 1, cf.past + n + 1)
    start, end = torch.randn(4, 1, cf.pose_dim), torch.randn(4, 1, cf.pose_dim)
    clip = start + t[None, :, None] * (end - start)
    past, truth = clip[:, :cf.past], clip[:, cf.past:]
    target = torch.cat([truth[:, -1], torch.zeros(4, cf.target_dim - cf.pose_dim)], dim=-1)
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(200):
        loss = (model(past, target, n, truth=truth) - truth).abs().mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])


@pytest.mark.parametrize("shipped_size", [True, False])
def test_onnx_step_and_init_graphs_match_torch_over_a_rollout(tmp_path, shipped_size):
    torch.manual_seed(0)
    model = (RTN(RTNConfig()) if shipped_size else small()).eval()
    cf, n = model.config, 29  # 30 frames: 29 missing, then the target
    x = inputs(cf, batch=2, n=n)
    with torch.no_grad():
        expected = model(x["past"], x["target"], n, z=x["z"], variation=0.5).numpy()
    export_onnx(model, tmp_path / "init.onnx", {}, "init")
    export_onnx(model, tmp_path / "step.onnx", {}, "step")
    init, step = session(tmp_path / "init.onnx"), session(tmp_path / "step.onnx")
    past, target = x["past"].numpy(), x["target"].numpy()
    noise = 0.5 * x["z"].numpy()
    h, c = init.run(["h", "c"], {"past": past, "target": target, "gap": np.full(2, n), "noise": noise})
    frame, frames = past[:, -1], []
    for k in range(n + 1):
        feed = {"x": frame, "h": h, "c": c, "target": target, "tta": np.full(2, n + 1 - k), "noise": noise}
        frame, h, c = step.run(["x_next", "h_next", "c_next"], feed)
        frames.append(frame)
    np.testing.assert_allclose(np.stack(frames, 1), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("rotations", [0, 1])
def test_onnx_rollout_graph_matches_torch_for_any_gap(tmp_path, rotations):
    model = small(rotations=rotations).eval()
    cf = model.config
    export_onnx(model, tmp_path / "rtn.onnx", {})
    rollout = session(tmp_path / "rtn.onnx")
    for batch, n in ((1, 1), (3, 30), (2, 90)):
        x = inputs(cf, batch=batch, n=n, seed=n)
        with torch.no_grad():
            expected = model(x["past"], x["target"], n, z=x["z"], variation=0.5)
        feed = {"past": x["past"].numpy(), "target": x["target"].numpy(), "gap": np.array(n),
                "noise": 0.5 * x["z"].numpy()}
        (frames,) = rollout.run(None, feed)
        np.testing.assert_allclose(frames, expected.numpy(), atol=1e-4, rtol=0)


@pytest.fixture(scope="module")
def shipped_size(tmp_path_factory):
    """A network of the shipped size and its float32 export, which every quantisation is held against."""
    torch.manual_seed(0)
    model = RTN(RTNConfig()).eval()
    path = tmp_path_factory.mktemp("f32") / "f32.onnx"
    export_onnx(model, path, {})
    return model, path


@pytest.mark.slow
@pytest.mark.parametrize("weights, shrink, error", [("int8", 3, 0.01), ("mixed", 3.5, 0.05), ("int4", 4.5, 0.1)])
def test_quantized_rollout_is_smaller_and_close(shipped_size, tmp_path, weights, shrink, error):
    model, f32 = shipped_size
    cf, n = model.config, 30
    export_onnx(model, tmp_path / "small.onnx", {"betwixt.weights": weights}, weights=weights)
    assert (tmp_path / "small.onnx").stat().st_size < 15e6  # the shipped model's budget
    assert (tmp_path / "small.onnx").stat().st_size < f32.stat().st_size / shrink
    x = inputs(cf, batch=1, n=n)
    feed = {"past": x["past"].numpy(), "target": x["target"].numpy(), "gap": np.array(n),
            "noise": np.zeros((1, cf.future_dim), np.float32)}
    (full,) = session(f32).run(None, feed)
    (small_,) = session(tmp_path / "small.onnx").run(None, feed)
    motion = np.abs(full - x["past"].numpy()[:, -1:]).max()
    assert np.abs(small_ - full).max() < error * motion
    assert session(tmp_path / "small.onnx").get_modelmeta().custom_metadata_map["betwixt.weights"] == weights


def test_metadata_round_trip(tmp_path):
    model = small()
    metadata = {"betwixt.kind": "rtn", "betwixt.version": "2", "betwixt.fps": 30,
                "betwixt.skeleton": json.dumps(["Hips", "Spine"])}
    export_onnx(model, tmp_path / "rtn.onnx", metadata)
    meta = session(tmp_path / "rtn.onnx").get_modelmeta().custom_metadata_map
    assert meta == {k: str(v) for k, v in metadata.items()}
    assert model.training  # exporting leaves the mode alone
