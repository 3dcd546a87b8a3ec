"""PNG plots of benchmark errors per transition frame, so a reader sees where a method drifts.

The only module that imports matplotlib, and only when called: the runtime inside Blender never needs it.
"""

from pathlib import Path


def plot_errors(curves, out_dir):
    """One PNG per transition length: L2Q and L2P against the transition frame, a line per method.

    ``curves`` maps ``(method, length)`` to ``{"L2Q": per_frame, "L2P": per_frame}``. Returns the paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
