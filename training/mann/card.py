"""The MANN model card's own sections: how a runtime steps the file, how the actions were labelled,
the test split, the licence, and the last validation."""

import json

from inference.mann import actions as labelling


def sections(state, metadata):
    """{"use": lines, "measured": lines} of a MANN model file's card."""
    meta, lay = state["meta"], json.loads(metadata["betwixt.layout"])
    config = state["config"]
    frames = meta["labels"]["frames"]
    total = max(sum(frames.values()), 1)
    thresholds = ", ".join(f"{k} {v:g}" for k, v in meta["labels"]["thresholds"].items())
    use = ["## Skeleton and use",
           f"- {len(lay['bones'])} bones: the skeleton's {len(meta['skeleton']['names'])} joints and its End Sites "
           f"(paws: {', '.join(lay['bones'][p] for p in lay['paws'])}), {metadata['betwixt.fps']} fps, lengths in "
           f"the data's units ({lay['units_per_metre']:g} to the metre), Y up.",
           f"- One frame step per run (`betwixt.graph` = step): input `x` (batch, {lay['input']['size']}), outputs "
           f"`y` (batch, {lay['output']['size']}) and `experts` (batch, {config['experts']}), the gating network's "
           "blending weights; raw features in and out (the file z-scores inside; `betwixt.normalisation` holds the "
           "statistics). `betwixt.layout` says which slice of x and y is what: 12 trajectory samples at "
           f"{', '.join(f'{s:+.2f}' for s in lay['samples']['seconds'])} s in the frame's root frame, the bones in "
           "the previous frame's root frame; out, the next frame's trajectory from its own sample on, the next "
           "bones and the root's dx, dz, dtheta per second.",
           f"- Network: {config['experts']} experts of 3 layers of {config['hidden']} (ELU), blended per frame by a "
           f"gating network of 3 layers of {config['gating_hidden']} on the paws' velocities, the desired speed and "
           f"the action values; dropout {config['dropout']} in training.", "",
           "## Actions",
           f"The data has no labels; every frame's action ({', '.join(labelling.ACTIONS)}) was derived from the "
           "motion by `inference/mann/actions.py` (`python -m training labels` draws a timeline per clip to check "
           "them): jump where all paws leave the ground high enough for long enough, stand where the front paws "
           "are up and the hips are not, sit and lie where the hips are low (lie with the neck low too), move "
           "where the root's speed exceeds a threshold (with hysteresis), idle otherwise; then a majority filter "
           "and merging of short stretches so that labels do not flicker. The input's action values are those "
           "one-hots averaged over a quarter of a second. Thresholds (back-leg lengths, seconds): "
           f"{thresholds}.",
           "- Training frames per action (mirror images included): "
           + ", ".join(f"{a} {n / total:.1%}" for a, n in frames.items()) + ".", "",
           "## Test split",
           f"Never trained or validated on, and not among the files above: {', '.join(meta['test_clips'])}. Frames "
           "where the dog stands on a box or a platform (every paw well off the floor for longer than any jump) "
           "were not learned from either: the model walks on flat ground.", "",
           "## Licence",
           "The dog motion capture (Zhang, Starke, Komura, Saito 2018, University of Edinburgh) is for research "
           "and education only, with no redistribution; these weights, learned from it, carry the same terms.", ""]
    measured = []
    if state["history"]["validation"]:
        step, scores = state["history"]["validation"][-1]
        measured = ["", f"## Validation (held-out last tenth of every training clip, at step {step})", "",
                    f"- Mean squared error of the z-scored outputs {scores['mse']:.4f} (trajectory "
                    f"{scores['trajectory']:.4f}, bones {scores['bones']:.4f}, root {scores['root']:.4f}); the bones' "
                    f"mean position error {scores['position']:.2f} units; experts in use (perplexity of the mean "
                    f"blending weights) {scores['experts']:.2f} of {config['experts']}, per frame "
                    f"{scores.get('per_frame', float('nan')):.2f}. One step from the captured previous frame, not a "
                    "rollout."]
    return {"use": use, "measured": measured}
