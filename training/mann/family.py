"""MANN as a family of the shared loop (training/loop.py): quadruped locomotion, one frame a step.

The loss is the mean squared error of the z-scored outputs (the paper's). AdamW with warm restarts
(SGDR): the rate follows a cosine from ``--lr`` down to zero over ``--restart-epochs`` epochs, then
restarts over twice as many (``--restart-mult``), and so on; 10 + 20 + 40 + 80 = 150 epochs, the
paper's training, end on the fourth cycle's floor (:meth:`MANNFamily.rate`, which the loop asks every
step, so a resumed run picks up the schedule where it stopped). Gradients are not clipped, as in the
reference.

    python -m training labels --data ../shared/mocap/dog-mann.zip --out runs/labels
    python -m training mann --data ../shared/mocap/dog-mann.zip --out runs/mann --steps 739472   # 150 epochs at batch 32
    python -m training export runs/mann/checkpoint.pt -o mann-dog.onnx --weights int8
"""

import itertools
import json
import math
import os
import sys
from dataclasses import asdict

import numpy as np
import torch

from inference.cli import number, whole
from lab.dataset import load_motion_set
from inference.errors import DataError
from inference.mann import actions as labelling
from ..clips import selection_of, speeds_of
from ..family import Family, one_data_set
from ..onnx_tools import agreement
from .card import sections
from .data import CURRENT, OUT_SAMPLE_DIM, SAMPLES, TEST_CLIPS, parts
from .network import INPUTS, MANN, MANNConfig, graph

MOST_EXPERTS = 64           # the gating network's experts (the paper's 4 or 8)
DROPOUT = 0.3              # the paper's; less measures better on the test split (docs/experiments.md)
VALIDATION_FRAMES = 4096   # evenly spaced held-out frames that validation measures: the same every time


class MANNFamily(Family):
    name = "mann"
    title = ("A Mode-Adaptive Neural Network (Zhang, Starke, Komura, Saito 2018) for quadruped motion: a "
             "motion network whose weights a gating network blends per frame from several experts, stepping a "
             "four-legged character one frame at a time along a desired trajectory, in one of six actions.")
    normalisation = ("x_mean", "x_std", "y_mean", "y_std")
    clip = None

    def add_arguments(self, parser):
        parser.set_defaults(lr=1e-4)   # the paper's rate (the loop's default is the RTN's)
        parser.add_argument("--experts", type=whole(1, MOST_EXPERTS, "each is a copy of the motion network's weights"),
                            default=8, help="experts the gating network blends (paper: 4 or 8)")
        parser.add_argument("--hidden", type=whole(1, 4096, "a layer's width"), default=512,
                            help="width of the motion network's hidden layers (paper: 512; a new run only)")
        parser.add_argument("--dropout", default=None,
                            type=number(0.0, 0.95, "a share of the inputs; at 1 nothing reaches the network"),
                            help=f"share of every layer's inputs dropped in training (default {DROPOUT}, the "
                                 "paper's; a run started with --init keeps its checkpoint's unless given)")
        parser.add_argument("--weight-decay", default=2.5e-3,
                            type=number(0.0, 1.0, "a share of the weights taken off a step, times the rate"),
                            help="AdamW's decoupled weight decay (torch's: multiplied by the rate)")
        parser.add_argument("--restart-epochs", default=10.0,
                            type=number(0.0, 1e6, "epochs of the first cycle; 0 keeps the rate constant"),
                            help="length of the first warm-restart cycle in epochs (0: a constant rate)")
        parser.add_argument("--restart-mult", default=2.0, help="each cycle this many times the last",
                            type=number(1.0, 100.0, "each cycle at least as long as the last, or the cycles end "
                                                    "before the run does"))
        parser.add_argument("--units-per-metre", default=100.0,
                            type=number(0.01, 10_000, "the data's length unit: 100 for centimetres, 1 for metres"),
                            help="the data's length unit, for the runtime's paths in metres (the dog data: cm)")

    def data(self, args):
        data = load_motion_set(one_data_set(args, self.name), args.cache)
        chosen = selection_of(args)
        train, validation = parts(data, chosen, not args.no_mirror, speeds_of(args), args.units_per_metre)
        world = int(os.environ.get("WORLD_SIZE", "1"))
        frames, batch = len(train.frames.samples), args.batch * world
        epoch = math.ceil(frames / batch)
        if int(os.environ.get("RANK", "0")) == 0:   # the schedule's epochs are frames seen, not whole epochs' steps
            cycles = [args.restart_epochs * args.restart_mult ** i for i in range(6)] if args.restart_epochs > 0 else []
            floors = ", ".join(f"{e:g}: {math.ceil(e * frames / batch)}" for e in itertools.accumulate(cycles))
            print(f"mann: {frames} training frames, {len(validation.frames.samples)} held-out: an epoch is {epoch} "
                  f"steps of {batch}" + (f"; the rate's cycles end (epochs: --steps) at {floors}" if floors else ""),
                  file=sys.stderr)
        sk = data.skeleton
        counts = np.bincount(train.frames.actions, minlength=len(labelling.ACTIONS))   # mirror images too
        meta = {"data": [data.source], "data_files": train.files, "subjects": chosen.subjects,
                "held_out": list(chosen.held_out),
                "fps": float(data.fps),
                "skeleton": sk.to_json(),
                "layout": train.layout, "test_clips": list(TEST_CLIPS),
                "reflections": None if train.reflections is None else train.reflections.tolist(),
                "labels": {"thresholds": labelling.thresholds(),
                           "frames": {a: int(n) for a, n in zip(labelling.ACTIONS, counts)}},
                "epoch": epoch}
        return train, validation, meta

    def statistics(self, train, args, rng):
        """Means and spreads of x and y over every training frame (a spread below 1e-5, a constant such as
        the next trajectory's own sample at the origin, is taken as 1)."""
        f = train.frames
        sums = {k: 0.0 for k in ("x", "xx", "y", "yy")}
        for chunk in np.array_split(f.samples, max(len(f.samples) // 16384, 1)):
            x, y = f.x(chunk).astype(np.float64), f.y(chunk).astype(np.float64)
            sums["x"] += x.sum(0)
            sums["xx"] += (x * x).sum(0)
            sums["y"] += y.sum(0)
            sums["yy"] += (y * y).sum(0)
        n = len(f.samples)
        stats = {}
        for k in ("x", "y"):
            mean = sums[k] / n
            std = np.sqrt(np.maximum(sums[k + k] / n - mean * mean, 0.0))
            stats[f"{k}_mean"], stats[f"{k}_std"] = mean, np.where(std < 1e-5, 1.0, std)
        return stats

    def config(self, train, args):
        lay = train.layout
        return asdict(MANNConfig(input=lay["input"]["size"], output=lay["output"]["size"], gating=lay["gating"],
                                 experts=args.experts, hidden=args.hidden,
                                 dropout=DROPOUT if args.dropout is None else args.dropout))

    def retuned(self, config, args):
        return config if args.dropout is None else {**config, "dropout": args.dropout}

    def network(self, config, stats):
        return MANN(MANNConfig(**config), stats["x_mean"], stats["x_std"], stats["y_mean"], stats["y_std"])

    def check_init(self, source, train, path):
        config, lay, bones = source["config"], train.layout, source["meta"]["layout"]["bones"]
        sizes = (lay["input"]["size"], lay["output"]["size"])
        if (config["input"], config["output"]) != sizes or bones != lay["bones"]:
            raise DataError(f"{path}: made for the bones {bones}, the data has {lay['bones']}; start from a "
                            "model or checkpoint of this skeleton, or without --init")

    def meta_of(self, file):
        return {"layout": file.json("betwixt.layout")}

    def weights_of(self, model, stored):
        """Export keeps the network's own names (under ``model.``); the gating network's input indices
        are the configuration's."""
        try:
            return {name: value if name == "gates" else torch.from_numpy(stored[f"model.{name}"])
                    for name, value in model.state_dict().items()}
        except KeyError as e:
            raise DataError(f"not a MANN model file of this configuration (no weights {e}); export it again") from None

    def optimiser(self, model, args):
        return torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    def rate(self, step, train, args):
        """The warm restarts' factor of ``--lr`` at ``step``, from the epochs it has seen."""
        epoch = step * args.batch * int(os.environ.get("WORLD_SIZE", "1")) / len(train.frames.samples)
        return restart_factor(epoch, args.restart_epochs, args.restart_mult)

    def batch(self, train, args, rng, step_rng, device):
        """(x, y) of ``args.batch`` random training frames, gathered on ``device``."""
        if train.on_device is None or train.on_device[0] != str(device):   # once: the data is small
            train.on_device = str(device), train.frames.to(device)
        frames = train.on_device[1]
        t = frames.samples[torch.from_numpy(rng.integers(0, len(frames.samples), args.batch)).to(device)]
        return frames.x(t), frames.y(t)

    def loss(self, net, norm, batch, args):
        x, y = batch
        out, _ = net((x - norm.x_mean) / norm.x_std, raw=False)
        error = (out.float() - (y - norm.y_mean) / norm.y_std).square()
        return error.mean(), split(error.detach().mean(0))

    def validate(self, model, norm, validation, args, device):
        return validate(model, norm, validation, device)

    def graph(self, model):
        return graph(model)

    def metadata(self, state, model):
        meta = state["meta"]
        return {"graph": "step",
                "layout": json.dumps(meta["layout"]),
                "test_clips": json.dumps(meta["test_clips"]),
                "labels": json.dumps(meta["labels"]),
                **({"mirror": json.dumps({"reflections": meta["reflections"]})} if meta.get("reflections") else {})}

    def check_export(self, model, path):
        rng = np.random.default_rng(0)
        x = model.x_mean.numpy() + model.x_std.numpy() * rng.standard_normal((4, model.config.input))
        x = x.astype(np.float32)
        return agreement(lambda x: model(x)[0], path, {INPUTS[0]: x})

    def card(self, state, model, metadata, path, bench_data=None, data=None, cache=None):
        return sections(state, metadata)


def restart_factor(epoch, first, mult):
    """SGDR's factor of the rate at ``epoch`` (a real number): a cosine from 1 to 0 over each cycle, the
    first ``first`` epochs long, each next one ``mult`` times the last (``first`` 0: always 1)."""
    if first <= 0:
        return 1.0
    start, length = 0.0, float(first)
    while epoch >= start + length:
        start, length = start + length, length * mult
    return 0.5 * (1.0 + math.cos(math.pi * (epoch - start) / length))


def split(per_output):
    """The mean of (363,) per-output errors over the trajectory, the bones and the root."""
    a = (len(SAMPLES) - CURRENT) * OUT_SAMPLE_DIM
    means = torch.stack([per_output[:a].mean(), per_output[a:-3].mean(), per_output[-3:].mean()]).tolist()
    return dict(zip(("trajectory", "bones", "root"), means))


@torch.no_grad()
def validate(model, norm, validation, device, frames=VALIDATION_FRAMES):
    """On evenly spaced held-out frames: the loss (``mse``, z-scored) and its parts, the bones' mean
    position error in the data's units (``position``), and how the gating network uses the experts:
    ``experts``, the perplexity of its mean blending weights (1 to K: how many it uses at all), and
    ``per_frame``, the mean perplexity of each frame's (K: it blends them all alike, 1: one per frame)."""
    model.eval()
    f = validation.frames
    t = f.samples[np.linspace(0, len(f.samples) - 1, min(frames, len(f.samples))).astype(np.int64)]
    errors, distance, weights = [], [], []
    lay = validation.layout["output"]["bones"]
    for chunk in np.array_split(t, max(len(t) // 1024, 1)):
        x, y = (torch.from_numpy(a).to(device) for a in (f.x(chunk), f.y(chunk)))
        out, alpha = model(x)
        errors.append((((out - y) / norm.y_std) ** 2).cpu())
        miss = (out - y)[:, lay["start"]:lay["start"] + lay["count"] * lay["stride"]]
        bones = miss.reshape(len(chunk), lay["count"], -1)
        distance.append(bones[..., :3].norm(dim=-1).mean(-1).cpu())
        weights.append(alpha.cpu())
    error, alpha = torch.cat(errors), torch.cat(weights)
    return {"mse": float(error.mean()), **split(error.mean(0)), "position": float(torch.cat(distance).mean()),
            "experts": float(perplexity(alpha.mean(0))), "per_frame": float(perplexity(alpha).mean())}


def perplexity(p):
    """exp of the entropy of distributions ``p`` (..., K)."""
    return torch.exp(-(p * p.clamp_min(1e-12).log()).sum(-1))
