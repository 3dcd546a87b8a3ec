"""Batches made ahead of the step (``--workers``, training/ahead.py): the batches worker processes make
are those the main thread would make, step for step, whatever step a run starts from; a run with
workers trains."""

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from commands import unzipped

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ("walk4_subject1.bvh", "push1_subject2.bvh")


@pytest.fixture(scope="module")
def clips(lafan1_zip, tmp_path_factory):
    """A folder of two LaFAN1 clips: a data set that loads in a second."""
    return unzipped(lafan1_zip, CLIPS, tmp_path_factory.mktemp("clips"))


def made(family, train, workers, first, steps=6):
    """The batches of steps ``first`` to ``steps - 1`` as ``--workers workers`` makes them: (n, {name: array})."""
    from training.ahead import batches

    args = argparse.Namespace(seed=7, steps=steps, workers=workers, batch=4, min_gap=5, max_gap=30)
    return [(n, {k: v.numpy() for k, v in arrays.items()})
            for n, arrays, _ in batches(family, train, args, 0, first, torch.device("cpu"))]


def test_workers_make_the_batches_the_main_thread_makes_and_a_resume_draws_them_again(clips):
    from lab.dataset import load_motion_set
    from training.family import family
    from training.rtn.sampler import Transitions

    rtn = family("rtn")
    train = Transitions(load_motion_set(clips), "train", mirrored=True, reverse=0.5, proportions=0.1)
    in_process = made(rtn, train, 0, 0)
    assert len(in_process) == 6
    assert len({n for n, _ in in_process}) > 1 and all(5 <= n <= 30 for n, _ in in_process)
    assert not np.array_equal(in_process[0][1]["past"], in_process[1][1]["past"])   # each step draws its own
    for workers, first in ((1, 0), (2, 0), (3, 2), (0, 2)):   # made by workers in turn; resumed at step 2
        ahead = made(rtn, train, workers, first)
        assert len(ahead) == 6 - first
        for (n, arrays), (n_in, arrays_in) in zip(ahead, in_process[first:]):
            assert n == n_in and arrays.keys() == arrays_in.keys()
            for key in arrays:
                np.testing.assert_array_equal(arrays[key], arrays_in[key])


def test_workers_by_default_only_beside_a_gpu():
    from training.ahead import default_workers

    assert default_workers(torch.device("cpu")) == 0          # the network's step takes the CPU's cores
    assert 1 <= default_workers(torch.device("cuda")) <= 4    # a device object: no GPU needed to ask


@pytest.mark.slow
def test_a_run_with_workers_trains(clips, tmp_path):
    result = subprocess.run([sys.executable, "-m", "training", "rtn", "--data", str(clips), "--out", str(tmp_path),
                             "--steps", "4", "--batch", "4", "--max-gap", "10", "--validate-every", "4",
                             "--validation-windows", "16", "--threads", "1", "--workers", "2"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "4 steps in" in result.stderr and "steps/s" in result.stderr
    state = torch.load(tmp_path / "checkpoint.pt", map_location="cpu", weights_only=True)
    assert state["step"] == 4
    losses = [values["loss"] for _, values in state["history"]["train"]]
    assert losses and np.isfinite(losses).all()
    assert all(np.isfinite(v) for v in state["history"]["validation"][-1][1].values())
    assert all(torch.isfinite(w).all() for w in state["model"].values())
