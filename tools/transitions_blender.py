"""Transitions in Blender against issue 44's goal (all 224 transitions, writing included, in at most 30 s):

    .venv/bin/python tools/transitions_blender.py --mocap ../shared/mocap [--threads N]

The eight clips of tools/transitions_bench.py (LaFAN1 subject 5 and CMU on LaFAN1's skeleton), each imported
by Blender's BVH importer and kept as an action of one armature; then the Transitions operator's three steps
as it runs them (read each action, the model, write 224 actions), 56 ordered pairs, K = 4, 30 frames, with
the shipped rtn-human, each step timed (wall clock and this process's CPU time).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mocap", type=Path, default=ROOT.parent / "shared" / "mocap")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime's and numpy's threads (0: theirs)")
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import bpy
    import addon_utils
    from transitions_bench import K, LENGTH, clips

    folder = Path(tempfile.mkdtemp())
    (folder / "addons").mkdir()
    os.symlink(ROOT, folder / "addons" / "betwixt")
    sys.path.insert(0, str(folder / "addons"))
    addon_utils.enable("betwixt", default_set=True)
    from betwixt.addon.library import BETWIXT_OT_transitions as op
    from betwixt.addon.library import transitions_of
    from betwixt.addon.steps import drained

    bpy.ops.wm.read_homefile(use_empty=True)
    objects = []
    for path in clips(args.mocap, folder / "clips"):
        bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True)
        objects.append(bpy.context.active_object)
        objects[-1].animation_data.action.name = path.stem
        objects[-1].animation_data.action.use_fake_user = True
        objects[-1].animation_data.action.betwixt_pick = True
    for other in objects[1:]:
        bpy.data.objects.remove(other)
    bpy.context.view_layer.objects.active = objects[0]
    options = SimpleNamespace(length=LENGTH, count=K, leave="AUTO", enter="AUTO", variation=1.0, seed=0,
                              plant_feet=True)
    times = {}
    clock = time.perf_counter(), time.process_time()

    def lap(name):
        nonlocal clock
        now = time.perf_counter(), time.process_time()
        times[name] = (now[0] - clock[0], now[1] - clock[1])
        clock = now

    plan = op.prepare(options, bpy.context)
    lap("read the actions")
    takes = op.compute(options, plan, lambda done, total: None, lambda: False)
    lap("the model (224 transitions), planting, report")
    drained(op.finish(options, bpy.context, plan, takes))   # steps, as the operator's timer runs them
    lap("write 224 actions, lay them out in the NLA")
    made = transitions_of(objects[0])
    print(f"{len(plan.sources)} actions, {len(made)} transitions written, {LENGTH} frames, K = {K}")
    for name, (wall, cpu) in times.items():
        print(f"{name:<45} {wall:6.2f} s  (CPU {cpu:6.2f} s)")
    wall = sum(w for w, _ in times.values())
    print(f"{'total':<45} {wall:6.2f} s  (CPU {sum(c for _, c in times.values()):6.2f} s)  goal 30 s: "
          f"{'met' if wall <= 30.0 else 'missed'}")


if __name__ == "__main__":
    main()
