"""``--hold-out``: clips named by file stem are neither trained nor validated on, in any data set, so
that a model (the default human one, measured by the rig suite on Bandai clips) can be judged on them.

A tiny two-source run (two LaFAN1 training clips, three Bandai-1 clips retargeted onto LaFAN1's
skeleton), a few steps of our own training and export commands."""

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from commands import run_training, train_and_export
from lab.dataset import Selection, clip_stem, load_sources
from training.clips import clips, held_out_of
from training.export import floor_of

HELD = "dataset-1_walk_old_001"    # one of the rig suite's cases
BANDAI = (f"{HELD}.bvh", "dataset-1_run_happy_001.bvh", "dataset-1_kick_normal_001.bvh")
LAFAN1 = ("walk4_subject1.bvh", "push1_subject2.bvh")


def folder_of(archive, names, folder):
    folder.mkdir()
    with zipfile.ZipFile(archive) as z:
        for name in names:
            (folder / name).write_bytes(z.read(name))
    return folder


@pytest.fixture(scope="module")
def sources(lafan1_zip, mocap, tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return [folder_of(lafan1_zip, LAFAN1, root / "lafan1"), folder_of(mocap / "bandai1.zip", BANDAI, root / "bandai1")]


@pytest.fixture(scope="module")
def run(sources, tmp_path_factory):
    """Two steps of ``python -m training rtn`` on both sources holding out one Bandai clip, exported."""
    out, cache = tmp_path_factory.mktemp("run"), tmp_path_factory.mktemp("cache")
    data = [arg for s in sources for arg in ("--data", str(s))]
    train_and_export("rtn", [*data, "--hold-out", HELD, "--steps", "2", "--batch", "4", "--max-gap", "10",
                             "--validate-every", "2", "--validation-windows", "16",
                             "--cache", str(cache), "--threads", "1"], out, "m.onnx")
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    files = sorted(cache.iterdir(), key=lambda p: "-on-" in p.name)   # LaFAN1's, then Bandai's on its skeleton
    return {"out": out, "cache": cache, "files": files, "data": data, "meta": state["meta"],
            "history": state["history"]}


def test_the_held_out_clip_is_neither_trained_nor_validated_on(run, sources):
    meta = run["meta"]
    assert meta["held_out"] == [HELD]
    assert sorted(map(clip_stem, meta["data_files"])) == sorted(Path(n).stem for n in LAFAN1 + BANDAI[1:])
    chosen = Selection(held_out=(HELD,))
    data = load_sources(sources, run["cache"], chosen=chosen)
    assert HELD in map(clip_stem, data.names)             # it is in the data, and the rule leaves it out
    for part in ("train", "validation"):
        assert HELD not in map(clip_stem, clips(data, part, chosen).files)
    assert all(np.isfinite(v) for v in run["history"]["validation"][-1][1].values())


def test_model_file_and_card_name_it_and_list_only_what_was_read(run, sources, tmp_path):
    props = {p.key: p.value for p in onnx.load(str(run["out"] / "m.onnx")).metadata_props}
    data = json.loads(props["betwixt.data"])
    assert data["held_out"] == [HELD] and not any(HELD in f for f in data["files"])
    card = (run["out"] / "m.md").read_text()
    assert f"- Held out (never trained or validated on): {HELD}." in card
    [files] = [line for line in card.splitlines() if line.startswith("- Files:")]
    assert HELD not in files and "dataset-1_run_happy_001" in files
    # export --data measures the floor (betwixt.floor) on the first data set's clips that the run read:
    # Bandai's, held out or not, leave it where LaFAN1 stands; a LaFAN1 clip held out moves it
    every = floor_of(sources, run["cache"], {"subjects": None})
    assert floor_of(sources, run["cache"], run["meta"]) == every
    # (its own cache: without that clip Bandai is retargeted onto another natural pose)
    without = floor_of(sources, tmp_path, {"subjects": None, "held_out": [Path(LAFAN1[0]).stem]})
    assert abs(float(without) - float(every)) > 0.5


def test_a_retargeted_cache_made_from_every_clip_is_not_served_to_a_hold_out(run, sources):
    """Bandai's natural pose, through which it is retargeted, is measured without the held-out clip;
    the caches themselves, as ``--data`` on a machine without the sources, still hold it out."""
    every = load_sources(sources, run["cache"])
    assert sum("-on-" in p.name for p in run["cache"].iterdir()) == 2    # Bandai retargeted twice, two names
    held = load_sources(sources, run["cache"], chosen=Selection(held_out=(HELD,)))
    assert not np.array_equal(every.rotations, held.rotations)   # another natural pose, another retargeting
    from_caches = load_sources(run["files"])                        # the run's own two caches
    assert from_caches.names == held.names and np.array_equal(from_caches.rotations, held.rotations)
    files = clips(from_caches, "train", Selection(held_out=(HELD,))).files
    assert sorted(map(clip_stem, files)) == sorted(map(clip_stem, run["meta"]["data_files"]))


def test_a_resumed_run_keeps_its_clips_held_out(run, sources):
    again = run_training([sys.executable, "-m", "training", "rtn", *run["data"], "--out", str(run["out"]),
                          "--steps", "3", "--batch", "4", "--max-gap", "10", "--validate-every", "10",
                          "--validation-windows", "16", "--cache", str(run["cache"]), "--threads", "1"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"holding out {HELD} too" in again.stderr
    meta = torch.load(run["out"] / "checkpoint.pt", weights_only=True)["meta"]
    assert meta["held_out"] == [HELD] and meta["data_files"] == run["meta"]["data_files"]


def test_init_keeps_them_held_out_on_other_data(run, sources, tmp_path):
    """Fine-tuning (``--init``) on data without the held-out clip: nothing to refuse, still named."""
    out = tmp_path / "tuned"
    tuned = run_training([sys.executable, "-m", "training", "rtn", "--data", str(sources[0]), "--out", str(out),
                          "--init", str(run["out"] / "checkpoint.pt"), "--steps", "4", "--batch", "4",
                          "--max-gap", "10", "--validate-every", "10", "--validation-windows", "16", "--cache",
                          str(run["cache"]), "--threads", "1"])
    assert tuned.returncode == 0, tuned.stderr[-2000:]
    meta = torch.load(out / "checkpoint.pt", weights_only=True)["meta"]
    assert meta["held_out"] == [HELD] and sorted(map(clip_stem, meta["data_files"])) == sorted(Path(n).stem for n in LAFAN1)


def test_an_unknown_name_is_refused_before_anything_trains(sources, tmp_path):
    """One line naming the clip and the data set, exit code 2, no run folder (the Motion VAE's command)."""
    out = tmp_path / "run"
    result = run_training([sys.executable, "-m", "training", "mvae", "--data", str(sources[0]), "--out", str(out),
                           "--hold-out", f"walk4_subject1,{HELD}", "--steps", "1", "--threads", "1",
                           "--cache", str(tmp_path / "cache")])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(f"error: --hold-out {HELD}: no clip of that name in {sources[0]}")
    assert "walk4_subject1," not in lines[-1] and not out.exists()


def test_names_from_a_list_or_a_file(tmp_path):
    listing = tmp_path / "held.txt"
    listing.write_text(f"{HELD}.bvh\n\n  dataset-1_run_happy_001\n")
    assert held_out_of(str(listing)) == ["dataset-1_run_happy_001", HELD]
    assert held_out_of(f"{HELD}, walk4_subject1.bvh") == [HELD, "walk4_subject1"]
    assert held_out_of(None) == []
