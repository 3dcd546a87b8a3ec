"""How long Blender's interface is held by a 10-minute Decompress: the main thread's reading and writing,
step by step, beside the worker's seconds, in real bpy with the repository enabled as the add-on.

    .venv/bin/python tools/main_thread.py --shared ../shared [--minutes 10]

The LaFAN1 test subject's obstacles clip, repeated to the length asked for, is imported by Blender's BVH
importer and keyed once a second (Decompress's keys), with the rig suite's add-on and key handling
(tools/rig_suite.py), as tools/rig_speed.py times them. Reading (addon/plan.py) and writing
(addon/writing.py) run as the modal operator runs them, as steps (addon/steps.py); the longest step is
what the interface waits for at once, and Esc can stop the work between any two. The model's work runs
in a worker thread in Blender and is printed for scale.
"""

import argparse
import sys
import tempfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rig_suite  # noqa: E402  (after the path is set)
from inference.bvh import parse_bvh, write_bvh  # noqa: E402

EVERY = 30   # scene frames between Decompress's keys: one a second


def long_clip(shared, minutes):
    """The test subject's obstacles clip repeated to ``minutes`` at 30 fps."""
    with zipfile.ZipFile(shared / "mocap" / "lafan1-27.zip") as z:
        clip = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5")
    frames = int(minutes * 60 * clip.fps) + 1
    times = -(-frames // clip.n_frames)
    return replace(clip, rotations=np.concatenate([clip.rotations] * times)[:frames],
                   positions=np.concatenate([clip.positions] * times)[:frames])


def timed(steps):
    """``(result, longest step, total)`` seconds of running ``steps`` to their end."""
    start = last = time.perf_counter()
    longest = 0.0
    while True:
        try:
            next(steps)
        except StopIteration as end:
            now = time.perf_counter()
            return end.value, max(longest, now - last), now - start
        now = time.perf_counter()
        longest, last = max(longest, now - last), now


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tools/main_thread.py", description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=rig_suite.ROOT.parent / "shared")
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="betwixt-main-thread-"))
    rig_suite.isolate_user_folders(folder)
    betwixt = rig_suite.enable_source(folder, "timing the source")
    plan, writing, edit, bpy = betwixt.plan, betwixt.writing, betwixt.edit, rig_suite.bpy
    path = folder / "long.bvh"
    write_bvh(long_clip(args.shared, args.minutes), path)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True)
    obj = bpy.context.active_object
    rig_suite.set_keys(betwixt, obj, rig_suite.capture_keys(betwixt, obj), lambda f: (f - 1) % EVERY == 0)
    channels = betwixt.pose_io.Channels(obj)
    plan.read_plan(bpy.context, plan.all_gaps)   # the model loaded once, as a user's first run does
    read, read_step, read_total = timed(plan.read_plan_steps(bpy.context, plan.all_gaps))
    start = time.perf_counter()
    result = writing.planted(read, edit.fill(read.model, read.motion, read.first, read.gaps, read.fps))
    worker = time.perf_counter() - start
    _, write_step, write_total = timed(writing.write_plan(read, channels, result, read.gaps, 1, False))
    print(f"Decompress of {args.minutes:g} min ({read.motion.n_frames} frames, {len(read.gaps)} gaps), "
          f"plain BVH rig, one key a second")
    print(f"{'part':28s} {'seconds':>8s} {'longest step':>13s}")
    print(f"{'reading (main thread)':28s} {read_total:8.2f} {read_step:13.2f}")
    print(f"{'the model (worker thread)':28s} {worker:8.2f} {'':>13s}")
    print(f"{'writing keys (main thread)':28s} {write_total:8.2f} {write_step:13.2f}")


if __name__ == "__main__":
    main()
