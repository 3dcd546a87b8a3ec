"""The transformer over the whole transition (``--network transformer``): the line it starts from, its
training signal, its ONNX graph against torch, and a run of the training command filling a gap in the runtime.

Real torch and onnxruntime; small networks.
"""

import json
import zipfile

import numpy as np
import onnxruntime as ort
import pytest
import torch

from inference.bvh import parse_bvh
from inference.modelfile import open_model
from inference.transition import Gap
from training.__main__ import main
from training.rtn.transformer import TransformerConfig, TransitionTransformer, rollout

SMALL = dict(pose_dim=11, target_dim=14, offset_dim=11, rotations=2, past=4, width=32, layers=2, heads=4,
             feedforward=64, noise_dim=8)
MEAN, STD = np.linspace(-0.3, 0.4, 11), np.linspace(0.5, 1.5, 11)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small(trained_out=True):
    """A small transformer; ``trained_out``: its output layer drawn at random (a new one's is zero)."""
    torch.manual_seed(0)
    model = TransitionTransformer(TransformerConfig(**SMALL), MEAN, STD)
    if trained_out:
        for p in model.frame_out.parameters():
            torch.nn.init.normal_(p, std=0.3)
    return model


def inputs(cf, batch=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, cf.past, cf.pose_dim, generator=g), torch.randn(batch, cf.target_dim, generator=g),
            torch.randn(batch, cf.noise_dim, generator=g))


def normalised(raw):
    return ((raw - torch.as_tensor(MEAN)) / torch.as_tensor(STD)).float()


def test_a_new_transformer_is_the_straight_line_to_the_key_each_quaternion_the_nearer_way():
    """Untrained, the fill is interpolation: it starts where a plain baseline does, and the key's
    rotation is reached as -q where the joint turned the long way round, not through the zero quaternion."""
    model = small(trained_out=False).eval()
    q = torch.tensor([0.6, 0.0, 0.8, 0.0])
    past = normalised(torch.cat([torch.zeros(3), q, q]))[None, None].expand(1, model.config.past, -1)
    goal = normalised(torch.cat([torch.ones(3), -q, q]))                   # joint 1 as -q, joint 2 as q
    with torch.no_grad():
        frames = model(past, torch.cat([goal, torch.zeros(3)])[None], 3)
    raw = frames[0].double() * torch.as_tensor(STD) + torch.as_tensor(MEAN)
    for k in range(4):   # frames 1..3 of the gap, then the key
        t = (k + 1) / 4
        torch.testing.assert_close(raw[k], torch.cat([torch.full((3,), t), q, q]).double(), atol=1e-5, rtol=0)


def test_noise_varies_the_gap_and_the_key_its_token_is_given():
    model = small().eval()
    past, target, z = inputs(model.config)
    with torch.no_grad():
        plain = model(past, target, 40)
        varied = model(past, target, 40, z=z, variation=1.0)
        other_key = model(past, target + 1.0, 40)
    assert (varied - plain)[:, :20].abs().mean() > 0.05
    assert (other_key - plain).abs().mean() > 0.05


def test_overfits_one_batch():
    model = small(trained_out=False).train()
    cf, n = model.config, 8
    torch.manual_seed(2)
    t = torch.linspace(0, 1, cf.past + n + 1)
    clip = torch.sin(3 * t[None, :, None] + torch.randn(4, 1, cf.pose_dim))   # curved, not the line
    past, truth = clip[:, :cf.past], clip[:, cf.past:]
    target = torch.cat([truth[:, -1], torch.zeros(4, cf.target_dim - cf.pose_dim)], dim=-1)
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(150):
        loss = (model(past, target, n) - truth).abs().mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 5, (losses[0], losses[-1])


def test_onnx_graph_matches_torch_for_any_gap_and_batch():
    model = small().eval()
    cf = model.config
    session = ort.InferenceSession(rollout(model).SerializeToString(), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["past", "target", "gap", "noise"]   # the RTN rollout's
    for batch, n in ((1, 1), (3, 30), (2, 90)):
        past, target, z = inputs(cf, batch, seed=n)
        with torch.no_grad():
            expected = model(past, target, n, z=z, variation=0.5).numpy()
        (frames,) = session.run(None, {"past": past.numpy(), "target": target.numpy(), "gap": np.array(n),
                                       "noise": 0.5 * z.numpy()})
        assert frames.shape == (batch, n + 1, cf.pose_dim)
        np.testing.assert_allclose(frames, expected, atol=1e-4, rtol=0)


def test_trained_by_the_training_command_it_fills_gaps_in_the_runtime(trained_rtn, lafan1_zip, tmp_path):
    run = tmp_path / "run"
    main(["rtn", "--data", str(lafan1_zip), "--subjects", "1,2,3,4", "--network", "transformer", "--width", "32",
          "--layers", "1", "--out", str(run), "--steps", "3", "--batch", "8", "--max-gap", "20", "--validate-every", "3",
          "--cache", str(trained_rtn["cache"]), "--threads", "1"])
    main(["export", str(run / "checkpoint.pt"), "-o", str(tmp_path / "tt.onnx"), "--weights", "int8"])
    model = open_model(tmp_path / "tt.onnx", kind="rtn")
    assert json.loads(model.file.metadata["betwixt.config"])["network"] == "transformer"
    card = (tmp_path / "tt.md").read_text().splitlines()
    assert card[2].startswith("A transformer in-betweener") and "`--network transformer`" in "\n".join(card)
    with zipfile.ZipFile(lafan1_zip) as z:
        clip = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5.bvh")
    r, p = clip.rotations, clip.positions
    gap = Gap(clip.skeleton, r[None, 990:1001], p[None, 990:1001], r[None, 1031], p[None, 1031], 30,
              r[None, 1032:1042], p[None, 1032:1042])
    rotations, positions = model.fill(gap)
    assert rotations.shape == (1, 30, len(clip.skeleton), 4) and np.isfinite(positions).all()
    # between the keys: the root moves from the last key before the gap toward the key after it
    travel = np.linalg.norm(p[1031, 0] - p[1000, 0])
    assert np.linalg.norm(positions[0, -1, 0] - p[1031, 0]) < 0.25 * travel
    variants, _ = model.variants(gap, 3, variation=1.0, seed=1)
    assert variants.shape == (3, 1, 30, len(clip.skeleton), 4)
    assert np.abs(variants[0] - variants[1]).max() > 0     # the noise reaches the frames (three steps: barely)
    # each variant leaves the last key as the plain fill does and departs from it over half a second (the
    # transformer's attention carries every frame's noise to the first): on the first frame a small share of the
    # network's own departure, all of it from half a second on (in degrees of any joint; three steps of training
    # leave the noise weak, so it is drawn ten times as strong)
    def apart(variants):
        dot = np.abs(np.sum(variants[:, 0] * rotations[0], axis=-1)).clip(max=1.0)
        return 2 * np.degrees(np.arccos(dot))                                       # (3, 30, J)

    assert model.departure == 0.5
    eased = apart(model.variants(gap, 3, variation=10.0, seed=1)[0])
    model.departure = 0.0
    whole = apart(model.variants(gap, 3, variation=10.0, seed=1)[0])
    assert whole[:, 0].max() > 1e-4
    assert np.all(eased[:, 0] <= 0.05 * whole[:, 0] + 1e-5), (eased[:, 0].max(), whole[:, 0].max())
    np.testing.assert_allclose(eased[:, 15:], whole[:, 15:], atol=1e-4)
