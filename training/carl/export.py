"""A CARL checkpoint -> one ONNX model file: the tracking policy's mean action, with the simulated body it
was trained on in the metadata (``betwixt.body``), so that the runtime (``inference/carl/runtime.py``)
builds the same dog, and the test split it never read (``betwixt.test_clips``) for ``lab bench-carl``.
The mean action is what the policy is used with; its spread, the critic and the optimiser stay behind.
``python -m training export`` writes it for a checkpoint of the ``carl`` family, with its card.
"""

import json
import os

import numpy as np
import torch

from inference.carl.observation import size, state_size
from inference.modelfile import FORMAT
from inference.motion import Skeleton
from inference.carl.simulation import POLICY_RATE
from .. import card
from ..loop import source_commit
from ..mann.data import TEST_CLIPS
from ..onnx_tools import agreement, traced, write
from .policy import Policy


class MeanAction(torch.nn.Module):
    """The policy's mean action alone: observation (N, obs) -> action (N, act)."""

    def __init__(self, policy):
        super().__init__()
        self.policy = policy

    def forward(self, observation):
        return self.policy(observation)[0]


def policy_of(state):
    """The checkpoint's policy with its weights, ready to export."""
    config, skeleton = state["config"], Skeleton.from_json(state["body"]["skeleton"])
    joints = len(skeleton)
    policy = Policy(size(joints), state_size(joints), 3 * (joints - 1), config["hidden"], config["primitives"],
                    config.get("spread", 0.4))
    policy.load_state_dict(state["policy"])
    return MeanAction(policy.eval())


def metadata(state):
    """The model file's metadata, as strings: the common keys every kind has and the body's."""
    body, meta = state["body"], state["meta"]
    return {f"betwixt.{k}": v for k, v in {
        "kind": "carl",
        "version": str(FORMAT),
        "skeleton": json.dumps(body["skeleton"]),
        "fps": str(POLICY_RATE),
        "normalisation": json.dumps({}),     # the policy normalises its observations itself (its running statistics)
        "data": json.dumps({"source": os.path.basename(meta["data"]), "files": meta["clips"]}),
        "licence": meta["licence"],
        "training": json.dumps({"steps": state["step"], "samples": state["history"]["samples"],
                                "commit": source_commit(), "runs": state["history"]["runs"]}),
        "weights": "float32",
        "config": json.dumps(state["config"], sort_keys=True),
        "body": json.dumps({"natural": body["natural"].tolist(), "limits": body["limits"].tolist(),
                            "scale": float(body["scale"]), "soles": body["soles"].tolist()}),
        "test_clips": json.dumps(list(TEST_CLIPS)),
        "reference_pose": json.dumps(body["natural"].tolist()),   # the natural pose a rig is calibrated against
    }.items()}


def export(state, output):
    """Write ``state``'s policy to ``output`` and its card beside it; the largest difference between
    torch's and onnxruntime's actions on a few observations."""
    module = policy_of(state)
    observation = np.random.default_rng(0).standard_normal((4, module.policy.norm.mean.shape[0])).astype(np.float32)
    write(traced(module, [torch.from_numpy(observation)], ["observation"], ["action"]), output, metadata(state))
    difference = agreement(module, output, {"observation": observation})
    write_card(state, output)
    return difference


def write_card(state, path):
    """The model card beside the file at ``path``."""
    meta, history = state["meta"], state["history"]
    checks = history.get("validation", [])
    last = checks[-1][1] if checks else None
    lines = [
        f"# {path.stem}", "",
        "CARL's tracking controller (Luo et al. 2020, its first stage): a multiplicative compositional policy "
        "that offsets the PD targets of a simulated dog (MuJoCo) following a motion of the dog's skeleton.", "",
        "## Data and licence",
        f"- Trained on `{os.path.basename(meta['data'])}`: {len(meta['clips'])} stretches of walk, trot and canter "
        f"({', '.join(f'{g} {n}' for g, n in meta['gaits'].items())}); {len(meta['dropped'])} stretches off the flat "
        "floor left out.",
        f"- Never read: the test split, {', '.join(TEST_CLIPS)}.",
        f"- Licence of the weights: {meta['licence']}. A model inherits the terms of its data.", "",
        "## How it was made", "",
        *card.made(history, state["step"]), "",
        f"Then `python -m training export CHECKPOINT -o {path.name}`: the policy's mean action in float32.",
        f"- {state['step']} roll-outs and updates, {history['samples']:,} policy samples.",
        *([f"- Its last evaluation (the training stretches' first frames, no pushes, the nominal body): tracked "
           f"{last['tracked_s']:.2f} s of 5 on average, {last['falls']:.0%} of episodes fell, joint error "
           f"{last['joint_error_cm']:.1f} cm (root aligned)."] if last else []),
        "", "## Measured", "",
        f"`python -m lab bench-carl --data {os.path.basename(meta['data'])} --model {path.name}` measures it on the "
        "test split.",
    ]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
