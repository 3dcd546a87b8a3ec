"""Recurrent Transition Network (Harvey & Pal 2018), extended for any gap length and for variants.

One LSTM walks from the past frames to a target key, one frame a step: each step is an even step of
the straight line to the key plus the decoder's correction (see `RTN._cell`). Besides its input frame it
sees, through its own weights, a "future encoding": the target (encoded once) and the offset from
the current frame to the target (encoded every step), plus a sinusoidal embedding of the frames left
to the target (Harvey et al. 2020) so that one model serves every gap, plus optional noise for
variants that fades out near the target so that every variant still lands on it.

The module knows nothing about skeletons. It reads and predicts frame vectors of ``pose_dim``
features (normalised by the caller; when the pose holds ``rotations`` quaternions after its first 3
features, it is given their normalisation to choose their signs), and a target vector of
``target_dim`` features. Layout rule:
the first ``offset_dim`` features of the frame vector and of the target vector are the same pose
features, so that the offset is ``target[:offset_dim] - frame[:offset_dim]``.

Time to target (``tta``) counts frames from the current frame to the target: with ``P`` past frames,
``n`` missing frames and the last past frame at time 0, the target is at time ``n + 1``; the step
that reads the last past frame has ``tta = n + 1`` and the one that predicts the target has ``tta = 1``.

Three ways to run it, all through the same `_warm_up` and `_cell`:
  RTN.forward          training and torch sampling: warm-up, n + 1 predictions, teacher forcing
  RTN.init, RTN.step   one step at a time: the ONNX "init" and "step" graphs
  export_onnx()        the whole transition as one ONNX "rollout" graph, a Loop over the steps

An LSTM step's gates are sums of shares, each computed where it is cheapest: the target code's and
the noise's once per transition, the time-to-target embedding's from a table, and the frame's, the
offset's and the recurrent state's in one product per step. At batch 1 the step is bound by reading
its weights, so every column of R that is not multiplied per step is time saved.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

from ..onnx_tools import traced


@dataclass
class RTNConfig:
    # Default sizes are for 22 joints: root translation + 22 quaternions, then 22 velocities + flag.
    pose_dim: int = 91  # frame vector: what the network reads and predicts
    target_dim: int = 158  # target vector: target frame features first, then e.g. joint velocities
    offset_dim: int = 91  # leading features shared by frame and target (the pose, not contacts)
    rotations: int = 0  # quaternions in the pose right after its first 3 features (0: none)
    past: int = 10  # past frames of context (the first one also seeds the LSTM state)
    frame_hidden: int = 512  # frame encoder E: two hidden layers
    future_hidden: int = 128  # target encoder F and offset encoder O: two hidden layers each
    lstm: int = 512  # recurrent generator R
    decoder_hidden: tuple = (256, 128)  # frame decoder D
    init_hidden: int = 128  # state initialiser H: one hidden layer
    tta_max: int = 120  # time-to-target is clamped here before it is embedded
    noise_near: int = 5  # noise is off within this many frames of the target ...
    noise_far: int = 30  # ... and at full strength from this many frames away
    teacher_forcing: float = 0.2  # training only: chance per step of reading the true frame
    slope: float = 0.01  # LeakyReLU negative slope
    network: str = "recurrent"  # (the family's choice: see transformer.py for the other)

    def __post_init__(self):
        self.decoder_hidden = tuple(self.decoder_hidden)
        if not 0 < self.offset_dim <= min(self.pose_dim, self.target_dim):
            raise ValueError("offset_dim must be in 1..min(pose_dim, target_dim)")
        if self.past < 1:
            raise ValueError("past must be at least 1")
        if 3 + 4 * self.rotations > self.offset_dim:
            raise ValueError("the rotations must lie within the first offset_dim features")
        if not 0 <= self.noise_near < self.noise_far <= self.tta_max:
            raise ValueError("need 0 <= noise_near < noise_far <= tta_max")

    @property
    def future_dim(self):
        """Size of [F(target), O(offset)], of the time-to-target embedding and of the noise."""
        return 2 * self.future_hidden

    @property
    def noise_dim(self):
        return self.future_dim


def sinusoid(t, dim):
    """Transformer-style positional encoding (len(t), dim) of the positions t."""
    angle = t.unsqueeze(-1) * torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2) / dim)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)


def mlp(sizes, slope, last_activation=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_activation or i < len(sizes) - 2:
            layers.append(nn.LeakyReLU(slope))
    return nn.Sequential(*layers)


def pose_units(module, config, frame_mean, frame_std):
    """Give ``module`` what :func:`nearer` reads: the pose's units, and which of its features make one
    quaternion (a 0/1 matrix that sums each quaternion's four products and hands the sum back to all four)."""
    if frame_mean is None or frame_std is None:
        raise ValueError("a pose with rotations needs the frame features' mean and spread")
    d, q = config.offset_dim, np.arange(3, 3 + 4 * config.rotations)
    joint = np.full(d, -1)
    joint[q] = (q - 3) // 4
    pairs = (joint[:, None] == joint[None, :]) & (joint[:, None] >= 0)
    for name, value in (("pose_mean", frame_mean[:d]), ("pose_std", frame_std[:d]), ("pairs", pairs)):
        module.register_buffer(name, torch.as_tensor(np.asarray(value), dtype=torch.float32), persistent=False)


def nearer(module, goal, pose):
    """``goal`` with each quaternion in the sign nearer the pose's (``module``'s units, see
    :func:`pose_units`): q and -q are one rotation, and a straight line between opposite signs would cut
    through the zero quaternion (a joint that turned the long way round would spin on its last steps).

    The dot products of the raw quaternions are an affine function of the normalised pose whose
    factors depend on the goal alone, so the exported loop computes them once per transition and
    a step adds one product with ``pairs`` and a choice between the goal's two signs."""
    if not module.config.rotations:
        return goal
    raw = goal * module.pose_std + module.pose_mean
    opposite = (pose * (raw * module.pose_std)) @ module.pairs < -(raw * module.pose_mean) @ module.pairs
    return torch.where(opposite, (-raw - module.pose_mean) / module.pose_std, goal)


class RTN(nn.Module):

    def __init__(self, config: RTNConfig, frame_mean=None, frame_std=None):
        """``frame_mean`` and ``frame_std``, the normalisation of the frame features, are needed when
        the pose holds rotations: the step toward the target takes each quaternion's nearer sign."""
        super().__init__()
        cf = self.config = config
        if cf.rotations:
            pose_units(self, cf, frame_mean, frame_std)
        self.E = mlp([cf.pose_dim, cf.frame_hidden, cf.frame_hidden], cf.slope)
        self.F = mlp([cf.target_dim, cf.future_hidden, cf.future_hidden], cf.slope)
        self.O = mlp([cf.offset_dim, cf.future_hidden, cf.future_hidden], cf.slope)
        # R: the LSTM's W, U and C matrices and its bias as one matmul over [E(x), h, future].
        self.R = nn.Linear(cf.frame_hidden + cf.lstm + cf.future_dim, 4 * cf.lstm)
        self.D = mlp([cf.lstm, *cf.decoder_hidden, cf.pose_dim], cf.slope, last_activation=False)
        self.H = mlp([cf.pose_dim, cf.init_hidden, 2 * cf.lstm], cf.slope, last_activation=False)
        # R's input is [E(x), h, F(target), O(offset)]: the columns that read each part
        sizes = {"E": cf.frame_hidden, "h": cf.lstm, "F": cf.future_hidden, "O": cf.future_hidden}
        starts = np.cumsum([0, *sizes.values()])
        self.parts = {p: slice(int(a), int(a) + n) for (p, n), a in zip(sizes.items(), starts)}
        with torch.no_grad():  # forget gate bias 1: remember by default
            self.R.bias[cf.lstm:2 * cf.lstm].fill_(1.0)
        # Functions of the (whole) number of frames to the target, as tables indexed by it.
        tta = torch.arange(cf.tta_max + 1, dtype=torch.float32)
        self.register_buffer("tta_table", sinusoid(tta, cf.future_dim), persistent=False)
        fade = ((tta - cf.noise_near) / (cf.noise_far - cf.noise_near)).clamp(0, 1)
        self.register_buffer("fade_table", fade.unsqueeze(-1), persistent=False)

    def _columns(self, *parts):
        """R's weight columns that read these parts of its input, side by side (one matrix in the
        ONNX file per list of parts)."""
        return torch.cat([self.R.weight[:, self.parts[p]] for p in parts], dim=1)

    def _future_gates(self, future, recurrent):
        """R's C matrices applied to a future-sized vector [F part, O part]. The O part goes through
        the step's one matrix ``recurrent`` (see _recur), with zeros for the rest of its input, so
        that the ONNX file does not store O's columns twice; the product is once per transition."""
        cf, h = self.config, self.config.future_hidden
        lead = future.shape[:-1]
        padded = torch.cat([future.new_zeros(*lead, cf.frame_hidden), future[..., h:],
                            future.new_zeros(*lead, cf.lstm)], dim=-1)
        return (nn.functional.linear(future[..., :h], self._columns("F"))
                + nn.functional.linear(padded, recurrent))

    def _tta_gates(self, recurrent):
        """R's C matrices applied to every time-to-target embedding, (tta_max + 1, 4 lstm): the
        embedding's share of the gates, looked up per step. Exported graphs store the table (see
        _traced) rather than compute it."""
        frozen = self.__dict__.get("frozen_tta_gates")
        return frozen if frozen is not None else self._future_gates(self.tta_table, recurrent)

    def _fixed(self, code, noise):
        """What a transition holds fixed: the gates' shares of the target's code F(target) (with
        R's bias) and of the noise, which the step fades out near the target; the table of
        ``_tta_gates``; and R's columns over [E(x), O(offset), h], which _recur multiplies every
        step, gathered into one matrix once rather than per step."""
        recurrent = self._columns("E", "O", "h")
        return (nn.functional.linear(code, self._columns("F")) + self.R.bias,
                self._future_gates(noise, recurrent), self._tta_gates(recurrent), recurrent)

    def _reads(self, x, goal):
        """What a step reads besides the recurrent state: [E(x), O(goal - x)], the frame's and the
        offset's codes. They depend on the frames alone, so the warm-up encodes every past frame at
        once."""
        return torch.cat([self.E(x), self.O(goal - self._pose(x))], dim=-1)

    def _shares(self, tta, fixed):
        """The gates' shares that cost no product per step: the target code's (with R's bias) and the
        faded noise's, ``fixed`` per transition, and the time-to-target embedding's from a table."""
        k = tta.clamp(0, self.config.tta_max)
        code, noise, table, _ = fixed
        return code + table[k] + self.fade_table[k] * noise

    def _pose(self, x):
        """The frame's first offset_dim features, which the target shares (no Slice node if whole)."""
        cf = self.config
        return x if cf.offset_dim == cf.pose_dim else x[..., :cf.offset_dim]

    def _recur(self, reads, shares, h, c, recurrent):
        """One LSTM update: the gates are the ``shares`` plus R's W and U matrices and the offset's C
        matrix, side by side in ``recurrent``, applied to [reads, h] in one product (at batch 1
        onnxruntime runs one product over the three faster than three)."""
        cf = self.config
        gates = shares + nn.functional.linear(torch.cat([reads, h], dim=-1), recurrent)
        i, f, g, o = gates.split(cf.lstm, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def _cell(self, x, h, c, goal, tta, fixed):
        """LSTM update reading frame x_t, and the prediction x_t + (goal - x_t) / tta + D(h_t) of
        the next frame: one even step of the straight line to the target, plus the decoder's
        correction (the paper has x_t + D(h_t)). D then learns how motion departs from
        interpolation, not the way to the target itself, and the last step lands on the key
        (tta = 1) unless D moves it.

        ``goal`` is the target's first offset_dim features,
        ``tta`` (B,) int64, ``fixed`` the transition's shares of the gates from ``_fixed``.
        """
        cf = self.config
        h, c = self._recur(self._reads(x, goal), self._shares(tta, fixed), h, c, fixed[-1])
        pose = self._pose(x)
        line = (nearer(self, goal, pose) - pose) / tta.to(x.dtype)[:, None]   # tta >= 1 in a transition
        if cf.offset_dim < cf.pose_dim:
            line = nn.functional.pad(line, (0, cf.pose_dim - cf.offset_dim))
        return x + line + self.D(h), h, c

    def _warm_up(self, past, goal, gap, fixed):
        """LSTM state after reading the past frames but the last, from H's guess on the first."""
        h, c = self.H(past[:, 0]).split(self.config.lstm, dim=-1)
        b, steps = past.shape[0], past.shape[1] - 1
        tta = gap[:, None] + 1 + torch.arange(steps, 0, -1, device=past.device)      # (B, steps)

        def rows(a, per_frame):  # (B * steps, …), not (B, steps, …): the ONNX exporter then lays
            # out the weights shared with the step graph alike, and they are stored once
            return (a if per_frame else a[:, None].expand(-1, steps, -1)).flatten(0, 1)

        reads = self._reads(rows(past[:, :steps], True), rows(goal, False)).unflatten(0, (b, steps))
        code, noise, table, recurrent = fixed
        shares = self._shares(tta, (code[:, None], noise[:, None], table, recurrent))
        for t in range(steps):
            h, c = self._recur(reads[:, t], shares[:, t], h, c, recurrent)
        return h, c

    # One step at a time: the ONNX "init" and "step" graphs.

    def init(self, past, target, gap, noise):
        """LSTM state (h, c) (B, lstm) each, after the warm-up over the past frames but the last.

        past (B, P, pose_dim); target (B, target_dim); gap (B,) int64, the number of missing frames;
        noise (B, future_dim) scaled. The next call is ``step(past[:, -1], h, c, target, gap + 1, noise)``.
        """
        return self._warm_up(past, target[:, :self.config.offset_dim], gap, self._fixed(self.F(target), noise))

    def step(self, x, h, c, target, tta, noise):
        """(x_{t+1}, h, c) from frame x_t (B, pose_dim) and tta (B,) int64 frames left to the target."""
        return self._cell(x, h, c, target[:, :self.config.offset_dim], tta, self._fixed(self.F(target), noise))

    # The whole transition, for training.

    def forward(self, past, target, n, truth=None, z=None, variation=0.0, teacher_forcing=None):
        """Predictions (B, n + 1, pose_dim): the n missing frames, then the target frame.

        past (B, P, pose_dim); target (B, target_dim); truth (B, n + 1, pose_dim), the true missing
        frames and target frame, for teacher forcing (used in training mode only); z (B, future_dim)
        noise for variants, drawn from N(0, 1) when None and variation > 0.
        """
        B, P, _ = past.shape
        p = self.config.teacher_forcing if teacher_forcing is None else teacher_forcing
        if truth is not None and truth.shape[1] != n + 1:
            raise ValueError(f"truth has {truth.shape[1]} frames, expected n + 1 = {n + 1}")
        if variation and z is None:
            z = torch.randn(B, self.config.future_dim, device=past.device)
        noise = past.new_zeros(B, self.config.future_dim) if not variation else variation * z
        gap = torch.full((B,), n, dtype=torch.long, device=past.device)
        goal, fixed = target[:, :self.config.offset_dim], self._fixed(self.F(target), noise)
        h, c = self._warm_up(past, goal, gap, fixed)
        x, frames = past[:, -1], []
        for k in range(n + 1):
            if k > 0:
                x = frames[-1]
                if self.training and truth is not None and p > 0:
                    use_truth = torch.rand(B, 1, device=past.device) < p
                    x = torch.where(use_truth, truth[:, k - 1], x)
            y, h, c = self._cell(x, h, c, goal, gap + 1 - k, fixed)
            frames.append(y)
        return torch.stack(frames, dim=1)

    def num_params(self):
        return sum(p.numel() for p in self.parameters())


# ONNX export.
#
# "init" and "step" are traced from the wrappers below (torch's TorchScript exporter, dynamo=False:
# the dynamo exporter needs onnxscript, which this project does not install). "rollout", the graph
# to ship, is assembled from those two: the init graph's nodes, then an ONNX Loop whose body is the
# step graph, with the body's loop-invariant nodes (the target encoder F and the transition's fixed
# shares of the gates, see RTN._fixed) hoisted out of the loop. The weights are stored once. Batch is
# a dynamic axis everywhere; P is fixed at config.past.

class Graph(nn.Module):
    """RTN.init or RTN.step as a module whose positional inputs are the graph's named inputs."""

    def __init__(self, model, graph, names):
        super().__init__()
        self.model, self.graph, self.names = model, graph, names

    def forward(self, *args):
        return getattr(self.model, self.graph)(**dict(zip(self.names, args)))


GRAPHS = {  # name: (inputs, outputs)
    "init": (["past", "target", "gap", "noise"], ["h", "c"]),
    "step": (["x", "h", "c", "target", "tta", "noise"], ["x_next", "h_next", "c_next"]),
}


def _traced(model, graph):
    """ModelProto of the init or step graph, traced on example inputs of batch 1."""
    cf = model.config
    inputs, outputs = GRAPHS[graph]
    device = model.R.weight.device
    past = torch.randn(1, cf.past, cf.pose_dim, device=device)
    target = torch.randn(1, cf.target_dim, device=device)
    noise, state = torch.zeros(1, cf.future_dim, device=device), torch.zeros(1, cf.lstm, device=device)
    if graph == "init":
        args = [past, target, torch.full((1,), 30, device=device), noise]
    else:
        args = [past[:, -1], state, state, target, torch.full((1,), 31, device=device), noise]
    was_training = model.training
    model.eval()
    # a table in the file, not a product per run (stored once when both graphs have it, see _rollout)
    model.frozen_tta_gates = model._tta_gates(model._columns("E", "O", "h")).detach()
    try:
        return traced(Graph(model, graph, inputs), args, inputs, outputs)
    finally:
        model.train(was_training)
        del model.frozen_tta_gates


def _rollout(model):
    """ModelProto of the whole transition: the init graph, then a Loop over the step graph.

    past (B, P, pose_dim), target (B, target_dim), gap () int64, noise (B, future_dim)
    ->  frames (B, gap + 1, pose_dim)
    """
    cf = model.config
    init, step = _traced(model, "init"), _traced(model, "step")
    N = helper.make_node

    def value(name, dtype=TensorProto.FLOAT, shape=None):
        return helper.make_tensor_value_info(name, dtype, shape)

    def const(name, v):
        return numpy_helper.from_array(np.asarray(v, dtype=np.int64), "rollout/" + name)

    inputs = [value("past", shape=["batch", cf.past, cf.pose_dim]),
              value("target", shape=["batch", cf.target_dim]),
              value("gap", TensorProto.INT64, []),
              value("noise", shape=["batch", cf.future_dim])]
    weights = list(init.graph.initializer) + [
        const("one", 1), const("last", cf.past - 1), const("zeros", [0]), const("ones", [1])]
    # Outer graph: the init graph reading gap as (B,), then x0 = past[:, -1] and gap + 1 steps.
    nodes = [
        N("Shape", ["past"], ["rollout/shape"]),
        N("Slice", ["rollout/shape", "rollout/zeros", "rollout/ones"], ["rollout/batch"]),
        N("Expand", ["gap", "rollout/batch"], ["rollout/gap_b"]),
        N("Add", ["gap", "rollout/one"], ["rollout/trip"]),
        N("Gather", ["past", "rollout/last"], ["rollout/x0"], axis=1),
    ]
    carried = ["x", "h", "c"]  # the loop's state
    renamed = {"gap": "rollout/gap_b"}
    for node in init.graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        nodes.append(node)

    # Loop body: the step graph, its own names prefixed with "step/"; it reads the target, the
    # noise and the weights it shares with the init graph from the outer graph. Weights are matched
    # by content: the exporter names the slices of R it folds into constants differently per trace.
    def content(w):
        return w.data_type, tuple(w.dims), numpy_helper.to_array(w).tobytes()

    stored = {content(w): w.name for w in weights}
    shared = {"target": "target", "noise": "noise"}
    for w in step.graph.initializer:
        if content(w) in stored:
            shared[w.name] = stored[content(w)]
        else:
            w.name = "step/" + w.name
            weights.append(w)

    def local(name):
        return shared.get(name, name if name == "" else "step/" + name)

    body = [  # iteration k reads tta = gap + 1 - k
        N("Sub", ["rollout/trip", "rollout/iter"], ["rollout/tta"]),
        N("Expand", ["rollout/tta", "rollout/batch"], ["step/tta"]),
    ]
    outer = {w.name for w in weights} | {i.name for i in inputs} | {o for n in nodes for o in n.output}
    for node in step.graph.node:
        node.input[:] = [local(name) for name in node.input]
        node.output[:] = [local(name) for name in node.output]
        if node.name:
            node.name = "step/" + node.name
        if all(name in outer or name == "" for name in node.input):  # loop-invariant: hoist
            nodes.append(node)
            outer.update(node.output)
        else:
            body.append(node)
    body += [N("Identity", ["rollout/cond"], ["rollout/cond_out"]),
             N("Identity", ["step/x_next"], ["rollout/frame"])]
    body = helper.make_graph(
        body, "rtn_step",
        [value("rollout/iter", TensorProto.INT64, []), value("rollout/cond", TensorProto.BOOL, [])]
        + [value(f"step/{name}") for name in carried],
        [value("rollout/cond_out", TensorProto.BOOL, [])] + [value(f"step/{name}_next") for name in carried]
        + [value("rollout/frame")])
    first = {"x": "rollout/x0", "h": "h", "c": "c"}
    nodes += [
        N("Loop", ["rollout/trip", "", *(first[name] for name in carried)],
          [f"rollout/{name}_last" for name in carried] + ["rollout/frames"], body=body),
        N("Transpose", ["rollout/frames"], ["frames"], perm=[1, 0, 2]),  # (B, gap + 1, pose_dim)
    ]
    graph = helper.make_graph(nodes, "rtn_rollout", inputs,
                              [value("frames", shape=["batch", "frames", cf.pose_dim])], weights)
    return helper.make_model(graph, opset_imports=list(init.opset_import), ir_version=init.ir_version,
                             producer_name="betwixt.training.rtn")


def graph(model, name="rollout"):
    """The ModelProto of one graph: "rollout", the one to ship, or "init" or "step".

    rollout: past (B, P, pose_dim), target (B, target_dim), gap () int64, noise (B, future_dim)
             ->  frames (B, gap + 1, pose_dim)
    init:    past, target, gap (B,) int64, noise  ->  h (B, lstm), c (B, lstm)
    step:    x (B, pose_dim), h, c, target, tta (B,) int64, noise  ->  x_next (B, pose_dim), h_next, c_next
    gap and tta are int64, everything else float32; noise is z times the variation strength
    (zeros: the deterministic transition).
    """
    return _rollout(model) if name == "rollout" else _traced(model, name)
