"""BVH reading and writing: every file of the shared motion capture, and hand-written files.

The archives are read in place with ``zipfile``; nothing is extracted into the repository.
Parsed values are checked against a tiny independent reading of the same text (channel names by
regular expression, rotations as explicit matrix products) and against write-then-read.
"""

import re
import zipfile

import numpy as np
import pytest

from inference import quat
from inference.bvh import format_bvh, parse_bvh, read_bvh, write_bvh
from inference.motion import height
from rotations import euler_matrix

# (file in shared/mocap, files, frames in all, joints, fps, rotation order, channels per joint)
SOURCES = {
    "lafan1": ("lafan1-27.zip", 27, 125_493, 22, 30.0, "ZYX", {6, 3}),
    "bandai": ("bandai1.zip", 174, 31_914, 22, 30.0, "ZXY", {6}),
    "dog": ("dog-mann.zip", 46, 96_221, 21, 60.0, "ZXY", {6, 3}),
    "cmu": ("cmu-01_01.bvh", 1, 2_752, 31, 120.0, "ZYX", {6, 3}),
}


def source_files(mocap, file):
    """(name, bytes) of every BVH file of one source, read in place."""
    path = mocap / file
    if path.suffix == ".bvh":
        yield path.name, path.read_bytes()
        return
    with zipfile.ZipFile(path) as archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if info.filename.lower().endswith(".bvh"):
                yield info.filename, archive.read(info)


def naive_read(text):
    """Channel lists, End Site offsets and the motion table, by regular expression and split()."""
    head, _, body = re.split(r"^\s*(MOTION)\s*$", text, maxsplit=1, flags=re.M)
    channels = [m[1].split() for m in re.finditer(r"CHANNELS\s+\d+([^\r\n]*)", head)]
    ends = [[float(v) for v in m.groups()] for m in re.finditer(
        r"End Site\s*\{\s*OFFSET\s+(\S+)\s+(\S+)\s+(\S+)", head)]
    lines = body.strip().splitlines()
    frames = int(lines[0].split(":")[1])
    table = np.array(" ".join(lines[2:]).split(), dtype=float).reshape(frames, -1)
    return channels, np.array(ends), table


def check_against_text(motion, text):
    """Positions equal the file's numbers; rotations are the matrix product of its angles."""
    channels, ends, table = naive_read(text)
    assert [list(c) for c in motion.skeleton.channels] == channels
    assert np.array_equal(np.array([o for _, o in motion.skeleton.end_sites]).reshape(-1, 3), ends.reshape(-1, 3))
    col = 0
    for j, chans in enumerate(channels):
        rot = [k for k, c in enumerate(chans) if c.endswith("rotation")]
        pos = [k for k, c in enumerate(chans) if c.endswith("position")]
        values = table[:, col:col + len(chans)]
        if rot:
            order = "".join(chans[k][0] for k in rot)
            expected = euler_matrix(np.radians(values[:, rot]), order)
            assert np.abs(quat.to_matrix(motion.rotations[:, j]) - expected).max() < 1e-12
        else:
            assert np.array_equal(motion.rotations[:, j], np.tile([1.0, 0, 0, 0], (motion.n_frames, 1)))
        if pos:
            by_axis = {chans[k][0]: values[:, k] for k in pos}
            assert np.array_equal(motion.positions[:, j], np.stack([by_axis[a] for a in "XYZ"], -1))
        else:
            assert np.array_equal(motion.positions[:, j], np.tile(motion.skeleton.offsets[j], (motion.n_frames, 1)))
        col += len(chans)
    assert col == table.shape[1]


def check_round_trip(motion, again, tol=1e-6):
    """``again`` is ``motion`` written and read back: same skeleton and rate, values to ``tol``."""
    a, b = motion.skeleton, again.skeleton
    assert a.names == b.names and np.array_equal(a.parents, b.parents) and a.channels == b.channels
    assert np.abs(a.offsets - b.offsets).max(initial=0) <= tol
    assert [j for j, _ in a.end_sites] == [j for j, _ in b.end_sites]
    for (_, x), (_, y) in zip(a.end_sites, b.end_sites):
        assert np.abs(x - y).max() <= tol
    assert again.n_frames == motion.n_frames
    assert again.fps == pytest.approx(motion.fps, rel=1e-7)
    sign = np.where(np.sum(motion.rotations * again.rotations, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    rot_err = np.abs(motion.rotations - sign * again.rotations).max()
    pos_err = np.abs(motion.positions - again.positions).max()
    assert rot_err <= tol and pos_err <= tol, (rot_err, pos_err)
    return rot_err, pos_err


# --- every file of every source -----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES)
def test_every_file_reads_and_writes_back(mocap, source):
    file, n_files, n_frames, n_joints, fps, order, layouts = SOURCES[source]
    files = frames = 0
    worst = [0.0, 0.0]
    for k, (name, data) in enumerate(source_files(mocap, file)):
        motion = parse_bvh(data, name)
        text = data.decode()
        files += 1
        frames += motion.n_frames
        sk = motion.skeleton
        assert (len(sk), motion.fps, motion.up) == (n_joints, fps, "Y"), name
        assert motion.name == name.rsplit("/", 1)[-1][:-4]
        assert {len(c) for c in sk.channels} == layouts, name
        assert {"".join(c[0] for c in chans if c.endswith("rotation")) for chans in sk.channels} == {order}
        assert sk.channels[0][:3] == ("Xposition", "Yposition", "Zposition")
        # an End Site on every leaf joint, as many as the file declares
        leaves = [j for j in range(len(sk)) if not sk.children(j)]
        assert sorted(j for j, _ in sk.end_sites) == leaves
        assert len(sk.end_sites) == text.count("End Site")
        assert np.allclose(np.linalg.norm(motion.rotations, axis=-1), 1.0, atol=1e-12)
        if k < 2:  # the independent reading is slow; two files of each source, every frame
            check_against_text(motion, text)

        again = parse_bvh(format_bvh(motion), name)
        for k, err in enumerate(check_round_trip(motion, again)):
            worst[k] = max(worst[k], err)
    assert (files, frames) == (n_files, n_frames)
    print(f"\n{source}: {files} files, {frames} frames; write-then-read max |dq| {worst[0]:.1e}, "
          f"max |dp| {worst[1]:.1e}")


def test_cmu_has_zero_length_bones_and_its_own_units(mocap):
    motion = read_bvh(mocap / "cmu-01_01.bvh")
    sk = motion.skeleton
    zero = [sk.names[j] for j in range(1, len(sk)) if not np.any(sk.offsets[j])]
    assert {"LHipJoint", "RHipJoint"} <= set(zero)
    world = motion.global_transforms()[1]
    for j in range(1, len(sk)):
        if not np.any(sk.offsets[j]):
            assert np.abs(world[:, j] - world[:, sk.parents[j]]).max() < 1e-12
    assert 20 < height(world) < 30  # not centimetres


def test_lafan1_is_crlf_with_tabs(lafan1_zip):
    with zipfile.ZipFile(lafan1_zip) as archive:
        data = archive.read("push1_subject2.bvh")
    assert b"\r\n" in data and b"\t" in data
    motion = parse_bvh(data, "push1_subject2.bvh")
    assert motion.n_frames == data.count(b"\n") - data[:data.index(b"Frame Time")].count(b"\n") - 1


# --- hand-written files -------------------------------------------------------------------------

SIX_ORDERS = """HIERARCHY
ROOT Root
{
  OFFSET 1.5 -2 3
  CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation
  JOINT J_XYZ
  {
    OFFSET 0 10 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    JOINT J_XZY
    {
      OFFSET 0 0 8
      CHANNELS 3 Xrotation Zrotation Yrotation
      JOINT J_YXZ
      {
        OFFSET 7 0 0
        CHANNELS 3 Yrotation Xrotation Zrotation
        JOINT J_YZX
        {
          OFFSET 0 -6 1
          CHANNELS 3 Yrotation Zrotation Xrotation
          JOINT J_ZXY
          {
            OFFSET 2 2 2
            CHANNELS 3 Zrotation Xrotation Yrotation
            End Site
            {
              OFFSET 0 0 4
            }
          }
          JOINT J_ZYX
          {
            OFFSET -3 1 0
            CHANNELS 3 Zrotation Yrotation Xrotation
            End Site
            {
              OFFSET 0 5 0
            }
          }
        }
      }
    }
  }
}
MOTION
Frames: 4
Frame Time: 0.0416667
"""


def six_order_text(rng):
    angles = rng.uniform(-180, 180, (4, 24))
    angles[:, :3] = rng.uniform(-50, 50, (4, 3))  # root position
    angles[1, 3:] = 0.0                            # a rest frame
    angles[2, 4::3] = 90.0                         # every middle angle at gimbal lock
    angles[3, 4::3] = -90.0
    rows = "\n".join(" ".join(f"{v:.6f}" for v in row) for row in angles)
    return SIX_ORDERS + rows + "\n", np.round(angles, 6)


def matrix_fk(text_channels, offsets, parents, table):
    """World positions of every joint by 4x4 matrix products of the file's numbers."""
    frames = table.shape[0]
    world = np.zeros((frames, len(parents), 3))
    col = 0
    mats = []
    for j, chans in enumerate(text_channels):
        local = np.tile(np.eye(4), (frames, 1, 1))
        values = table[:, col:col + len(chans)]
        local[:, :3, 3] = offsets[j]
        rot = [k for k, c in enumerate(chans) if c.endswith("rotation")]
        if rot:
            local[:, :3, :3] = euler_matrix(np.radians(values[:, rot]), "".join(chans[k][0] for k in rot))
        for k, c in enumerate(chans):
            if c.endswith("position"):
                local[:, "XYZ".index(c[0]), 3] = values[:, k]
        mats.append(local if parents[j] < 0 else mats[parents[j]] @ local)
        world[:, j] = mats[j][:, :3, 3]
        col += len(chans)
    return world


def test_each_of_the_six_rotation_orders():
    text, table = six_order_text(np.random.default_rng(3))
    motion = parse_bvh(text, "six.bvh")
    sk = motion.skeleton
    assert sk.names == ("Root", "J_XYZ", "J_XZY", "J_YXZ", "J_YZX", "J_ZXY", "J_ZYX")
    assert list(sk.parents) == [-1, 0, 1, 2, 3, 4, 4]
    assert [j for j, _ in sk.end_sites] == [5, 6]
    assert motion.fps == 24.0
    check_against_text(motion, text)
    assert np.abs(quat.to_matrix(motion.rotations[1]) - np.eye(3)).max() == 0  # the rest frame
    channels, _, _ = naive_read(text)
    world = matrix_fk(channels, sk.offsets, sk.parents, table)
    assert np.abs(motion.global_transforms()[1] - world).max() < 1e-10

    written = format_bvh(motion)
    for name, order in zip(sk.names[1:], ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")):
        assert re.search(rf"JOINT {name}\s*\{{\s*OFFSET [^\n]*\n\s*CHANNELS 3 "
                         rf"{order[0]}rotation {order[1]}rotation {order[2]}rotation\n", written)
    again = parse_bvh(written, "six-again.bvh")
    check_round_trip(motion, again)
    assert np.abs(again.global_transforms()[1] - world).max() < 1e-5


def test_line_endings_tabs_and_spacing_do_not_matter():
    text, _ = six_order_text(np.random.default_rng(4))
    reference = parse_bvh(text, "lf.bvh")
    variants = {
        "crlf": text.replace("\n", "\r\n"),
        "cr": text.replace("\n", "\r"),
        "tabs": re.sub(r"^ +", lambda m: "\t" * (len(m[0]) // 2), text, flags=re.M),
        "tabs between words": text.replace(" ", "\t"),
        "crlf, tabs, trailing blanks": re.sub(r"\n", " \t\r\n", text.replace("  ", "\t")),
        "blank lines": text.replace("\n", "\n\n"),
        "lower case keywords": re.sub(r"\b(HIERARCHY|ROOT|JOINT|OFFSET|CHANNELS|MOTION)\b",
                                      lambda m: m[0].lower(), text).replace("End Site", "end site"),
        "lower case channels": re.sub(r"([XYZ])(rotation|position)", lambda m: m[1].lower() + m[2], text),
        "bytes with a final line without newline": text.rstrip("\n").encode(),
    }
    for label, variant in variants.items():
        motion = parse_bvh(variant, "variant.bvh")
        assert motion.skeleton.names == reference.skeleton.names, label
        assert motion.skeleton.channels == reference.skeleton.channels, label
        assert np.array_equal(motion.rotations, reference.rotations), label
        assert np.array_equal(motion.positions, reference.positions), label
        assert len(motion.skeleton.end_sites) == 2, label


MIXED = """HIERARCHY
ROOT hips
{
\tOFFSET 0 90 0
\tCHANNELS 6 Zrotation Xrotation Yrotation Yposition Zposition Xposition
\tJOINT spine
\t{
\t\tOFFSET 0 0 0
\t\tCHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation
\t\tJOINT chest
\t\t{
\t\t\tOFFSET 0 0 0
\t\t\tCHANNELS 3 Zposition Xposition Yposition
\t\t\tJOINT Left Hand
\t\t\t{
\t\t\t\tOFFSET 10 0 0
\t\t\t\tCHANNELS 0
\t\t\t\tEnd Site
\t\t\t\t{
\t\t\t\t\tOFFSET 5 0 0
\t\t\t\t}
\t\t\t}
\t\t}
\t\tJOINT neck
\t\t{
\t\t\tOFFSET 0 20 0
\t\t\tCHANNELS 3 Yrotation Xrotation Zrotation
\t\t\tEnd Site
\t\t\t{
\t\t\t\tOFFSET 0 0 0
\t\t\t}
\t\t}
\t}
}
MOTION
Frames: 3
Frame Time: 0.0123
10 20 30 1 2 3 4 5 6 7 8 9 -1 -2 -3 40 50 60
0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
-170 89.5 179 1e2 2.5E-1 -0 1 1 1 90 90 90 3 2 1 0.5 -0.5 0
"""


def test_three_six_and_no_channel_joints_in_any_order():
    motion = parse_bvh(MIXED, "mixed.bvh")
    sk = motion.skeleton
    assert sk.names == ("hips", "spine", "chest", "Left Hand", "neck")
    assert [len(c) for c in sk.channels] == [6, 6, 3, 0, 3]
    assert motion.fps == pytest.approx(1 / 0.0123) and motion.fps != round(motion.fps)
    check_against_text(motion, MIXED)
    # the root's position channels come after its rotations, in the order Y Z X
    assert np.array_equal(motion.positions[:, 0], [[3, 1, 2], [0, 0, 0], [-0.0, 100, 0.25]])
    assert np.array_equal(motion.positions[:, 2], [[-2, -3, -1], [0, 0, 0], [2, 1, 3]])
    assert np.array_equal(motion.rotations[:, 2], np.tile([1.0, 0, 0, 0], (3, 1)))   # position-only joint
    assert np.array_equal(motion.positions[:, 3], np.tile([10.0, 0, 0], (3, 1)))      # no channels at all
    channels, _, table = naive_read(MIXED)
    world = matrix_fk(channels, sk.offsets, sk.parents, table)
    assert np.abs(motion.global_transforms()[1] - world).max() < 1e-10
    again = parse_bvh(format_bvh(motion), "mixed-again.bvh")
    check_round_trip(motion, again)
    assert again.skeleton.channels[3] == ()


def test_zero_length_bones_write_and_read_back():
    motion = parse_bvh(MIXED, "mixed.bvh")
    world = motion.global_transforms()[1]
    # spine sits on the hips plus its own translation channels; chest on spine plus its own
    assert np.allclose(world[:, 1], world[:, 0] + [
        quat.rotate(motion.global_transforms()[0][f, 0], motion.positions[f, 1]) for f in range(3)])
    text = format_bvh(motion)
    assert text.count("OFFSET 0.000000 0.000000 0.000000") == 3  # spine, chest, neck's End Site
    check_round_trip(motion, parse_bvh(text, "again.bvh"))


@pytest.mark.parametrize("frame_time, fps", [
    ("0.033333", 30.0), ("0.0333333", 30.0), ("0.0083333", 120.0), ("0.0166667", 60.0),
    ("0.0416667", 24.0), ("0.04", 25.0), ("0.1", 10.0), ("1", 1.0), ("2.5", 0.4),
    ("0.0123", 1 / 0.0123), ("0.0333667", 1 / 0.0333667), ("0.011", 1 / 0.011), ("1e-3", 1000.0),
])
def test_frame_rates(frame_time, fps):
    text = MIXED.replace("Frame Time: 0.0123", f"Frame Time: {frame_time}")
    motion = parse_bvh(text, "rate.bvh")
    assert motion.fps == pytest.approx(fps, rel=1e-12)
    again = parse_bvh(format_bvh(motion), "rate-again.bvh")
    assert again.fps == pytest.approx(fps, rel=1e-7)
    assert again.fps == motion.fps or again.fps != round(again.fps)


def test_write_bvh_and_read_bvh(tmp_path):
    motion = parse_bvh(MIXED, "mixed.bvh")
    path = tmp_path / "out.bvh"
    write_bvh(motion, path)
    assert [p.name for p in tmp_path.iterdir()] == ["out.bvh"]  # no temporary left behind
    again = read_bvh(path)
    assert again.name == "out"
    check_round_trip(motion, again)
    write_bvh(again.frames(0, 1), path)  # overwrites
    assert read_bvh(path).n_frames == 1


def test_precision_argument():
    motion = parse_bvh(MIXED, "mixed.bvh")
    text = format_bvh(motion, precision=2)
    assert "OFFSET 0.00 90.00 0.00" in text
    data = text.split("Frame Time:")[1].splitlines()[1:]
    assert all(re.fullmatch(r"(-?\d+\.\d\d ?)+", line) for line in data)
    check_round_trip(motion, parse_bvh(text, "coarse.bvh"), tol=1e-2)


def test_written_text_is_a_plain_bvh():
    motion = parse_bvh(MIXED, "mixed.bvh")
    text = format_bvh(motion)
    lines = text.splitlines()
    assert lines[0] == "HIERARCHY" and lines[1] == "ROOT hips"
    assert "MOTION" in lines and "Frames: 3" in lines and "Frame Time: 0.01230000" in lines
    assert len(lines) == lines.index("MOTION") + 3 + 3
    assert text.endswith("\n") and "\r" not in text
    assert "\tJOINT Left Hand" in text
