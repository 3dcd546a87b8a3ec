"""The one training loop every model family runs in: ``python -m training <family> --data D --out RUN``.

The family gives the network, the data, the loss and validation (:class:`.family.Family`); the loop
gives the rest. A checkpoint is written every few minutes and when the ``--minutes`` budget runs out,
and a run started again with the same ``--out`` resumes from it, so a GPU lease of ten-minute calls
trains one model; ``--init`` starts a new run from another run's weights (fine-tuning). The shipped
weights are an exponential moving average of the steps' (``--average``). Under ``torchrun`` every
process samples its own batches and DistributedDataParallel averages the gradients (gloo on CPU,
NCCL on GPUs):

    python -m training rtn --data ../shared/mocap/lafan1-27.zip --out runs/rtn --subjects 1,2,3,4
    torchrun --nproc_per_node 8 -m training rtn --data ... --out runs/rtn --bf16
"""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from inference.cli import number, whole
from inference.errors import DataError
from . import card, checkpoint
from .ahead import batches
from .clips import held_out_of
from .options import listed

LICENCES = {"lafan1": "CC BY-NC-ND 4.0 (Ubisoft La Forge LaFAN1): non-commercial use only",
            "bandai": "CC BY-NC 4.0 (Bandai Namco Research Motion dataset): non-commercial use only",
            "dog": "research and education only, no redistribution (MANN dog data, Zhang, Starke et al. 2018)",
            "cmu": "free for research and commercial products, no resale of the data itself (CMU Graphics Lab Motion "
                   "Capture Database, mocap.cs.cmu.edu; created with funding from NSF EIA-0196217)"}


def add_arguments(parser, family):
    """The options every family takes, then the family's own."""
    parser.add_argument("--data", required=True, action="append",
                        help="folder or archive of BVH files; given several times, several data sets "
                             "(the RTN brings them onto one skeleton)")
    parser.add_argument("--out", required=True, type=Path, help="run folder: checkpoints, curves")
    parser.add_argument("--subjects", default=None, type=listed(whole(0, math.inf, "subjects are numbered from 0")),
                        help="comma-separated training subjects (LaFAN1: 1,2,3,4); default all clips")
    parser.add_argument("--hold-out", default=None, metavar="NAMES",
                        help="clips (file stems, comma-separated, or a file of one a line) neither trained nor "
                             "validated on, in any --data, so that the model can be measured on them; a resumed "
                             "run, or one started with --init, keeps its checkpoint's held out too")
    parser.add_argument("--no-mirror", action="store_true", help="do not add mirrored clips")
    parser.add_argument("--speeds", default="1", type=listed(number(0.1, 10.0, "playback speeds: at 0 a clip never "
                                                                               "moves, at 10 a walk is a sprint"),
                                                              8, "each speed is one more copy of the clips in memory"),
                        help="comma-separated playback speeds of the training clips, e.g. 0.8,1,1.25: "
                             "more timings for small data sets (default: 1, as captured)")
    parser.add_argument("--steps", type=whole(1, math.inf, "at least one optimiser step, or the checkpoint is "
                                                          "untrained"), default=100_000, help="optimiser steps in all")
    parser.add_argument("--batch", type=whole(1, 65_536, "clips a step learns from, held in the device's memory"),
                        default=32)
    parser.add_argument("--lr", type=number(1e-9, 1.0, "a learning rate; at 0 nothing is learned, above 1 it diverges"),
                        default=5e-4)
    parser.add_argument("--bf16", action="store_true",
                        help="matrix products in bfloat16 (mixed precision; weights and loss stay float32): "
                             "several times faster on GPUs and on CPUs with AMX")
    parser.add_argument("--init", type=Path, default=None,
                        help="start a new run from this checkpoint's weights and statistics (same skeleton), "
                             "e.g. to fine-tune a model on other data; an RTN or a MANN may also start from a "
                             "model file (.onnx), such as a shipped one")
    minutes = number(0.01, 525_600, "minutes of a run's budget, up to a year")
    parser.add_argument("--minutes", type=minutes, default=None, help="stop (with a checkpoint) after this long")
    parser.add_argument("--checkpoint-minutes", type=minutes, default=5.0)
    parser.add_argument("--validate-every", type=whole(1, math.inf, "optimiser steps between validations"),
                        default=1000)
    parser.add_argument("--average", type=number(0.0, 0.99999, "a moving average's decay: at 1 it never moves"),
                        default=0.999,
                        help="decay of the moving average of the weights that validation measures and "
                             "export ships (0: the last step's weights)")
    parser.add_argument("--licence", default=None, help="licence of the data (known for LaFAN1, Bandai, CMU and the dog)")
    parser.add_argument("--cache", default=None, help="data set cache folder")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=whole(1, 1024, "CPU threads"), default=None, help="CPU threads for torch")
    parser.add_argument("--seed", type=whole(0, 2**32 - 1, "a seed is a whole number from 0"), default=0)
    parser.add_argument("--workers", type=whole(0, 256, "processes making batches"), default=None,
                        help="processes that make the RTN's batches ahead of the steps that use them, while the "
                             "network steps (0: each on the main thread when its step comes); the same batches "
                             "either way. Default: 0 on the CPU, up to 4 beside a GPU. MANN and the Motion VAE "
                             "keep their data on the device and ignore it")
    family.add_arguments(parser)


def licence_of(sources):
    """The licences of the data sets ``sources`` (paths), each once."""
    names = [Path(source).name.lower() for source in sources]
    found = [next((text for key, text in LICENCES.items() if key in name), "unknown: set --licence") for name in names]
    return "; ".join(dict.fromkeys(found))


def source_commit():
    """The git commit of this code, for the record of a run and a model file ("unknown" outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def plain(args):
    """The parsed arguments as plain values, for a checkpoint (not ``run``, the dispatch function)."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("run", "family")}


class Normaliser(torch.nn.Module):
    """A family's statistics as tensors on the training device, by name."""

    def __init__(self, stats):
        super().__init__()
        for name, value in stats.items():
            self.register_buffer(name, torch.as_tensor(value, dtype=torch.float32))


def train(family, args, argv):
    """Train ``family`` as ``args`` say; ``argv``, the command line as typed, goes into the run's record."""
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

    def say(message):
        if main_process:
            tqdm.write(message, file=sys.stderr)

    out = Path(args.out)
    ckpt_path = out / "checkpoint.pt"
    state = checkpoint.load(ckpt_path) if ckpt_path.exists() else None
    source = None if state or not args.init else _initial(family, args.init)
    if source and args.steps <= source["step"]:
        raise DataError(f"{args.init}: its weights are at step {source['step']} and --steps counts the whole run; "
                        f"give --steps {source['step']} plus the steps to train")
    kept_out(args, state or source, say)
    train_set, val_set, meta = family.data(args)
    meta = {**meta, "licence": args.licence or licence_of(args.data), "args": plain(args)}
    if source:
        family.check_init(source, train_set, args.init)
    out.mkdir(parents=True, exist_ok=True)
    if state or source:   # a resumed run keeps its units; a new run keeps the ones its weights learned to read
        config, stats = (state or source)["config"], checkpoint.arrays((state or source)["stats"])
        if not state:
            config = family.retuned(config, args)
        if not state and "file" in source:   # a model file carries the runtime's statistics, not the loss's
            stats = {**family.statistics(train_set, args, np.random.default_rng(args.seed)), **stats}
    else:
        config = family.config(train_set, args)
        stats = family.statistics(train_set, args, np.random.default_rng(args.seed))
    norm = Normaliser(stats).to(device)
    torch.manual_seed(args.seed)      # the initial weights: the same run from the same --seed
    model = family.network(config, stats).to(device)
    optimiser = family.optimiser(model, args)
    step, history = 0, {"train": [], "validation": [], "runs": []}
    if state:
        say(f"resuming {ckpt_path} at step {state['step']}")
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        step, history = state["step"], state["history"]
    elif source:  # the weights and the record of how they were made go on; the optimiser starts afresh
        model.load_state_dict(source.get("average", source["model"]))
        step, history = source["step"], source["history"]
        say(f"starting from the weights of {args.init} at step {step}")
    history.setdefault("train", [])
    history.setdefault("validation", [])
    history["runs"].append({"from_step": step, "argv": list(argv), "commit": source_commit(),
                            "hardware": card.hardware(device)})
    net = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    # Polyak averaging: consecutive checkpoints differ at a fine-tune's small rate, and their average
    # beats each of them. It starts from the checkpoint's average, or its weights.
    average = None
    if args.average:
        average = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(args.average))
        if state and "average" in state:
            average.module.load_state_dict(state["average"])
            average.n_averaged.fill_(1)
    shipped = average.module if average else model

    # the network's own draws (noise, teacher forcing): per process, per start; the batches' are per step
    torch.manual_seed(int(np.random.default_rng([args.seed, rank, step, 1]).integers(2**62)))
    made = batches(family, train_set, args, rank, step, device)

    def save():
        if not main_process:
            return
        checkpoint.save({"format": checkpoint.FORMAT, "family": family.name, "step": step, "config": config,
                         "stats": checkpoint.tensors(stats), "meta": meta, "history": history,
                         "model": model.state_dict(), "optimiser": optimiser.state_dict(),
                         **({"average": average.module.state_dict()} if average else {})}, ckpt_path)
        (out / "history.json").write_text(json.dumps(history) + "\n")
        plot_history(history, out / "loss.png")

    say(f"{family.name}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
        f"{len(meta['data_files'])} training clips, device {device}")
    bar = tqdm(total=args.steps, initial=step, desc=family.name, unit="step", disable=not main_process,
               dynamic_ncols=True)
    started = last_save = time.monotonic()
    first, window = step, []
    while step < args.steps:
        factor = family.rate(step, train_set, args)
        for group in optimiser.param_groups:
            group["lr"] = args.lr * factor
        batch = next(made)
        model.train()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
            loss, parts = family.loss(net, norm, batch, args)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        if family.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), family.clip)
        optimiser.step()
        if average:
            average.update_parameters(model)
        step += 1
        bar.update(1)
        window.append({"loss": loss.item(), **{k: float(v) for k, v in parts.items()}, **({"rate": factor} if factor != 1.0 else {})})
        if step % 50 == 0 or step == args.steps:
            mean = {k: float(np.mean([w[k] for w in window])) for k in window[0]}
            history["train"].append([step, mean])
            bar.set_postfix(mean, refresh=False)
            window = []
        if main_process and (step % args.validate_every == 0 or step == args.steps):
            scores = family.validate(shipped, norm, val_set, args, device)
            history["validation"].append([step, scores])
            say(f"validation at {step}: " + "  ".join(f"{k} {v:.3f}" for k, v in scores.items()
                                                     if not isinstance(v, list)))
        if args.minutes and time.monotonic() - started > args.minutes * 60:
            say(f"time budget of {args.minutes} min reached at step {step}")
            break
        if time.monotonic() - last_save > args.checkpoint_minutes * 60:
            save()
            last_save = time.monotonic()
    bar.close()
    made.close()   # its workers end
    seconds = max(time.monotonic() - started, 1e-6)   # a resumed run that had no step left took none
    say(f"{step - first} steps in {seconds:.1f} s: {(step - first) / seconds:.2f} steps/s, "
        f"{(step - first) * args.batch / seconds:.1f} batch items/s (validations included)")
    save()
    say(f"checkpoint {ckpt_path} at step {step}")
    if distributed:
        dist.destroy_process_group()
    return ckpt_path


def _initial(family, path):
    """The checkpoint a run starts from (``--init``), a model file's as one, once it is known to be of this
    family (whether it fits the data is the family's ``check_init``, once the data is read)."""
    if Path(path).suffix == ".onnx":
        return checkpoint.of_model_file(path, family)
    return checkpoint.initial(path, family.name)


def kept_out(args, earlier, say):
    """``args.held_out_before``: the clips the checkpoint ``earlier`` (resumed, or ``--init``'s) held out,
    which the run holds out too (:func:`.clips.selection_of`): weights that never saw a clip go on never
    seeing it, whatever a later command says."""
    args.held_out_before = earlier["meta"].get("held_out", []) if earlier else []
    missing = sorted(set(args.held_out_before) - set(held_out_of(args.hold_out)))
    if missing:
        say(f"holding out {', '.join(missing)} too, as the checkpoint's run did")


def two_panels():
    """A figure of two plots side by side for a run's curves, drawn at every checkpoint: a Figure of its own (no
    pyplot, no GUI backend) with fixed margins, sparing each checkpoint a layout pass."""
    from matplotlib.figure import Figure   # here, not on import: every training command would pay for it

    fig = Figure(figsize=(11, 4))
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.12, top=0.92, wspace=0.15)
    return fig, fig.subplots(1, 2)


def plot_history(history, path):
    """Training loss and validation curves, side by side, as a PNG."""
    fig, axes = two_panels()
    for ax, key, title in ((axes[0], "train", "training loss"),
                           (axes[1], "validation", "validation (held-out tenth of each clip)")):
        rows = history[key]
        # every curve, also one added on a resume; lists (a family's per-dimension measures) stay in the history
        for name in dict.fromkeys(k for _, v in rows for k in v if not isinstance(v[k], list)):
            ax.plot([s for s, _ in rows], [v.get(name, np.nan) for _, v in rows], label=name)
        ax.set(title=title, xlabel="step", yscale="log")
        if rows:
            ax.legend(fontsize="small")
    fig.savefig(path, dpi=90)
