"""The RTN family: what the shared loop (training/loop.py) trains and export ships for in-betweening.

The loss is the paper's mean squared error over the ``n`` missing frames and the target frame, or
(``--loss l2``) the mean of each frame's error norm, on the two things an animator sees: local joint
rotations (which become keys) and world joint positions (what forward kinematics makes of them, per
coordinate in units of the data's spread, as the benchmark's L2P measures them). Teacher forcing
feeds the true previous frame with probability 0.2. Several ``--data`` train on one skeleton, the others
retargeted onto it (lab/dataset.py's load_sources); ``--proportions`` varies the bodies.

    python -m training rtn --data ../shared/mocap/lafan1-27.zip --out runs/rtn --subjects 1,2,3,4 \\
        --batch 256 --bf16 --max-gap 120 --loss l2 --blends --relative --reverse 0.5
    python -m training rtn --network transformer --data ../shared/mocap/lafan1-27.zip \\
        --data ../shared/mocap/bandai1.zip --shares 3,1 --subjects 1,2,3,4 --proportions 0.1 --out runs/rtn-human \\
        --batch 64 --min-gap 5 --max-gap 60 --loss l2 --relative --blends --reverse 0.5
    python -m training export runs/rtn/checkpoint.pt -o rtn.onnx --weights mixed --bench-data LAFAN1 --data LAFAN1
"""

import json
import math
from dataclasses import asdict

import numpy as np
import torch

from inference import quat
from inference.cli import MOST_VARIATION, number, whole
from lab.dataset import load_sources
from inference.errors import DataError
from inference.features import Layout, chain
from inference.rtn.blends import BLEND, end_blend, end_ramp, start_blend, start_ramp, target_blend, target_ramp
from ..card import sources
from ..clips import selection_in, selection_of, speeds_of
from ..family import Family
from ..kinematics import forward_kinematics
from ..loop import Normaliser
from ..options import listed
from ..onnx_tools import agreement
from .card import sections
from .network import RTN, RTNConfig, graph
from .sampler import Transitions
from .transformer import TransformerConfig, TransitionTransformer, rollout

VALIDATION_LENGTHS = (5, 15, 30, 45)
VALIDATION_WINDOWS, VALIDATION_BATCH = 256, 64   # held-out windows a validation measures per length, and a batch
MOST_GAP = 1000   # frames of a training transition (the shipped models learned up to 120)


class RTNFamily(Family):
    name = "rtn"
    title = ("A Recurrent Transition Network (Harvey & Pal 2018, extended: rotations out, any gap length "
             "through a time-to-target embedding, noise for variants) that fills the frames between two keys.")
    normalisation = ("frame_mean", "frame_std", "target_mean", "target_std")
    ahead = True

    def card_title(self, config):
        if config.get("network") == "transformer":
            return ("A transformer in-betweener (the RTN family's windows, loss and runtime, with a transformer "
                    "encoder over the whole window in the manner of SILK and the Two-stage Transformer; noise for "
                    "variants) that fills the frames between two keys.")
        return self.title

    def add_arguments(self, parser):
        gap = whole(1, MOST_GAP, "frames a training transition fills; each is a step of the network held for the "
                                 "backward pass")
        parser.add_argument("--network", choices=("recurrent", "transformer"), default="recurrent",
                            help="recurrent: the RTN, an LSTM step a frame; transformer: one pass over the whole "
                                 "window (see training/rtn/transformer.py)")
        parser.add_argument("--width", type=whole(16, 4096, "a token's size"), default=TransformerConfig.width,
                            help="the transformer's token size (a multiple of twice its 8 heads)")
        parser.add_argument("--layers", type=whole(1, 64, "encoder layers"), default=TransformerConfig.layers,
                            help="the transformer's encoder layers")
        parser.add_argument("--min-gap", type=gap, default=5)
        parser.add_argument("--max-gap", type=gap, default=60)
        parser.add_argument("--validation-windows", type=whole(1, 65536, "held-out windows per validation length"),
                            default=VALIDATION_WINDOWS,
                            help="held-out windows that each validation measures at each gap length, the same ones "
                                 "every time (fewer: a quicker, rougher curve)")
        parser.add_argument("--loss", choices=("mse", "l2"), default="mse",
                            help="mse: the paper's mean squared error; l2: the mean of each frame's error "
                                 "norm, as the benchmark's L2Q and L2P measure it (see frames_loss)")
        parser.add_argument("--blends", action="store_true",
                            help="measure the loss after the runtime's start, target and end blends, on "
                                 "the frames a user sees, instead of on the network's own")
        parser.add_argument("--relative", action="store_true",
                            help="divide each step's loss by straight-line interpolation's on the same batch, "
                                 "so that every gap length pulls the weights alike (see transition_loss)")
        parser.add_argument("--acceleration", type=number(0.0, 1e3, "a weight"), default=0.0,
                            help="add this many times each frame's acceleration error to the loss, the key's "
                                 "frames erring by nothing (see frames_loss; 0: none)")
        parser.add_argument("--reverse", type=number(0.0, 1.0, "a probability"), default=0.0,
                            help="probability of a training window played backwards, so that the runtime "
                                 "may fill each gap from both sides and average (0: forwards only)")
        parser.add_argument("--noise", type=number(0.0, MOST_VARIATION, "the runtime's --variation stops there too"),
                            default=0.5,
                            help="strength of the variation noise during training (Harvey et al. 2020: 0.5)")
        parser.add_argument("--skeleton", default=None,
                            help="a BVH file whose skeleton the model learns on (default: the first --data's); "
                                 "data sets of other skeletons are retargeted onto it once and cached")
        parser.add_argument("--shares", default=None, metavar="W1,W2,...",
                            type=listed(number(0.0, 1e6, "a data set's weight; 0 leaves it out")),
                            help="one weight per --data, in order: each data set's share of the training windows "
                                 "(default: in proportion to the windows its clips hold)")
        parser.add_argument("--proportions", default=0.0,
                            type=number(0.0, 0.5, "bones scaled by 1 ± this; at 1 a bone may shrink to nothing"),
                            help="scale each training window's leg, arm and torso bones by random factors within "
                                 "1 ± this (e.g. 0.1), the hips' height with the legs, so that the network sees "
                                 "bodies of other proportions (0: the capture's own)")

    def data(self, args):
        if args.min_gap > args.max_gap:
            raise DataError(f"--min-gap {args.min_gap} is longer than --max-gap {args.max_gap}: give a --min-gap of "
                            f"at most {args.max_gap}, or a longer --max-gap")
        chosen = selection_of(args)
        data = load_sources(args.data, args.cache, args.skeleton, chosen)
        train = Transitions(data, "train", chosen, mirrored=not args.no_mirror, speeds=speeds_of(args),
                            reverse=args.reverse, proportions=args.proportions, shares=shares_of(args))
        validation = Transitions(data, "validation", chosen, mirrored=False, layout=train.layout)
        sk = data.skeleton
        meta = {"data": [str(d) for d in args.data], "data_files": train.files, "subjects": chosen.subjects,
                "held_out": list(chosen.held_out),
                "fps": float(data.fps),
                "layout": train.layout.to_json(),
                "skeleton": sk.to_json(),
                "reflections": None if train.reflections is None else train.reflections.tolist()}
        return train, validation, meta

    def statistics(self, train, args, rng):
        return statistics(train, rng, args.min_gap, args.max_gap)

    def config(self, train, args):
        lay = train.layout
        shape = dict(pose_dim=lay.frame_dim, target_dim=lay.target_dim, offset_dim=lay.frame_dim, rotations=lay.joints)
        if args.network == "transformer":
            if args.width % (2 * TransformerConfig.heads):
                raise DataError(f"--width {args.width}: give a multiple of {2 * TransformerConfig.heads}")
            return asdict(TransformerConfig(**shape, width=args.width, feedforward=4 * args.width, layers=args.layers))
        return asdict(RTNConfig(**shape))

    def network(self, config, stats):
        return network_of(config, stats["frame_mean"], stats["frame_std"])

    def check_init(self, source, train, path):
        config, lay = source["config"], train.layout
        if (config["pose_dim"], config["target_dim"]) != (lay.frame_dim, lay.target_dim):
            raise DataError(f"{path}: made for a skeleton of {(config['pose_dim'] - 3) // 4} joints, the data has "
                            f"{lay.joints}; start from a checkpoint of this skeleton or without --init")

    def stats_of(self, file):
        return {**file.normalisation, "reference_pose": np.asarray(file.json("betwixt.reference_pose"), np.float32)}

    def weights_of(self, model, stored):
        """Export stores R's matrix as two: the columns that read F(target), multiplied once a
        transition, and those that read [E(x), O(offset), h], multiplied every step (RTN._fixed); the
        other layers under their own names."""
        if isinstance(model, TransitionTransformer):
            raise DataError("--init from a model file works for recurrent RTN models; for a transformer give the "
                            "checkpoint.pt of the run that made it")
        cf, gates = model.config, 4 * model.config.lstm
        unnamed = {w.shape: w for name, w in stored.items() if not name.startswith("model.")}
        try:
            future = unnamed[(gates, cf.future_hidden)]
            e, o, h = np.split(unnamed[(gates, cf.frame_hidden + cf.future_hidden + cf.lstm)],
                               [cf.frame_hidden, cf.frame_hidden + cf.future_hidden], axis=1)
            columns = {"E": e, "h": h, "F": future, "O": o}
            weights = {name: torch.from_numpy(stored[f"model.{name}"]) for name in model.state_dict()
                       if name != "R.weight"}
        except KeyError as e:
            raise DataError(f"not an RTN model file of this configuration (no weights {e}); export it again") from None
        weights["R.weight"] = torch.from_numpy(np.concatenate([columns[p] for p in model.parts], axis=1))
        return weights

    def optimiser(self, model, args):
        return torch.optim.Adam(model.parameters(), lr=args.lr, amsgrad=True)

    def sample(self, train, args, rng, step_rng):
        n = int(step_rng.integers(args.min_gap, args.max_gap + 1))   # one gap length for every process
        return n, train.sample(args.batch, n, rng)

    def placed(self, train, sample, device):
        n, arrays = sample
        return n, to_torch(arrays, device), train

    def loss(self, net, norm, batch, args):
        n, b, train = batch
        total, rot, pos = transition_loss(net, norm, b, n, [int(p) for p in train.parents], train.layout.trajectory,
                                          noise=args.noise, squared=args.loss == "mse",
                                          blend=BLEND if args.blends else None, relative=args.relative,
                                          acceleration=args.acceleration)
        return total, {"rotations": rot.item(), "positions": pos.item()}

    def validate(self, model, norm, validation, args, device):
        scores = validate(model, norm, validation, device, args.validation_windows,
                          blend=BLEND if args.blends else None)
        return named(scores)

    def graph(self, model):
        return rollout(model) if isinstance(model, TransitionTransformer) else graph(model, "rollout")

    def metadata(self, state, model):
        meta, args = state["meta"], state["meta"]["args"]
        return {
            "graph": "rollout",
            **({"mirror": json.dumps({"reflections": meta["reflections"]})} if meta.get("reflections") else {}),
            **({"backward": "true"} if args.get("reverse") else {}),
            "layout": json.dumps(meta["layout"]),
            "gaps": json.dumps({"min": 1, "max": model.config.tta_max,
                                "trained": [args["min_gap"], args["max_gap"]]}),
            "reference_pose": json.dumps(state["stats"]["reference_pose"].tolist()),
        }

    def check_export(self, model, path):
        cf, rng = model.config, np.random.default_rng(0)
        inputs = {"past": rng.standard_normal((2, cf.past, cf.pose_dim)).astype(np.float32),
                  "target": rng.standard_normal((2, cf.target_dim)).astype(np.float32),
                  "gap": np.array(12, dtype=np.int64),
                  "noise": rng.standard_normal((2, cf.noise_dim)).astype(np.float32)}
        return agreement(lambda past, target, gap, noise: model(past, target, int(gap), z=noise, variation=1.0),
                         path, inputs)

    def card(self, state, model, metadata, path, bench_data=None, data=None, cache=None):
        return sections(state, metadata, path, bench_data, None if not data else held_out_errors(state, model, data,
                                                                                                  cache))

    def converted(self, state, old):
        """An earlier RTN checkpoint: its config without the experimental inputs this version dropped
        (refused where they were used), its curves as named numbers."""
        config = {"rotations": state["meta"]["layout"]["joints"], **old["config"]}
        if config.pop("velocity", False) or config.pop("extra_dim", 0):
            raise DataError("this checkpoint was trained with --velocity or extra inputs, which this version of "
                            "Betwixt no longer has; export it with the version that made it")
        history = old["history"]
        state["config"] = asdict(RTNConfig(**config))
        state["history"].update(train=[[s, {"loss": t, "rotations": r, "positions": p}] for s, t, r, p in history["train"]],
                                validation=[[v[0], named(v[1:])] for v in history["validation"]])
        return state


def network_of(config, frame_mean, frame_std):
    """The network of a checkpoint's or model file's ``config`` (a dict): the RTN, or the transformer where
    the config says so (configs from before the transformer hold no ``network``)."""
    if config.get("network") == "transformer":
        return TransitionTransformer(TransformerConfig(**config), frame_mean, frame_std)
    return RTN(RTNConfig(**config), frame_mean, frame_std)


def shares_of(args):
    """``--shares`` as weights that sum to 1, one per ``--data``, or None."""
    if not args.shares:
        return None
    try:
        weights = np.array([float(w) for w in args.shares.split(",")])
    except ValueError:
        raise DataError(f"--shares {args.shares}: give one number per --data, e.g. 2,1") from None
    if len(weights) != len(args.data) or (weights < 0).any() or weights.sum() <= 0:
        raise DataError(f"--shares {args.shares}: give {len(args.data)} weights (one per --data, in order), "
                        "none negative and not all zero")
    return weights / weights.sum()


def held_out_errors(state, model, data, cache=None):
    """{gap length: ((rotations, positions), (interpolation's))}: the shipped ``model``'s errors with the
    runtime's blends and straight-line interpolation's, on the held-out tenth of ``data``'s training clips
    (the run's own data, checked), for its model card."""
    meta = state["meta"]
    chosen = selection_in(meta)
    motions = load_sources(data, cache, meta["args"].get("skeleton"), chosen)
    val_set = Transitions(motions, "validation", chosen, mirrored=False, layout=Layout(**meta["layout"]))
    if val_set.files != meta["data_files"]:
        raise DataError(f"{' + '.join(data)}: not the data this checkpoint was trained on ({' + '.join(sources(meta))})")
    norm, device = Normaliser(state["stats"]), torch.device("cpu")
    windows = meta["args"].get("validation_windows", VALIDATION_WINDOWS)   # as the run validated
    scores = validate(model, norm, val_set, device, windows, blend=BLEND)
    baseline = validate(model, norm, val_set, device, windows, interpolate=True)
    return {n: (scores[2 * i:2 * i + 2], baseline[2 * i:2 * i + 2]) for i, n in enumerate(VALIDATION_LENGTHS)}


def named(scores):
    """Validation scores [rotations, positions] per length as {"rotations@5": …, "positions@5": …}."""
    return {f"{kind}@{n}": float(scores[2 * i + k]) for i, n in enumerate(VALIDATION_LENGTHS)
            for k, kind in enumerate(("rotations", "positions"))}


def to_torch(batch, device):
    """``batch``'s arrays (numpy, or tensors from a ``--workers`` process) as tensors on ``device``; from
    a worker's pinned memory the copy to a GPU runs beside the step."""
    return {k: torch.as_tensor(v).to(device, non_blocking=True) for k, v in batch.items()}


def blended(frames, batch, length):
    """The runtime's blends on a batch's frames (see inference/rtn/blends.py): the start blend, the
    target blend over the last ``length`` frames, and the end blend where the network was given the
    frame after the target (as the runtime blends only then)."""
    steps = frames.shape[1]
    ramp = lambda r: frames.new_tensor(r)  # noqa: E731
    key = batch["target"][:, :frames.shape[-1]]
    through = target_blend(start_blend(frames, batch["past"], ramp(start_ramp(steps))), key,
                           ramp(target_ramp(steps, length)))
    ended = end_blend(through, key, batch["after"], ramp(end_ramp(steps)))
    return through + batch["after_known"][:, None, None] * (ended - through)


def offset_in_frame_units(stats):
    """``stats`` with the target's pose features scaled as the frame's, so that goal - pose is the
    offset itself and the network's straight line to the target (RTN._cell) ends on the key."""
    stats = {k: np.array(v, copy=True) for k, v in stats.items()}
    d = len(stats["frame_mean"])
    stats["target_mean"][:d], stats["target_std"][:d] = stats["frame_mean"], stats["frame_std"]
    return stats


def statistics(transitions, rng, min_gap, max_gap, batches=64, batch=64):
    """Feature means and spreads measured on training batches, and a natural pose."""
    frames, targets, worlds = [], [], []
    for _ in range(batches):
        s = transitions.sample(batch, int(rng.integers(min_gap, max_gap + 1)), rng)
        frames.append(s["truth"].reshape(-1, s["truth"].shape[-1]))
        targets.append(s["target"])
        worlds.append(s["world"].reshape(-1, *s["world"].shape[-2:]))
    f, t, w = np.concatenate(frames), np.concatenate(targets), np.concatenate(worlds)
    lay = transitions.layout
    f_mean, f_std = f.mean(0), np.maximum(f.std(0), 1e-2)
    t_mean, t_std = t.mean(0), np.maximum(t.std(0), 1e-2)
    t_mean[lay.target_dim - 1], t_std[lay.target_dim - 1] = 0.0, 1.0
    # a natural pose (for retargeting rigs whose rest pose is unlike the data's): the mean local
    # rotation of every joint, its samples first brought into one hemisphere
    q = quat.mean(f[:, 3:].reshape(len(f), -1, 4))
    return offset_in_frame_units({
        "frame_mean": f_mean, "frame_std": f_std, "target_mean": t_mean, "target_std": t_std,
        "world_std": np.maximum(w.std(0), 1e-3), "reference_pose": q})


def transition_loss(model, norm, batch, n, parents, trajectory, teacher=True, noise=0.0, squared=True, blend=None,
                    relative=False, acceleration=0.0):
    """(total, rotation term, position term) for one batch of transitions of ``n`` frames.

    ``noise`` is the variation strength: trained with it, the network learns transitions that still
    land on the target whatever the noise, which is what makes its variants plausible. ``blend`` (a
    target blend length) measures the loss after the runtime's blends, on the frames a user sees;
    they are linear in the network's frames, so the network learns to leave them what they fix.

    ``relative`` divides all three by straight-line interpolation's total on the same batch (a
    constant, no gradient). A gap's errors grow with its length (the l2 loss of a 100-frame gap is
    five times a 30-frame gap's), so in the raw loss the longest gaps drive most of each step's
    gradient; as ratios to interpolation, the benchmark's measure, every length weighs alike.
    ``acceleration`` weighs :func:`frames_loss`'s acceleration term into the total.
    """
    out = predicted(model, norm, batch, n, teacher, noise)
    terms = frames_loss(out if blend is None else blended(out, batch, blend), batch, norm, parents, trajectory, squared,
                        acceleration)
    if not relative:
        return terms
    with torch.no_grad():
        scale = frames_loss(interpolated(batch, n), batch, norm, parents, trajectory, squared, acceleration)[0]
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


def frames_loss(out, batch, norm, parents, trajectory, squared=True, acceleration=0.0):
    """(total, rotation term, position term) of frames (B, n + 1, frame_dim) against the truth:
    each term the mean over frames of the squared error norm, or (not ``squared``) of the norm.
    ``acceleration`` adds that many times the same mean of each frame's acceleration error (the second
    difference of its joints' position errors, the last key's frames erring by nothing) to the total: a
    network right in position near the key and wrong in how it moves there kicks at the join, and the
    position terms, which grow with the gap, pull little on those frames.

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
    total = rot_loss + pos_loss
    if acceleration:
        error = torch.cat([error.new_zeros(b, 2, *error.shape[2:]), error], dim=1)[..., shown, :]
        jolt = error[:, 2:] - 2 * error[:, 1:-1] + error[:, :-2]
        total = total + acceleration * per_frame(jolt.square().sum(dim=(-1, -2))).mean()
    return total, rot_loss, pos_loss


@torch.no_grad()
def validate(model, norm, val_set, device, windows=VALIDATION_WINDOWS, interpolate=False, blend=None):
    """Root mean rotation and position errors per validation length, with no teacher forcing, of
    the model or (``interpolate``) of straight-line interpolation; ``blend`` (a length in frames)
    applies the runtime's blends first, as a user sees the transitions.

    The same fixed ``windows`` at each length every time (a fixed seed), so the curve shows the model, not the
    draw; measured VALIDATION_BATCH at a time.
    """
    model.eval()
    rng = np.random.default_rng(1234)
    sizes = [VALIDATION_BATCH] * (windows // VALIDATION_BATCH) + [windows % VALIDATION_BATCH] * bool(
        windows % VALIDATION_BATCH)
    scores = []
    for n in VALIDATION_LENGTHS:
        rot = pos = 0.0
        for size in sizes:
            b = to_torch(val_set.sample(size, n, rng, keep_after=1.0), device)
            out = interpolated(b, n) if interpolate else predicted(model, norm, b, n)
            out = out if blend is None else blended(out, b, blend)
            _, r, p = frames_loss(out, b, norm, [int(q) for q in val_set.parents], val_set.layout.trajectory)
            rot, pos = rot + r.item() * (size / windows), pos + p.item() * (size / windows)
        scores += [math.sqrt(rot), math.sqrt(pos)]
    return scores
