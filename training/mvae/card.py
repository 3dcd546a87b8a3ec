"""The Motion VAE model card's own sections: how a runtime steps the file, the latent's health (KL per
dimension, active units) with the last validation and, given LaFAN1, bench-mvae's measurements of the
file beside the capture and the issue's goals, so that what it falls short of travels with it."""

import json

from inference.modelfile import find_model, open_model
from lab.dataset import load_motion_set
from lab.mvae_bench import measure, table


def sections(state, metadata, active, path=None, bench_data=None, cache=None):
    """{"use": lines, "measured": lines} of a Motion VAE model file's card; ``active``: the mean KL (nats)
    above which validation counts a latent dimension active; ``bench_data``: LaFAN1, whose test subject the
    file at ``path`` is measured on (:func:`bench_section`)."""
    lay, config = json.loads(metadata["betwixt.layout"]), state["config"]
    args = state["meta"]["args"]
    use = ["## Skeleton and use",
           f"- {len(lay['joints'])} joints ({lay['joints'][0]} the root), {metadata['betwixt.fps']} fps, lengths in "
           f"the data's units, Y up; the character faces at right angles to {lay['facing'][1]} -> {lay['facing'][0]}.",
           f"- One decoder step per run (`betwixt.graph` = step): inputs `previous` (batch, {lay['size']}), the last "
           f"pose, and `z` (batch, {config['latent']}), drawn from N(0, I) for a random walk; outputs `pose` (batch, "
           f"{lay['size']}), the next pose, and `experts` (batch, {config['experts']}), the gating network's blending "
           "weights. Raw poses in and out (the file z-scores inside; `betwixt.normalisation` holds the statistics, "
           "and the training poses' range of every value, `pose_min` and `pose_max`, which a runtime keeps each "
           "generated pose near so that a long walk stays finite); "
           "`betwixt.layout` says which slice of a pose is what: the root's velocity in the previous frame's root "
           "frame, every joint's position, velocity and forward and up vectors in its own.",
           "- The encoder (inputs `previous` and `pose`, outputs the posterior's `mean` and `logvar`) travels in the "
           "metadata (`betwixt.encoder`, an ONNX model, base64), so that a model stays one file; a random walk "
           "never runs it.",
           f"- Network: encoder 2 x {config['hidden']} (ELU) to a {config['latent']}-D latent; decoder "
           f"{config['experts']} experts of 3 layers ({config['hidden']}, {config['hidden']}, the pose; ELU), z fed to "
           f"every layer, blended by a gating network of 2 x {config['gating_hidden']} (ELU, softmax) on z and the "
           f"previous pose. Loss: mean squared error + beta {args['beta']:g} x KL (each per value); roll-outs of "
           f"{args['rollout']} steps with scheduled sampling.", ""]
    measured = []
    if state["history"]["validation"]:
        step, s = state["history"]["validation"][-1]
        measured = ["", f"## Validation (held-out last tenth of every training clip, at step {step})", "",
                    f"- Mean squared error of the z-scored pose: one step from the posterior's mean {s['recon']:.4f}; "
                    f"fed its own predictions for {args['rollout']} steps {s['rollout']:.4f}; one step from a z of the "
                    f"prior {s['prior']:.4f}.",
                    f"- Latent: {s['active']} of {config['latent']} dimensions active (mean KL above {active} nats), "
                    f"{s['active_mean']} whose posterior mean varies across the data (variance above {active}); mean "
                    f"KL {s['kl']:.3f} nats a dimension. Per dimension, largest first: "
                    + ", ".join(f"{v:.3f}" for v in sorted(s["kl_dims"], reverse=True)) + "."]
    if bench_data:
        measured += [""] + bench_section(path, bench_data, cache)
    return {"use": use, "measured": measured}


def bench_section(path, bench_data, cache=None):
    """``python -m lab bench-mvae`` of the model file at ``path`` on ``bench_data``'s subject 5, its
    feet planted as the user gets them, beside the shipped RTN's noise variants: every row as it prints."""
    model = open_model(path, kind="mvae")
    results, _ = measure(model, load_motion_set(bench_data, cache),
                         rtn=find_model(model.skeleton, kind="rtn", serves="variants"))
    return ["## Measured (`python -m lab bench-mvae`, LaFAN1's test subject 5)", "",
            "Each row beside the capture's and the Motion VAE issue's goal; a row NOT MET is a known limit of "
            "this file.", "", "```", table(results), "```"]
