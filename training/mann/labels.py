"""``python -m training labels``: MANN's six actions drawn per clip, for a person to check.

    python -m training labels --data ../shared/mocap/dog-mann.zip --out runs/labels

writes one PNG timeline per clip (speed, heights, the label bands) and ``labels.json`` (each clip's
segments and the thresholds). The rules that derive the actions from the motion are in
:mod:`inference.mann.actions`, shared with the runtime.
"""

import json
from pathlib import Path

import numpy as np
from inference.mann.actions import (ACTIONS, IDLE_SPEED, JUMP_AIR, LIE_NECK, LOW_HIPS, MOVE_SPEED, STAND_FRONT,
                                    classify, segments_of, signals, smooth, thresholds)
from inference.mann.features import bones_of
from lab.dataset import load_motion_set

COLOURS = ("#9e9e9e", "#4caf50", "#f44336", "#2196f3", "#ff9800", "#7e57c2")


def plot(name, sig, label, fps, path):
    """A timeline of one clip: speed, heights above the ground, and the label bands."""
    import matplotlib   # here, not on import: the Agg backend must be chosen before pyplot loads

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    t = np.arange(len(label)) / fps
    leg = sig["leg"]
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(max(8.0, min(40.0, len(label) / fps / 2)), 6.5), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 3, 1]}, constrained_layout=True)
    a1.plot(t, sig["speed"], color="k", lw=0.8, label="root speed")
    for v, s in ((MOVE_SPEED, "--"), (IDLE_SPEED, ":")):
        a1.axhline(v * leg, color="#4caf50", ls=s, lw=0.8)
    a1.set(ylabel="units / s", title=f"{name}: {len(label)} frames at {fps:g} fps")
    a1.legend(loc="upper right", fontsize="small")
    for key, colour, name in (("hips", "k", "hips"), ("neck", "#7e57c2", "neck"),
                              ("front", "#ff9800", "lower front paw"), ("air", "#f44336", "lowest paw")):
        a2.plot(t, sig[key], color=colour, lw=0.8, label=name)
    for v, colour in ((LOW_HIPS, "k"), (LIE_NECK, "#7e57c2"), (STAND_FRONT, "#ff9800"), (JUMP_AIR, "#f44336")):
        a2.axhline(v * leg, color=colour, ls="--", lw=0.6)
    a2.set(ylabel="height above ground")
    a2.legend(loc="upper right", fontsize="small", ncol=4)
    for a, b, action in segments_of(label):
        a3.axvspan(a / fps, b / fps, color=COLOURS[action], lw=0)
    a3.set(yticks=[], xlabel="seconds", xlim=(0, len(label) / fps))
    a3.legend(handles=[Patch(color=c, label=n) for c, n in zip(COLOURS, ACTIONS)], loc="upper center",
              bbox_to_anchor=(0.5, -0.9), ncol=6, fontsize="small")
    fig.savefig(path, dpi=80)
    plt.close(fig)


def add_arguments(parser):
    parser.add_argument("--data", required=True, help="folder or archive of BVH files (the dog data)")
    parser.add_argument("--out", required=True, type=Path, help="folder for the PNG timelines and labels.json")
    parser.add_argument("--cache", default=None, help="data set cache folder")


def run(args):
    data = load_motion_set(args.data, args.cache)
    bones = bones_of(data.skeleton)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"actions": list(ACTIONS), "thresholds": thresholds(), "fps": data.fps, "clips": {}}
    total = np.zeros(len(ACTIONS))
    for i, name in enumerate(data.names):
        motion = data.clip(i)
        sig = signals(motion, bones)
        label = smooth(classify(sig, motion.fps), motion.fps)
        plot(name, sig, label, motion.fps, args.out / f"{name}.png")
        summary["clips"][name] = [[a, b, ACTIONS[k]] for a, b, k in segments_of(label)]
        total += np.bincount(label, minlength=len(ACTIONS))
    (args.out / "labels.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {len(data.names)} timelines and labels.json to {args.out}; frames per action: "
          + ", ".join(f"{a} {n / total.sum():.1%}" for a, n in zip(ACTIONS, total)))
