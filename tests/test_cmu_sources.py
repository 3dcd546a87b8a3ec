"""An archive that holds several skeletons (CMU's, gathered from three converters) trains one model: its
clips grouped by skeleton, the bind pose its converters start with dropped, every group brought onto the
most common one, limb by limb."""

import zipfile

import numpy as np
import pytest

from inference.anatomy import stance_joints
from inference.errors import DataError
from lab.dataset import bvh_members, layouts, load_sources, read_motions, without_bind_pose

MB = ("motion-viewer/data/09/09_02.bvh", "motion-viewer/data/09/09_03.bvh")   # 31 joints, Hips, LeftUpLeg, ...
DAZ = "przestr-motion-capture/data/13/13_40.bvh"                              # 43 joints, hip, lThigh, no toes
ASF = "przestr-motion-capture/data/16/16_01.bvh"                              # 31 joints, hip, lfemur, ltoes


@pytest.fixture(scope="module")
def archive(mocap, tmp_path_factory):
    """Four of the CMU clips, in three skeletons, as one archive."""
    path = tmp_path_factory.mktemp("cmu") / "cmu-four.zip"
    with zipfile.ZipFile(mocap / "cmu-30fps.zip") as source, zipfile.ZipFile(path, "w") as out:
        for name in (*MB, DAZ, ASF):
            out.writestr(name, source.read(name))
    return path


@pytest.fixture(scope="module")
def joined(archive, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    return load_sources([archive], cache), cache


def member(archive, name):
    return f"{archive}:{name}"


def knee_angles(motion, hip, knee, foot):
    """The knee's bend (degrees) per frame, from the three joints' world positions."""
    _, world = motion.global_transforms()
    names = motion.skeleton.names
    a = world[:, names.index(knee)] - world[:, names.index(hip)]
    b = world[:, names.index(foot)] - world[:, names.index(knee)]
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def test_clips_grouped_by_skeleton_the_most_common_first(archive):
    found = layouts(archive)
    assert [len(sk.names) for sk, _ in found] == [31, 43, 31]
    assert found[0][1] == tuple(member(archive, n) for n in MB)
    assert found[0][0].names[:3] == ("Hips", "LHipJoint", "LeftUpLeg") and found[2][0].names[2] == "lfemur"


def test_every_clip_on_the_most_common_skeleton_less_its_bind_pose(archive, joined):
    data, cache = joined
    assert data.skeleton.names[:3] == ("Hips", "LHipJoint", "LeftUpLeg") and len(data.names) == 4
    raw = {m.name: m.n_frames for m in read_motions(archive)}
    frames = dict(zip(data.names, np.diff(data.starts)))
    # the MotionBuilder and Daz conversions start with a T-pose, the ASF one does not
    assert [raw[n] - frames[n] for n in ("09_02", "09_03", "13_40", "16_01")] == [1, 1, 1, 0]
    assert len(list(cache.iterdir())) == 3                      # one cache per skeleton
    again = load_sources([archive], cache)
    assert again.names == data.names and np.array_equal(again.rotations, data.rotations)
    assert len(list(cache.iterdir())) == 3


def test_the_other_skeletons_limbs_move_as_their_own(archive, joined):
    """Retargeted limb by limb: each knee bends as it did on its own skeleton (a leg left in the natural
    pose, or mapped onto an arm, would not), and the feet stand on the floor the MotionBuilder clips
    stand on."""
    data, _ = joined
    source = {m.name: without_bind_pose(m) for m in read_motions(archive)}
    legs = {"13_40": ("lThigh", "lShin", "lFoot"), "16_01": ("lfemur", "ltibia", "lfoot")}
    floors = {}
    for i, name in enumerate(data.names):
        clip = data.clip(i)
        if name in legs:
            theirs = knee_angles(source[name], *legs[name])
            ours = knee_angles(clip, "LeftUpLeg", "LeftLeg", "LeftFoot")
            assert np.ptp(theirs) > 30 and np.abs(ours - theirs).max() < 1.0   # measured: 0.00
        _, world = clip.global_transforms()
        floors[name] = np.percentile(world[:, stance_joints(clip.skeleton), 1].min(axis=1), 5)
    height = 17.0                                               # CMU units (1/0.45 inch) to the hips, about 1 m
    assert all(abs(floors[n] - floors["09_02"]) < 0.05 * height for n in floors), floors


def test_a_skeleton_whose_legs_do_not_map_is_refused_by_name(archive, tmp_path):
    with zipfile.ZipFile(archive) as source:
        text = source.read(ASF).decode()
    bad = tmp_path / "cmu-unnamed.zip"
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(bad, "w") as out:
        out.writestr(MB[0], source.read(MB[0]))
        out.writestr(ASF, text.replace("lfemur", "bone7").replace("ltibia", "bone8"))
    with pytest.raises(DataError, match=r"16_01.*'LeftUpLeg', 'LeftLeg'"):
        load_sources([bad], tmp_path / "cache")


def test_capture_without_a_bind_pose_keeps_every_frame(lafan1_zip, mocap):
    clips = read_motions(lafan1_zip, names=[f"{lafan1_zip}:{n}" for n in ("obstacles1_subject5.bvh", "dance1_subject1.bvh")])
    bandai = mocap / "bandai1.zip"
    clips += read_motions(bandai, names=[n for n, _ in bvh_members(bandai)][:8])   # 8 of its 174
    assert len(clips) == 10
    assert all(without_bind_pose(m).n_frames == m.n_frames for m in clips)
