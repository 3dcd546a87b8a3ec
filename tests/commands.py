"""Our own training and export commands, run as a user runs them, for tests that need a real model."""

import contextlib
import ctypes
import gc
import io
import subprocess
import sys
import zipfile

from lab.dataset import read_motions
from training.__main__ import main

try:
    _TRIM = ctypes.CDLL("libc.so.6").malloc_trim   # glibc's: hands the freed heap back to the system
except (OSError, AttributeError):   # another C library, which returns freed memory by itself or not at all
    _TRIM = None


def run_training(command, check=False):
    """``command`` (``[python, "-m", "training", ARGUMENTS…]``, as a user types it) run by the command's own
    ``main`` in this process, as ``subprocess.run`` with its output captured as text would run it: a new
    interpreter spends some 2.4 s importing torch, and the tests run some fifty commands. ``check``: a failing
    command fails the test with its error."""
    _, flag, package, *arguments = map(str, command)
    assert (flag, package) == ("-m", "training"), command
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(arguments)
        except SystemExit as e:   # argparse's refusal of an option
            code = e.code
    # what the run held, handed back to the system as its process's end would (its cycles collected, glibc's
    # freed heap trimmed): else a worker keeps the heap of its largest runs while the next test loads its own data
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
    assert code == 0 or not check, err.getvalue()[-2000:]
    return subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())


def train_and_export(family, arguments, out, name):
    """``python -m training FAMILY --out OUT ARGUMENTS…`` then ``python -m training export`` of its
    checkpoint to ``OUT/NAME``: the model file's path. A failing command fails the test with its error."""
    for command in (["training", family, "--out", str(out), *arguments],
                    ["training", "export", str(out / "checkpoint.pt"), "-o", str(out / name)]):
        run_training([sys.executable, "-m", *command], check=True)
    return out / name


def clip_of(archive, stem):
    """The clip ``stem`` of a data set's ``archive``, read alone: parsing all of LaFAN1's 77 takes seconds."""
    clip, = read_motions(archive, names={f"{archive}:{stem}.bvh"})
    return clip


def unzipped(archive, names, folder):
    """``folder`` holding the members ``names`` of the zip ``archive``: a few clips of a data set, to load in a
    second rather than parse the whole archive."""
    with zipfile.ZipFile(archive) as z:
        for name in names:
            (folder / name).write_bytes(z.read(name))
    return folder
