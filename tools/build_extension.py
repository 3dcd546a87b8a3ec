"""Build Betwixt's per-platform extension zips with Blender's own extension tool.

    python tools/build_extension.py [--platform P ...] [--out dist] [--wheels DIR]

writes ``dist/betwixt-<version>-<platform>.zip`` (Blender names the platform ``linux_x64``, ``windows_x64``,
``macos_arm64``, ``macos_x64``), each holding the add-on, ``inference/`` with its shipped models, and the
onnxruntime wheels of that platform only (one per Blender Python: cp311 and cp313).

Why a script around ``blender_ext.py build --split-platforms``: that command packs the wheels the
manifest lists, from the source folder, for every platform at once. Here the wheels live in a cache
outside the repository (``--wheels``, ``$BETWIXT_WHEELS`` or ``~/.cache/betwixt-wheels``), fetched once
with ``pip download`` and checked against ``tools/wheels.sha256``; Blender's tool then runs on a staging
copy of what the manifest's ``[build]`` section ships, with the wheels beside it and the manifest's
``platforms`` cut down to those asked for, so building one platform needs only that platform's wheels.
Blender reads the platform and wheel list of an installed zip from the ``[build.generated]`` table its
tool appends, so a one-platform zip installs exactly as the same zip from a full build.

Exit status: 0 built, 1 Blender's tool failed, 2 bad arguments or manifest, 3 a wheel could not be had.
"""

import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HASHES = Path(__file__).resolve().with_name("wheels.sha256")
MANIFEST = "blender_manifest.toml"


class BuildError(Exception):
    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


# --- Blender's tool -------------------------------------------------------------------------------

def blender_scripts():
    """The ``scripts`` folder of the installed ``bpy`` package (found without importing it)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("the bpy package is not installed (pip install -r requirements-dev.txt)")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*/scripts"))
    if not found:
        raise BuildError(f"no scripts folder in the bpy package at {spec.submodule_search_locations[0]}")
    return found[-1]


def blender_ext_path():
    return blender_scripts() / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"


def valid_tags_path():
    """The tag list ``blender --command extension build/validate`` checks against."""
    return blender_scripts() / "modules" / "_bpy_internal" / "extensions" / "tags.py"


def load_blender_ext():
    """Blender's tool as a module: its own wheel-to-platform rule and exclude-pattern matcher."""
    path = blender_ext_path()
    spec = importlib.util.spec_from_file_location("blender_ext", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("blender_ext", module)
    spec.loader.exec_module(module)
    return module


def run_blender_ext(*args):
    cmd = [sys.executable, str(blender_ext_path()), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True)


# --- the manifest ---------------------------------------------------------------------------------

def read_manifest(source=ROOT):
    with open(Path(source) / MANIFEST, "rb") as f:
        return tomllib.load(f)


def wheels_for(platforms, manifest, bext):
    """The manifest's wheel paths that Blender's tool puts in the zip of any of ``platforms``."""
    return [w for w in manifest.get("wheels", [])
            if any(bext.blender_platform_compatible_with_wheel_platform_from_filepath(p, w) for p in platforms)]


def with_platforms(text, platforms):
    """The manifest's text with its ``platforms`` list replaced, everything else byte for byte."""
    new = "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]"
    text, n = re.subn(r"^platforms\s*=\s*\[[^\]]*\]", new, text, count=1, flags=re.M)
    if n != 1:
        raise BuildError(f"{MANIFEST}: no top-level 'platforms = [...]' list")
    return text


# --- wheels ---------------------------------------------------------------------------------------

def wheel_cache():
    if os.environ.get("BETWIXT_WHEELS"):
        return Path(os.environ["BETWIXT_WHEELS"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "betwixt-wheels"


def read_hashes(path=HASHES):
    hashes = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split()
            hashes[name.lstrip("*")] = digest
    return hashes


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pip_download_command(filename, dest):
    """``pip download`` of exactly the wheel ``filename`` names, for whatever machine this runs on."""
    parts = filename[:-len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise BuildError(f"{filename}: not a wheel file name")
    name, version, python, abi, platform = parts[0], parts[1], parts[-3], parts[-2], parts[-1]
    pinned = [f"{name.replace('_', '-')}=={version}"]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off",
            "--dest", str(dest)]
    if (abi, platform) == ("none", "any"):   # pure Python: the same file for every machine
        return base + pinned
    match = re.fullmatch(r"cp(\d)(\d+)", python)
    if not match:
        raise BuildError(f"{filename}: only CPython (cpXY) and pure Python wheels are supported, found {python!r}")
    cmd = base + ["--implementation", "cp", "--python-version", ".".join(match.groups()), "--abi", abi]
    for tag in platform.split("."):   # compressed tag sets: manylinux_2_27_x86_64.manylinux_2_28_x86_64
        cmd += ["--platform", tag]
    return cmd + pinned


def missing_wheels(filenames, cache, hashes):
    return [f for f in filenames if not ((cache / f).is_file() and sha256(cache / f) == hashes.get(f))]


def fetch_wheel(filename, cache, hashes, log=print):
    """The cached wheel ``filename``, downloaded first when it is absent or fails its checksum."""
    expected = hashes.get(filename)
    if expected is None:
        raise BuildError(f"{filename}: no checksum in {HASHES.relative_to(ROOT)}; download it with pip, "
                         "check it is the file PyPI lists, and add its `sha256sum` line")
    target = cache / filename
    if target.is_file() and sha256(target) == expected:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    log(f"downloading {filename}")
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        done = subprocess.run(pip_download_command(filename, tmp), capture_output=True, text=True)
        got = Path(tmp) / filename
        if done.returncode != 0 or not got.is_file():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
            raise BuildError(f"{filename}: pip download failed (is PyPI reachable?)\n{tail}", status=3)
        if sha256(got) != expected:
            raise BuildError(f"{filename}: downloaded file does not match {HASHES.name}", status=3)
        os.replace(got, target)
    return target


# --- staging and building -------------------------------------------------------------------------

def stage(source, staging, manifest_text, manifest, bext, wheels):
    """Copy what the manifest's [build] section ships (Blender's own matcher), then the wheels."""
    patterns = manifest.get("build", {}).get("paths_exclude_pattern")
    if patterns is None or "paths" in manifest.get("build", {}):
        raise BuildError(f"{MANIFEST}: expected [build] paths_exclude_pattern (and no 'paths')")
    excluded = bext.PathPatternMatch(patterns).test_path
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        keep = []
        for d in sorted(dirs):
            path = Path(folder, d)
            if not path.is_symlink() and not excluded((rel / d).as_posix() + "/"):
                keep.append(d)
                (staging / rel / d).mkdir()
        dirs[:] = keep
        for f in files:
            path = Path(folder, f)
            relf = (rel / f).as_posix()
            if path.is_symlink() or relf == MANIFEST or excluded(relf):
                continue
            shutil.copy2(path, staging / relf)
    (staging / MANIFEST).write_text(manifest_text)
    for rel, wheel in wheels:
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, dest)


def build(platforms=None, out=ROOT / "dist", cache=None, source=ROOT, log=print):
    """Build the zips of ``platforms`` (default: all the manifest names) into ``out``; their paths."""
    source, out = Path(source), Path(out)
    cache = Path(cache) if cache else wheel_cache()
    manifest = read_manifest(source)
    declared = manifest.get("platforms") or []
    platforms = list(dict.fromkeys(platforms or declared))
    unknown = [p for p in platforms if p not in declared]
    if unknown:
        raise BuildError(f"unknown platform {', '.join(unknown)}; {MANIFEST} declares {', '.join(declared)}")
    bext = load_blender_ext()
    hashes = read_hashes()
    wheels = [(w.removeprefix("./"), fetch_wheel(Path(w).name, cache, hashes, log))
              for w in wheels_for(platforms, manifest, bext)]
    for p in platforms:
        if not wheels_for([p], manifest, bext):
            raise BuildError(f"{MANIFEST} lists no wheel for {p}")
    text = with_platforms((source / MANIFEST).read_text(), platforms)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="betwixt-build-") as tmp:
        staging = Path(tmp) / manifest["id"]
        staging.mkdir()
        stage(source, staging, text, manifest, bext, wheels)
        done = run_blender_ext("build", "--source-dir", staging, "--output-dir", out.resolve(),
                               "--split-platforms", "--valid-tags", valid_tags_path())
        log(done.stdout.rstrip())
        if done.returncode != 0:
            raise BuildError(f"Blender's build failed:\n{done.stderr.strip()}", status=1)
    zips = [out / f"{manifest['id']}-{manifest['version']}-{p.replace('-', '_')}.zip" for p in platforms]
    for z in zips:
        checked = run_blender_ext("validate", z, "--valid-tags", valid_tags_path())
        if checked.returncode != 0 or not z.is_file():
            raise BuildError(f"{z}: Blender's validator refused it:\n{checked.stdout}{checked.stderr}", status=1)
    return zips


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python tools/build_extension.py", description=__doc__.split("\n")[0])
    parser.add_argument("--platform", action="append", dest="platforms", metavar="P",
                        help="linux-x64, windows-x64, macos-arm64 or macos-x64 (repeatable; default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder (default: dist/)")
    parser.add_argument("--wheels", type=Path, default=None,
                        help="wheel cache (default: $BETWIXT_WHEELS or ~/.cache/betwixt-wheels)")
    args = parser.parse_args(argv)
    try:
        zips = build(args.platforms, args.out, args.wheels)
    except BuildError as e:
        print(f"build_extension: {e}", file=sys.stderr)
        return e.status
    for z in zips:
        print(f"{z}  {z.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
