"""Bad input on the command line, each case beside its neighbours that pass: exit code 2, one line on
stderr that names the option (or the file, frames, joint) with its limit and why, and nothing written;
and the result check (inference/check.py) that refuses a broken result before it is written.

The CLI runs in-process (``main``), as tests/test_cli.py's do; only the training's parse needs a
process of its own (``python -m training`` exits at import).
"""

import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from commands import run_training
from inference import quat
from inference.bvh import parse_bvh, read_bvh, write_bvh
from inference.check import ResultError, check_result
from inference.cli import main, number, whole
from inference.mann.path import LONGEST, MOST_ROWS, Path as GroundPath, PathError, paced
from inference.motion import Motion, Skeleton



@pytest.fixture(scope="module")
def human(lafan1_zip, tmp_path_factory):
    """120 frames of a LaFAN1 clip (30 fps) as a BVH file."""
    with zipfile.ZipFile(lafan1_zip) as z:
        clip = parse_bvh(z.read("ground1_subject5.bvh"), "human.bvh").frames(0, 120)
    path = tmp_path_factory.mktemp("human") / "human.bvh"
    write_bvh(replace(clip, name="human"), path)
    return path


def files(folder):
    return sorted(p.relative_to(folder) for p in Path(folder).rglob("*"))


def refused(capsys, folder, argv, *words):
    """``main(argv)`` exits 2 with one line on stderr holding ``words``, and ``folder`` is as it was."""
    before = files(folder)
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    assert files(folder) == before, "something was written"
    return lines[0]


@pytest.mark.parametrize("command, option, value, words", [
    ("fill", "--variation", "nan", "argument --variation: nan: give 0 to 10 (1 is the noise the model was trained"),
    ("fill", "--variation", "inf", "give 0 to 10"),
    ("fill", "--variation", "-1", "give 0 to 10"),
    ("fill", "--variation", "10.5", "give 0 to 10"),
    ("fill", "--variation", "lots", "'lots' is not a number"),
    ("fill", "--blend", "0", "argument --blend: 0: give 1 to 10,000 (frames over which the motion meets the key"),
    ("fill", "--blend", "-3", "give 1 to 10,000"),
    ("fill", "--seed", "-1", "argument --seed: -1: give 0 to 4,294,967,295"),
    ("fill", "--gap", "40:41", "'40:41': the keys must be frames 0 or later, the second at least two after"),
    ("fill", "--gap", "70:40", "the second at least two after the first"),
    ("fill", "--gap", "40-70", "'40-70' is not START:END"),
    ("superres", "--every", "1", "argument --every: 1: give 2 or more (a key and at least one frame to fill"),
    ("superres", "--every", "0", "give 2 or more"),
    ("variants", "-k", "0", "argument -k: 0: give 1 to 64 (each is a run of the model"),
    ("variants", "-k", "-1", "give 1 to 64"),
    ("variants", "-k", "65", "give 1 to 64"),
    ("variants", "-k", "100000", "100,000: give 1 to 64"),
    ("variants", "--variation", "nan", "give 0 to 10"),
    ("walk", "--frames", "0", "argument --frames: 0: give 1 to 36,000 (20 minutes at 30 fps)"),
    ("walk", "--frames", "36001", "give 1 to 36,000"),
    ("walk", "-k", "257", "argument -k: 257: give 1 to 256"),
    ("walk", "--from", "0", "argument --from: 0: give 1 or more (the start is it and the frame before it)"),
    ("walk", "--seed", "-1", "give 0 to 4,294,967,295"),
    ("follow-path", "--tau", "nan", "argument --tau: nan: give 0 to 10 (how much MANN's own plan counts"),
    ("follow-path", "--tau", "-1", "give 0 to 10"),
])
def test_an_option_out_of_bounds_is_refused_before_anything_runs(human, tmp_path, capsys, command, option, value,
                                                                 words):
    given = {"fill": {"--gap": "40:70"}, "superres": {"--every": "10"}, "variants": {"--gap": "40:70"},
             "walk": {"--from": "60", "--frames": "10"}, "follow-path": {}}[command]
    options = [word for pair in {**given, option: value}.items() for word in pair]
    argv = [command, human, *options, "-o", tmp_path / "out"]
    line = refused(capsys, tmp_path, argv, words)
    assert line.startswith(f"error: python -m inference {command}: argument {option}")


def test_walks_are_bounded_by_all_the_frames_they_hold(human, tmp_path, capsys):
    """-k and --frames each within their range can still ask for more frames than memory holds: 256 walks
    of 20 minutes are 9,216,000 frames (some 44 GB); the request is refused before the model is opened."""
    line = refused(capsys, tmp_path, ["walk", human, "--from", "60", "--frames", "36000", "-k", "256", "-o",
                                      tmp_path / "out"], "9,216,000 frames", "at most 288,000")
    assert line.startswith("error: -k 256 x --frames 36,000")


def test_the_limits_themselves_pass():
    """The neighbours of the refused values: each limit is inside its range."""
    k = whole(1, 64, "why")
    assert (k("1"), k("64")) == (1, 64)
    variation = number(0.0, 10.0, "why")
    assert (variation("0"), variation("10"), variation("1e-3")) == (0.0, 10.0, 1e-3)


def test_outputs_that_cannot_be_written_are_refused_before_the_model_runs(human, tmp_path, capsys, monkeypatch):
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x")
    fill = ["fill", human, "--gap", "40:70", "-o"]
    refused(capsys, tmp_path, [*fill, tmp_path / "folder"], f"{tmp_path / 'folder'}: is a folder; give a file's name")
    refused(capsys, tmp_path, [*fill, tmp_path / "afile" / "out.bvh"], f"{tmp_path / 'afile'} is a file, not a folder")
    refused(capsys, tmp_path, ["variants", human, "--gap", "40:70", "-k", "2", "-o", tmp_path / "afile"],
            f"{tmp_path / 'afile'}: is a file; give a folder")
    refused(capsys, tmp_path, ["walk", human, "--from", "60", "--frames", "5", "-o", tmp_path / "afile" / "w"],
            "is a file, not a folder")
    monkeypatch.setattr("inference.cli.os.access", lambda path, mode: False)   # root may write anywhere
    refused(capsys, tmp_path, [*fill, tmp_path / "new" / "out.bvh"], f"the folder {tmp_path} is not writable")


def test_a_write_that_fails_leaves_no_part_file(human, tmp_path, capsys, monkeypatch):
    def full(motion, path):
        Path(str(path) + ".part").write_text("half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("inference.cli.write_bvh", full)
    out = tmp_path / "out.bvh"
    refused(capsys, tmp_path, ["fill", human, "--gap", "40:70", "-o", out],
            f"{out}: cannot be written in {tmp_path} (No space left on device)")


def test_missing_folders_of_an_output_are_made(human, tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "out.bvh"
    assert main(["fill", str(human), "--gap", "40:70", "-o", str(out)]) == 0
    assert read_bvh(out).n_frames == 120 and not list(tmp_path.rglob("*.part"))


def test_a_broken_result_is_refused_with_its_frames_and_nothing_is_written(human, tmp_path, capsys, monkeypatch):
    """A fill that came back NaN (as MANN's did along a slow path) is refused, not written."""
    import inference.edit

    def broken(model, motion, gaps, **options):   # file frames 50-59 of the gap 40:70, in the frames read
        (a, _), = gaps
        rotations = motion.rotations.copy()
        rotations[a + 10:a + 20, 3:] = np.nan
        return replace(motion, rotations=rotations)

    monkeypatch.setattr(inference.edit, "fill_gaps", broken)
    line = refused(capsys, tmp_path, ["fill", human, "--gap", "40:70", "--no-contacts", "-o", tmp_path / "out.bvh"],
                   "the result is broken (", "not a number (NaN or infinite) at frames 50-59", "nothing was written: "
                   "try a shorter gap")
    names = read_bvh(human).skeleton.names
    assert f"{names[3]}, {names[4]}, {names[5]} and {len(names) - 6} more" in line


def test_follow_path_names_the_model_it_chose(human, tmp_path, capsys):
    refused(capsys, tmp_path, ["follow-path", human, "-o", tmp_path / "out.bvh"],
            f"{human}: mvae-lafan1, the Continuations (Motion VAE) model chosen for its skeleton, follows a CSV path")


@pytest.mark.parametrize("rows, words", [
    ("0,0,0\n100000,10,0\n", "the path lasts 100,000 s, longer than the 1,200 s one request follows"),
    ("0,0,0\n1,1000000,0\n", "at the model's fastest (600 units a second) the path takes 166,667 s"),
    ("".join(f"{i},0,0\n" for i in range(MOST_ROWS + 1)), f"{MOST_ROWS + 2:,} lines, more than the 100,000 points"),
], ids=["100,000 s", "1,000 km in 1 s", "100,001 points"])
def test_a_path_too_long_or_too_big_is_refused(tmp_path, capsys, rows, words):
    csv = tmp_path / "path.csv"
    csv.write_text("time,x,y\n" + rows)
    refused(capsys, tmp_path, ["follow-path", csv, "-o", tmp_path / "out.bvh"], f"error: {csv}", words)


def test_the_motion_vae_follows_five_minutes_of_path_at_most(human, tmp_path, capsys):
    """Its sampling control takes about 1.5 s a second of path: a longer one is refused before it starts."""
    csv = tmp_path / "path.csv"
    csv.write_text("time,x,y\n0,0,0\n301,300,0\n")
    refused(capsys, tmp_path, ["follow-path", csv, "--start", f"{human}:60", "-o", tmp_path / "out.bvh"],
            f"{csv}: the path lasts 301 s, longer than the 300 s one request follows")


@pytest.mark.slow
def test_mann_keeps_to_a_slow_path_and_slows_a_fast_one(tmp_path, capsys):
    """9.5 m over 95 s was NaN (the arrival asked for 9.5 m/s); 100 m in 1 s put the root kilometres
    away. Now the first is followed, the second slowed to the model's 6 m/s with a warning that says how long
    the motion takes (its end slowed into as well: path.braked)."""
    slow, fast = tmp_path / "slow.csv", tmp_path / "fast.csv"
    slow.write_text("time,x,y\n0,0,0\n95,9.5,0\n")
    fast.write_text("time,x,y\n0,0,0\n1,100,0\n")
    assert main(["follow-path", str(slow), "-o", str(tmp_path / "slow.bvh"), "--no-contacts"]) == 0
    walked = read_bvh(tmp_path / "slow.bvh")
    assert walked.n_frames == 5701 and abs(walked.positions[-1, 0, 0] - 950) < 30
    assert abs(walked.positions[len(walked.positions) // 2, 0, 0] - 475) < 50    # with the path, not ahead of it
    capsys.readouterr()
    assert main(["follow-path", str(fast), "-o", str(tmp_path / "fast.bvh"), "--no-contacts"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and warning[0].startswith(
        f"warning: {fast} asks for up to 100.0 m/s; mann-dog goes 6 m/s at most (the fastest of its data), so it "
        "follows the path in ") and warning[0].endswith(" s rather than 1.0 s")
    said = float(warning[0].split(" follows the path in ")[1].split(" s ")[0])
    ran = read_bvh(tmp_path / "fast.bvh")
    assert said > 100 / 6 and abs((ran.n_frames - 1) / ran.fps - said) < 0.05    # as long as it said it takes
    assert np.abs(ran.positions[:, 0]).max() < 100 * 100 + 100


def test_paced_stretches_only_what_is_too_fast():
    path = GroundPath(np.array([0.0, 1.0, 2.0, 3.0]), np.array([[0.0, 0.0], [1.0, 0.0], [11.0, 0.0], [12.0, 0.0]]))
    assert paced(path, 10.0) is path
    slowed = paced(path, 5.0)
    assert np.allclose(slowed.times, [0.0, 1.0, 3.0, 4.0]) and slowed.points is path.points
    with pytest.raises(PathError, match="longer than the 1,200 s"):
        paced(replace(path, points=path.points * LONGEST), 1.0)


def _still(frames=30, fps=30.0):
    """A three-joint chain standing still, 1 unit a bone, Y up."""
    skeleton = Skeleton(["Hips", "Spine", "Head"], [-1, 0, 1], [[0, 1, 0], [0, 1, 0], [0, 1, 0]])
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 3, 1))
    return Motion(skeleton, rotations, np.tile(skeleton.offsets, (frames, 1, 1)), fps)


def test_check_result_passes_a_capture_and_its_own_path(human):
    motion = read_bvh(human)
    check_result(motion, 170.0, gaps=[(40, 70)])
    check_result(motion, 170.0, path=motion.positions[:, 0, [0, 2]])


def test_check_result_names_the_frames_joints_and_what_failed():
    motion = _still()
    positions = motion.positions.copy()
    positions[10:15, 0, 0] = np.linspace(0, 40, 5)    # the root walks 40 units off a path along Z
    with pytest.raises(ResultError, match=r"the root strays 40 units from what was asked \(the keys or the path\) at "
                                          r"frames 12-14\); nothing was written: go slower"):
        check_result(replace(motion, positions=positions), 2.0, path=np.array([[0.0, 0.0], [0.0, 5.0]]),
                     fix="go slower")
    fast = motion.positions.copy()
    fast[12:, 0, 1] += 10.0                      # a jump of 10 body heights in a frame: 300 a second
    with pytest.raises(ResultError, match=r"Hips moves 3 m/s at frame 12, faster than any body does"):
        check_result(replace(motion, positions=fast), 0.01, units_per_metre=100.0, frame=lambda f: f)
    with pytest.raises(ResultError, match=r"at frame 73, faster"):
        check_result(replace(motion, positions=fast), 0.01, frame=lambda f: f + 61)    # scene frames
    check_result(replace(motion, positions=fast), 0.01, generated=np.arange(30) < 10)   # the jump was given


def test_check_result_refuses_wound_or_jumping_euler_channels():
    motion = _still()
    euler = np.zeros((30, 3, 3))
    euler[:, 0, 1] = np.linspace(0, 20 * np.pi, 30)   # the root may turn round and round
    check_result(motion, 1.0, euler=euler)
    wound = euler.copy()
    wound[:, 2, 0] = np.linspace(0, 28.0, 30)         # a head at four and a half turns
    with pytest.raises(ResultError, match=r"Head: an Euler channel winds to 4.5 turns at frames 14-29"):
        check_result(motion, 1.0, euler=wound)
    jump = euler.copy()
    jump[20:, 1, 2] = 4.0                             # a flip between frames 19 and 20
    with pytest.raises(ResultError, match=r"Spine: an Euler channel jumps 229 degrees at frame 20"):
        check_result(motion, 1.0, euler=jump)


def test_a_quaternion_result_is_checked_as_rotations_not_signs():
    """q and -q are one rotation: a result whose signs flip is not a jump (the BVH writer's Eulers are
    its own)."""
    motion = _still()
    rotations = motion.rotations.copy()
    rotations[::2] *= -1
    check_result(replace(motion, rotations=quat.normalize(rotations)), 1.0)


def test_training_refuses_a_bad_option_before_it_makes_the_run_folder(human, tmp_path, capsys):
    from inference.cli import Parser
    from training import loop
    from training.family import family

    parser = Parser(prog="python -m training rtn")
    loop.add_arguments(parser, family("rtn"))
    given = ["--data", str(human.parent), "--out", str(tmp_path / "run")]
    for option, value, words in (("--batch", "0", "argument --batch: 0: give 1 to 65,536"),
                                 ("--steps", "0", "argument --steps: 0: give 1 or more (at least one optimiser step, "
                                                  "or the checkpoint is untrained)"),
                                 ("--lr", "nan", "argument --lr: nan: give 1e-09 to 1"),
                                 ("--average", "1", "argument --average: 1: give 0 to 0.99999"),
                                 ("--validate-every", "0", "give 1 or more"),
                                 ("--minutes", "-1", "give 0.01 to 525600")):
        with pytest.raises(SystemExit) as exit:
            parser.parse_args([*given, option, value])
        err = capsys.readouterr().err.splitlines()
        assert exit.value.code == 2 and len(err) == 1 and words in err[0], err
    assert parser.parse_args([*given, "--batch", "1", "--steps", "1"]).batch == 1
    result = run_training([sys.executable, "-m", "training", "rtn", *given, "--batch", "0"])
    assert result.returncode == 2 and result.stderr.splitlines() == [
        "error: python -m training rtn: argument --batch: 0: give 1 to 65,536 (clips a step learns from, held in the "
        "device's memory) (see --help)"]
    assert not (tmp_path / "run").exists()
