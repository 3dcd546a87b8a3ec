"""``python -m inference bench-mvae`` on the tiny Motion VAE that test_mvae.py trains with our own training
command, on LaFAN1's subject 5: the JSON's numbers are finite and as asked; the floor and skating measures
see a body sunk under the floor or raised off it; the variants' hook, given RTN as both sides, matches RTN
to itself; bad input is one clear error."""

import json
import math
import zipfile

import numpy as np
import pytest

from inference.bvh import read_bvh
from inference.cli import main
from inference.mann.metrics import paw_ground
from inference.modelfile import MODELS, ModelError, find_model, open_model
from inference.mvae.bench import VARIATIONS, foot_positions, per_motion, variants_against_rtn
from test_mvae import clip, run  # noqa: F401  (fixtures: a subject-5 clip, the tiny model's run)

SUBJECT5 = ("fallAndGetUp1_subject5.bvh", "ground1_subject5.bvh", "obstacles1_subject5.bvh")


@pytest.fixture(scope="module")
def subject5(lafan1_zip, tmp_path_factory):
    """A folder of LaFAN1's three subject-5 clips: the data the bench reads, without parsing all 77."""
    folder = tmp_path_factory.mktemp("subject5")
    with zipfile.ZipFile(lafan1_zip) as z:
        for name in SUBJECT5:
            (folder / name).write_bytes(z.read(name))
    return folder


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
                 "--frames", "60", "--json", str(out), "--plots", str(plots), "--cache", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    r = json.loads(out.read_text())
    assert all(math.isfinite(n) for n in numbers(r))
    assert r["test_clips"] == [name[:-4] for name in SUBJECT5] and r["starts"] == 4
    w = r["walks"]
    assert w["walks"] == 4 and w["frames"] == 60 and 0 <= w["with_nan"] <= 4
    c = w["capture"]   # subject 5's own motion: on its floor, its feet resting between steps
    assert 0 < c["skating"] < 0.2 and 0 < c["skating_toes"] and 0 < c["skating_feet"]
    assert c["skating_own_ground"] == pytest.approx(c["skating"])    # the capture's ground is its own
    assert c["under_floor"] < 0.01 and 0 < c["hips_min"] < 50 < c["hips_max"] < 250
    assert 1 < c["root_speed"] < 5 and 5 < c["peak"] < 50             # cm a frame, at 30 fps
    if w["model"]:
        assert 0 <= w["model"]["under_floor"] <= 1 and w["model"]["hips_min"] <= w["model"]["hips_max"]
    s = r["continuations"]
    assert s["k"] == 8 and s["seconds"] == 3 and s["root"] > 0 and s["joints"] > 0   # z drawn: they differ
    lat = r["latent"]
    assert lat["dims"] == len(lat["kl_dims"]) == 32 and lat["active"] == sum(k > 0.01 for k in lat["kl_dims"])
    assert lat["kl"] == pytest.approx(np.mean(lat["kl_dims"]), abs=1e-3)
    assert 0 < r["speed"]["ms_per_frame"] < 50 and 0 < r["speed"]["k16_10s_seconds"] < 60
    goals = {g["what"]: g for g in r["goals"]}
    assert goals["walks with NaN"]["met"] == (w["with_nan"] == 0)
    assert goals["ms per generated frame, batch 1, one thread"]["goal"] == "at most 0.3"
    assert r["paths"] is None and any("paths (two-legged)" in line and "not measured yet" in line
                                      for line in printed.splitlines())
    if hasattr(open_model(run["model"]), "variants"):
        assert r["variants"]["gaps"] == 4 and r["variants"]["spread_over_rtn"] > 0
    else:
        assert r["variants"] is None and "not measured: this MVAEModel makes no variants yet" in printed
    assert printed.count("(goal: ") == len(r["goals"])
    assert sorted(p.name for p in plots.glob("*.png")) == ["latent.png", "walks.png"]


def test_a_body_sunk_under_the_floor_or_raised_off_it_is_seen(clip):  # noqa: F811
    motion = read_bvh(clip)
    ground = paw_ground(foot_positions(motion.global_transforms()[1], motion.skeleton))
    measured = {}
    for name, shift in (("capture", 0.0), ("sunk", -10.0), ("raised", 10.0)):
        positions = motion.positions.copy()
        positions[:, 0, 1] += shift                                   # the hips carry the body
        measured[name] = per_motion(type(motion)(motion.skeleton, motion.rotations, positions, motion.fps), ground)
    capture, sunk, raised = measured["capture"], measured["sunk"], measured["raised"]
    # sunk 10 cm: every frame with a foot within 5 cm of its ground (measured 45 %: in obstacles1 the actor
    # stands on the obstacles much of the time, above the floor)
    assert capture["under"] < 0.01 and sunk["under"] > 0.3 and raised["under"] == 0
    # sunk, a foot on the ground counts fully as it slides; raised 10 cm (4 H), nothing counts
    assert sunk["skating"].mean() > capture["skating"].mean() > 0 and raised["skating"].max() < 1e-6
    np.testing.assert_allclose(sunk["skating_own"], capture["skating_own"], atol=1e-9)   # its own ground moves with it
    assert sunk["hips"].max() == pytest.approx(capture["hips"].max() - 10)


def test_the_variants_hook_measures_rtn_against_itself_as_rtn(clip):  # noqa: F811
    """With the shipped RTN on both sides the match is RTN's own default noise (1): the same error, spread
    and skating, and a ratio of exactly 1; RTN's spread and error grow with its noise."""
    motion = read_bvh(clip)
    rtn = open_model(MODELS / "rtn-lafan1.onnx")
    r = variants_against_rtn(rtn, rtn, [motion], starts=2)
    assert r["gaps"] == 2 and r["k"] == 8 and r["rtn"]["variation"] == 1.0 and r["spread_over_rtn"] == 1.0
    assert r["model"] == {k: v for k, v in r["rtn"].items() if k != "variation"}
    ladder = [r["rtn_by_variation"][f"{v:g}"] for v in VARIATIONS]
    assert all(a["spread"] < b["spread"] for a, b in zip(ladder, ladder[1:]))
    assert ladder[0]["error"] < ladder[-1]["error"] and 0 < r["model"]["skating_capture"] < r["model"]["skating"]


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
    assert not out.exists()


def test_without_a_shipped_motion_vae_it_says_to_pass_model(mocap, tmp_path, capsys):
    try:
        find_model(None, kind="mvae")
        pytest.skip("a Motion VAE is shipped now: bench-mvae measures it without --model")
    except ModelError:
        pass
    assert main(["bench-mvae", "--data", str(mocap / "lafan1-27.zip")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: no mvae model is shipped; pass --model FILE"]
