"""How well other data sets come onto LaFAN1's skeleton (inference/retarget.py), measured on the capture:

    .venv/bin/python tools/retarget_check.py [--mocap ../shared/mocap] [--image docs/images/retarget-bandai.png]

For Bandai-1's walk and run clips and CMU 01_01 (at 30 fps): the mean angle between each retargeted
bone (a mapped joint to its nearest mapped descendant) and the source's same bone, and foot skating
(../shared/docs/metrics.md: the foot and toe joints, each foot's own ground), frame-weighted, of the
retargeted motion over the source's made as large as the target by the retargeting's scale (so that
the measure's 2.5 cm threshold means the same on both bodies). With ``--image``, a filmstrip of a
Bandai walk (grey, scaled) and its retargeted motion (blue) side by side, seen from the side.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.bvh import read_bvh  # noqa: E402
from lab.dataset import read_motions, subject_of  # noqa: E402
from lab.metrics import foot_skating  # noqa: E402
from inference.anatomy import pelvis  # noqa: E402
from inference.retarget import Retargeting, direction_error, natural_pose  # noqa: E402

FEET = {"lafan1": ["LeftFoot", "RightFoot", "LeftToe", "RightToe"],
        "bandai": ["Foot_L", "Foot_R", "Toes_L", "Toes_R"],
        "cmu": ["LeftFoot", "RightFoot", "LeftToeBase", "RightToeBase"]}


def skating(motion, feet, scale=1.0):
    """Mean skating (units a frame) of the four foot joints, each over its own ground, of ``motion``
    made ``scale`` times larger (so that the measure's 2.5 cm means the same on another's body)."""
    _, world = motion.global_transforms()
    f = world[:, [motion.skeleton.index(n) for n in feet]] * scale
    return float(foot_skating(f, np.percentile(f[..., 1], 2, axis=0)).mean())


def measure(name, clips, onto, feet):
    """One line: bone angles and the skating ratio over ``clips`` retargeted by ``onto``."""
    angles, source, scaled, target, frames = [], 0.0, 0.0, 0.0, 0
    for clip in clips:
        out = onto(clip)
        angles.append(direction_error(clip, out, onto))
        source += skating(clip, feet) * clip.n_frames
        scaled += skating(clip, feet, 1 / onto.scale) * clip.n_frames
        target += skating(out, FEET["lafan1"]) * clip.n_frames
        frames += clip.n_frames
    angles = np.concatenate(angles)
    print(f"{name}: {len(clips)} clips, {frames} frames; bone directions {angles.mean():.2f} deg on average "
          f"({angles.max():.2f} at most); foot skating {source / frames:.3f} (source units) -> {target / frames:.3f} "
          f"(cm) a frame, {target / scaled:.3f}x the source's made as large as the target "
          f"(scale {1 / onto.scale:.4f})")


def filmstrip(source, target, scale, path, frames=6):
    """Side views of ``source`` (grey, made ``scale`` times larger) and ``target`` (blue), each panel
    one frame: the horizontal axis is the clip's direction of travel, the line the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, src = source.global_transforms()
    _, tgt = target.global_transforms()
    src = src * scale
    hips = pelvis(target.skeleton)
    travel = tgt[-1, hips] - tgt[0, hips]
    along = np.array([travel[0], 0.0, travel[2]]) / np.hypot(travel[0], travel[2])
    picks = np.linspace(0, source.n_frames - 1, frames).astype(int)
    fig, axes = plt.subplots(1, frames, figsize=(1.3 * frames, 2.1), constrained_layout=True)
    for ax, f in zip(axes, picks):
        for world, sk, colour, shift in ((src, source.skeleton, "0.55", -45.0),
                                         (tgt, target.skeleton, "tab:blue", 45.0)):
            centre = world[f, pelvis(sk)]
            x = (world[f] - centre) @ along + shift
            for j, parent in enumerate(sk.parents):
                if parent >= 0 and parent >= pelvis(sk):
                    ax.plot(x[[parent, j]], world[f, [parent, j], 1], color=colour, lw=1.4)
        ax.axhline(0.0, color="0.3", lw=0.8)
        ax.set(xlim=(-100, 100), ylim=(-5, 175), aspect="equal", xticks=[], yticks=[], title=f"frame {f}")
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mocap", type=Path, default=Path(__file__).resolve().parents[2] / "shared/mocap")
    parser.add_argument("--image", type=Path, default=None)
    args = parser.parse_args()
    lafan = [m for m in read_motions(args.mocap / "lafan1-27.zip") if subject_of(m.name) in (1, 2, 3, 4)]
    target, pose = lafan[0].skeleton, natural_pose(lafan)
    bandai = read_motions(args.mocap / "bandai1.zip")
    onto = Retargeting.build(bandai[0].skeleton, target, natural_pose(bandai), pose)
    walks = [m for m in bandai if "_walk" in m.name or "_run" in m.name]
    measure("Bandai-1 walks and runs", walks, onto, FEET["bandai"])
    measure("Bandai-1, every clip", bandai, onto, FEET["bandai"])
    cmu = read_bvh(args.mocap / "cmu-01_01.bvh").resample(30)
    from_cmu = Retargeting.build(cmu.skeleton, target, natural_pose([cmu]), pose)
    measure("CMU 01_01 at 30 fps", [cmu], from_cmu, FEET["cmu"])
    if args.image:
        walk = next(m for m in bandai if m.name.endswith("walk_normal_001"))
        filmstrip(walk, onto(walk), onto.scale, args.image)
        print(f"wrote {args.image}")


if __name__ == "__main__":
    main()
