"""Training the RTN: sampling, loss, checkpoints that survive being cut into pieces, curves.

The loss is the paper's mean squared error over the ``n`` missing frames and the target frame, on
the two things an animator sees: local joint rotations (which become keys) and world joint positions
(what forward kinematics makes of them, per coordinate in units of the data's spread, as the
benchmark's L2P measures them). Teacher forcing feeds the true previous frame with probability 0.2.

A checkpoint is written every few minutes and at the end of a time budget, and a run started again
with the same ``--out`` resumes from it, so a GPU lease of ten-minute calls trains one model.
Under ``torchrun`` every process samples its own batches and DistributedDataParallel averages the
gradients (gloo on CPU, NCCL on GPUs).
"""

import json
import math
import os
import pickle
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from inference.dataset import load_motion_set
from inference.errors import DataError
from inference.features import chain
from inference.runtime import BLEND, end_blend, start_blend, target_blend
from .data import Transitions
from .kinematics import forward_kinematics
from .rtn import RTN, RTNConfig

LICENCES = {"lafan1": "CC BY-NC-ND 4.0 (Ubisoft La Forge LaFAN1): non-commercial use only",
            "bandai": "CC BY-NC 4.0 (Bandai Namco Research Motion dataset): non-commercial use only"}
VALIDATION_LENGTHS = (5, 15, 30, 45)


def licence_of(source):
    name = Path(source).name.lower()
    return next((text for key, text in LICENCES.items() if key in name), "unknown: set --licence")


def add_arguments(parser):
    parser.add_argument("--data", required=True, help="folder or archive of BVH files")
    parser.add_argument("--out", required=True, type=Path, help="run folder: checkpoints, curves")
    parser.add_argument("--subjects", default=None,
                        help="comma-separated training subjects (LaFAN1: 1,2,3,4); default all clips")
    parser.add_argument("--steps", type=int, default=100_000, help="optimiser steps in all")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--bf16", action="store_true",
                        help="matrix products in bfloat16 (mixed precision; weights, loss and the "
                             "frames themselves stay float32): several times faster on GPUs and on "
                             "CPUs with AMX, which makes a larger batch nearly free")
    parser.add_argument("--init", type=Path, default=None,
                        help="start a new run from this checkpoint's weights and feature statistics "
                             "(same skeleton), e.g. to fine-tune a model on other data")
    parser.add_argument("--min-gap", type=int, default=5)
    parser.add_argument("--max-gap", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=None, help="stop (with a checkpoint) after this long")
    parser.add_argument("--checkpoint-minutes", type=float, default=5.0)
    parser.add_argument("--validate-every", type=int, default=1000)
    parser.add_argument("--no-mirror", action="store_true", help="do not add mirrored clips")
    parser.add_argument("--average", type=float, default=0.999,
                        help="decay of the moving average of the weights that validation measures and "
                             "export ships (0: the last step's weights)")
    parser.add_argument("--loss", choices=("mse", "l2"), default="mse",
                        help="mse: the paper's mean squared error; l2: the mean of each frame's error "
                             "norm, as the benchmark's L2Q and L2P measure it (see frames_loss)")
    parser.add_argument("--blends", action="store_true",
                        help="measure the loss after the runtime's start, target and end blends, on "
                             "the frames a user sees, instead of on the network's own")
    parser.add_argument("--relative", action="store_true",
                        help="divide each step's loss by straight-line interpolation's on the same batch, "
                             "so that every gap length pulls the weights alike (see transition_loss)")
    parser.add_argument("--velocity", action="store_true",
                        help="the frame encoder also reads each frame's change since the one before "
                             "(a new run, or --init from a checkpoint without it: its weights go on)")
    parser.add_argument("--speeds", default="1",
                        help="comma-separated playback speeds of the training clips, e.g. 0.8,1,1.25: "
                             "more timings for small data sets (default: 1, as captured)")
    parser.add_argument("--reverse", type=float, default=0.0,
                        help="probability of a training window played backwards, so that the runtime "
                             "may fill each gap from both sides and average (0: forwards only)")
    parser.add_argument("--noise", type=float, default=0.5,
                        help="strength of the variation noise during training (Harvey et al. 2020: 0.5)")
    parser.add_argument("--licence", default=None, help="licence of the data (known for LaFAN1 and Bandai)")
    parser.add_argument("--cache", default=None, help="data set cache folder")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    parser.add_argument("--seed", type=int, default=0)


def source_commit():
    """The git commit of this code, for the record of a run and a model file ("unknown" outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def arguments(args):
    """The command line's arguments as strings, for checkpoints and model cards (not ``run``, the
    function the command line dispatches to)."""
    return {k: str(v) for k, v in vars(args).items() if k != "run"}


class Normaliser(torch.nn.Module):
    """Feature means and spreads measured on training batches, kept with the weights."""

    def __init__(self, stats):
        super().__init__()
        for name, value in stats.items():
            self.register_buffer(name, torch.as_tensor(value, dtype=torch.float32))

    @staticmethod
    def measure(transitions, rng, min_gap, max_gap, batches=64, batch=64):
        frames, steps, targets, worlds = [], [], [], []
        for _ in range(batches):
            s = transitions.sample(batch, int(rng.integers(min_gap, max_gap + 1)), rng)
            frames.append(s["truth"].reshape(-1, s["truth"].shape[-1]))
            steps.append(np.diff(s["truth"], axis=1).reshape(-1, s["truth"].shape[-1]))
            targets.append(s["target"])
            worlds.append(s["world"].reshape(-1, *s["world"].shape[-2:]))
        f, t, w = np.concatenate(frames), np.concatenate(targets), np.concatenate(worlds)
        lay = transitions.layout
        f_mean, f_std = f.mean(0), np.maximum(f.std(0), 1e-2)
        t_mean, t_std = t.mean(0), np.maximum(t.std(0), 1e-2)
        t_mean[lay.target_dim - 1], t_std[lay.target_dim - 1] = 0.0, 1.0
        # a natural pose (for retargeting rigs whose rest pose is unlike the data's): the mean local
        # rotation of every joint, its samples first brought into one hemisphere
        q = f[:, 3:].reshape(len(f), -1, 4)
        q = np.where(np.sum(q * q[:1], axis=-1, keepdims=True) < 0, -q, q).mean(axis=0)
        return offset_in_frame_units({
            "frame_mean": f_mean, "frame_std": f_std, "target_mean": t_mean, "target_std": t_std,
            "world_std": np.maximum(w.std(0), 1e-3), "reference_pose": q / np.linalg.norm(q, axis=-1, keepdims=True),
            "frame_step_std": np.maximum(np.concatenate(steps).std(0), 1e-3)})


def offset_in_frame_units(stats):
    """``stats`` with the target's pose features scaled as the frame's, so that goal - pose is the
    offset itself and the network's straight line to the target (RTN._cell) ends on the key."""
    stats = {k: np.array(v, copy=True) for k, v in stats.items()}
    d = len(stats["frame_mean"])
    stats["target_mean"][:d], stats["target_std"][:d] = stats["frame_mean"], stats["frame_std"]
    return stats


def transition_loss(model, norm, batch, n, parents, trajectory, teacher=True, noise=0.0, squared=True, blend=None,
                    relative=False):
    """(total, rotation term, position term) for one batch of transitions of ``n`` frames.

    ``noise`` is the variation strength: trained with it, the network learns transitions that still
    land on the target whatever the noise, which is what makes its variants plausible. ``blend`` (a
    target blend length) measures the loss after the runtime's blends, on the frames a user sees;
    they are linear in the network's frames, so the network learns to leave them what they fix.

    ``relative`` divides all three by straight-line interpolation's total on the same batch (a
    constant, no gradient). A gap's errors grow with its length (the l2 loss of a 100-frame gap is
    five times a 30-frame gap's), so in the raw loss the longest gaps drive most of each step's
    gradient; as ratios to interpolation, the benchmark's measure, every length weighs alike.
    """
    out = predicted(model, norm, batch, n, teacher, noise)
    terms = frames_loss(out if blend is None else blended(out, batch, blend), batch, norm, parents, trajectory, squared)
    if not relative:
        return terms
    with torch.no_grad():
        scale = frames_loss(interpolated(batch, n), batch, norm, parents, trajectory, squared)[0]
    return tuple(term / scale for term in terms)


def predicted(model, norm, batch, n, teacher=False, noise=0.0):
    """The network's frames (B, n + 1, frame_dim) for a batch, in the data's own units."""
    past = (batch["past"] - norm.frame_mean) / norm.frame_std
    target = (batch["target"] - norm.target_mean) / norm.target_std
    truth = (batch["truth"] - norm.frame_mean) / norm.frame_std
    out = model(past, target, n, truth=truth if teacher else None, variation=noise)
    return out * norm.frame_std + norm.frame_mean


def interpolated(batch, n):
    """Frames (B, n + 1, frame_dim) from the last past frame to the target key in straight lines
    (quaternions renormalised by the loss): the baseline that validation numbers stand beside."""
    start, end = batch["past"][:, -1:], batch["target"][:, None, :batch["past"].shape[-1]]
    t = torch.arange(1, n + 2, dtype=start.dtype, device=start.device)[None, :, None] / (n + 1)
    return start + t * (end - start)


def blended(frames, batch, length):
    """The runtime's blends on a batch's frames, in torch: the start blend, the target blend over
    the last ``length`` frames, and the end blend where the network was given the frame after the
    target (as the runtime blends only then)."""
    key = batch["target"][:, :frames.shape[-1]]
    through = target_blend(start_blend(frames, batch["past"]), key, length)
    return through + batch["after_known"][:, None, None] * (end_blend(through, key, batch["after"]) - through)


def frames_loss(out, batch, norm, parents, trajectory, squared=True):
    """(total, rotation term, position term) of frames (B, n + 1, frame_dim) against the truth:
    each term the mean over frames of the squared error norm, or (not ``squared``) of the norm.

    Squared, a frame's pull on the weights grows with its error, so the middle of a long gap, where
    the truth is least predictable, drowns the first frames after the last key: the paper's MSE
    trains them little, and a fill starts with a hitch in velocity. The plain norm pulls every frame
    alike, and is what the benchmark's L2Q and L2P average."""
    per_frame = (lambda e: e) if squared else (lambda e: e.clamp_min(1e-8).sqrt())
    b, t = out.shape[:2]
    rot = out[..., 3:].reshape(b, t, -1, 4)
    rot = rot / rot.norm(dim=-1, keepdim=True).clamp_min(1e-6)
    true_rot = batch["truth"][..., 3:].reshape(b, t, -1, 4)
    rot_loss = per_frame((rot - true_rot).square().sum(dim=(-1, -2))).mean()
    local = batch["base"][:, None].expand(b, t, -1, -1)
    world = forward_kinematics(rot, local, parents, pinned=(trajectory, out[..., :3]))
    # the trajectory joint's ancestors (Bandai's joint_Root) are not predicted: leave them out
    shown = [j for j in range(len(parents)) if j not in chain(parents, trajectory)[:-1]]
    error = (world - batch["world"]) / norm.world_std
    pos_loss = per_frame(error[..., shown, :].square().sum(dim=(-1, -2))).mean()
    return rot_loss + pos_loss, rot_loss, pos_loss


def _to_torch(batch, device):
    return {k: torch.from_numpy(v).to(device) for k, v in batch.items()}


def train(args):
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    rank = int(os.environ.get("RANK", "0"))
    device = torch.device(args.device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
    if args.threads:
        torch.set_num_threads(args.threads)
    main_process = rank == 0
    say = (lambda *a, **k: print(*a, **k, file=sys.stderr, flush=True)) if main_process else (lambda *a, **k: None)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    subjects = [int(s) for s in args.subjects.split(",")] if args.subjects else None
    data = load_motion_set(args.data, args.cache)
    train_set = Transitions(data, "train", subjects, mirrored=not args.no_mirror,
                            speeds=[float(k) for k in args.speeds.split(",")], reverse=args.reverse)
    val_set = Transitions(data, "validation", subjects, mirrored=False, layout=train_set.layout)
    parents = [int(p) for p in data.skeleton.parents]
    lay = train_set.layout

    state = torch.load(ckpt_path, map_location="cpu", weights_only=False) if ckpt_path.exists() else None
    source = None if state or not args.init else _initial(args.init, lay)
    if state or source:
        # (checkpoints from before ``rotations`` existed: the frame's quaternions are every joint's)
        saved = (state or source)["config"]
        config = RTNConfig(**{"rotations": lay.joints, **saved,
                              "velocity": saved.get("velocity", False) or (not state and args.velocity)})
        # a resumed run keeps its units; a new run keeps the ones its weights learned to read
        stats = state["stats"] if state else offset_in_frame_units(source["stats"])
        if config.velocity and "frame_step_std" not in stats:
            stats["frame_step_std"] = Normaliser.measure(train_set, np.random.default_rng(args.seed), args.min_gap,
                                                         args.max_gap)["frame_step_std"]
    else:
        config = RTNConfig(pose_dim=lay.frame_dim, target_dim=lay.target_dim, offset_dim=lay.frame_dim,
                           rotations=lay.joints, velocity=args.velocity)
        stats = Normaliser.measure(train_set, np.random.default_rng(args.seed), args.min_gap, args.max_gap)
    norm = Normaliser(stats).to(device)
    torch.manual_seed(args.seed)      # the initial weights: the same run from the same --seed
    model = _network(config, stats).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr, amsgrad=True)
    step, history = 0, {"train": [], "validation": []}
    if state:
        say(f"resuming {ckpt_path} at step {state['step']}")
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        step, history = state["step"], state["history"]
        # checkpoints from before runs were logged: their one earlier run is the one in their meta
        history.setdefault("runs", [{"from_step": 0, "args": state["meta"]["args"]}])
    elif source:  # the weights and the record of how they were made go on; the optimiser starts afresh
        model.load_state_dict(_widened(network_weights(source), model))
        step, history = source["step"], source["history"]
        history.setdefault("runs", [{"from_step": 0, "args": source["meta"]["args"]}])
        say(f"starting from the weights of {args.init} at step {step}")
    for group in optimiser.param_groups:  # a resumed run may change the rate with the batch
        group["lr"] = args.lr
    # every start or resume, with its arguments, so the model card can say how the weights were made
    history.setdefault("runs", []).append({"from_step": step, "args": arguments(args), "commit": source_commit()})
    net = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    # The shipped weights: an exponential moving average of the steps' (Polyak averaging). At a
    # fine-tune's small rate consecutive checkpoints still differ by 2 % in L2P on the benchmark,
    # and their average beats each of them. It starts from the checkpoint's average, or its weights.
    average = None
    if args.average:
        average = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(args.average))
        if state and "average" in state:
            average.module.load_state_dict(state["average"])
            average.n_averaged.fill_(1)
    shipped = average.module if average else model

    rng = np.random.default_rng([args.seed, rank, step])
    torch.manual_seed(int(rng.integers(2**62)))   # teacher forcing's draws: per process, per start
    gap_rng = np.random.default_rng([args.seed, step])      # the same gap length on every process

    def save():
        if not main_process:
            return
        meta = {"data": str(args.data), "data_files": train_set.files, "layout": lay.to_json(),
                "skeleton": {"names": list(data.skeleton.names), "parents": parents,
                             "offsets": data.skeleton.offsets.tolist()},
                "licence": args.licence or licence_of(args.data), "subjects": subjects,
                "reflections": None if train_set.reflections is None else train_set.reflections.tolist(),
                "args": arguments(args)}
        tmp = ckpt_path.with_suffix(".part")
        torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(), "step": step,
                    "history": history, "config": asdict(config), "stats": stats, "meta": meta,
                    **({"average": average.module.state_dict()} if average else {})}, tmp)
        tmp.replace(ckpt_path)
        (out / "history.json").write_text(json.dumps(history) + "\n")
        plot_history(history, out / "loss.png")

    say(f"RTN: {model.num_params() / 1e6:.2f}M parameters, {len(train_set.files)} training clips "
        f"({'mirrored, ' if not args.no_mirror else ''}{train_set.rotations.shape[0]} frames), device {device}")
    started = last_save = time.monotonic()
    window_loss, window_start = [], time.monotonic()
    while step < args.steps:
        n = int(gap_rng.integers(args.min_gap, args.max_gap + 1))
        batch = _to_torch(train_set.sample(args.batch, n, rng), device)
        model.train()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss, rot_loss, pos_loss = transition_loss(net, norm, batch, n, parents, lay.trajectory,
                                                       noise=args.noise, squared=args.loss == "mse",
                                                       blend=BLEND if args.blends else None, relative=args.relative)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        if average:
            average.update_parameters(model)
        step += 1
        window_loss.append([loss.item(), rot_loss.item(), pos_loss.item()])
        if step % 50 == 0 or step == args.steps:
            mean = np.mean(window_loss, axis=0)
            rate = len(window_loss) / (time.monotonic() - window_start)
            history["train"].append([step, *map(float, mean)])
            say(f"\rstep {step}/{args.steps}  loss {mean[0]:.4f} (rotations {mean[1]:.4f}, positions "
                f"{mean[2]:.4f})  {rate:.1f} steps/s  eta {(args.steps - step) / rate / 60:.0f} min", end="")
            window_loss, window_start = [], time.monotonic()
        if main_process and (step % args.validate_every == 0 or step == args.steps):
            history["validation"].append([step, *validate(shipped, norm, val_set, parents, device,
                                                          blend=BLEND if args.blends else None)])
            say(f"\nvalidation at {step}: " + "  ".join(
                f"n={n}: rot {r:.3f} pos {p:.3f}" for n, r, p in
                zip(VALIDATION_LENGTHS, history["validation"][-1][1::2], history["validation"][-1][2::2])))
        elapsed = time.monotonic() - started
        if args.minutes and elapsed > args.minutes * 60:
            say(f"\ntime budget of {args.minutes} min reached at step {step}")
            break
        if time.monotonic() - last_save > args.checkpoint_minutes * 60:
            save()
            last_save = time.monotonic()
    save()
    say(f"\ncheckpoint {ckpt_path} at step {step}")
    if distributed:
        dist.destroy_process_group()
    return ckpt_path


def _network(config, stats):
    """A network for these feature statistics (its weights initial)."""
    model = RTN(config, stats["frame_mean"], stats["frame_std"])
    if config.velocity:
        model.step_scale.copy_(torch.as_tensor(stats["frame_std"] / stats["frame_step_std"]))
    return model


def network(state):
    """A checkpoint's network with its weights (their moving average when it kept one), to ship."""
    model = _network(RTNConfig(**state["config"]), state["stats"])
    model.load_state_dict(network_weights(state))
    return model.eval()


def network_weights(state):
    """The weights a checkpoint ships: their moving average when the run kept one."""
    return state.get("average", state["model"])


def _widened(weights, model):
    """A checkpoint's weights for ``model``, whose frame encoder may read more inputs (--velocity):
    E's first layer gets zero columns for them, so the network starts as the checkpoint's."""
    weights = dict(weights)
    first, own = weights["E.0.weight"], model.E[0].weight
    if first.shape != own.shape:
        weights["E.0.weight"] = torch.cat([first, first.new_zeros(own.shape[0], own.shape[1] - first.shape[1])], 1)
    if "step_scale" in model.state_dict():
        weights.setdefault("step_scale", model.step_scale)
    return weights


def _initial(path, layout):
    """The checkpoint a run starts from (``--init``), once it is known to fit the data's skeleton."""
    try:
        source = torch.load(path, map_location="cpu", weights_only=False)
        config = source["config"]
    except (OSError, RuntimeError, EOFError, KeyError, TypeError, pickle.UnpicklingError) as error:
        raise DataError(f"{path}: not a training checkpoint ({error}); give a RUN/checkpoint.pt") from None
    if (config["pose_dim"], config["target_dim"]) != (layout.frame_dim, layout.target_dim):
        raise DataError(f"{path}: made for a skeleton of {(config['pose_dim'] - 3) // 4} joints, the data has "
                        f"{layout.joints}; start from a checkpoint of this skeleton or without --init")
    return source


@torch.no_grad()
def validate(model, norm, val_set, parents, device, batches=4, batch=64, interpolate=False, blend=None):
    """Root mean rotation and position errors per validation length, with no teacher forcing, of
    the model or (``interpolate``) of straight-line interpolation; ``blend`` (a length in frames)
    applies the runtime's blends first, as a user sees the transitions.

    The same fixed windows every time (a fixed seed), so the curve shows the model, not the draw.
    """
    model.eval()
    rng = np.random.default_rng(1234)
    scores = []
    for n in VALIDATION_LENGTHS:
        rot = pos = 0.0
        for _ in range(batches):
            b = _to_torch(val_set.sample(batch, n, rng, keep_after=1.0), device)
            out = interpolated(b, n) if interpolate else predicted(model, norm, b, n)
            out = out if blend is None else blended(out, b, blend)
            _, r, p = frames_loss(out, b, norm, parents, val_set.layout.trajectory)
            rot, pos = rot + r.item() / batches, pos + p.item() / batches
        scores += [math.sqrt(rot), math.sqrt(pos)]
    return scores


def plot_history(history, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    if history["train"]:
        t = np.array(history["train"])
        for col, label in ((1, "loss"), (2, "rotations"), (3, "positions")):
            axes[0].plot(t[:, 0], t[:, col], label=label)
    axes[0].set(title="training loss", xlabel="step", yscale="log")
    axes[0].legend()
    if history["validation"]:
        v = np.array(history["validation"])
        for i, n in enumerate(VALIDATION_LENGTHS):
            axes[1].plot(v[:, 0], v[:, 2 + 2 * i], label=f"positions, n={n}")
    axes[1].set(title="validation (held-out tenth of each clip)", xlabel="step", yscale="log")
    axes[1].legend()
    fig.savefig(path, dpi=90)
    plt.close(fig)
