"""``python -m inference``: info, error handling, and what importing the package pulls in; ``python -m lab``,
which has the measuring commands, and its data command."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inference.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(*args, package="inference"):
    return subprocess.run([sys.executable, "-m", package, *args], cwd=ROOT, capture_output=True, text=True)


def test_info_json_describes_the_cmu_clip(mocap):
    result = run("info", str(mocap / "cmu-01_01.bvh"), "--json")
    assert result.returncode == 0, result.stderr
    d = json.loads(result.stdout)
    assert d["frames"] == 2752 and d["fps"] == 120.0 and len(d["joints"]) == 31
    assert d["parents"][0] == -1 and d["joints"][d["parents"][2]] == "LHipJoint"
    assert d["channels"]["Hips"][:3] == ["Xposition", "Yposition", "Zposition"]
    assert abs(d["duration"] - 2752 / 120) < 1e-9
    assert d["up_axis_guess"] == "Y" and d["height"] > 0


def test_info_text_lists_every_joint(mocap, tmp_path, capsys):
    import zipfile
    with zipfile.ZipFile(mocap / "dog-mann.zip") as z:
        name = sorted(z.namelist())[0]
        (tmp_path / "dog.bvh").write_bytes(z.read(name))
    assert main(["info", str(tmp_path / "dog.bvh")]) == 0
    out = capsys.readouterr().out
    assert "21 joints" in out and "60 fps" in out and "up axis Y" in out
    assert "Tail1" in out and "Zrotation Xrotation Yrotation" in out


def test_bad_file_gives_one_line_and_exit_code_2(tmp_path):
    bad = tmp_path / "broken.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 zero\n")
    result = run("info", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: {bad}, line 4: joint 'Hips' OFFSET must be a number, not 'zero'"]
    missing = run("info", str(tmp_path / "nope.bvh"))
    assert missing.returncode == 2 and "nope.bvh" in missing.stderr and "Traceback" not in missing.stderr


def test_the_measuring_commands_are_the_labs_and_the_users_the_runtimes():
    measuring = ["bench", "bench-speed", "bench-mann", "bench-mvae", "bench-carl", "bench-decompress", "filmstrip",
                 "data"]
    users = ["info", "models", "fill", "superres", "variants", "follow-path", "walk", "transitions"]
    lab, runtime = run("--help", package="lab"), run("--help")
    assert lab.returncode == runtime.returncode == 0, lab.stderr + runtime.stderr
    offered = {name: set(result.stdout.split("{", 1)[1].split("}", 1)[0].split(",")) for name, result in
               (("lab", lab), ("inference", runtime))}
    assert offered == {"lab": set(measuring), "inference": set(users)}
    moved = run("bench", "--data", "x")
    assert moved.returncode == 2 and "invalid choice: 'bench'" in moved.stderr


def test_data_command_reports_cache(lafan1_zip, tmp_path):
    result = run("data", "--data", str(lafan1_zip), "--cache", str(tmp_path), package="lab")
    assert result.returncode == 0, result.stderr
    assert "27 clips, 125493 frames at 30 fps, 22 joints, subjects [1, 2, 3, 4, 5]" in result.stdout
    assert "MiB, loaded in" in result.stdout and len(list(tmp_path.glob("*.npz"))) == 1


def test_importing_inference_pulls_in_no_heavy_package():
    """Every module of inference/, which Blender loads, imports with numpy alone: no torch, scipy,
    bpy, matplotlib or tqdm (Blender's Python has none of them; the command line imports its own
    lazily), and not even onnxruntime until a model is opened."""
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "inference").rglob("*.py")
                     if p.name != "__main__.py")
    assert {"inference.modelfile", "inference.inbetween", "inference.rtn.runtime", "inference.rtn.blends",
            "inference.mann.runtime", "inference.mann.features", "inference.mann.path"} <= set(modules)
    heavy = ("torch", "scipy", "bpy", "matplotlib", "tqdm", "onnxruntime", "onnx")
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_models_lists_every_shipped_model_and_one_of_another_kind_beside_them(lafan1_zip, tmp_path, capsys):
    """The shipped models of both kinds: the listing shows each with what it serves, and fill finds the
    RTN model for a human clip though the MANN model beside it fills too (a dog's gaps)."""
    import inference.modelfile as modelfile
    from inference.bvh import write_bvh
    from inference.cli import main
    from commands import clip_of

    assert main(["models", "--json"]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert set(listed) == {"mann-dog", "mvae-lafan1", "rtn-bandai1", "rtn-cmu", "rtn-dog", "rtn-human", "rtn-lafan1"}
    lafan = listed["rtn-lafan1"]
    assert lafan["kind"] == "rtn" and lafan["skeleton"] == {"joints": 22, "root": "Hips"} and lafan["fps"] == 30
    assert lafan["serves"] == ["fill", "decompress", "variants"] and "non-commercial" in lafan["licence"]
    assert lafan["bytes"] == (modelfile.MODELS / "rtn-lafan1.onnx").stat().st_size
    assert listed["mann-dog"]["kind"] == "mann" and listed["mann-dog"]["serves"] == ["follow-path", "fill", "decompress"]
    mvae = listed["mvae-lafan1"]
    assert mvae["kind"] == "mvae" and mvae["serves"] == ["continue", "variants", "follow-path"]
    assert mvae["skeleton"] == lafan["skeleton"] and "non-commercial" in mvae["licence"]
    # the data of every shipped model but CMU's forbids commercial use, and the listing says which
    assert listed["rtn-cmu"]["use"] == "commercial use allowed" and "CMU" in listed["rtn-cmu"]["licence"]
    assert {m["use"] for name, m in listed.items() if name != "rtn-cmu"} == {"non-commercial use only"}
    assert modelfile.use_under("unknown: set --licence") == "unknown"
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "mann-dog: mann, 21 joints (root Hips)" in out and out.count("; non-commercial use only; licence") == 6
    assert "rtn-cmu: rtn, 31 joints (root Hips)" in out and out.count("; commercial use allowed; licence") == 1

    clip = clip_of(lafan1_zip, "ground1_subject5").frames(0, 120)
    write_bvh(clip, tmp_path / "clip.bvh")
    assert main(["fill", str(tmp_path / "clip.bvh"), "--gap", "40:70", "-o", str(tmp_path / "out.bvh")]) == 0
    assert "generated by rtn-human" in capsys.readouterr().out     # the default


def test_a_model_file_of_an_unknown_kind_or_newer_format_is_one_clear_error(trained_rtn, tmp_path):
    import onnx

    from inference.modelfile import ModelError, open_model

    for changes, message in (({"betwixt.kind": "gan"}, "a model of kind 'gan', which this version of Betwixt does "
                                                        "not know \\(it knows carl, mann, mvae, rtn\\); update Betwixt"),
                             ({"betwixt.version": "3"}, "a 'rtn' model in format version 3, and this Betwixt reads "
                                                        "version 2; update Betwixt")):
        proto = onnx.load(str(trained_rtn["model"]))
        meta = {p.key: p.value for p in proto.metadata_props}
        del proto.metadata_props[:]
        onnx.helper.set_model_props(proto, {**meta, **changes})
        onnx.save(proto, str(tmp_path / "m.onnx"))
        with pytest.raises(ModelError, match=message):
            open_model(tmp_path / "m.onnx")
