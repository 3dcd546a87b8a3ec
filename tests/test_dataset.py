"""Data sets from folders and archives, subject splits, windows, normalisation and the cache."""

import tarfile
import zipfile

import numpy as np
import pytest

from inference import quat
from inference.bvh import parse_bvh
from inference.errors import DataError
from inference.motion import forward_kinematics
from lab.dataset import (bvh_members, cache_path, centre_and_face, clip_stem, gather_windows, layouts, load_motion_set,
                         motion_set, read_motions, sliding_windows, subject_of)


@pytest.fixture(scope="module")
def bandai_files(mocap, tmp_path_factory):
    """Five short Bandai clips as loose files, a zip and a tar.xz."""
    root = tmp_path_factory.mktemp("bandai")
    folder = root / "folder"
    (folder / "nested").mkdir(parents=True)
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        names = sorted(n for n in z.namelist() if n.endswith(".bvh"))[:5]
        for i, n in enumerate(names):
            (folder / ("nested" if i % 2 else "") / n).write_bytes(z.read(n))
    with zipfile.ZipFile(root / "set.zip", "w") as z:
        for p in sorted(folder.rglob("*.bvh")):
            z.write(p, p.name)
    with tarfile.open(root / "set.tar.xz", "w:xz") as t:
        for p in sorted(folder.rglob("*.bvh")):
            t.add(p, p.name)
    return root


def test_folder_zip_and_tar_give_the_same_clips(bandai_files):
    sets = [read_motions(bandai_files / name) for name in ("folder", "set.zip", "set.tar.xz")]
    names = [sorted(m.name for m in s) for s in sets]
    assert names[0] == names[1] == names[2] and len(names[0]) == 5
    for a, b in zip(sorted(sets[0], key=lambda m: m.name), sorted(sets[2], key=lambda m: m.name)):
        np.testing.assert_array_equal(a.rotations, b.rotations)
    assert all(":" in name for name, _ in bvh_members(bandai_files / "set.zip"))


def test_a_member_s_header_is_read_alone_and_groups_alike_from_folder_zip_and_tar(bandai_files):
    """Grouping a data set's files by skeleton reads each file's first bytes only, the hierarchy, not its
    motion: from a folder, a zip and a tar alike."""
    for name in ("folder", "set.zip", "set.tar.xz"):
        members = bvh_members(bandai_files / name)
        whole = members[0][1]()
        assert members[0][1](100) == whole[:100] and len(whole) > 100_000
        (skeleton, clips), = layouts(bandai_files / name)
        assert len(skeleton.names) == 22 and len(clips) == 5


def test_bad_sources_are_refused(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        bvh_members(tmp_path / "missing.zip")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as z:
        z.writestr("readme.txt", "no motion here")
    with pytest.raises(DataError, match="empty.zip: contains no .bvh files"):
        bvh_members(tmp_path / "empty.zip")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DataError, match="not a folder, a BVH file"):
        bvh_members(tmp_path / "notes.txt")


def test_a_broken_member_names_the_archive_and_member(bandai_files, tmp_path):
    with zipfile.ZipFile(bandai_files / "set.zip") as src, zipfile.ZipFile(tmp_path / "bad.zip", "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            dst.writestr(n, data[: len(data) // 2] if n == src.namelist()[2] else data)
        broken = src.namelist()[2]
    with pytest.raises(Exception) as info:
        read_motions(tmp_path / "bad.zip")
    assert f"bad.zip:{broken}" in str(info.value) and "line" in str(info.value)


def test_subjects_from_names():
    assert subject_of("walk1_subject3.bvh") == 3
    assert subject_of("archive.zip:fallAndGetUp2_subject12.bvh") == 12
    assert subject_of("dataset-1_bow_active_001.bvh") is None


def test_sliding_windows_follow_the_release_rule():
    assert list(sliding_windows(65 + 80, 65, 40)) == [0, 40]     # 80 + 65 == 145 is not < 145
    assert list(sliding_windows(65 + 81, 65, 40)) == [0, 40, 80]
    assert list(sliding_windows(65, 65, 40)) == []


@pytest.mark.slow
def test_centre_and_face_is_a_rigid_turn_about_up(lafan1_zip):
    with zipfile.ZipFile(lafan1_zip) as z:    # one clip of the test subject
        motions = [parse_bvh(z.read("fallAndGetUp1_subject5.bvh"), "fallAndGetUp1_subject5.bvh")]
    rot, pos = gather_windows(motions, 50, 20)
    parents = motions[0].skeleton.parents
    new_rot, new_pos = centre_and_face(rot, pos, parents, frame=9)
    np.testing.assert_array_equal(new_rot[:, :, 1:], rot[:, :, 1:])
    np.testing.assert_allclose(new_pos[:, :, 0, [0, 2]].mean(axis=1), 0.0, atol=1e-8)
    np.testing.assert_allclose(new_pos[:, :, 0, 1], pos[:, :, 0, 1])
    forward = quat.rotate(new_rot[:, 9, 0], np.array([0.0, 1.0, 0.0]))
    assert np.all(forward[:, 0] > 0) and np.allclose(forward[:, 2], 0.0, atol=1e-9)
    _, before = forward_kinematics(rot, pos, parents)
    _, after = forward_kinematics(new_rot, new_pos, parents)
    d0 = np.linalg.norm(before[:, :, :, None] - before[:, :, None], axis=-1)
    d1 = np.linalg.norm(after[:, :, :, None] - after[:, :, None], axis=-1)
    np.testing.assert_allclose(d1, d0, atol=1e-9)


@pytest.mark.slow
def test_cache_is_compact_exact_enough_and_keyed_by_content(lafan1_zip, tmp_path):
    data = load_motion_set(lafan1_zip, tmp_path)
    cache = cache_path(lafan1_zip, tmp_path)
    assert cache.exists() and cache.stat().st_size < 32 * 2**20
    assert len(data.names) == 27 and data.starts[-1] == 125493
    assert sorted(set(data.subjects.tolist())) == [1, 2, 3, 4, 5]

    again = load_motion_set(lafan1_zip, tmp_path)
    assert cache.stat().st_mtime_ns == cache_path(lafan1_zip, tmp_path).stat().st_mtime_ns
    clip = again.clip(4)
    original, = read_motions(lafan1_zip, names={n for n, _ in bvh_members(lafan1_zip) if clip_stem(n) == clip.name})
    assert clip.name == original.name
    err = np.minimum(np.abs(clip.rotations - original.rotations), np.abs(clip.rotations + original.rotations))
    assert err.max() < 5e-5
    np.testing.assert_allclose(clip.positions, original.positions, atol=1e-3)

    cache.write_bytes(cache.read_bytes()[:1000])   # a cache cut short is rebuilt, not trusted
    rebuilt = load_motion_set(lafan1_zip, tmp_path)
    np.testing.assert_array_equal(rebuilt.rotations, data.rotations)


def test_cache_key_changes_with_content(bandai_files, tmp_path):
    folder = bandai_files / "folder"
    key = cache_path(folder, tmp_path).name
    victim = sorted(folder.rglob("*.bvh"))[0]
    original = victim.read_bytes()
    try:
        victim.write_bytes(original.replace(b"Frame Time", b"Frame  Time", 1))
        assert cache_path(folder, tmp_path).name != key
    finally:
        victim.write_bytes(original)
    assert cache_path(folder, tmp_path).name == key


def test_mixed_skeletons_are_refused(mocap, bandai_files):
    bandai = read_motions(bandai_files / "set.zip")[:1]
    cmu = read_motions(mocap / "cmu-01_01.bvh")
    with pytest.raises(DataError, match="cmu-01_01: its joints differ"):
        motion_set(bandai + cmu)
