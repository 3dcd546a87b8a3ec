"""The extension as a user gets it: manifest, per-platform zip, and installing that zip into Blender.

The zip tests build linux-x64 with ``tools/build_extension.py`` (the onnxruntime wheels, ~17 MB per
Blender Python, are downloaded once into the wheel cache outside the repository, ``$BETWIXT_WHEELS`` or
``~/.cache/betwixt-wheels``) and skip with the reason when those wheels are not cached and PyPI cannot
be reached (fail, under ``BETWIXT_REQUIRE_SHARED=1``). Installing runs real Blender (the bpy module) in a
child process whose user folders (``BLENDER_USER_RESOURCES``) and ``HOME`` are temporary, and whose Python
sees only ``bpy`` and what it requires, as in Blender's own Python: no onnxruntime, none of its requirements.
"""

import importlib.util
import json
import platform
import re
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from conftest import unavailable
from inference.modelfile import DEFAULTS, shipped

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = ["linux-x64", "windows-x64", "macos-arm64", "macos-x64"]
ORT = "1.23.2"
MUJOCO = "4.0.0"
# What a zip may hold at its top level; anything else is a development file leaking into the build.
SHIPPED = {"__init__.py", "blender_manifest.toml", "README.md", "addon", "inference", "wheels"}


def _load_tool():
    spec = importlib.util.spec_from_file_location("build_extension", ROOT / "tools" / "build_extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bx = _load_tool()


@pytest.fixture(scope="module")
def manifest():
    return bx.read_manifest()


@pytest.fixture(scope="module")
def bext():
    return bx.load_blender_ext()


def validate(path):
    """Blender's own validator, with the tag list ``blender --command extension validate`` uses."""
    return bx.run_blender_ext("validate", path, "--valid-tags", bx.valid_tags_path())


# --- the manifest, without network ----------------------------------------------------------------

def test_manifest_passes_blenders_validator():
    done = validate(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_manifest_pins_onnxruntime_and_mujoco_for_both_pythons_on_every_platform(manifest, bext):
    assert manifest["id"] == "betwixt"
    assert manifest["platforms"] == PLATFORMS
    assert "network" not in manifest.get("permissions", {})   # nothing is fetched at run time
    hashes = bx.read_hashes()
    for target in PLATFORMS:
        wheels = [Path(w).name for w in bx.wheels_for([target], manifest, bext)]
        runtime = [w for w in wheels if w.startswith(f"onnxruntime-{ORT}-")]
        core = [w for w in wheels if w.startswith(f"mujoco_core-{MUJOCO}-")]
        assert sorted(w.split("-")[2] for w in runtime) == ["cp311", "cp313"], wheels
        # MuJoCo publishes no library for Intel Macs: there the Physics Pass says so
        assert sorted(w.split("-")[2] for w in core) == ([] if target == "macos-x64" else ["cp311", "cp313"]), wheels
        assert set(wheels) - set(runtime) - set(core) == {f"mujoco-{MUJOCO}-py3-none-any.whl"}, wheels
        assert all(w in hashes for w in wheels), f"{wheels} lack checksums in tools/wheels.sha256"
    every = [Path(w).name for w in manifest["wheels"]]
    assert sorted(every) == sorted(hashes) and len(set(every)) == 15
    assert all(w.startswith("./wheels/") for w in manifest["wheels"])


def test_exclude_patterns_keep_development_files_out(manifest, bext):
    excluded = bext.PathPatternMatch(manifest["build"]["paths_exclude_pattern"]).test_path
    for path in ["lab/", "lab/cli.py", "training/", "tests/", "tools/", "docs/", "docs/images/filmstrip.png", ".venv/",
                 ".ci/", ".git/", ".gitignore", ".hypothesis/", ".pytest_cache/", "runs/", "cache/", "out/", "dist/", "wheels/", "inference/__pycache__/",
                 "requirements-dev.txt", "pytest.ini", "betwixt-0.1.0-linux_x64.zip", "bench.json"]:
        assert excluded(path), path
    for path in ["__init__.py", "addon/", "addon/__init__.py", "inference/", "inference/modelfile.py",
                 "inference/rtn/runtime.py", "inference/models/", "inference/models/rtn-lafan1.onnx", "inference/models/rtn-lafan1.md"]:
        assert not excluded(path), path


def test_pip_download_asks_for_exactly_the_pinned_file():
    name = f"onnxruntime-{ORT}-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    cmd = bx.pip_download_command(name, "/tmp/x")
    assert cmd[-1] == f"onnxruntime=={ORT}"
    assert cmd[cmd.index("--python-version") + 1] == "3.13" and cmd[cmd.index("--abi") + 1] == "cp313"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"] == [
        "manylinux_2_27_x86_64", "manylinux_2_28_x86_64"]
    assert "--no-deps" in cmd and "--only-binary=:all:" in cmd


def test_a_cached_wheel_that_fails_its_checksum_counts_as_missing(tmp_path):
    name, digest = next(iter(bx.read_hashes().items()))
    (tmp_path / name).write_bytes(b"not a wheel")
    assert bx.missing_wheels([name], tmp_path, {name: digest}) == [name]


def test_build_refuses_a_platform_the_manifest_does_not_declare(tmp_path):
    done = subprocess.run([sys.executable, "tools/build_extension.py", "--platform", "linux-arm64",
                           "--out", str(tmp_path), "--wheels", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unknown platform linux-arm64" in done.stderr
    assert list(tmp_path.iterdir()) == []


# --- the linux-x64 zip ----------------------------------------------------------------------------

def _pypi_reachable():
    try:
        with urllib.request.urlopen("https://pypi.org/simple/onnxruntime/", timeout=15) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def linux_zip(manifest, bext, tmp_path_factory):
    cache = bx.wheel_cache()
    needed = [Path(w).name for w in bx.wheels_for(["linux-x64"], manifest, bext)]
    if bx.missing_wheels(needed, cache, bx.read_hashes()) and not _pypi_reachable():
        unavailable(f"the linux-x64 onnxruntime wheels are not in {cache} and PyPI cannot be reached")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "tools/build_extension.py", "--platform", "linux-x64",
                           "--out", str(out), "--wheels", str(cache)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    built = out / f"betwixt-{manifest['version']}-linux_x64.zip"
    assert sorted(out.iterdir()) == [built]
    assert str(built) in done.stdout
    return built


def test_linux_zip_holds_the_extension_and_only_linux_wheels(linux_zip, manifest, bext):
    names = zipfile.ZipFile(linux_zip).namelist()
    assert {n.split("/")[0] for n in names} <= SHIPPED, sorted({n.split("/")[0] for n in names} - SHIPPED)
    for required in ["__init__.py", "blender_manifest.toml", "addon/__init__.py", "inference/__init__.py",
                     "inference/modelfile.py", "inference/rtn/runtime.py", "inference/motion.py"]:
        assert required in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/." in "/" + n]
    # every shipped model and model card, whatever is in inference/models today
    models = ROOT / "inference" / "models"
    shipped = sorted(p.relative_to(ROOT).as_posix() for p in models.rglob("*") if p.is_file()
                     and not any(part.startswith(".") or part == "__pycache__" for part in p.parts[-2:]))
    shipped = shipped if models.is_dir() else []
    assert sorted(n for n in names if n.startswith("inference/models/")) == shipped
    wheels = sorted(n for n in names if n.startswith("wheels/"))
    assert wheels == sorted(w.removeprefix("./") for w in bx.wheels_for(["linux-x64"], manifest, bext))
    assert [w.split("-")[2] for w in wheels] == ["py3", "cp311", "cp313", "cp311", "cp313"]   # mujoco, its core, ORT
    assert all("manylinux" in w and w.endswith("x86_64.whl") for w in wheels if "-none-any" not in w)


def test_linux_zip_manifest_is_the_source_manifest_for_linux(linux_zip, manifest):
    zipped = tomllib.loads(zipfile.ZipFile(linux_zip).read("blender_manifest.toml").decode())
    generated = zipped["build"].pop("generated")
    assert generated == {"platforms": ["linux-x64"],
                         "wheels": [w for w in manifest["wheels"] if "linux" in w or w.endswith("-none-any.whl")]}
    assert zipped.pop("platforms") == ["linux-x64"]
    source = dict(manifest)
    source.pop("platforms")
    assert zipped == source
    done = validate(linux_zip)
    assert done.returncode == 0, done.stdout + done.stderr


def _site_with_bpy_only(folder):
    """A site-packages folder of links to ``bpy`` and its requirements: a stand-in for Blender's Python."""
    site = Path(metadata.distribution("bpy").locate_file(""))
    names, todo, tops = set(), ["bpy"], set()
    while todo:
        try:
            dist = metadata.distribution(todo.pop())
        except metadata.PackageNotFoundError:
            continue
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in names:
            continue
        names.add(name)
        tops |= {Path(f).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        todo += [re.match(r"[A-Za-z0-9._-]+", r).group() for r in dist.requires or () if "extra ==" not in r]
    folder.mkdir()
    for top in tops:
        if (site / top).exists():
            (folder / top).symlink_to(site / top)
    return folder


INSTALL = """
import importlib.util, json, os, sys
import bpy, addon_utils

result = {"extensions": bpy.utils.user_resource("EXTENSIONS"),
          "before": [m for m in ("onnxruntime", "mujoco") if importlib.util.find_spec(m) is not None],
          "requirements": [m for m in ("coloredlogs", "flatbuffers", "packaging", "google", "sympy")
                           if importlib.util.find_spec(m) is not None]}
result["operator"] = sorted(bpy.ops.extensions.package_install_files(
    filepath=sys.argv[1], repo="user_default", enable_on_install=True))
result["enabled"] = list(addon_utils.check("bl_ext.user_default.betwixt"))

import bl_ext.user_default.betwixt as betwixt
from bl_ext.user_default.betwixt import inference
from bl_ext.user_default.betwixt.inference import modelfile
import numpy as np
import onnxruntime
import pkgutil

imported, failed = [], []
for info in pkgutil.walk_packages(inference.__path__, inference.__name__ + "."):
    if not info.name.endswith("__main__"):   # which runs the command line
        try:
            importlib.import_module(info.name)
            imported.append(info.name.removeprefix(inference.__name__ + "."))
        except Exception as e:
            failed.append(f"{info.name}: {e!r}")
result.update(imported=imported, failed=failed)

session = onnxruntime.InferenceSession(sys.argv[2], providers=["CPUExecutionProvider"])
result.update(package=betwixt.__file__, runtime=modelfile.__file__, onnxruntime=onnxruntime.__file__,
              version=onnxruntime.__version__,
              output=session.run(None, {"x": np.ones((2, 3), np.float32)})[0].tolist(),
              models=[modelfile.open_model(p).path.name for p in modelfile.shipped()])

from bl_ext.user_default.betwixt.inference.carl.body import mujoco   # as the Physics Pass finds MuJoCo
mj = mujoco()
falling = mj.MjModel.from_xml_string('<mujoco><worldbody><body pos="0 0 1"><freejoint/><geom size="0.1"/>'
                                     '</body></worldbody></mujoco>')
state = mj.MjData(falling)
for _ in range(100):
    mj.mj_step(falling, state)
result.update(mujoco=mj.__file__, mujoco_version=mj.__version__, fell=float(1.0 - state.qpos[2]),
              fall_time=float(state.time))
print("RESULT" + json.dumps(result))
"""


def _tiny_model(path):
    import onnx   # a test requirement (requirements-dev.txt)
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Tanh", ["x"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_linux_zip_installs_with_blenders_operator_and_runs_onnxruntime_and_mujoco(linux_zip, tmp_path):
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        unavailable("the linux-x64 zip installs on x86-64 Linux only")
    site = _site_with_bpy_only(tmp_path / "site")
    (tmp_path / "home").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "PYTHONPATH": str(site),
           "BLENDER_USER_RESOURCES": str(tmp_path / "blender")}
    done = subprocess.run([sys.executable, "-S", "-c", INSTALL, str(linux_zip),
                           str(_tiny_model(tmp_path / "tiny.onnx"))],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stdout + done.stderr
    result = json.loads(lines[-1][len("RESULT"):])

    extensions = tmp_path / "blender" / "extensions"
    assert result["extensions"] == str(extensions)            # never the real ~/.config/blender
    assert not result["before"] and not result["requirements"]
    assert result["operator"] == ["FINISHED"]
    assert result["enabled"] == [True, True]
    assert result["package"] == str(extensions / "user_default" / "betwixt" / "__init__.py")
    assert result["runtime"] == str(extensions / "user_default" / "betwixt" / "inference" / "modelfile.py")
    # every module of the shipped runtime imports inside Blender: none reaches for the lab or training
    assert result["failed"] == []
    assert {"cli", "edit", "polyline", "mvae.control", "mann.runtime", "rtn.runtime"} <= set(result["imported"])
    assert not {"dataset", "benchmark", "plots", "speed", "floor_metrics"} & set(result["imported"])
    # onnxruntime came from the zip's cp311 wheel, which Blender unpacked into its extensions' site-packages
    assert result["onnxruntime"].startswith(str(extensions / ".local" / "lib" / "python3.11" / "site-packages"))
    assert result["version"] == ORT
    # MuJoCo too, from the zip's pure mujoco wheel and its cp311 library: a ball dropped falls g t^2 / 2
    assert result["mujoco"].startswith(str(extensions / ".local" / "lib" / "python3.11" / "site-packages"))
    assert result["mujoco_version"] == MUJOCO
    assert result["fell"] == pytest.approx(0.5 * 9.81 * result["fall_time"] ** 2, rel=0.05)
    assert sum(result["output"], []) == pytest.approx([0.7615942] * 6)   # tanh(1)
    models = ROOT / "inference" / "models"
    # every shipped model as the runtime lists them outside Blender: the defaults first (the one a fill uses
    # when none is chosen), then in-betweening before locomotion (the dog's RTN fills before its MANN)
    assert result["models"] == [p.name for p in shipped()]
    assert sorted(result["models"]) == sorted(p.name for p in models.glob("*.onnx"))
    assert result["models"][0] == DEFAULTS["rtn"] + ".onnx"
    assert result["models"].index("rtn-dog.onnx") < result["models"].index("mann-dog.onnx")
