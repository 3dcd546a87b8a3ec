"""CARL's tracking policy on the dog's test split, which it never trained on (issue 48): each clip tracked whole
in simulation (``inference/carl/runtime.py``), as a Physics Pass tracks it, and measured beside the capture.

- **Tracking**: the joints' mean distance from the capture's, both from their roots (cm), and the falls without
  pushes, per minute (a fallen dog is set back on the capture where it fell and tracks on; lying down where the
  capture lies is no fall), beside the share of each clip's frames where the capture itself lies on the floor.
- **Pushes**: a shove on the torso that changes the dog's horizontal speed by each of ``PUSHES`` m/s, every
  ``PUSH_EVERY`` s, in a direction drawn from a fixed seed: falls per minute, and the seconds after a push until
  the root moves with the capture again (its horizontal velocity within ``RECOVERED`` m/s of the capture's for
  ``STEADY`` s).
- **Paws**, at each gait (the frames whose hips travel at the gait's speeds, ``mann_bench.BANDS``): the contacts'
  intersection over union with the capture's (CARL's measure of motion quality), the paws' slide while on the
  floor (cm a frame) beside the capture's, and how deep a paw sinks under the floor.
- **Paths** (physics-based Follow Path): MANN's dog following bench-mann's circle, square and star at a walk, a trot
  and a canter (``mann_bench.shapes``), each motion tracked: falls, the joints' distance from MANN's motion, the
  paws' contact IoU and slide beside MANN's own.
- **Speed**: seconds to track 10 s of motion on one thread, and the model file's size.

Everything is the policy's alone unless ``assist`` (``--assist``) holds the root as a Physics Pass's Assist does.
"""

import time

import numpy as np

from inference.carl.reference import slide
from inference.carl.runtime import SUNK
from inference.carl.simulation import POLICY_RATE, TORSO
from inference.mann.path import GAITS
from .mann_bench import BANDS, shapes, test_clips

PUSHES = (0.3, 0.5, 0.8)   # m/s: the change of the dog's horizontal speed
PUSH_EVERY = 2.0           # s
RECOVERED = 0.2            # m/s
STEADY = 0.2               # s


def push_plan(frames, speed, rng):
    """{frame: ((vx, vy), TORSO)}: a push of ``speed`` m/s on the torso every PUSH_EVERY seconds of ``frames``
    (at POLICY_RATE)."""
    every = int(round(PUSH_EVERY * POLICY_RATE))
    return {int(t): (speed * np.array([np.cos(a), np.sin(a)]), TORSO)
            for t in range(every, frames - 1, every) for a in [rng.uniform(0.0, 2.0 * np.pi)]}


def recovery(tracked, pushes):
    """Seconds after each push (in ``pushes``' frames) until the root's horizontal velocity stays within
    RECOVERED of the capture's for STEADY seconds (the next push's time where it never does)."""
    mine = np.diff(tracked.positions[:, 0, :2], axis=0) * POLICY_RATE
    theirs = np.diff(tracked.reference.positions[:, 0, :2], axis=0) * POLICY_RATE
    near = np.linalg.norm(mine - theirs, axis=-1) < RECOVERED
    steady, frames = int(round(STEADY * POLICY_RATE)), sorted(pushes)
    out = []
    for i, t in enumerate(frames):
        end = frames[i + 1] if i + 1 < len(frames) else len(near)
        back = next((s for s in range(t, end - steady + 1) if near[s:s + steady].all()), end)
        out.append((back - t) / POLICY_RATE)
    return out


def paws_at(tracked, band):
    """Sums over the frames of ``band`` (F,) bool: contacts' intersection and union, the sliding paws'
    travel (m) and frames, frames with a paw more than SUNK into the floor and the deepest (m), of the
    simulation and of the capture posed in the simulator."""
    ref = tracked.reference
    mine, theirs = tracked.contacts[band], ref.contacts[band]
    return {"both": int((mine & theirs).sum()), "either": int((mine | theirs).sum()),
            "slide": slide(tracked.paws, tracked.contacts, band), "capture_slide": slide(ref.paws, ref.contacts, band),
            "sunk": int((tracked.sunk[band] > SUNK).sum()),
            "capture_sunk": int((tracked.sunk_reference[band] > SUNK).sum()),
            "frames": int(band.sum()), "deepest": float(tracked.sunk[band].max(initial=0.0)),
            "capture_deepest": float(tracked.sunk_reference[band].max(initial=0.0))}


def gait_bands(tracked):
    """{gait: (F,) bool} the frames at each gait of BANDS, by the capture's hips (Z up, metres)."""
    hips = tracked.reference.positions[:, 0]
    half = int(round(0.25 * POLICY_RATE))
    ahead = np.pad(hips[:, :2], ((0, half), (0, 0)), mode="edge")[half:]
    behind = np.pad(hips[:, :2], ((half, 0), (0, 0)), mode="edge")[:len(hips)]
    speed = np.linalg.norm(ahead - behind, axis=-1) * POLICY_RATE / (2 * half)
    return {gait: (speed >= low) & (speed < high) for gait, (low, high) in BANDS.items()}


def paths(model, mann, seconds=None, assist=0.0):
    """{"shape gait": row} of ``model`` (a CARLModel) tracking ``mann``'s (a MANNModel of its skeleton) motion along
    each of bench-mann's paths (cut to ``seconds`` where given), held by ``assist`` Nm (``CARLModel.track``)."""
    made = {f"{shape} {gait}": path for gait, speed in GAITS.items()
            for shape, path in shapes(speed, mann.units_per_metre, seconds).items()}
    rows = {}
    for name, motion in zip(made, mann.follow(list(made.values()))):
        tracked = model.track(motion, assist=assist)
        paws = paws_at(tracked, np.ones(len(tracked.qpos), bool))
        minutes = len(tracked.qpos) / POLICY_RATE / 60.0
        rows[name] = {"seconds": 60.0 * minutes, "falls_per_minute": len(tracked.falls) / minutes,
                      "joint_error_cm": 100.0 * float(tracked.joint_error().mean()),
                      "iou": paws["both"] / max(paws["either"], 1),
                      "slide_cm": 100.0 * paws["slide"][0] / max(paws["slide"][1], 1),
                      "capture_slide_cm": 100.0 * paws["capture_slide"][0] / max(paws["capture_slide"][1], 1)}
    return rows


def bench(model, data, count=None, seconds=None, seed=0, progress=None, mann=None, assist=0.0):
    """The measurements of ``model`` (a CARLModel) on the test split of ``data`` (the dog's MotionSet; its first
    ``count`` clips, their first ``seconds`` after MANN's first, where given: ``mann_bench.test_clips``), and along
    paths after ``mann`` where given; every motion tracked with ``assist`` Nm holding the root (0: the policy
    alone, as the issue measures it)."""
    names = model.file.json("betwixt.test_clips")[:count]
    clips = list(zip(names, test_clips(model, data, count, seconds)))
    rng = np.random.default_rng(seed)
    rows, pooled, motion_s, tracked_s = [], {g: [] for g in BANDS}, 0.0, 0.0
    pushed = {s: {"falls": 0, "recovery": []} for s in PUSHES}
    for i, (name, motion) in enumerate(clips):
        start = time.perf_counter()
        tracked = model.track(motion, assist=assist)
        tracked_s += time.perf_counter() - start
        minutes = len(tracked.qpos) / POLICY_RATE / 60.0
        motion_s += minutes * 60.0
        for gait, band in gait_bands(tracked).items():
            pooled[gait].append(paws_at(tracked, band))
        rows.append({"clip": name, "seconds": minutes * 60.0, "falls": len(tracked.falls),
                     "lying_share": float(tracked.lying.mean()),
                     "joint_error_cm": 100.0 * float(tracked.joint_error().mean()),
                     "falls_per_minute": len(tracked.falls) / minutes})
        for speed in PUSHES:
            plan = push_plan(len(tracked.qpos), speed, rng)
            shoved = model.track(motion, pushes=plan, assist=assist)
            pushed[speed]["falls"] += len(shoved.falls)
            pushed[speed]["recovery"] += recovery(shoved, plan)
        if progress:
            progress(i + 1, len(clips), name)
    minutes = motion_s / 60.0
    gaits = {}
    for gait, parts in pooled.items():
        total = {k: sum(p[k] for p in parts) for k in ("both", "either", "sunk", "capture_sunk", "frames")}
        if not total["frames"]:
            continue
        slide, slid = sum(p["slide"][0] for p in parts), sum(p["slide"][1] for p in parts)
        cslide, cslid = sum(p["capture_slide"][0] for p in parts), sum(p["capture_slide"][1] for p in parts)
        gaits[gait] = {"frames": total["frames"], "iou": total["both"] / max(total["either"], 1),
                       "slide_cm": 100.0 * slide / max(slid, 1), "capture_slide_cm": 100.0 * cslide / max(cslid, 1),
                       "sunk_share": total["sunk"] / total["frames"],
                       "capture_sunk_share": total["capture_sunk"] / total["frames"],
                       "deepest_cm": 100.0 * max(p["deepest"] for p in parts),
                       "capture_deepest_cm": 100.0 * max(p["capture_deepest"] for p in parts)}
    return {
        "model": model.name, "assist": assist, "clips": rows,
        "joint_error_cm": float(np.average([r["joint_error_cm"] for r in rows], weights=[r["seconds"] for r in rows])),
        "falls_per_minute": sum(r["falls"] for r in rows) / minutes,
        "pushes": {f"{s:g}": {"falls_per_minute": p["falls"] / minutes,
                              "recovery_s": float(np.median(p["recovery"])) if p["recovery"] else None}
                   for s, p in pushed.items()},
        "gaits": gaits,
        "paths": paths(model, mann, seconds, assist) if mann else {},
        "seconds_per_10s": 10.0 * tracked_s / motion_s,
        "file_mb": model.path.stat().st_size / 2**20,
    }


def table(results):
    """The results as text."""
    lines = [f"every motion held by at most {results['assist']:g} Nm on the root (--assist)"] * bool(results["assist"])
    lines.append(f"{'clip':24s} {'s':>6s} {'lying':>6s} {'joint cm':>9s} {'falls':>6s}")
    for r in results["clips"]:
        lines.append(f"{r['clip']:24s} {r['seconds']:6.1f} {r['lying_share']:6.0%} {r['joint_error_cm']:9.1f} "
                     f"{r['falls']:6d}")
    lines.append(f"{'all':24s} {'':6s} {results['joint_error_cm']:9.1f} {results['falls_per_minute']:6.2f}/min")
    lines.append("pushes every 2 s: " + ", ".join(
        f"{s} m/s {p['falls_per_minute']:.2f} falls/min, recovered in {p['recovery_s']:.2f} s (median)"
        for s, p in results["pushes"].items()))
    lines.append(f"{'gait':8s} {'frames':>7s} {'IoU':>6s} {'slide cm/f (capture)':>21s} "
                 f"{'paw in floor (capture)':>23s} {'deepest cm (capture)':>21s}")
    for gait, g in results["gaits"].items():
        lines.append(f"{gait:8s} {g['frames']:7d} {g['iou']:6.2f} {g['slide_cm']:11.2f} ({g['capture_slide_cm']:.2f})"
                     f"{g['sunk_share']:15.1%} ({g['capture_sunk_share']:.1%}) {g['deepest_cm']:12.2f} "
                     f"({g['capture_deepest_cm']:.2f})")
    if results["paths"]:
        lines.append(f"{'after MANN':14s} {'s':>6s} {'falls/min':>10s} {'joint cm':>9s} {'IoU':>6s} "
                     f"{'slide cm/f (MANN)':>18s}")
    for name, r in results["paths"].items():
        lines.append(f"{name:14s} {r['seconds']:6.1f} {r['falls_per_minute']:10.1f} {r['joint_error_cm']:9.1f} "
                     f"{r['iou']:6.2f} {r['slide_cm']:8.2f} ({r['capture_slide_cm']:.2f})")
    lines.append(f"10 s of motion tracked in {results['seconds_per_10s']:.2f} s on one thread; the file "
                 f"{results['file_mb']:.2f} MB")
    return "\n".join(lines)
