"""Our own training and export commands, run as a user runs them, for tests that need a real model."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def train_and_export(family, arguments, out, name):
    """``python -m training FAMILY --out OUT ARGUMENTS…`` then ``python -m training export`` of its
    checkpoint to ``OUT/NAME``: the model file's path. A failing command fails the test with its error."""
    for command in (["training", family, "--out", str(out), *arguments],
                    ["training", "export", str(out / "checkpoint.pt"), "-o", str(out / name)]):
        result = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]
    return out / name


def unzipped(archive, names, folder):
    """``folder`` holding the members ``names`` of the zip ``archive``: a few clips of a data set, to load in a
    second rather than parse the whole archive."""
    with zipfile.ZipFile(archive) as z:
        for name in names:
            (folder / name).write_bytes(z.read(name))
    return folder
