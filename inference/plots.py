"""PNG plots of benchmark errors per transition frame, so a reader sees where a method drifts, and of
what bench-mann measures: the paths the MANN controller followed, and its experts at work; and of
bench-mvae's random walks, latent and paths (plot_paths, as bench-mann's).

The only module that imports matplotlib, and only when called: the runtime inside Blender never needs it.
"""

from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_errors(curves, out_dir):
    """One PNG per transition length: L2Q and L2P against the transition frame, a line per method.

    ``curves`` maps ``(method, length)`` to ``{"L2Q": per_frame, "L2P": per_frame}``. Returns the paths.
    """
    plt = _pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in sorted({n for _, n in curves}):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
        for (method, length), per_frame in curves.items():
            if length != n:
                continue
            frames = range(1, n + 1)
            for ax, metric in zip(axes, ("L2Q", "L2P")):
                ax.plot(frames, per_frame[metric], marker="o" if n <= 15 else None, label=method)
        for ax, metric in zip(axes, ("L2Q", "L2P")):
            ax.set(title=f"{metric}, transitions of {n} frames", xlabel="transition frame", ylabel=metric)
            ax.grid(alpha=0.3)
            ax.legend()
        path = out_dir / f"errors-{n}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_paths(runs, units_per_metre, out_dir):
    """One PNG per path followed: the path and the root's track on the ground, seen from above in
    Blender's axes (the model's (x, -z)), in metres. ``runs`` maps a name to ``{"path": (N, 2), "track":
    (F, 2)}`` in the model's units. Returns the paths of the files."""
    plt = _pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, run in runs.items():
        fig, ax = plt.subplots(figsize=(5, 5), constrained_layout=True)
        for points, style, label in ((run["path"], "k--", "path"), (run["track"], "C0-", "the root")):
            ax.plot(points[:, 0] / units_per_metre, -points[:, 1] / units_per_metre, style, lw=1, label=label)
        ax.set(title=name, xlabel="x (m)", ylabel="y (m)", aspect="equal")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
        path = out_dir / f"path-{name.replace(' ', '-')}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def plot_experts(runs, fps, out_dir, seconds=2.0):
    """The gating network's blending weights over ``seconds`` of each gait on a circle, stacked (Zhang et
    al. 2018, Fig. 9), from the middle of the path. ``runs`` maps "circle <gait>" to ``{"experts": (F, K)}``
    among others. Returns the paths of the files (none without circles)."""
    circles = {name.split(" ", 1)[1]: run["experts"] for name, run in runs.items() if name.startswith("circle ")}
    if not circles:
        return []
    plt = _pyplot()
    fig, axes = plt.subplots(len(circles), 1, figsize=(8, 2.2 * len(circles)), sharex=True, constrained_layout=True)
    axes = [axes] if len(circles) == 1 else axes
    frames = int(round(seconds * fps))
    for ax, (gait, weights) in zip(axes, circles.items()):
        middle = max(len(weights) // 2 - frames // 2, 0)
        shown = weights[middle:middle + frames]
        ax.stackplot(np.arange(len(shown)) / fps, shown.T, labels=[f"expert {k + 1}" for k in range(shown.shape[1])])
        ax.set(ylabel=gait, ylim=(0, 1), xlim=(0, len(shown) / fps))
    axes[0].set_title("experts' blending weights on a circle")
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    axes[-1].set_xlabel("seconds")
    path = Path(out_dir) / "experts.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def plot_walks(runs, out_dir):
    """The hips' height over each random walk against the capture's range (a walk that sinks or flies
    leaves the band). ``runs``: ``{"heights": [(F,) per finite walk], "with_nan": walks left out, "fps": ...,
    "capture": {"hips_min", "hips_max"}}`` in cm. Returns the paths of the files."""
    plt = _pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(10, 4), constrained_layout=True)
    capture = runs["capture"]
    ax.axhspan(capture["hips_min"], capture["hips_max"], color="0.85", label="the capture's range")
    ax.axhline(0, color="k", lw=0.8)
    for heights in runs["heights"]:
        ax.plot(np.arange(len(heights)) / runs["fps"], heights, lw=0.5)
    left_out = f" ({runs['with_nan']} with NaN left out)" if runs["with_nan"] else ""
    ax.set(title=f"hips height over {len(runs['heights'])} random walks{left_out}", xlabel="seconds", ylabel="cm")
    ax.legend(loc="upper right", fontsize="small")
    path = out_dir / "walks.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def plot_latent(kl_dims, out_dir, active=0.01):
    """The KL (nats) of every latent dimension, with the line above which a dimension counts as active.
    Returns the paths of the files."""
    plt = _pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 3), constrained_layout=True)
    ax.bar(np.arange(len(kl_dims)), kl_dims)
    ax.axhline(active, color="C3", lw=1, label=f"active: KL > {active:g}")
    ax.set(title="KL per latent dimension on subject 5", xlabel="dimension", ylabel="nats", yscale="log")
    ax.legend(loc="upper right", fontsize="small")
    path = out_dir / "latent.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
