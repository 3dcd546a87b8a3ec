"""PNG plots of benchmark errors per transition frame, so a reader sees where a method drifts, and of
what bench-mann measures: the paths the MANN controller followed, and its experts at work; and of
bench-mvae's random walks, latent and paths (plot_paths, as bench-mann's); and the filmstrip of any
motion (``python -m lab filmstrip``): stick figures from the side and from above, and the feet's
heights over time, so that floating and sliding feet show.

The only module that imports matplotlib, and only when called: the runtime inside Blender never needs it.
"""

from pathlib import Path

import numpy as np

from inference import quat
from .floor_metrics import feet_of, foot_points


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


def side_view(points, travel):
    """(..., 2): ``points`` (..., 3), Y up, as (distance along ``travel`` (2,), a unit vector on the
    ground, height)."""
    return np.stack([points[..., 0] * travel[0] + points[..., 2] * travel[1], points[..., 1]], axis=-1)


def top_view(points, travel):
    """(..., 2): ``points`` (..., 3) seen from above, ``travel`` (2,) to the right."""
    return np.stack([points[..., 0] * travel[0] + points[..., 2] * travel[1],
                     points[..., 0] * travel[1] - points[..., 2] * travel[0]], axis=-1)


def with_sites(motion):
    """(F, J + S, 3): the joints' world positions, then the End Sites' (paws, toe tips, the head's top)."""
    rotations, positions = motion.global_transforms()
    sites = [positions[:, j] + quat.rotate(rotations[:, j], np.asarray(offset, dtype=np.float64))
             for j, offset in motion.skeleton.end_sites]
    return np.concatenate([positions, np.stack(sites, axis=1)], axis=1) if sites else positions


def plot_filmstrip(motion, drawn, output, title=""):
    """A PNG at ``output``: stick figures of ``motion`` at the frames ``drawn`` (ascending indices) seen
    from the side (along the root's travel from the first to the last, up) and from above, coloured
    from the first to the last, then the height of every foot point (a person's ankle and toe joints, a
    quadruped's paws) over the frames from the first drawn to the last, the drawn ones marked. Heights
    are the motion's own up axis (Y), the floor at 0 as the data's stands."""
    plt = _pyplot()
    world = with_sites(motion)
    root = world[:, 0]
    travel = root[drawn[-1], [0, 2]] - root[drawn[0], [0, 2]]
    travel = travel / np.linalg.norm(travel) if np.linalg.norm(travel) > 1e-6 else np.array([1.0, 0.0])
    parents = list(motion.skeleton.parents) + [int(j) for j, _ in motion.skeleton.end_sites]
    fig, axes = plt.subplots(3, 1, figsize=(12, 8.5), gridspec_kw={"height_ratios": [3, 2, 2]}, constrained_layout=True)
    colours = plt.cm.viridis(np.linspace(0, 1, len(drawn)))
    bones = [(p, j) for j, p in enumerate(parents) if p >= 0]
    for ax, view in zip(axes[:2], (side_view, top_view)):
        points = view(world, travel)
        for f, colour in zip(drawn, colours):
            for p, j in bones:
                ax.plot(points[f, [p, j], 0], points[f, [p, j], 1], color=colour, lw=1.2)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
    axes[0].axhline(0, color="k", lw=0.8)
    axes[1].plot(*top_view(root[drawn[0]:drawn[-1] + 1], travel).T, color="0.6", lw=0.8)
    axes[0].set_title(f"{title}: frames {drawn[0]}-{drawn[-1]}, every {drawn[1] - drawn[0] if len(drawn) > 1 else 1}"
                      f" ({motion.fps:g} fps); from the side", fontsize=9, loc="left")
    axes[1].set_title("from above (the grey line: the root)", fontsize=9, loc="left")
    feet = feet_of(motion.skeleton)
    grot, gpos = motion.global_transforms()
    heights = foot_points(feet, grot, gpos)[drawn[0]:drawn[-1] + 1, :, 1]
    names = [motion.skeleton.names[j] + (" paw" if np.any(site) else "") for j, site in zip(feet.joints, feet.sites)]
    t = np.arange(drawn[0], drawn[-1] + 1)
    for k, name in enumerate(names):
        axes[2].plot(t, heights[:, k], lw=1, label=name)
    for f, colour in zip(drawn, colours):
        axes[2].axvline(f, color=colour, lw=0.6, alpha=0.6)
    axes[2].axhline(0, color="k", lw=0.8)
    axes[2].set(xlabel="frame", ylabel="height", xlim=(drawn[0], drawn[-1]))
    axes[2].set_title("the feet's heights", fontsize=9, loc="left")
    axes[2].legend(loc="upper right", fontsize="small", ncol=len(names))
    axes[2].grid(alpha=0.3)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=80)
    plt.close(fig)
    return Path(output)
