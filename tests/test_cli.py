"""``python -m inference``: info, data, error handling, and what importing the package pulls in."""

import json
import subprocess
import sys
from pathlib import Path

from inference.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    return subprocess.run([sys.executable, "-m", "inference", *args], cwd=ROOT, capture_output=True, text=True)


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


def test_data_command_reports_cache(lafan1_zip, tmp_path):
    result = run("data", "--data", str(lafan1_zip), "--cache", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "27 clips, 125493 frames at 30 fps, 22 joints, subjects [1, 2, 3, 4, 5]" in result.stdout
    assert "MiB, loaded in" in result.stdout and len(list(tmp_path.glob("*.npz"))) == 1


def test_importing_inference_pulls_in_no_heavy_package():
    code = ("import sys, inference, inference.bvh, inference.dataset, inference.benchmark, inference.cli, "
            "inference.transition, inference.plots; "
            "print(sorted(m for m in ('torch', 'scipy', 'bpy', 'matplotlib') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
