"""The floor measures (``lab/floor_metrics.py``, issue 43) see floating, sliding and snapping on
motions built to have them, the capture's own walk stands on the floor, and ``filmstrip`` draws a
motion or refuses bad input in one line."""

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from inference.bvh import read_bvh, write_bvh
from lab import floor_metrics as fm
from lab.cli import main

WALK = "walk4_subject1"   # LaFAN1's flat walking


@pytest.fixture(scope="module")
def walk(lafan1_zip, tmp_path_factory):
    """20 s of WALK walking (its first 20 s mostly stand), as read from its BVH file."""
    with zipfile.ZipFile(lafan1_zip) as z:
        member = next(n for n in z.namelist() if n.endswith(WALK + ".bvh"))
        path = tmp_path_factory.mktemp("walk") / f"{WALK}.bvh"
        path.write_bytes(z.read(member))
    return read_bvh(path).frames(600, 1200)


def against(capture):
    """The feet, their grounds and the body's height of ``capture``: what a motion is measured against."""
    feet = fm.feet_of(capture.skeleton)
    rotations, world = capture.global_transforms()
    return feet, fm.ground_of(fm.foot_points(feet, rotations, world)), fm.body_size(capture.skeleton, world)


def lifted(motion, by):
    """``motion`` with its root ``by`` (3,) higher or further each frame: (F, 3) or (3,)."""
    positions = motion.positions.copy()
    positions[:, 0] += by
    return replace(motion, positions=positions)


def test_the_captured_walk_stands_on_the_floor(walk):
    m = fm.pooled([fm.measure(walk, *against(walk))])
    assert m["legs"] == ["LeftFoot", "RightFoot"]
    assert m["contact"] > 0.3 and min(m["contact_legs"]) > 0.3   # measured 0.62
    assert m["floating"] < 0.02                                    # measured 0
    assert m["longest_off"] < 1.0 and m["slide"] < 1.5             # a step's swing; cm a frame


def test_feet_ten_centimetres_up_float_and_never_touch(walk):
    m = fm.pooled([fm.measure(lifted(walk, [0.0, 10.0, 0.0]), *against(walk))])
    assert m["floating"] > 0.99 and m["contact"] == 0 and m["touch"] == 0 and m["slide"] is None
    assert m["longest_off"] == pytest.approx((walk.n_frames - 1) / walk.fps)


def test_a_sliding_foot_slides_as_far_as_it_was_moved(walk):
    """One pose held, the whole body carried along the ground at ``v`` a frame: every foot touches
    throughout and slides ``v``; slower than STILL it counts as in contact, faster not."""
    held = walk.frames(0, 1)
    held = replace(held, rotations=np.repeat(held.rotations, 60, 0), positions=np.repeat(held.positions, 60, 0))
    feet, _, size = against(walk)
    ground = fm.ground_of(fm.foot_points(feet, *held.global_transforms()))
    still = fm.STILL * size / walk.fps   # cm a frame
    for v, in_contact in ((0.5 * still, 1.0), (2.0 * still, 0.0)):
        m = fm.pooled([fm.measure(lifted(held, np.arange(60)[:, None] * [v, 0.0, 0.0]), feet, ground, size)])
        assert m["slide"] == pytest.approx(v) and m["slide_legs"] == pytest.approx([v, v])
        assert m["touch"] == 1.0 and m["contact"] == in_contact and m["floating"] == 0.0
        assert m["jitter"] == pytest.approx(0.0, abs=1e-9)


def test_a_snap_onto_a_key_is_its_largest_acceleration(walk):
    """The root jumping 12 cm on the frame after a key is an acceleration of about 12 cm/frame^2 there,
    on a walk whose own is under 3; a key 10 frames away does not see it."""
    jump = np.zeros((walk.n_frames, 3))
    jump[101:, 0] = 12.0
    feet, ground, size = against(walk)
    snapped = fm.measure(lifted(walk, jump), feet, ground, size, keys=(100, 90))["keys"]
    calm = fm.measure(walk, feet, ground, size, keys=(100,))["keys"]
    assert snapped[0] > 11 and snapped[1] < 3 and calm[0] < 3


def test_the_frames_measured_and_the_capture_at_a_speed(walk):
    feet, ground, size = against(walk)
    world = walk.global_transforms()[1]
    assert fm.row(world, fm.foot_points(feet, *walk.global_transforms()), feet, ground, size, walk.fps,
                  frames=np.zeros(walk.n_frames, dtype=bool)) is None
    walking = fm.speed_band(world[:, 0], walk.fps, 50.0, 150.0)
    assert walking.mean() > 0.5 and not fm.speed_band(world[:, 0], walk.fps, 400.0, np.inf).any()
    m = fm.pooled([fm.measure(walk, feet, ground, size, frames=walking)])
    assert m["frames"] == walking.sum() and m["contact"] > 0.3


def test_filmstrip_writes_a_png(walk, tmp_path, capsys):
    clip = tmp_path / "walk.bvh"
    write_bvh(walk.frames(0, 90), clip)
    out = tmp_path / "strip" / "walk.png"
    assert main(["filmstrip", str(clip), "--frames", "10:80", "--every", "10", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < out.stat().st_size < 400_000
    assert "frames 10 to 80" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--frames", "10:500"], "it has frames 0 to 89"),
    (["--frames", "20:10"], "the second after the first"),
    (["--every", "0"], "--every"),
    ([], "not a BVH"),
])
def test_filmstrip_refuses_bad_input_in_one_line(walk, tmp_path, capsys, args, message):
    clip = tmp_path / "walk.bvh"
    if message == "not a BVH":
        clip.write_text("HIERARCHY\nnothing here\n")
    else:
        write_bvh(walk.frames(0, 90), clip)
    out = tmp_path / "walk.png"
    assert main(["filmstrip", str(clip), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    if message != "not a BVH":
        assert message in err


def test_filmstrip_writes_only_a_png(walk, tmp_path, capsys):
    clip = tmp_path / "walk.bvh"
    write_bvh(walk.frames(0, 30), clip)
    assert main(["filmstrip", str(clip), "-o", str(tmp_path / "walk.bvh.out")]) == 2
    assert "give a name ending in .png" in capsys.readouterr().err


@pytest.mark.slow
def test_the_benchmarks_floor_table_sees_the_capture_as_itself_and_a_jump_at_the_key(lafan1_zip):
    """``bench``'s table (``benchmark.floor_gaps``): a method that returns the capture scores the capture's
    row; one that holds the last key until the target (zero velocity) jumps onto it at many times the
    capture's acceleration there."""
    from lab.benchmark import floor_gaps, format_floor, load_benchmark
    from inference.transition import BASELINES

    bench = load_benchmark(lafan1_zip)
    r = floor_gaps(bench, {"oracle": bench.capture, "zero_velocity": BASELINES["zero_velocity"]})
    assert r["methods"]["oracle"] == r["capture"]
    assert 0.2 < r["capture"]["contact"] < 0.6                                     # measured 0.36
    assert r["methods"]["zero_velocity"]["key_accel"] > 5 * r["capture"]["key_accel"]   # measured 60.3 / 3.27
    assert "zero_velocity" in format_floor(r).splitlines()[-1]
