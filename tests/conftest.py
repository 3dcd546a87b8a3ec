"""Shared fixtures: where the motion capture in ``../shared/mocap`` lives.

Tests that need it skip with the reason when it is absent, except under ``BETWIXT_REQUIRE_SHARED=1``
(set by ``.ci/run``), where a missing data folder is a failure rather than a quiet pass.
"""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MOCAP = Path(os.environ.get("BETWIXT_SHARED", ROOT.parent / "shared")) / "mocap"


def _need(path):
    if path.exists():
        return path
    reason = f"{path} is missing (the shared motion capture sits beside the repository)"
    if os.environ.get("BETWIXT_REQUIRE_SHARED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def mocap():
    """The ``shared/mocap`` folder."""
    return _need(MOCAP)


@pytest.fixture(scope="session")
def lafan1_zip(mocap):
    return _need(mocap / "lafan1-27.zip")


@pytest.fixture(scope="session")
def trained_rtn(lafan1_zip, tmp_path_factory):
    """A real RTN checkpoint and model file from our own training and export commands.

    Four optimiser steps on LaFAN1's training subjects: untrained as a motion model, but every
    piece of the pipeline (data, loss, checkpoint, ONNX export, metadata) is the real one.
    """
    import subprocess
    import sys

    run = tmp_path_factory.mktemp("rtn")
    cache = tmp_path_factory.mktemp("cache")
    train = [sys.executable, "-m", "training", "rtn", "--data", str(lafan1_zip), "--subjects", "1,2,3,4",
             "--out", str(run), "--steps", "4", "--batch", "8", "--max-gap", "20", "--validate-every", "4", "--reverse", "0.5",
             "--cache", str(cache), "--threads", "2"]
    subprocess.run(train, cwd=ROOT, check=True, capture_output=True, text=True)
    model = run / "rtn.onnx"
    subprocess.run([sys.executable, "-m", "training", "export", str(run / "checkpoint.pt"), "-o", str(model)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    return {"run": run, "checkpoint": run / "checkpoint.pt", "model": model, "cache": cache, "train": train}
