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
