"""``python -m training carl``: CARL's imitation controller, trained by PPO on the dog's walks, trots
and canters, in MuJoCo on the CPU:

    OMP_NUM_THREADS=1 python -m training carl --data ../shared/mocap/dog-mann.zip --out RUN --minutes 60

Reinforcement learning does not fit the shared supervised loop (``training/loop.py``: batches of data,
one loss), so this loop is its own but keeps its promises: ``RUN/checkpoint.pt`` written atomically
every few minutes and at the end, the same command resuming it, ``--minutes``, ``RUN/history.json``
and ``RUN/reward.png``, a tqdm bar, and each start's argv, commit and hardware in the history. A step
of the run is one roll-out and its PPO update. The test split's clips are never read. ``--init`` starts a
new run from another's policy, as a curriculum: a walk's policy goes on to trots and canters.
"""

import json
import math
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.carl.body import build, measure, soles
from inference.carl.observation import size
from inference.cli import number, whole
from lab.dataset import load_motion_set
from inference.errors import DataError
from inference.modelfile import find_model, open_model
from inference.motion import Skeleton
from .. import card, checkpoint
from ..loop import licence_of, source_commit, two_panels
from ..options import listed, one_of
from .env import Tracking
from .evaluate import evaluate
from .gaits import GAITS, mann_paths, stretches
from .policy import Policy, Value
from .ppo import Roller, Settings, update
from .workers import environments

FAMILY = "carl"
ANNEAL = 0.98          # of the assisting torque kept after a roll-out whose dogs stayed up (see anneal)
ASSIST_FALLS = 0.3     # the share of a roll-out's finished episodes that may fall for the torque to be lowered
ASSIST_FLOOR = 1.0     # Nm: below this the torque is taken away


def register(commands, argv):
    """The ``carl`` command among ``python -m training``'s."""
    sub = commands.add_parser(FAMILY, help="train CARL's imitation controller (PPO in MuJoCo) on the dog data")
    add_arguments(sub)
    sub.set_defaults(run=lambda args: train(args, argv))


def add_arguments(parser):
    minutes = number(0.01, 525_600, "minutes of a run's budget, up to a year")
    parser.add_argument("--data", required=True, help="the dog's BVH archive or folder (or its cache)")
    parser.add_argument("--out", required=True, type=Path, help="run folder: checkpoint, history, curves")
    parser.add_argument("--minutes", type=minutes, default=None, help="stop (with a checkpoint) after this long")
    parser.add_argument("--iterations", type=whole(1, math.inf, "roll-outs and updates in all, resumes included"),
                        default=10**9, help="roll-outs and updates in all")
    parser.add_argument("--samples", type=whole(16, 1_000_000, "policy steps a roll-out, held in memory"),
                        default=Settings.samples, help="policy steps per roll-out")
    parser.add_argument("--envs", type=whole(1, 1024, "environments"), default=8,
                        help="episodes simulated side by side, the policy read for all of them at once "
                             "(--samples of them each roll-out, as many from each)")
    parser.add_argument("--processes", type=whole(1, 1024, "processes"), default=1,
                        help="worker processes that step the environments, a share each (default 1: this process "
                             "alone); the roll-outs are the same to the bit whatever their number")
    parser.add_argument("--epochs", type=whole(1, 100, "passes over a roll-out"), default=Settings.epochs)
    parser.add_argument("--minibatch", type=whole(1, 1_000_000, "policy steps a gradient step learns from"),
                        default=Settings.minibatch)
    parser.add_argument("--lr", type=number(1e-9, 1.0, "a learning rate"), default=1e-4,
                        help="the policy's learning rate, at the start where --kl adapts it (a resumed run keeps "
                             "the rate it had)")
    parser.add_argument("--kl", type=number(0.0, 1.0, "a KL divergence"), default=Settings.kl,
                        help="the KL divergence of an update the policy's learning rate adapts to; 0: a fixed --lr")
    parser.add_argument("--gamma", type=number(0.0, 0.9999, "a discount"), default=Settings.gamma,
                        help="the discount per policy step (30 a second): how far ahead a fall is felt")
    parser.add_argument("--value-lr", type=number(1e-9, 1.0, "a learning rate"), default=1e-3)
    parser.add_argument("--hidden", default="512,256", help="hidden layer widths (a new run only)",
                        type=listed(whole(1, 8192, "a layer's width"), 8, "hidden layers"))
    parser.add_argument("--primitives", type=whole(1, 64, "the policy's primitives"), default=8,
                        help="the policy's primitives (a new run only)")
    parser.add_argument("--spread", type=number(1e-3, 2.0, "a standard deviation"), default=0.4,
                        help="the policy's first standard deviation, in units of the action (0.3 rad each; a new "
                             "run only, not one from --init: its weights give their own)")
    parser.add_argument("--assist", type=number(0.0, 1000.0, "a torque in Nm"), default=0.0,
                        help="the most torque (Nm) that holds the dog's root up at the start, taken away as the "
                             "policy learns to stay up (see anneal; a new run only; 0: none)")
    parser.add_argument("--gaits", default="walk,trot,canter", help=f"of {', '.join(GAITS)} (a new run only)",
                        type=one_of(GAITS))
    parser.add_argument("--paths", type=whole(0, 1000, "paths a gait"), default=0,
                        help="also track MANN's dog along this many winding paths at each gait (a new run only)")
    parser.add_argument("--path-seconds", type=number(1.0, 600.0, "seconds a path"), default=10.0,
                        help="how long each of --paths lasts (a new run only)")
    parser.add_argument("--mann", type=Path, help="the MANN model that walks --paths (default: the shipped one)")
    parser.add_argument("--init", type=Path, default=None,
                        help="start a new run from the policy, critic and observation statistics of this carl "
                             "RUN/checkpoint.pt (of the same --hidden and --primitives), e.g. a walk's policy on to "
                             "trots and canters: this command's --gaits and other options apply, the body is "
                             "measured on them, the optimiser and the counts start afresh")
    parser.add_argument("--no-pushes", action="store_true")
    parser.add_argument("--no-randomise", action="store_true", help="keep the nominal masses and friction")
    parser.add_argument("--checkpoint-minutes", type=minutes, default=5.0)
    parser.add_argument("--evaluate-every", type=whole(1, math.inf, "roll-outs between evaluations"), default=10,
                        help="roll-outs between evaluations of the mean action")
    parser.add_argument("--cache", default=None, help="data set cache folder")
    parser.add_argument("--threads", type=whole(1, 1024, "CPU threads"), default=1, help="CPU threads for torch")
    parser.add_argument("--seed", type=whole(0, 2**32 - 1, "a seed is a whole number from 0"), default=0)


def train(args, argv):
    """Train as ``args`` say; ``argv``, the command line as typed, goes into the run's record."""
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    path = out / "checkpoint.pt"
    state = checkpoint.load(path) if path.exists() else None
    if state and state["family"] != FAMILY:
        raise DataError(f"{path}: a checkpoint of a {state['family']} run, not of carl")
    source = checkpoint.initial(args.init, FAMILY) if args.init and not state else None   # resuming: as it began
    data = load_motion_set(args.data, args.cache)
    config = state["config"] if state else {
        "gaits": args.gaits.split(","), "hidden": [int(h) for h in args.hidden.split(",")],
        "primitives": args.primitives, "spread": args.spread, "assist": args.assist, "paths": args.paths,
        "path_seconds": args.path_seconds, "path_seed": args.seed}
    if source:
        check_init(source, config, size(len(data.skeleton)), args.init)
        # the spread is the heads' output, learned state by state with the mean: the weights' own goes on
        config["spread"] = source["config"].get("spread", 0.4)
    clips = stretches(data, config["gaits"])
    if not clips:
        raise DataError(f"{args.data}: no stretch of {', '.join(config['gaits'])} outside the test split")
    rotations = np.concatenate([m.rotations for m, _ in clips])   # the body is measured on the capture alone
    if config.get("paths"):
        mann = open_model(args.mann, kind="mann") if args.mann else find_model(data.skeleton, kind="mann")
        mann.check_skeleton(data.skeleton)
        clips += mann_paths(mann, config["gaits"], config["paths"], config["path_seconds"], config["path_seed"])
    if state:
        saved = state["body"]
        skeleton = Skeleton.from_json(saved["skeleton"])
        # a checkpoint from before the paws had soles resumes on soled paws
        paw_soles = saved["soles"].numpy() if "soles" in saved else soles(skeleton, rotations)
        body = build(skeleton, saved["natural"].numpy(), saved["limits"].numpy(), saved["scale"], paw_soles)
    else:   # also under --init: a canter turns joints past a walk's limits, and the policy reads world poses
        body = build(data.skeleton, *measure(rotations), 0.01, soles(data.skeleton, rotations))
    step = state["step"] if state else 0
    rng = np.random.default_rng([args.seed, step])
    # for evaluate (no pushes, the nominal body), and what the run's record says of its stretches
    steady = Tracking(body, clips, np.random.default_rng(args.seed), pushes=False, randomise=False)
    torch.manual_seed(int(rng.integers(2**62)))
    policy = Policy(steady.observation_size, steady.state_size, steady.action_size, config["hidden"],
                    config["primitives"], config.get("spread", 0.4))
    value = Value(steady.observation_size, config["hidden"], policy.norm)
    optimiser = torch.optim.Adam([{"params": policy.parameters(), "lr": args.lr},
                                  {"params": value.net.parameters(), "lr": args.value_lr}])
    history = {"train": [], "validation": [], "runs": [], "samples": 0, "assist": config.get("assist", 0.0)}
    if state:
        policy.load_state_dict(state["policy"])
        value.net.load_state_dict(state["value"])
        optimiser.load_state_dict(state["optimiser"])
        optimiser.param_groups[1]["lr"] = args.value_lr
        if not args.kl:
            optimiser.param_groups[0]["lr"] = args.lr
        history = {"validation": [], "assist": 0.0, **state["history"]}
        tqdm.write(f"resuming {path} at step {step}", file=sys.stderr)
    elif source:   # the policy, its observations' statistics and the critic; the optimiser and counts start afresh
        policy.load_state_dict(source["policy"])
        value.net.load_state_dict(source["value"])
        tqdm.write(f"starting from the weights of {args.init} at step {source['step']} "
                   f"({source['history']['samples']:,} samples)", file=sys.stderr)
    history["runs"].append({"from_step": step, "argv": list(argv), "commit": source_commit(),
                            "hardware": card.hardware("cpu"),
                            **({"init": {"checkpoint": str(args.init), "step": source["step"],
                                         "samples": source["history"]["samples"],
                                         "runs": source["history"]["runs"]}} if source else {})})
    meta = {"data": str(args.data), "licence": licence_of([args.data]),
            "clips": [r.name for r in steady.references], **({"paths_by": mann.name} if config.get("paths") else {}),
            "gaits": {g: steady.gaits.count(g) for g in config["gaits"]}, "dropped": steady.dropped}
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(args.samples, args.epochs, args.minibatch, gamma=args.gamma, kl=args.kl)

    def save():
        checkpoint.save({"format": checkpoint.FORMAT, "family": FAMILY, "step": step, "config": config,
                         "meta": meta, "history": history, "policy": policy.state_dict(),
                         "value": value.net.state_dict(), "optimiser": optimiser.state_dict(),
                         "body": {"skeleton": body.skeleton.to_json(), "natural": torch.as_tensor(body.natural),
                                  "limits": torch.as_tensor(body.limits), "scale": body.scale,
                                  "soles": torch.as_tensor(body.soles)}}, path)
        (out / "history.json").write_text(json.dumps(history) + "\n")
        plot_history(history, out / "reward.png")

    tqdm.write(f"carl: {sum(p.numel() for p in policy.parameters()) / 1e6:.2f}M policy parameters, "
               f"{len(steady.references)} stretches ({meta['gaits']}; {len(steady.dropped)} off the flat floor "
               f"left out), {body.masses.sum():.1f} kg", file=sys.stderr)
    envs = environments(body, clips, args.seed, step, args.envs, args.processes, pushes=not args.no_pushes,
                        randomise=not args.no_randomise, like=steady)
    try:
        roller = Roller(envs, rng)
        bar = tqdm(total=args.iterations, initial=step, desc=FAMILY, unit="roll-out", dynamic_ncols=True)
        started = last_save = time.monotonic()
        stopping = []   # SIGTERM (kill PID) stops the run after its roll-out, with a checkpoint
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        while step < args.iterations:
            tick = time.monotonic()
            envs.set(assist=history["assist"])
            batch, stats = roller.collect(policy, value, settings.samples)
            collected = time.monotonic() - tick
            stats.update(update(policy, value, optimiser, batch, settings, rng))
            policy.norm.update(batch["obs"])
            step += 1
            history["samples"] += len(batch["rew"])
            stats.update(samples=history["samples"], samples_per_s=len(batch["rew"]) / collected,
                         assist=history["assist"])
            history["assist"] = anneal(history["assist"], stats)
            history["train"].append([step, stats])
            if step % args.evaluate_every == 0:
                history["validation"].append([step, {**evaluate(policy, steady), "samples": history["samples"]}])
            bar.update(1)
            shown = ("reward", "episode_steps", "lr", "samples_per_s", "assist")
            bar.set_postfix({k: float(f"{stats[k]:.3g}") for k in shown if k in stats}, refresh=False)
            if args.minutes and time.monotonic() - started > args.minutes * 60:
                tqdm.write(f"time budget of {args.minutes} min reached at step {step}", file=sys.stderr)
                break
            if stopping:
                tqdm.write(f"stopped at step {step}", file=sys.stderr)
                break
            if time.monotonic() - last_save > args.checkpoint_minutes * 60:
                save()
                last_save = time.monotonic()
        bar.close()
        save()
    finally:
        envs.close()
    tqdm.write(f"checkpoint {path} at step {step}", file=sys.stderr)
    return path


def check_init(source, config, observations, path):
    """Refuse, naming ``path``, a checkpoint ``source`` whose networks are not of this run's shape: the
    hidden layers and primitives of ``config``, ``observations`` values read."""
    theirs = source["config"]
    if (theirs["hidden"], theirs["primitives"]) != (config["hidden"], config["primitives"]):
        raise DataError(f"{path}: a policy of --hidden {','.join(map(str, theirs['hidden']))} --primitives "
                        f"{theirs['primitives']}, this run's of --hidden {','.join(map(str, config['hidden']))} "
                        f"--primitives {config['primitives']}; give those, or leave out --init")
    read = len(source["policy"]["norm.mean"])
    if read != observations:
        raise DataError(f"{path}: a policy that reads {read} observation values, this run's dog gives "
                        f"{observations}; start from a checkpoint of this dog, or without --init")


def anneal(assist, stats):
    """The assisting torque (Nm) for the next roll-out after one with ``stats``: ``ANNEAL`` of it where no more
    than ``ASSIST_FALLS`` of the roll-out's finished episodes fell (none below ``ASSIST_FLOOR`` Nm), as it was
    otherwise. Taken away as fast as the policy keeps the dog up on its own: the falls tell, at any level."""
    if not assist or stats["falls"] > ASSIST_FALLS * stats.get("episodes", 0):
        return assist
    assist *= ANNEAL
    return assist if assist >= ASSIST_FLOOR else 0.0


def plot_history(history, path):
    """The mean reward per policy step, each term's, the episodes' length and the evaluations' seconds
    tracked against samples, as a PNG."""
    rows = [v for _, v in history["train"]]
    x = [v["samples"] for v in rows]
    fig, axes = two_panels()
    for key in ("reward", "r_pose", "r_velocity", "r_com", "r_contact"):
        axes[0].plot(x, [v.get(key, np.nan) for v in rows], label=key)
    axes[0].set(title="reward per policy step", xlabel="policy samples", ylim=(0, 1))
    axes[0].legend(fontsize="small")
    axes[1].plot(x, [v.get("episode_steps", np.nan) / 30.0 for v in rows], label="roll-outs' episodes")
    checks = [v for _, v in history.get("validation", [])]
    axes[1].plot([v["samples"] for v in checks], [v["tracked_s"] for v in checks], "o-", label="mean action, tracked")
    axes[1].set(title="seconds before a fall or the episode's end", xlabel="policy samples")
    axes[1].legend(fontsize="small")
    fig.savefig(path, dpi=90)
