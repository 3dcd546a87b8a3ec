"""The MANN runtime and ``python -m inference follow-path`` with a real model trained on the dog data:
paths followed (several in one batch), the start pose, actions per segment, the BVH written, and bad
paths refused with one clear error and nothing written.

The model is the shipped one serving follow-path. The tolerances were measured with CPU-trained
models after 21,719 and 54,205 steps (and hold at the shipped 107,594): a line at 1 m/s 0.6-0.7 cm
from the path on average, a circle of 1.5 m at 1 m/s 1.2-2.3 cm; they are set at about twice the worse.
"""

import zipfile

import numpy as np
import pytest

from inference.bvh import read_bvh, write_bvh
from inference.cli import main
from inference.mann.features import bones_of, root, world
from inference.mann.path import GAITS
from inference.mann.path import Path as GroundPath
from inference.modelfile import MODELS, find_model, open_model
from lab import mann_bench, metrics

LINE_CM, CIRCLE_CM = 1.5, 5.0   # mean distance of the root to the path; measured up to 0.7 and 2.3


@pytest.fixture(scope="module")
def model_path():
    """The shipped model (a missing one is a failure, not a skip)."""
    path = find_model(None, serves="follow-path").path
    assert path == MODELS / "mann-dog.onnx"
    return path


@pytest.fixture(scope="module")
def model(model_path):
    return open_model(model_path, kind="mann")


@pytest.fixture(scope="module")
def dog_clips(mocap, tmp_path_factory):
    """Two of the dog data's test-split clips as BVH files: a walk and a trot."""
    folder = tmp_path_factory.mktemp("dog")
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        for name in ("D1_008_KAN01_002", "D1_009_KAN01_002"):
            member = next(n for n in z.namelist() if n.endswith(name + ".bvh"))
            (folder / f"{name}.bvh").write_bytes(z.read(member))
    return {p.stem: p for p in folder.glob("*.bvh")}


def track(motion):
    """The root's ground positions (F, 2) and facing angles (F,) of a motion."""
    bones = bones_of(motion.skeleton)
    ground, theta, _ = root(world(motion, bones)[0], bones, motion.fps)
    return ground, theta


def line_and_circle():
    t = np.linspace(0, 4, 5)
    line = GroundPath(t, np.stack([t * 100.0, np.zeros_like(t)], axis=-1), source="line")   # 1 m/s along +X
    radius, speed = 150.0, 100.0
    tc = np.linspace(0, 2 * np.pi * radius / speed, 200)
    a = tc * speed / radius
    circle = GroundPath(tc, np.stack([radius * (1 - np.cos(a)), radius * np.sin(a)], axis=-1), source="circle")
    return line, circle


def test_follows_a_line_and_a_circle_in_one_batch(model):
    line, circle = line_and_circle()
    out = model.follow([line, circle])
    assert [m.n_frames for m in out] == [241, int(np.floor(circle.duration * 60 + 1e-6)) + 1]
    for motion, path, tolerance in zip(out, (line, circle), (LINE_CM, CIRCLE_CM)):
        assert motion.fps == 60 and motion.skeleton.same_hierarchy(model.skeleton)
        ground, theta = track(motion)
        # from the first point, facing along the path
        assert np.linalg.norm(ground[0] - path.points[0]) < 0.5
        start = np.diff(path.points[:2], axis=0)[0]
        assert abs(np.degrees(theta[0] - np.arctan2(start[0], start[1]))) < 2
        deviation, facing = metrics.path_deviation(motion, path.points)
        assert deviation < tolerance and facing < 10, (path.source, deviation, facing)
        walked = np.linalg.norm(np.diff(ground, axis=0), axis=-1).sum()
        assert 0.9 < walked / np.linalg.norm(np.diff(path.points, axis=0), axis=-1).sum() < 1.1
        hips = world(motion, bones_of(motion.skeleton))[0][:, 0, 1]
        assert 35 < hips.min() and hips.max() < 60          # on its four legs throughout (standing: 46 cm)
    assert 330 < np.degrees(theta[-1] - theta[0]) < 390    # round the circle once, turning left
    # a path in a batch is followed as it is alone (up to float32 rounding in the batched products)
    alone = model.follow([circle])[0]
    assert np.abs(alone.positions - out[1].positions).max() < 1.0


def test_tau_weighs_the_path_against_the_networks_own_plan(model_path):
    """A circle at a trot: the more the path counts (smaller tau), the closer the dog keeps to it."""
    radius, speed = 150.0, 180.0
    t = np.linspace(0, 2 * np.pi * radius / speed, 200)
    a = t * speed / radius
    circle = GroundPath(t, np.stack([radius * (1 - np.cos(a)), radius * np.sin(a)], axis=-1), source="trot")
    deviation = [metrics.path_deviation(open_model(model_path, tau=tau).follow([circle])[0], circle.points)[0]
                 for tau in (0.0, 0.5, 4.0)]
    assert deviation[0] <= deviation[1] < deviation[2], deviation


def test_a_circle_at_a_trot_and_a_canter_keeps_to_the_path(model):
    """bench-mann's circle (radius 2 m) at 1.8 and 3 m/s. The network slows down in a turn this tight,
    and at a canter cannot keep the path's pace; led on from where it is, its future spaced at its own
    pace and corrected for its drift to the inside (inference/mann/pursuit.py), it keeps to the path
    at a trot (measured 1.8 cm on average) and takes longer than the path at a canter (6.1 s for 4.2)
    rather than cut across: over the path's own 4.2 s (the motion lasts longer, as the path slows into its
    end, inference/mann/path.braked) it covers 0.6-0.9 of it. The canter's bound is loose: the shipped
    739,500-step weights run wide of this circle at 2.3 m/s (27.6 cm on average, the track's median radius
    2.08 m, its 90th percentile 2.61; the 345,100-step weights kept to 9.0 cm, and drawn on by the path's
    timing alone cut inside by 58.7), turning less than asked whatever the desired speed, the known weak
    row of docs/experiments.md ("mann-dog at 739,500 steps"); 35 cm still catches a controller that cuts
    across or is drawn off."""
    trot, canter = (mann_bench.shapes(GAITS[gait], model.units_per_metre)["circle"] for gait in ("trot", "canter"))
    out = model.follow([trot, canter])
    deviation = [metrics.path_deviation(m, p.points)[0] for m, p in zip(out, (trot, canter))]
    assert deviation[0] < 5 and deviation[1] < 35, deviation
    timed = out[1].frames(0, int(round(canter.duration * out[1].fps)) + 1)
    assert 0.6 < metrics.path_progress(timed, canter.points) < 0.9


def test_an_action_per_segment(model):
    """Standing on the spot, told to sit from 2 s to 5 s: the hips go down (from 46 cm; measured 9-13 cm)
    and come back up (measured 34-39 cm in the last second), and the dog stays where it is (idle and
    resting actions hold the root, as in the reference)."""
    path = GroundPath(np.array([0.0, 2.0, 5.0, 7.0]), np.zeros((4, 2)), ("idle", "sit", "idle", None))
    motion = model.follow([path])[0]
    hips = world(motion, bones_of(motion.skeleton))[0][:, 0]
    assert hips[:60, 1].min() > 40 and hips[150:285, 1].max() < 20 and hips[-60:, 1].min() > 30
    assert np.linalg.norm(hips[:, [0, 2]] - hips[0, [0, 2]], axis=-1).max() < 5


def test_follow_path_command_takes_blender_axes_and_writes_the_dog_skeleton(model_path, dog_clips, tmp_path, capsys):
    csv = tmp_path / "path.csv"
    csv.write_text("time,x,y,action\n0,0,0,\n1,0,1,move\n3,0,3,\n")   # 3 m along Blender's +Y
    out = tmp_path / "out.bvh"
    assert main(["follow-path", str(csv), "-o", str(out), "--model", str(model_path)]) == 0
    assert f"wrote {out}: 181 frames at 60 fps" in capsys.readouterr().out
    motion = read_bvh(out)
    dog = read_bvh(dog_clips["D1_008_KAN01_002"])
    assert motion.skeleton.same_hierarchy(dog.skeleton) and motion.fps == 60 and motion.n_frames == 181
    assert len(motion.skeleton.end_sites) == 6
    ground, theta = track(motion)
    # Blender's +Y is the model's -Z (Blender's BVH importer turns Y up into Z up)
    assert np.abs(ground[:, 0]).max() < 10 and -310 < ground[-1, 1] < -260
    assert abs(abs(np.degrees(theta[0])) - 180) < 2

    # from a frame of a capture: its pose, turned and moved to the path's start
    start = tmp_path / "start.bvh"
    assert main(["follow-path", str(csv), "-o", str(start), "--model", str(model_path),
                 "--start", f"{dog_clips['D1_008_KAN01_002']}:120"]) == 0
    first, frame = read_bvh(start), dog.frames(120, 121)
    dot = np.abs(np.sum(first.rotations[0, 1:] * frame.rotations[0, 1:], axis=-1))
    angle = np.degrees(2 * np.arccos(np.minimum(dot, 1)))
    assert angle.max() < 0.5                               # the joints' local rotations are the capture's
    assert np.linalg.norm(track(first)[0][0]) < 0.5 and abs(first.positions[0, 0, 1] - frame.positions[0, 0, 1]) < 0.5


def test_a_bvh_path_is_followed_with_its_timing(model_path, dog_clips, tmp_path):
    clip = read_bvh(dog_clips["D1_009_KAN01_002"]).frames(60, 360)      # five seconds of trotting
    path = tmp_path / "trot.bvh"
    write_bvh(clip, path)
    out = tmp_path / "out.bvh"
    assert main(["follow-path", str(path), "-o", str(out), "--model", str(model_path),
                 "--start", f"{dog_clips['D1_009_KAN01_002']}:60"]) == 0
    motion = read_bvh(out)
    assert motion.n_frames == clip.n_frames
    ground, _ = track(clip)
    assert np.linalg.norm(track(motion)[0][0] - ground[0]) < 0.5
    assert metrics.path_deviation(motion, ground)[0] < 5     # measured 1.6 cm over the whole clip


@pytest.mark.parametrize("text, message", [
    ("time,x,y\n0,0,0\n", "a path needs at least two points, it has 1"),
    ("time,x,y\n0,0,0\n2,1,0\n1,2,0\n", "line 4: time 1 s does not come after 2 s; times must increase"),
    ("time,x,y\n0,0,0\n1,nan,0\n", "line 3: not a number (NaN or infinite)"),
    ("time,x,y,action\n0,0,0,move\n1,1,0,gallop\n", "line 3: unknown action 'gallop'; the model knows idle, move"),
    ("t,x,y\n0,0,0\n1,1,0\n", "line 1: the header must be time,x,y or time,x,y,action"),
])
def test_a_bad_path_is_one_clear_error_and_nothing_is_written(model_path, tmp_path, capsys, text, message):
    csv = tmp_path / "path.csv"
    csv.write_text(text)
    out = tmp_path / "out.bvh"
    assert main(["follow-path", str(csv), "-o", str(out), "--model", str(model_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {csv}") and message in err[0], err
    assert not out.exists() and not list(tmp_path.glob("*.bvh*"))


def test_a_bvh_of_another_skeleton_is_refused_as_path_or_start(model_path, mocap, tmp_path, capsys):
    human = mocap / "cmu-01_01.bvh"
    csv = tmp_path / "path.csv"
    csv.write_text("time,x,y\n0,0,0\n1,1,0\n")
    out = tmp_path / "out.bvh"
    assert main(["follow-path", str(human), "-o", str(out), "--model", str(model_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{human}: a motion of another skeleton (31 joints, root 'Hips'" in err[0], err
    assert main(["follow-path", str(csv), "-o", str(out), "--model", str(model_path), "--start", f"{human}:0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the skeleton (31 joints, root 'Hips') does not match model" in err[0], err
    assert not out.exists()
