"""How long Fill Gaps and Decompress take on a control rig: the rig suite's generated Rigify rig (706 bones,
10 s of LaFAN1's test subject keyed on its controls) beside its plain BVH rig, in real bpy.

    .venv/bin/python tools/rig_speed.py --shared ../shared [--repeat 5] [--fk] [--gap 30]

Prints the median seconds of Fill Gaps of one gap (1 s, or ``--gap`` frames; the keys around it selected: a
gap of at most half a second also reads and fills its probes, inference/keyspline.py) and of Decompress of
the whole 10 s from one key a second, each from the same keys every time. The rigs, their keys and the
add-on are the rig suite's (tools/rig_suite.py, the repository enabled as the add-on ``betwixt``). Time
it on a quiet machine: one evaluation of the generated rig is most of a fill.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rig_suite  # noqa: E402  (after the path is set)

START = 100        # scene frame of the first key of the gap
EVERY = 30         # Decompress's keys: one a second


def timed(betwixt, obj, operator, keep, select, repeat, folder):
    """Median seconds of ``operator`` over ``repeat`` runs, each on the same keys: the capture's where
    ``keep(frames)`` says (the scene saved with them and opened again before each run; a first run,
    untimed, loads the model as a user's first does)."""
    bpy = rig_suite.bpy
    rig_suite.set_keys(betwixt, obj, rig_suite.capture_keys(betwixt, obj), keep, select)
    name, path = obj.name, folder / "keys.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    seconds = []
    for _ in range(repeat + 1):
        bpy.ops.wm.open_mainfile(filepath=str(path))
        took, error = rig_suite.call(betwixt, operator, bpy.data.objects[name])
        if error:
            raise SystemExit(f"{operator}: {error}")
        seconds.append(took)
    return float(np.median(seconds[1:]))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tools/rig_speed.py", description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=rig_suite.ROOT.parent / "shared")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fk", action="store_true", help="the rig's limbs in FK (default: IK, as generated)")
    parser.add_argument("--gap", type=int, default=30, help="frames from the gap's first key to its last")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="betwixt-rig-speed-"))
    rig_suite.isolate_user_folders(folder)
    betwixt = rig_suite.enable_source(folder, "timing the source")
    cases = {c.name: c for c in rig_suite.CASES}
    a, b = START, START + args.gap
    print(f"{'rig':32s} {f'Fill Gaps {args.gap} fr (s)':>18s} {'Decompress 10 s (s)':>20s}")
    for label, name in ((f"Rigify ({'FK' if args.fk else 'IK'} limbs, 706 bones)", "rigify-fk" if args.fk else "rigify-ik"),
                        ("BVH import (22 bones)", "lafan1")):
        case = cases[name]
        clip = rig_suite.load_clip(case, args.shared / "mocap")
        obj = rig_suite.import_case(case, clip, folder, betwixt)
        fill = timed(betwixt, obj, "fill_gaps", lambda f: (f <= a) | (f >= b), (a, b), args.repeat, folder)
        obj = rig_suite.import_case(case, clip, folder, betwixt)
        decompress = timed(betwixt, obj, "decompress", lambda f: (f - 1) % EVERY == 0, (), args.repeat, folder)
        print(f"{label:32s} {fill:18.3f} {decompress:20.3f}")


if __name__ == "__main__":
    main()
