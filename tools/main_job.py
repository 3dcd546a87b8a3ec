"""The main job: Betwixt run headless inside Blender on a real clip, as an animator would use it.

A LaFAN1 test-subject clip is imported with Blender's own BVH importer and its keys made Bézier with
auto-clamped handles (an animator's keys; the importer makes them linear). Then:

1. Fill Gaps: the keys of a 30-frame range are removed and the gap filled by the model.
2. Decompress: only one key per second is kept and every gap filled in order.

Both are saved as ``.blend`` and BVH in ``--out``, with ``filmstrip.png`` showing ground truth, the
generated frames and Blender's own interpolation of the remaining keys side by side, and the wall time
of each operator (plus Decompress on ten minutes of one-key-per-second motion) printed at the end.

    python tools/main_job.py --data ../shared/mocap/lafan1-27.zip --out out [--model MODEL.onnx]
"""

import argparse
import os
import sys
import tempfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inference.bvh import parse_bvh, write_bvh  # noqa: E402  (after the path is set)


def enable_addon():
    """The repository as the add-on ``betwixt``, enabled the way Blender enables extensions' add-ons."""
    import addon_utils
    folder = Path(tempfile.mkdtemp(prefix="betwixt-addons-"))
    os.symlink(ROOT, folder / "betwixt")
    sys.path.insert(0, str(folder))
    if addon_utils.enable("betwixt", default_set=True) is None:
        raise SystemExit("the Betwixt add-on failed to register (see above)")


def import_clip(path, name):
    bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True)
    obj = bpy.context.active_object
    obj.name = name
    enum = bpy.types.Keyframe.bl_rna.properties
    bezier = enum["interpolation"].enum_items["BEZIER"].value
    clamped = enum["handle_left_type"].enum_items["AUTO_CLAMPED"].value
    for fc in curves(obj):
        points = fc.keyframe_points
        points.foreach_set("interpolation", np.full(len(points), bezier, np.int32))
        points.foreach_set("handle_left_type", np.full(len(points), clamped, np.int32))
        points.foreach_set("handle_right_type", np.full(len(points), clamped, np.int32))
        fc.update()
    return obj


def curves(obj):
    from betwixt.addon.pose_io import Channels
    return list(Channels(obj).curves().values())


def keep_keys(obj, keep):
    """Leave only the keys on frames for which ``keep(frames)`` is true, and select exactly those."""
    for fc in curves(obj):
        points = fc.keyframe_points
        co = np.empty(2 * len(points))
        points.foreach_get("co", co)
        co = co.reshape(-1, 2)
        co = co[keep(co[:, 0])]
        points.clear()
        points.add(len(co))
        points.foreach_set("co", co.reshape(-1))   # new keys: Bézier, auto-clamped (Blender's defaults)
        points.foreach_set("select_control_point", [True] * len(co))
        fc.update()


def world_positions(obj, frames):
    """World positions of every bone head on ``frames``, as Blender evaluates them: (frames, bones, 3)."""
    bones = obj.pose.bones
    out = np.empty((len(frames), len(bones), 16), dtype=np.float32)
    for i, f in enumerate(frames):
        bpy.context.scene.frame_set(int(f))
        bones.foreach_get("matrix", out[i].reshape(-1))
    heads = np.swapaxes(out.reshape(len(frames), -1, 4, 4), -1, -2)[..., :3, 3]
    return heads @ np.array(obj.matrix_world)[:3, :3].T + np.array(obj.matrix_world)[:3, 3]


def run(operator, obj):
    bpy.context.view_layer.objects.active = obj
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)
    start = time.perf_counter()
    result = operator()
    seconds = time.perf_counter() - start
    if result != {"FINISHED"}:
        raise SystemExit(f"{operator.idname()} did not finish: {result}")
    return seconds


def save(obj, out, name):
    """The scene as .blend and the armature's action as BVH (through the add-on's own exporter)."""
    bpy.context.view_layer.objects.active = obj
    folder = out / f"{name}-bvh"
    bpy.ops.betwixt.export_training_data(directory=str(folder))
    bpy.ops.wm.save_as_mainfile(filepath=str(out / f"{name}.blend"), copy=True)


def filmstrip(rows, parents, frames, path, title):
    """Stick figures seen from the side, one row per version, one column per frame."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    everything = np.concatenate([p for _, p in rows], axis=1).reshape(-1, 3)
    centre = everything.mean(axis=0)
    reach = np.ptp(everything[:, 2]) * 0.6
    fig, axes = plt.subplots(len(rows), len(frames), figsize=(1.6 * len(frames), 2.4 * len(rows)),
                             squeeze=False)
    for r, (label, pos) in enumerate(rows):
        for c, f in enumerate(frames):
            ax = axes[r, c]
            p = pos[c]
            x0 = p[0, 0]
            for j, q in enumerate(parents):
                if q >= 0:
                    ax.plot([p[q, 0] - x0, p[j, 0] - x0], [p[q, 2], p[j, 2]], color=f"C{r}", lw=2)
            ax.set_xlim(-reach, reach)
            ax.set_ylim(centre[2] - reach * 1.1, centre[2] + reach * 1.1)
            ax.set_aspect("equal")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"frame {f}", fontsize=9)
            if c == 0:
                ax.set_ylabel(label, fontsize=10)
    fig.suptitle(title)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def parents_of(obj):
    names = [b.name for b in obj.pose.bones]
    return [names.index(b.parent.name) if b.parent else -1 for b in obj.pose.bones]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="lafan1-27.zip (or the full lafan1.zip)")
    parser.add_argument("--out", type=Path, default=Path("out"))
    parser.add_argument("--model", type=Path, help="model file (default: the add-on's own, rtn-human)")
    parser.add_argument("--clip", default="obstacles1_subject5.bvh")
    parser.add_argument("--start", type=int, default=1000, help="first frame of the clip to use")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--gap", default="100:131", help="the two keys around the gap, in clip frames")
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the Decompress timing run")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)

    with zipfile.ZipFile(args.data) as z:
        full = parse_bvh(z.read(args.clip), args.clip)
    clip = full.frames(args.start, args.start + args.frames)
    truth_bvh = out / "ground-truth.bvh"
    write_bvh(clip, truth_bvh)

    bpy.ops.wm.read_homefile(use_empty=True)
    enable_addon()
    if args.model:
        bpy.context.preferences.addons["betwixt"].preferences.rtn_file = str(args.model.resolve())
    # as in the user interface, where the Betwixt panel loads the model when it first draws
    from betwixt.addon.preferences import load_model, model_for
    start = time.perf_counter()
    model = load_model(bpy.context)
    load_seconds = time.perf_counter() - start
    a, b = (int(v) + 1 for v in args.gap.split(":"))           # Blender's importer starts at frame 1
    gap_frames = np.arange(a + 1, b)

    truth = import_clip(truth_bvh, "ground_truth")
    parents = parents_of(truth)
    truth_pos = world_positions(truth, gap_frames)

    filled = import_clip(truth_bvh, "fill_gaps")
    keep_keys(filled, lambda f: (f <= a) | (f >= b))
    for fc in curves(filled):
        for k in fc.keyframe_points:
            k.select_control_point = k.co[0] in (a, b)
    bezier_pos = world_positions(filled, gap_frames)
    model_for(bpy.context, filled)   # the panel draws with the armature active: it loads every kind's model
    fill_seconds = run(bpy.ops.betwixt.fill_gaps, filled)
    fill_pos = world_positions(filled, gap_frames)
    save(filled, out, "fill-gaps")

    fps = round(clip.fps)
    sparse = import_clip(truth_bvh, "decompress")
    keep_keys(sparse, lambda f: (f - 1) % fps == 0)
    all_frames = np.arange(1, clip.n_frames + 1)
    sparse_bezier = world_positions(sparse, all_frames)
    decompress_seconds = run(bpy.ops.betwixt.decompress, sparse)
    sparse_pos = world_positions(sparse, all_frames)
    save(sparse, out, "decompress")
    truth_all = world_positions(truth, all_frames)

    def error(pos, ref):
        return float(np.linalg.norm(pos - ref, axis=-1).mean())

    shown = gap_frames[np.linspace(0, len(gap_frames) - 1, 8).round().astype(int)]
    pick = np.searchsorted(gap_frames, shown)
    filmstrip([("ground truth", truth_pos[pick]), ("Betwixt", fill_pos[pick]), ("Bézier keys", bezier_pos[pick])],
              parents, shown, out / "filmstrip.png",
              f"{args.clip} frames {args.start + a - 1}-{args.start + b - 1}: a {len(gap_frames)}-frame gap")

    long_seconds = time_long_decompress(full, args.minutes, out)
    print(f"Model {model.name} loaded in {1000 * load_seconds:.0f} ms")
    print(f"Fill Gaps, one {len(gap_frames)}-frame gap, {len(truth.pose.bones)} bones: {1000 * fill_seconds:.0f} ms; "
          f"mean joint error {error(fill_pos, truth_pos):.2f} (Bézier {error(bezier_pos, truth_pos):.2f}) "
          f"Blender units")
    print(f"Decompress, {clip.n_frames} frames keyed every {fps}: {decompress_seconds:.2f} s; mean joint error "
          f"{error(sparse_pos, truth_all):.2f} (Bézier {error(sparse_bezier, truth_all):.2f})")
    print(f"Decompress, {args.minutes:g} minutes keyed once per second: {long_seconds:.1f} s")
    print(f"wrote {out}/fill-gaps.blend, decompress.blend, their BVH folders and filmstrip.png")


def time_long_decompress(full, minutes, out):
    """Decompress on ``minutes`` of motion (the clip repeated) keyed once per second, timed."""
    frames = int(minutes * 60 * full.fps) + 1
    reps = -(-frames // full.n_frames)
    long = replace(full, rotations=np.concatenate([full.rotations] * reps)[:frames],
                   positions=np.concatenate([full.positions] * reps)[:frames])
    path = out / "long.bvh"
    write_bvh(long, path)
    obj = import_clip(path, "long")
    fps = round(full.fps)
    keep_keys(obj, lambda f: (f - 1) % fps == 0)
    seconds = run(bpy.ops.betwixt.decompress, obj)
    path.unlink()
    return seconds


if __name__ == "__main__":
    main()
