"""Shared fixtures: where the motion capture in ``../shared/mocap`` lives, and the tiny models that our own
training commands make once per test run.

Tests that need the capture skip with the reason when it is absent, except under ``BETWIXT_REQUIRE_SHARED=1``
(set by ``.ci/run``), where a missing data folder is a failure rather than a quiet pass.

Speed (issue 45): the suite runs in two pytest-xdist workers, a test file each at a time (``pytest.ini``);
what several files need is built once per run, shared by both workers (:func:`once`); the heaviest files go
first so that the two workers end together. ``-m "not slow"`` is the quick loop: a test is slow when it
carries ``@pytest.mark.slow`` or uses a fixture of :data:`SLOW_FIXTURES` (each trains a model or builds
something).
"""

import os
import shutil
import sys
from pathlib import Path

import pytest

from commands import run_training, train_and_export

ROOT = Path(__file__).resolve().parents[1]
MOCAP = Path(os.environ.get("BETWIXT_SHARED", ROOT.parent / "shared")) / "mocap"
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
# two workers on two cores: one thread each for the numerical libraries, the commands' they run included
THREADS = "1" if WORKER else "2"
if WORKER:
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

# fixtures that train a model or build something: a test that uses one (directly or not) is slow
SLOW_FIXTURES = {"trained_rtn", "mvae_run", "run", "linux_zip", "keyed_rigs", "rigify_rig", "carl_policy"}
# the test files that take longest, first (the rest keep their order): two workers, each taking the next
# file when it is free, then end close together
HEAVY_FIRST = ["test_shipped_models", "test_training", "test_benchmark", "test_runtime", "test_mann_training",
               "test_mvae_bench", "test_sources", "test_addon_rigify", "test_addon_physics", "test_bvh",
               "test_mvae_floor", "test_carl_training", "test_addon", "test_bad_input_cli", "test_mann_bench",
               "test_rtn_model", "test_hold_out", "test_library", "test_mvae_control", "test_dataset",
               "test_mann_runtime", "test_addon_library", "test_addon_locomotion", "test_training_ahead",
               "test_addon_bad_input", "test_floor_metrics", "test_cli", "test_addon_mvae", "test_mann_gaits",
               "test_retarget", "test_features"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rpartition(".")[2], len(rank)))   # stable


def unavailable(reason):
    """Skip the test for want of something outside the repository, or fail it under ``BETWIXT_REQUIRE_SHARED=1``
    (CI), where nothing may be quietly left untested."""
    if os.environ.get("BETWIXT_REQUIRE_SHARED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _need(path):
    if path.exists():
        return path
    unavailable(f"{path} is missing (the shared motion capture sits beside the repository)")


def run_folder(tmp_path_factory):
    """The test run's temporary folder, above each xdist worker's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if WORKER else base


def once(tmp_path_factory, name, build):
    """A folder that ``build(folder)`` fills once per test run, shared by the xdist workers: the first
    worker to ask builds it while the other waits for it (a lock file), later askers find it built."""
    base = run_folder(tmp_path_factory)
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:   # no fcntl (Windows): one process, nothing to wait for
            pass
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture(scope="session", autouse=True)
def data_set_caches(tmp_path_factory):
    """Commands run without ``--cache`` keep their data sets' caches in the run's folder, shared by the
    workers, rather than in the user's own (``~/.cache/betwixt``)."""
    os.environ["BETWIXT_CACHE"] = str(run_folder(tmp_path_factory) / "data-caches")


@pytest.fixture
def one_torch_thread():
    """Small networks run fastest on one thread, and a busy machine does not stall them."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def mocap():
    """The ``shared/mocap`` folder."""
    return _need(MOCAP)


@pytest.fixture(scope="session")
def lafan1_zip(mocap):
    return _need(mocap / "lafan1-27.zip")


@pytest.fixture(scope="session")
def dog_zip(mocap):
    return _need(mocap / "dog-mann.zip")


def _rtn_command(lafan1_zip, folder):
    return [sys.executable, "-m", "training", "rtn", "--data", str(lafan1_zip), "--subjects", "1,2,3,4",
            "--out", str(folder / "run"), "--steps", "4", "--batch", "8", "--max-gap", "20", "--validate-every", "4",
            "--validation-windows", "16", "--reverse", "0.5", "--cache", str(folder / "cache"), "--threads", THREADS]


@pytest.fixture(scope="session")
def trained_rtn(lafan1_zip, tmp_path_factory):
    """A real RTN checkpoint and model file from our own training and export commands, once per test run.

    Four optimiser steps on LaFAN1's training subjects: untrained as a motion model, but every
    piece of the pipeline (data, loss, checkpoint, ONNX export, metadata) is the real one.
    """
    def build(folder):
        run = folder / "run"
        run_training(_rtn_command(lafan1_zip, folder), check=True)
        run_training([sys.executable, "-m", "training", "export", str(run / "checkpoint.pt"), "-o",
                      str(run / "rtn.onnx")], check=True)

    folder = once(tmp_path_factory, "rtn", build)
    run = folder / "run"
    return {"run": run, "checkpoint": run / "checkpoint.pt", "model": run / "rtn.onnx", "cache": folder / "cache",
            "train": _rtn_command(lafan1_zip, folder)}


DOG_CLIPS = ("D1_047z_KAN01_002", "D1_010_KAN01_002")   # walks and a trot; a canter
DOG_TEST_CLIP = "D1_008_KAN01_002"                      # of the test split


@pytest.fixture(scope="session")
def dog_small_zip(mocap, tmp_path_factory):
    """Two of the dog's training clips and one of its test split, in an archive of their own (read-only data
    stays out of the repository: this lives in the run's temporary folder)."""
    import zipfile

    def build(folder):
        with zipfile.ZipFile(_need(mocap / "dog-mann.zip")) as z, zipfile.ZipFile(folder / "dog-small.zip", "w") as out:
            for name in z.namelist():
                if any(name.endswith(c + ".bvh") for c in DOG_CLIPS + (DOG_TEST_CLIP,)):
                    out.writestr(name, z.read(name))

    return once(tmp_path_factory, "dog-small", build) / "dog-small.zip"


@pytest.fixture(scope="session")
def carl_policy(dog_small_zip, tmp_path_factory):
    """A tiny CARL policy, once per test run: two PPO roll-outs of ``python -m training carl`` on the small dog
    archive and ``python -m training export``. {"checkpoint", "model", "cache"}."""
    def build(folder):
        run_training([sys.executable, "-m", "training", "carl", "--data", str(dog_small_zip), "--cache",
                      str(folder / "cache"), "--out", str(folder / "run"), "--samples", "48", "--epochs", "1",
                      "--minibatch", "16", "--hidden", "32,32", "--evaluate-every", "2", "--iterations", "2"],
                     check=True)
        run_training([sys.executable, "-m", "training", "export", str(folder / "run" / "checkpoint.pt"), "-o",
                      str(folder / "carl-tiny.onnx")], check=True)

    folder = once(tmp_path_factory, "carl", build)
    return {"checkpoint": folder / "run" / "checkpoint.pt", "model": folder / "carl-tiny.onnx",
            "cache": folder / "cache"}


MVAE_CLIPS = ("walk4_subject1.bvh", "push1_subject2.bvh")


@pytest.fixture(scope="session")
def mvae_run(lafan1_zip, tmp_path_factory):
    """A tiny Motion VAE, once per test run: six optimiser steps of ``python -m training mvae`` on two LaFAN1
    clips (roll-outs of 3 steps, scheduled sampling ramping over steps 2-3, the skating term on; layers 64 units
    wide, not the paper's 256, so that the tests' many roll-outs take a fraction of the time), and
    ``python -m training export`` of the checkpoint. {"out": run folder, "model": its file, "data": the clips}."""
    import zipfile

    def build(folder):
        data = folder / "data"
        data.mkdir()
        with zipfile.ZipFile(lafan1_zip) as z:
            for name in MVAE_CLIPS:
                (data / name).write_bytes(z.read(name))
        (folder / "mvae").mkdir()
        train_and_export("mvae", ["--data", str(data), "--steps", "6", "--batch", "8", "--rollout", "3",
                                  "--supervised", "2", "--ramp", "2", "--validate-every", "3", "--skate", "0.1",
                                  "--hidden", "64", "--cache", str(folder / "cache"), "--threads", THREADS],
                         folder / "mvae", "mvae.onnx")

    folder = once(tmp_path_factory, "mvae", build)
    return {"out": folder / "mvae", "model": folder / "mvae" / "mvae.onnx", "data": folder / "data"}
