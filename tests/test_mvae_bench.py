"""``python -m lab bench-mvae`` on the tiny Motion VAE that test_mvae.py trains with our own training
command, on LaFAN1's subject 5: the JSON's numbers are finite and as asked, its variants matched to the
RTN's noise whose error is nearest, its paths followed; the floor and skating measures see a body sunk
under the floor or raised off it, and the walks without the floor step sink; the variants' hook, given RTN
as both sides, matches RTN to itself; bad input is one clear error."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from inference.bvh import read_bvh
from inference.modelfile import MODELS, open_model
from lab.cli import main
from lab.dataset import load_motion_set
from lab.metrics import paw_ground
from lab.mvae_bench import LOW, OFF, PAPER, PAPER_GAIT, STANDS, VARIATIONS, foot_positions, per_motion, \
    planted_walk, start_poses, variants_against_rtn, walks
from commands import unzipped
from lab.mvae_bench import test_clips as clips_of_subject5   # (named so that pytest does not collect it)
from test_mvae import clip, model, run  # noqa: F401  (fixtures: a subject-5 clip, the tiny model and its run)

SUBJECT5 = ("fallAndGetUp1_subject5.bvh", "ground1_subject5.bvh", "obstacles1_subject5.bvh")


@pytest.fixture(scope="module")
def subject5(lafan1_zip, tmp_path_factory):
    """A folder of LaFAN1's three subject-5 clips: the data the bench reads, without parsing all 77."""
    return unzipped(lafan1_zip, SUBJECT5, tmp_path_factory.mktemp("subject5"))


def numbers(value):
    """Every number in a JSON value."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def test_bench_mvae_writes_finite_numbers_as_asked(run, subject5, tmp_path, capsys):  # noqa: F811
    out, plots = tmp_path / "mvae.json", tmp_path / "plots"
    assert main(["bench-mvae", "--data", str(subject5), "--model", str(run["model"]), "--starts", "4",
                 "--frames", "60", "--seconds", "2", "--json", str(out), "--plots", str(plots),
                 "--cache", str(tmp_path), "--speed-repeats", "1"]) == 0
    printed = capsys.readouterr().out
    r = json.loads(out.read_text())
    assert all(math.isfinite(n) for n in numbers(r))
    assert r["test_clips"] == [name[:-4] for name in SUBJECT5] and r["starts"] == 4
    w = r["walks"]
    assert w["walks"] == 4 and w["frames"] == 60 and w["with_nan"] == 0   # the runtime's guard lets none through
    assert r["planted"] and w["planted"] and r["variants"]["planted"]   # as the user gets them, by default
    c = w["capture"]   # subject 5's own motion: on its floor, its feet resting between steps
    assert 0 < c["skating"] < 0.2 and 0 < c["skating_toes"] and 0 < c["skating_feet"]
    assert c["skating_own_ground"] == pytest.approx(c["skating"])    # the capture's ground is its own
    assert c["under_floor"] < 0.01 and 0 < c["hips_min"] < 50 < c["hips_max"] < 250
    assert c["deep_under_floor"] == c["hips_under_floor"] == 0 and w["grounded"]
    assert 0.1 < c["off_floor_10"] < 0.4 and 0 < c["off_floor_30"] < c["off_floor_10"]   # subject 5 climbs
    assert 1 < c["root_speed"] < 5 and 5 < c["peak"] < 50             # cm a frame, at 30 fps
    if w["model"]:
        m = w["model"]   # the frames deep under the floor are some of those under it
        assert m["deep_under_floor"] <= m["under_floor"] <= 1 and m["hips_min"] < m["hips_max"]
    s = r["continuations"]
    assert s["k"] == 8 and s["seconds"] == 3 and s["root"] > 0 and s["joints"] > 0   # z drawn: they differ
    u = r["staying_up"]   # of the starts that stand
    standing = [(c, f) for c, f in start_poses(clips_of_subject5(load_motion_set(subject5, tmp_path)), 4)
                if c.global_transforms()[1][f, 0, 1] > STANDS]
    assert standing and u["starts"] <= len(standing) and u["k"] == 8 and u["seconds"] == 10
    # the share of frames fallen is none exactly where the hips never came down that low
    # (and the early frames are some of them)
    assert (u["model"] == 0) == (u["floor"]["model"]["hips_min"] >= LOW) and (u["model"] > 0 or u["model_early"] == 0)
    assert u["capture"] == pytest.approx(np.mean(np.concatenate([   # the capture over the same frames
        c.global_transforms()[1][f + 1:f + 301, 0, 1] < LOW for c, f in standing[:u["starts"]]])))
    lat = r["latent"]
    assert lat["dims"] == len(lat["kl_dims"]) == 32 and lat["active"] == sum(k > 0.01 for k in lat["kl_dims"])
    assert lat["kl"] == pytest.approx(np.mean(lat["kl_dims"]), abs=1e-3)
    assert 0 < r["speed"]["ms_per_frame"] < 50 and 0 < r["speed"]["k16_10s_seconds"] < 60 and r["speed"]["repeats"] == 1
    goals = {g["what"]: g for g in r["goals"]}
    assert goals["walks with NaN"]["met"] == (w["with_nan"] == 0)
    assert goals["ms per generated frame, batch 1, one thread, best of 1"]["goal"] == "at most 0.3"
    v = r["variants"]   # against the shipped RTN: the noise whose error is nearest the model's is the match
    assert v["gaps"] == 4 and v["k"] == 8 and list(v["rtn_by_variation"]) == [f"{x:g}" for x in VARIATIONS]
    nearest = min(v["rtn_by_variation"].items(), key=lambda item: abs(item[1]["error"] - v["model"]["error"]))
    assert v["rtn"]["variation"] == float(nearest[0]) and v["rtn"]["error"] == nearest[1]["error"]
    assert v["spread_over_rtn"] == pytest.approx(v["model"]["spread"] / v["rtn"]["spread"])
    for row in [v["model"], *v["rtn_by_variation"].values()]:   # the blend closes what the variants miss
        assert row["miss_joints"] > row["miss_root"] > 0 and row["error"] > 0 and row["spread"] > 0
    ladder = list(v["rtn_by_variation"].values())
    assert all(a["spread"] < b["spread"] for a, b in zip(ladder, ladder[1:]))
    p = r["paths"]   # a 2 s stretch of each path at 1 and 2 m/s
    assert list(p) == [f"{shape} {gait}" for gait in ("walk", "jog") for shape in ("circle", "square", "star")]
    for name, row in p.items():
        assert row["path_seconds"] == pytest.approx(2.0, abs=0.05) and 0 < row["deviation"] < 200
        # steered along the path (a wrong sign or unit would face it anyhow: 90 degrees on average)
        assert row["facing"] < 45 and row["travel"] < 90
        assert row["hips_min"] < row["hips_max"] and row["skating"] > 0   # a walker's feet slide some
        assert (row["paper_deviation"], row["paper_facing"]) == PAPER[PAPER_GAIT[name.split()[1]]]
    for gait, pace in (("walk", 1), ("jog", 2)):
        goal = goals[f"paths at {pace} m/s, circle, square, star: deviation (cm) / facing (degrees)"]
        rows = [row for name, row in p.items() if name.endswith(gait)]
        deviation, facing = np.mean([row["deviation"] for row in rows]), np.mean([row["facing"] for row in rows])
        assert goal["value"] == f"{deviation:.1f} / {facing:.1f}"
        assert goal["met"] == (deviation < rows[0]["paper_deviation"] and facing < rows[0]["paper_facing"])
    assert printed.count("(goal: ") == len(r["goals"]) and "not measured" not in printed
    assert sorted(q.name for q in plots.glob("*.png")) == sorted(
        ["latent.png", "walks.png"] + [f"path-{name.replace(' ', '-')}.png" for name in p])


def test_a_body_sunk_under_the_floor_or_raised_off_it_is_seen(clip):  # noqa: F811
    motion = read_bvh(clip)
    ground = paw_ground(foot_positions(motion.global_transforms()[1], motion.skeleton))
    measured = {}
    for name, shift in (("capture", 0.0), ("sunk", -10.0), ("raised", 10.0), ("deep", -25.0), ("high", 20.0),
                        ("buried", -150.0)):
        positions = motion.positions.copy()
        positions[:, 0, 1] += shift                                   # the hips carry the body
        measured[name] = per_motion(type(motion)(motion.skeleton, motion.rotations, positions, motion.fps), ground)
    capture, sunk, raised = measured["capture"], measured["sunk"], measured["raised"]
    # a foot 5 cm under after a sink of 10 is 20 cm under after one of 25; 10 cm up is 30 cm up after a rise of 20
    assert measured["deep"]["deep"] == sunk["under"] and capture["deep"] == sunk["deep"] == 0
    assert measured["high"]["off_30"] == capture["off_10"] < raised["off_10"] and OFF == (10.0, 30.0)
    assert capture["hips_under"] == sunk["hips_under"] == 0 < measured["buried"]["hips_under"]
    # sunk 10 cm: every frame with a foot within 5 cm of its ground (measured 45 %: in obstacles1 the actor
    # stands on the obstacles much of the time, above the floor)
    assert capture["under"] < 0.01 and sunk["under"] > 0.3 and raised["under"] == 0
    # sunk, a foot on the ground counts fully as it slides; raised 10 cm (4 H), nothing counts
    assert sunk["skating"].mean() > capture["skating"].mean() > 0 and raised["skating"].max() < 1e-6
    np.testing.assert_allclose(sunk["skating_own"], capture["skating_own"], atol=1e-9)   # its own ground moves with it
    assert sunk["hips"].max() == pytest.approx(capture["hips"].max() - 10)


def test_walks_without_the_floor_step_sink(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    grounded, without = (walks(model, [motion], 2, 60, grounded=g)[0] for g in (True, False))
    assert grounded["grounded"] and not without["grounded"] and grounded["capture"] == without["capture"]
    # the tiny model sinks without it (test_mvae_control: a foot a centimetre under in 99 % of frames); here
    # from the obstacles it starts on (measured: hips 115.6 against 117.7 cm at the lowest, the floor step
    # pulling a floating foot down as well as lifting a sunk one)
    g, w = grounded["model"], without["model"]
    assert w["hips_min"] < g["hips_min"] - 1, (g, w)


def test_planted_walks_move_the_legs_alone(model, clip):  # noqa: F811
    """--no-contacts (``planted=False``) measures the walks as the model made them; planted, the same walk
    with the legs alone moved: the hips, the root's speed and the capture's row as they were. (One walk
    measured both ways: two walks of one seed may part in the last bits, as numpy's sums do with where an
    array lies, and a random walk carries that on.)"""
    motion = read_bvh(clip)
    planted, raw = (walks(model, [motion], 1, 60, planted=p)[0] for p in (True, False))
    assert planted["planted"] and not raw["planted"] and planted["capture"] == raw["capture"]
    (start, frame), = start_poses([motion], 1)
    walk = model.walk(start, frame, 60, k=1, seed=0)[0]
    ground = paw_ground(foot_positions(motion.global_transforms()[1], motion.skeleton))
    p, r = (per_motion(planted_walk(model, walk, 60, on), ground) for on in (True, False))
    assert all(np.array_equal(p[k], r[k]) for k in ("hips", "root_speed", "hips_under"))
    assert not (np.array_equal(p["skating"], r["skating"]) and np.array_equal(p["skating_own"], r["skating_own"]))


def test_the_variants_hook_measures_rtn_against_itself_as_rtn(clip):  # noqa: F811
    """With the shipped RTN on both sides the match is RTN's own default noise (1): the same error, spread
    and skating, and a ratio of exactly 1; RTN's spread and error grow with its noise; planted, its variants
    skate less than as the network made them."""
    motion = read_bvh(clip)
    rtn = open_model(MODELS / "rtn-lafan1.onnx")
    r = variants_against_rtn(rtn, rtn, [motion], starts=2)
    assert r["gaps"] == 2 and r["k"] == 8 and r["rtn"]["variation"] == 1.0 and r["spread_over_rtn"] == 1.0
    assert r["model"] == {k: v for k, v in r["rtn"].items() if k != "variation"}
    ladder = [r["rtn_by_variation"][f"{v:g}"] for v in VARIATIONS]
    assert all(a["spread"] < b["spread"] for a, b in zip(ladder, ladder[1:]))
    assert ladder[0]["error"] < ladder[-1]["error"] and r["planted"]
    # planted by default (measured on these two gaps: 0.041 cm a frame, below the capture's 0.049); as the
    # model made them they skate more than the capture
    raw = variants_against_rtn(rtn, rtn, [motion], starts=2, planted=False)
    assert raw["model"]["skating_capture"] == r["model"]["skating_capture"] < raw["model"]["skating"]
    assert r["model"]["skating"] < raw["model"]["skating"] and not raw["planted"]


def test_bad_input_is_one_clear_error(run, mocap, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "mvae.json"
    cases = [(["--data", str(mocap / "cmu-01_01.bvh"), "--model", str(run["model"])],
              "no clip of LaFAN1's test subject 5"),
             (["--data", str(mocap / "cmu-01_01.bvh"), "--model", str(MODELS / "rtn-lafan1.onnx")],
              "a 'rtn' model where a 'mvae' model is needed")]
    for args, message in cases:
        assert main(["bench-mvae", *args, "--json", str(out), "--cache", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err
    for seconds in ("0", "-2", "nan", "soon"):   # refused before anything is measured
        assert main(["bench-mvae", "--data", str(mocap / "lafan1-27.zip"), "--model", str(run["model"]),
                     "--seconds", seconds, "--json", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"argument --seconds: '{seconds}' is not a positive number of seconds" in err[0], err
    assert not out.exists()


@pytest.mark.slow
def test_without_model_it_measures_the_shipped_motion_vae(subject5, tmp_path):
    out = tmp_path / "shipped.json"
    assert main(["bench-mvae", "--data", str(subject5), "--starts", "1", "--frames", "60",
                 "--seconds", "0.5", "--json", str(out), "--cache", str(tmp_path), "--speed-repeats", "1"]) == 0
    r = json.loads(out.read_text())
    assert r["model"] == "mvae-lafan1" and Path(r["file"]) == MODELS / "mvae-lafan1.onnx"
    assert r["walks"]["walks"] == 1 and r["walks"]["with_nan"] == 0 and r["latent"]["active"] == 32
