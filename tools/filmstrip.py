"""A filmstrip of one gap filled by several models beside the capture: a side view of the skeleton
(along the root's travel over the gap, up) every few frames, one row a version, so that a fill that
glides with its legs held, or floats, shows where its error and skating numbers may not.

    .venv/bin/python tools/filmstrip.py --data ../shared/mocap/dog-mann.zip --clip D1_009_KAN01_002 \\
        --gap 400:460 --models rtn-dog,mann-dog -o docs/images/dog-gap-trot.png

Each model fills the gap as ``python -m inference fill`` does (feet planted); End Sites (a dog's paws)
are drawn as dots.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import matplotlib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.bvh import read_bvh, write_bvh          # noqa: E402
from inference.cli import main as betwixt              # noqa: E402
from inference.modelfile import MODELS                 # noqa: E402
from lab.dataset import load_motion_set          # noqa: E402
from lab.plots import side_view, with_sites       # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt                         # noqa: E402

FRAMES = 11   # drawn per row, the two keys included


def draw(rows, a, b, title, output):
    """One row a motion of ``rows`` [(name, Motion)], the frames a..b of each, side by side."""
    frames = np.linspace(a, b, FRAMES).round().astype(int)
    world = {name: with_sites(m) for name, m in rows}
    root = world[rows[0][0]][:, 0]
    travel = root[b, [0, 2]] - root[a, [0, 2]]
    travel = travel / max(np.linalg.norm(travel), 1e-9)
    fig, axes = plt.subplots(len(rows), 1, figsize=(16, 2.6 * len(rows)), sharex=True, squeeze=False)
    for ax, (name, motion) in zip(axes[:, 0], rows):
        points = side_view(world[name], travel)
        parents = list(motion.skeleton.parents) + [int(j) for j, _ in motion.skeleton.end_sites]
        for k, f in enumerate(frames):
            colour = plt.cm.viridis(k / (FRAMES - 1))
            for j, p in enumerate(parents):
                if p >= 0:
                    ax.plot(points[f, [p, j], 0], points[f, [p, j], 1], color=colour, lw=1.5)
            ends = points[f, len(motion.skeleton):]
            ax.scatter(ends[:, 0], ends[:, 1], color=colour, s=8)
        ax.set_title(f"{name}: {title}, frames {a}-{b} (keys at both ends), every {frames[1] - frames[0]} frames",
                     fontsize=9, loc="left")
        ax.set_aspect("equal")
        ax.axhline(0, color="grey", lw=0.5)
    fig.tight_layout()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=80)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder or archive of BVH files")
    parser.add_argument("--clip", required=True, help="the clip's name in it")
    parser.add_argument("--gap", required=True, help="A:B, the keys either side of the gap")
    parser.add_argument("--models", required=True, help="comma-separated shipped model names, or .onnx files")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    data = load_motion_set(args.data)
    if args.clip not in data.names:
        raise SystemExit(f"error: {args.data}: no clip {args.clip!r}")
    a, b = map(int, args.gap.split(":"))
    with tempfile.TemporaryDirectory() as folder:
        given = Path(folder) / "given.bvh"
        write_bvh(data.clip(data.names.index(args.clip)), given)
        rows = [("capture", read_bvh(given))]
        for name in args.models.split(","):
            path = Path(name) if name.endswith(".onnx") else MODELS / f"{name}.onnx"
            out = Path(folder) / f"{path.stem}.bvh"
            if betwixt(["fill", str(given), "--gap", f"{a}:{b}", "--model", str(path), "-o", str(out)]) != 0:
                raise SystemExit(f"error: {path.stem} did not fill {args.clip} {a}:{b} (see above)")
            rows.append((path.stem, read_bvh(out)))
    draw(rows, a, b, args.clip, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
