"""The Motion VAE as a family of the shared loop (training/loop.py): diverse continuations of a pose.

A batch is 64 roll-outs of 8 steps. Each step encodes (condition, true next pose) to a posterior, draws
z from it, and decodes (condition, z) to a prediction; the loss is the mean squared error of the
z-scored prediction plus ``--beta`` times the KL divergence of the posterior from N(0, I), both per
value (per pose value and per latent dimension), averaged over the steps; with ``--skate``, plus that
weight times the feet's skating from the condition to the prediction (:func:`skating`); with
``--skate-root`` only the predicted root's step learns from it (a term that the feet learn too stills them
by sending the walks down to a crouch or the floor: docs/experiments.md). The next step's condition is
the true pose or, for each roll-out with the probability of scheduled sampling, the prediction
(detached): 0 for the first ``--supervised`` steps, rising linearly over ``--ramp`` steps, 1 after (the
reference's 20 + 20 + 100 epochs, as fractions of ``--steps`` by default). The roll-outs' steps are
one optimiser step (the reference steps after each). Adam at ``--lr`` decayed linearly to 0 at
``--steps``. Validation reports the KL of every latent dimension (``kl_dims``) and the active units: a
decoder that ignores z (posterior collapse) shows as KL near zero everywhere.

    python -m training mvae --data ../shared/mocap/lafan1-27.zip --out runs/mvae --subjects 1,2,3,4
    python -m training export runs/mvae/checkpoint.pt -o mvae-lafan1.onnx --weights int8
"""

import base64
import json
import math
from dataclasses import asdict

import numpy as np
import onnxruntime
import torch

from inference.cli import number, whole
from lab.dataset import load_motion_set
from inference.anatomy import stance_joints
from inference.errors import DataError
from lab.metrics import SKATE_HEIGHT
from inference.mvae.features import ROOT, fields
from ..clips import selection_of, speeds_of
from ..family import Family, one_data_set
from ..onnx_tools import agreement, metadata_of
from .card import sections
from .data import parts
from .network import DECODER_INPUTS, ENCODER_INPUTS, MVAE, MVAEConfig, decoder_graph, encoder_graph

VALIDATION_ROLLOUTS = 1024   # evenly spaced held-out roll-outs that validation measures: the same every time
ACTIVE = 0.01                # nats: a latent dimension whose mean KL is above this carries information


class MVAEFamily(Family):
    name = "mvae"
    title = ("A Motion VAE (Ling, Zinno, Cheng, van de Panne 2020): an autoregressive conditional variational "
             "autoencoder whose decoder, a mixture of experts, maps the previous pose and a random latent to the "
             "next pose, so that one pose has many plausible continuations.")
    normalisation = ("pose_mean", "pose_std", "pose_min", "pose_max")

    def add_arguments(self, parser):
        parser.set_defaults(lr=1e-4, batch=64)   # the paper's (the loop's defaults are the RTN's)
        parser.add_argument("--latent", type=whole(1, 1024, "each is a number the runtime draws a step"), default=32,
                            help="latent dimensions (paper: 32)")
        parser.add_argument("--experts", type=whole(1, 64, "each is a copy of the decoder's weights"), default=6,
                            help="experts of the decoder (paper: 6)")
        parser.add_argument("--hidden", type=whole(1, 4096, "a layer's width"), default=256,
                            help="width of the encoder's and every expert's hidden layers (paper: 256; a new run only)")
        parser.add_argument("--beta", type=number(0.0, 1000.0, "the KL term's weight; 0 leaves the latent unshaped"),
                            default=1.0,
                            help="weight of the KL term against the reconstruction (each a mean per value)")
        parser.add_argument("--rollout", type=whole(1, 1000, "steps of a roll-out, each held for the backward pass"),
                            default=8, help="steps of a training roll-out (paper: 8)")
        steps = whole(0, math.inf, "optimiser steps")
        parser.add_argument("--supervised", type=steps, default=None,
                            help="steps that always condition on the true pose (default: a seventh of --steps)")
        parser.add_argument("--ramp", type=steps, default=None,
                            help="steps over which the chance of conditioning on the prediction rises from 0 to 1 "
                                 "(default: a seventh of --steps); every later step is autoregressive")
        parser.add_argument("--skate", type=number(0.0, 1000.0, "the skating term's weight"), default=0.0,
                            help="weight of the feet's skating (cm a frame, as bench-mvae measures it) from each "
                                 "step's condition to its prediction (0: the paper's loss)")
        parser.add_argument("--skate-root", action="store_true",
                            help="with --skate, only the predicted root's step learns from the skating term: the "
                                 "root is moved as the feet on the floor carry it, the feet are not stilled")

    def data(self, args):
        data = load_motion_set(one_data_set(args, self.name), args.cache)
        chosen = selection_of(args)
        train, validation = parts(data, chosen, not args.no_mirror, speeds_of(args), args.rollout)
        sk = data.skeleton
        self.feet = Feet.of(train, sk, data.fps)
        meta = {"data": [data.source], "data_files": train.files, "subjects": chosen.subjects,
                "held_out": list(chosen.held_out),
                "fps": float(data.fps), "layout": train.layout,
                "skeleton": sk.to_json(),
                "reflections": None if train.reflections is None else train.reflections.tolist(),
                "frames": {"train": len(train.poses), "validation": len(validation.poses)}}
        return train, validation, meta

    def statistics(self, train, args, rng):
        """Mean and spread of every pose value over the training poses (a spread below 1e-5, such as the
        hips' horizontal position in their own root frame, is taken as 1), and its range, which the
        runtime keeps a roll-out near (``inference.mvae.runtime``, RANGE_MARGIN)."""
        pose = train.poses.astype(np.float64)
        std = pose.std(axis=0)
        return {"pose_mean": pose.mean(axis=0), "pose_std": np.where(std < 1e-5, 1.0, std),
                "pose_min": pose.min(axis=0), "pose_max": pose.max(axis=0)}

    def config(self, train, args):
        return asdict(MVAEConfig(pose=train.poses.shape[1], latent=args.latent, experts=args.experts,
                                 hidden=args.hidden))

    def network(self, config, stats):
        return MVAE(MVAEConfig(**config), stats["pose_mean"], stats["pose_std"])

    def check_init(self, source, train, path):
        joints = source["meta"]["layout"]["joints"]
        if joints != train.layout["joints"]:
            raise DataError(f"{path}: made for the joints {joints}, the data has {train.layout['joints']}; start "
                            "from a checkpoint of this skeleton or without --init")

    def rate(self, step, train, args):
        """Linear decay to 0 at ``--steps``. The loop asks this first every step: the step is kept for the
        scheduled sampling of the batch that follows."""
        self.step = step
        return max(1.0 - step / args.steps, 0.0)

    def batch(self, train, args, rng, step_rng, device):
        """(roll-outs (B, rollout + 1, D) on ``device``, (B, rollout) True where a step conditions on the
        prediction rather than the true pose)."""
        if train.on_device is None or train.on_device[0] != str(device):   # once: the data is small
            train.on_device = str(device), torch.as_tensor(train.poses).to(device)
        first = train.starts[rng.integers(0, len(train.starts), args.batch)]
        index = torch.from_numpy(first[:, None] + np.arange(args.rollout + 1)).to(device)
        student = rng.random((args.batch, args.rollout)) < sampling(self.step, args)
        return train.on_device[1][index], torch.from_numpy(student).to(device)

    def loss(self, net, norm, batch, args):
        rollouts, student = batch
        seq = (rollouts - norm.pose_mean) / norm.pose_std
        condition, recon, kl, skate = seq[:, 0], 0.0, 0.0, 0.0
        for k in range(1, seq.shape[1]):
            out, mean, logvar = net(condition, seq[:, k])
            recon = recon + (out.float() - seq[:, k]).square().mean()
            kl = kl + divergence(mean.float(), logvar.float()).mean()
            if args.skate:
                pose = out.float() * norm.pose_std + norm.pose_mean
                if args.skate_root:
                    pose = torch.cat([pose[:, :ROOT], pose[:, ROOT:].detach()], dim=1)
                skate = skate + self.feet.skating(condition * norm.pose_std + norm.pose_mean, pose).mean()
            condition = torch.where(student[:, k - 1, None], out.detach().float(), seq[:, k])
        steps = seq.shape[1] - 1
        recon, kl, skate = recon / steps, kl / steps, skate / steps
        parts = {"recon": recon.detach(), "kl": kl.detach(), "student": student.float().mean()}
        if args.skate:
            parts["skate"] = skate.detach()
        return recon + args.beta * kl + args.skate * skate, parts

    def validate(self, model, norm, validation, args, device):
        return validate(model, validation, args.rollout, device)

    def graph(self, model):
        return decoder_graph(model)

    def metadata(self, state, model):
        meta = state["meta"]
        encoder = encoder_graph(model).SerializeToString()
        return {"graph": "step", "layout": json.dumps(meta["layout"]),
                "latent": str(model.config.latent),
                "encoder": base64.b64encode(encoder).decode("ascii"),
                **({"mirror": json.dumps({"reflections": meta["reflections"]})} if meta.get("reflections") else {})}

    def check_export(self, model, path):
        """The largest difference between torch and onnxruntime, over the decoder (the file's graph) and
        the encoder (its metadata's)."""
        rng = np.random.default_rng(0)
        mean, std = model.pose_mean.numpy(), model.pose_std.numpy()
        previous, pose = (mean + std * rng.standard_normal((2, 4, model.config.pose))).astype(np.float32)
        z = rng.standard_normal((4, model.config.latent)).astype(np.float32)
        decoder = agreement(lambda previous, z: model.decode(model.normalised(previous), z)[0] * model.pose_std
                            + model.pose_mean, path, dict(zip(DECODER_INPUTS, (previous, z))))
        session = onnxruntime.InferenceSession(base64.b64decode(metadata_of(path)["betwixt.encoder"]),
                                               providers=["CPUExecutionProvider"])
        got = session.run(None, dict(zip(ENCODER_INPUTS, (previous, pose))))
        with torch.no_grad():
            want = model.encode(model.normalised(torch.from_numpy(previous)), model.normalised(torch.from_numpy(pose)))
        return max(decoder, *(float(np.abs(g - w.numpy()).max()) for g, w in zip(got, want)))

    def card(self, state, model, metadata, path, bench_data=None, data=None, cache=None):
        return sections(state, metadata, ACTIVE, path, bench_data, cache)


class Feet:
    """The feet of the skating term: their positions' columns in a pose, their grounds and the frame rate.

    A foot's skating from one pose to the next is bench-mvae's (``lab/metrics.py``): its
    horizontal step times clamp(2 - 2^(h / H), 0, 1), h its mean height over its ground (the 2nd
    percentile of its height in the training poses). The weight is held fixed in the gradient, so that
    the term stills a foot near its ground rather than lifting it out of the measure's reach."""

    def __init__(self, columns, ground, fps):
        self.columns, self.ground, self.fps = columns, ground, fps

    @classmethod
    def of(cls, train, skeleton, fps):
        start = fields(len(skeleton))["positions"][0]
        columns = np.array([[start + 3 * j + c for c in range(3)] for j in stance_joints(skeleton)])
        ground = np.percentile(train.poses[:, columns[:, 1]], 2, axis=0)
        return cls(torch.as_tensor(columns), torch.as_tensor(ground, dtype=torch.float32), fps)

    def skating(self, previous, pose):
        """(B, feet) each foot's skating (units a frame) from raw poses ``previous`` to ``pose`` (B, D):
        ``pose``'s feet are in its own root frame, moved into the previous one by its root's step."""
        columns = self.columns.to(pose.device)
        before, after = previous[:, columns], pose[:, columns]                    # (B, feet, 3)
        dx, dz, turn = (pose[:, k, None] / self.fps for k in range(3))            # (B, 1) each
        cos, sin = torch.cos(turn), torch.sin(turn)
        x = cos * after[..., 0] + sin * after[..., 2] + dx - before[..., 0]
        z = -sin * after[..., 0] + cos * after[..., 2] + dz - before[..., 2]
        h = 0.5 * (before[..., 1] + after[..., 1]).detach() - self.ground.to(pose.device)
        weight = torch.clamp(2 - torch.pow(2.0, h / SKATE_HEIGHT), 0, 1)
        return torch.sqrt(x.square() + z.square() + 1e-8) * weight


def sampling(step, args):
    """The chance that a roll-out's step conditions on its own prediction at optimiser step ``step``."""
    supervised = args.steps // 7 if args.supervised is None else args.supervised
    ramp = args.steps // 7 if args.ramp is None else args.ramp
    if step < supervised:
        return 0.0
    return min((step - supervised + 1) / max(ramp, 1), 1.0)


def divergence(mean, logvar):
    """KL(N(mean, exp(logvar)) || N(0, I)) per latent dimension (B, L), in nats."""
    return 0.5 * (mean.square() + logvar.exp() - 1.0 - logvar)


@torch.no_grad()
def validate(model, validation, steps, device, rollouts=VALIDATION_ROLLOUTS):
    """On evenly spaced held-out roll-outs, z-scored: ``recon``, the mean squared error of one step decoded
    from the posterior's mean; ``rollout``, the same fed its own predictions for ``steps`` steps; ``prior``,
    one step from a z drawn from the prior (far above ``recon`` when the decoder uses z); ``kl`` the mean
    KL a dimension (nats), ``kl_dims`` each dimension's; ``active``, the dimensions whose KL exceeds
    ACTIVE, and ``active_mean``, those whose posterior mean varies across the data by more than ACTIVE
    (variance)."""
    model.eval()
    starts = validation.starts[np.linspace(0, len(validation.starts) - 1, min(rollouts, len(validation.starts))
                                           ).astype(np.int64)]
    poses = torch.as_tensor(validation.poses[starts[:, None] + np.arange(steps + 1)]).to(device)
    seq = model.normalised(poses)
    previous, pose = seq[:, :-1].flatten(0, 1), seq[:, 1:].flatten(0, 1)
    mean, logvar = model.encode(previous, pose)
    kl = divergence(mean, logvar).mean(0)
    recon = (model.decode(previous, mean)[0] - pose).square().mean()
    prior = (model.decode(previous, torch.randn(mean.shape, generator=torch.Generator(device).manual_seed(0),
                                                device=device))[0] - pose).square().mean()
    condition, drift = seq[:, 0], 0.0
    for k in range(1, steps + 1):
        condition = model.decode(condition, model.encode(condition, seq[:, k])[0])[0]
        drift += (condition - seq[:, k]).square().mean() / steps
    return {"recon": float(recon), "rollout": float(drift), "prior": float(prior), "kl": float(kl.mean()),
            "active": int((kl > ACTIVE).sum()), "active_mean": int((mean.var(0) > ACTIVE).sum()),
            "kl_dims": [float(v) for v in kl]}
