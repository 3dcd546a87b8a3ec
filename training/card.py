"""Model cards: what a model file's weights are, where they came from, what they may be used for.

The parts every family shares (data and licence, how the weights were made, the export) are written
here from the checkpoint; a family adds its own sections (:meth:`.family.Family.card`): how it is
used and what was measured.
"""

import os
import platform
import shlex

import torch


def made(history, steps):
    """The stretches of training, each a Markdown line with its command, commit and hardware (where
    the run recorded them): resumes with all three unchanged are one stretch."""
    stretches = []   # [first step, (command, commit, hardware)]
    for run in history["runs"]:
        how = "python -m training " + shlex.join(run["argv"]), run.get("commit"), run.get("hardware")
        if not stretches or stretches[-1][1] != how:
            stretches.append([run["from_step"], how])
    ends = [start for start, _ in stretches[1:]] + [steps]
    return [f"- Steps {start} to {end}: `{command}`" + (f" at commit {commit}" if commit else "")
            + (f", on {machine}" if machine else "")
            for (start, (command, commit, machine)), end in zip(stretches, ends)]


def hardware(device):
    if str(device).startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def sources(meta):
    """The data sets a run trained on, as paths (a checkpoint from before several ``--data``: one string)."""
    return [meta["data"]] if isinstance(meta["data"], str) else list(meta["data"])


def write(path, family, state, weights, precision, sections, options=""):
    """Write the card of the model file at ``path`` beside it (``MODEL.md``); ``options``: the export's
    command line beyond ``--weights``."""
    meta, args = state["meta"], state["meta"]["args"]
    speeds = args.get("speeds", "1")
    held = meta.get("held_out")   # none before --hold-out
    lines = [
        f"# {path.stem}", "", family.card_title(state["config"]), "",
        "## Data and licence",
        f"- Trained on {' + '.join(f'`{os.path.basename(d)}`' for d in sources(meta))}"
        + (f", subjects {meta['subjects']}" if meta["subjects"] else "")
        + f": {len(meta['data_files'])} files, the last tenth of each held out for validation"
        + ("" if args.get("no_mirror") else ", plus their mirror images")
        + (f" and, where the commands below say `--speeds`, copies played at speeds {speeds}." if speeds != "1" else "."),
        f"- Files: {', '.join(meta['data_files'])}.",
        *([f"- Held out (never trained or validated on): {', '.join(held)}."] if held else []),
        f"- Licence of the weights: {meta['licence']}. A model inherits the terms of its data.", "",
        *sections.get("use", []),
        "## How it was made",
        "Trained in stretches, each going on from the checkpoint where the one before stopped: resuming "
        "it (from a copy of its `--out` folder where the folders differ) or, with `--init`, starting a "
        "new run from its weights:", "", *made(state["history"], state["step"]), "",
        f"Then `python -m training export CHECKPOINT -o {path.name} --weights {weights}{options}`: weights {precision}",
        f"- {state['step']} optimiser steps"
        # where no run recorded its hardware (checkpoints from before they did): the last run's device here
        + ("." if any("hardware" in r for r in state["history"]["runs"]) else f"; {hardware(args.get('device', 'cpu'))}."),
        *sections.get("measured", []),
    ]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
