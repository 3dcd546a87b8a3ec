"""Bad BVH input: every failure is a BVHError naming the file and the right line, nothing else.

Hand-made cases pin the line number of each kind of mistake; hypothesis then generates random valid
files (which must parse and write back) and mutates them (which must parse or raise BVHError).
"""

import errno
import itertools
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference import quat
from inference.bvh import format_bvh, parse_bvh, read_bvh
from inference.errors import BetwixtError, BVHError
from rotations import euler_matrix

# Line numbers in the comments: the cases below refer to them.
GOOD = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 10 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 5 0
\t\t}
\t}
}
MOTION
Frames: 3
Frame Time: 0.033333
1 2 3 4 5 6 7 8 9
1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 9.5
-1 -2 -3 -4 -5 -6 -7 -8 -9
"""
#  1 HIERARCHY            8 OFFSET 0 10 0        15 }                   19..21 data
#  2 ROOT Hips            9 CHANNELS 3 ...       16 MOTION
#  3 {                   10 End Site             17 Frames: 3
#  4 OFFSET 0 0 0        11 {                    18 Frame Time: 0.033333
#  5 CHANNELS 6 ...      12 OFFSET 0 5 0
#  6 JOINT Spine         13 }
#  7 {                   14 }

LINES = GOOD.splitlines()


def with_line(number, text):
    """GOOD with line ``number`` (1-based) replaced; ``None`` deletes it."""
    lines = list(LINES)
    if text is None:
        del lines[number - 1]
    else:
        lines[number - 1] = text
    return "\n".join(lines) + "\n"


def first_lines(n):
    return "\n".join(LINES[:n]) + "\n"


def check_error(error, source, line):
    assert type(error) is BVHError and isinstance(error, BetwixtError)
    assert error.path == source and source in str(error)
    assert error.line == line, str(error)
    if line is not None:
        assert f"line {line}:" in str(error)


def expect_error(text, line, match=None, source="bad.bvh"):
    with pytest.raises(BVHError) as info:
        parse_bvh(text, source)
    check_error(info.value, source, line)
    if match:
        assert re.search(match, str(info.value), re.I), str(info.value)
    return info.value


def test_the_good_file_is_good():
    motion = parse_bvh(GOOD, "good.bvh")
    assert motion.n_frames == 3 and len(motion.skeleton) == 2 and motion.fps == 30.0
    assert len(LINES) == 21


# --- truncation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cut", range(1, 16))
def test_truncated_in_the_hierarchy(cut):
    """Cut after any whole line of the hierarchy: the error is at the last line there is."""
    expect_error(first_lines(cut), cut, "truncated|ends")


@pytest.mark.parametrize("text, line", [
    ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 1", 4),             # in the middle of an OFFSET
    ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Ypos", 5),
    ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS", 5),
    ("HIERARCHY\nROOT", 2),
])
def test_truncated_mid_line_in_the_hierarchy(text, line):
    expect_error(text, line)


@pytest.mark.parametrize("cut, match", [
    (16, "Frames"), (17, "Frame Time"), (18, "0 of the 3 frames"), (19, "1 of the 3"), (20, "2 of the 3")])
def test_truncated_in_the_motion(cut, match):
    expect_error(first_lines(cut), cut, match)


def test_truncated_mid_data_line():
    text = first_lines(20) + "-1 -2 -3 -"
    expect_error(text, 21, "frame 2 has 4 values")


def test_truncated_mid_data_line_in_bytes(lafan1_zip):
    """A real file cut at an arbitrary byte: the error is at the last (partial) line."""
    with zipfile.ZipFile(lafan1_zip) as archive:
        data = archive.read("push1_subject2.bvh")
    last_line = data.rindex(b"\n", 0, len(data) - 2) + 1
    middle = data.index(b"\n", len(data) // 2) + 1
    for cut in (len(data) // 2, middle, middle + 40, (last_line + len(data)) // 2,
                data.index(b"MOTION") + 3, data.index(b"Frame Time") + 4):
        part = data[:cut]
        lines = part.decode().splitlines()
        error = expect_error(part, len(lines), source="push1_subject2.bvh")
        assert re.search("truncated|has [0-9]+ values|Frames: N|Frame Time: SECONDS|unexpected 'MOT'", str(error)), str(error)


# --- malformed hierarchy ------------------------------------------------------------------------

@pytest.mark.parametrize("number, text, line, match", [
    (1, "HIERARCH", 1, "HIERARCHY"),
    (1, "", 2, "HIERARCHY"),
    (2, "JOINT Hips", 2, "not allowed"),
    (2, "ROOT", 2, "no name"),
    (3, "(", 3, "expected '{'"),
    (3, None, 3, "expected '{'"),                       # line 4 moves up to 3
    (4, "\tOFFSET 0 0", 5, "number"),                  # CHANNELS taken for the third number
    (4, "\tOFFSET 0 zero 0", 4, "'zero'"),
    (4, "\tOFFSET 0 nan 0", 4, "finite"),
    (4, "\tOFFSET 0 inf 0", 4, "finite"),
    (4, "\tOFFSETS 0 0 0", 4, "expected 'OFFSET'"),
    (5, "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Wrotation", 5, "'Wrotation'"),
    (5, "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation", 5, "nothing more"),
    (5, "\tCHANNELS 5 Xposition Yposition Zposition Zrotation Xrotation Yrotation", 5, "lists more"),
    (5, "\tCHANNELS six Xposition Yposition Zposition Zrotation Xrotation Yrotation", 5, "whole number"),
    (5, "\tCHANNELS -6 Xposition Yposition Zposition Zrotation Xrotation Yrotation", 5, "whole number"),
    (5, "\tCHANNELS ² Xposition Yposition Zposition Zrotation Xrotation Yrotation", 5, "whole number"),
    (5, "\tCHANNELS 6 Xposition Xposition Zposition Zrotation Xrotation Yrotation", 5, "position"),
    (5, "\tCHANNELS 2 Xposition Zrotation", 5, "needs none or all three"),
    (5, "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Xrotation", 5, "rotation"),
    (5, "\tCHANNEL 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation", 5, "expected 'CHANNELS'"),
    (6, "\tROOT Spine", 6, "second ROOT"),
    (6, "\tJOINT Hips", 6, "declared twice"),
    (6, "\tBONE Spine", 6, "unexpected 'BONE'"),
    (10, "\t\tEnd Sight", 10, "expected 'Site'"),
    (12, "\t\t\tOFFSET 0 5", 13, "number"),
    (13, "\t\t]", 13, "expected '}'"),
    (15, None, 15, "before joint 'Hips' is closed"),   # MOTION moves up to 15
    (15, "}\n}", 16, "closes nothing"),
])
def test_malformed_hierarchy(number, text, line, match):
    expect_error(with_line(number, text), line, match)


def test_end_site_outside_a_joint():
    text = GOOD.replace("HIERARCHY\n", "HIERARCHY\nEnd Site\n{\nOFFSET 0 0 0\n}\n", 1)
    expect_error(text, 2, "outside|not allowed|unexpected")


def test_no_root():
    expect_error("HIERARCHY\nMOTION\nFrames: 1\nFrame Time: 0.1\n\n", 2, "no ROOT")


# --- malformed motion header --------------------------------------------------------------------

@pytest.mark.parametrize("number, text, line, match", [
    (17, "Frames: 0", 17, "empty"),
    (17, "Frames:", 17, "whole number"),
    (17, "Frames: -3", 17, "whole number"),
    (17, "Frames: 2.5", 17, "whole number"),
    (17, "Frames: three", 17, "whole number"),
    (17, "Frames: ³", 17, "whole number"),
    (17, "Frame: 3", 17, "Frames: N"),
    (17, None, 17, "Frames: N"),                       # Frame Time where Frames should be
    (18, "Frame Time: 0", 18, "positive"),
    (18, "Frame Time: -0.03", 18, "positive"),
    (18, "Frame Time: nan", 18, "positive"),
    (18, "Frame Time: inf", 18, "positive"),
    (18, "Frame Time: 1e-320", 18, "positive|finite|rate"),  # 1 / 1e-320 overflows to inf fps
    (18, "Frame Time: 0.03 s", 18, "number of seconds"),
    (18, "Frame Time:", 18, "number of seconds"),
    (18, "FrameTime: 0.03", 18, "Frame Time: SECONDS"),
])
def test_malformed_motion_header(number, text, line, match):
    expect_error(with_line(number, text), line, match)


def test_frames_zero_with_no_data():
    text = first_lines(16) + "Frames: 0\nFrame Time: 0.033333\n"
    expect_error(text, 17, "empty")


# --- malformed motion data ----------------------------------------------------------------------

@pytest.mark.parametrize("number, text, match", [
    (19, "1 2 3 4 5 6 7 8", "frame 0 has 8 values"),
    (20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 9.5 10.5", "frame 1 has 10 values"),
    (21, "", "ends after 2 of the 3"),
    (20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 nan", "finite"),
    (20, "1.5 2.5 3.5 4.5 NaN 6.5 7.5 8.5 9.5", "finite"),
    (19, "inf 2 3 4 5 6 7 8 9", "finite"),
    (21, "-1 -2 -3 -4 -5 -6 -7 -8 -inf", "finite"),
    (20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 1e999", "finite"),
    (20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 9,5", "'9,5' is not a number"),
    (20, "1.5 2.5 3.5 4.5 five 6.5 7.5 8.5 9.5", "'five' is not a number"),
    (20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5 9.5\x00", "not a number"),
])
def test_malformed_data_line(number, text, match):
    expect_error(with_line(number, text), number, match)


def test_more_frames_than_declared():
    expect_error(GOOD + "0 0 0 0 0 0 0 0 0\n", 22, "more motion data")


def test_short_line_then_long_line():
    """The total count is right, but frame 1 lost a value to frame 2: never read silently shifted."""
    text = with_line(20, "1.5 2.5 3.5 4.5 5.5 6.5 7.5 8.5")
    text = text.replace("-1 -2 -3", "9.5 -1 -2 -3")
    assert len(text.split("Frame Time: 0.033333")[1].split()) == 27
    expect_error(text, 20, "frame 1 has 8 values")


def test_frame_spread_over_two_lines():
    text = with_line(19, "1 2 3 4 5\n6 7 8 9")
    expect_error(text, 19, "frame 0 has 5 values")


# --- files that are no BVH at all ---------------------------------------------------------------

def test_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "missing.bvh"
    with pytest.raises(BVHError) as info:
        read_bvh(path)
    check_error(info.value, str(path), None)
    assert "cannot read" in str(info.value)


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(BVHError) as info:
        read_bvh(tmp_path)
    check_error(info.value, str(tmp_path), None)


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "locked.bvh"
    path.write_text(GOOD)
    path.chmod(0)
    if os.name != "posix" or os.geteuid() == 0:   # root (as CI runs) reads whatever the mode: the OS's refusal
        def refused(self):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        monkeypatch.setattr(Path, "read_bytes", refused)
    try:
        with pytest.raises(BVHError) as info:
            read_bvh(path)
    finally:
        path.chmod(0o644)
    check_error(info.value, str(path), None)
    assert "permission" in str(info.value).lower()


def test_empty_file(tmp_path):
    path = tmp_path / "empty.bvh"
    path.write_bytes(b"")
    with pytest.raises(BVHError) as info:
        read_bvh(path)
    check_error(info.value, str(path), None)
    expect_error("   \n\n", None, "HIERARCHY")


def test_binary_garbage(tmp_path):
    rng = np.random.default_rng(0)
    for k in range(20):
        path = tmp_path / f"garbage{k}.bvh"
        path.write_bytes(rng.integers(0, 256, 2000, dtype=np.uint8).tobytes())
        with pytest.raises(BVHError) as info:
            read_bvh(path)
        assert str(path) in str(info.value)
        assert "not a text file" in str(info.value) or "HIERARCHY" in str(info.value)


def test_binary_garbage_after_good_lines_names_its_line():
    data = first_lines(5).encode() + b"\x89PNG\r\n\x1a\n\x00\x00\xff\xd8\xff"
    expect_error(data, 6, "not a text file")
    # and a zip archive handed over as a BVH file
    expect_error(b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x9f\xa3\xe8", 1, "not a text file|HIERARCHY")


def test_ascii_garbage():
    expect_error("\n\n<html><body>404 Not Found</body></html>\n", 3, "HIERARCHY")
    expect_error("\x00\x01\x02\x03", 1, "HIERARCHY")


def test_utf8_byte_order_mark_is_accepted():
    """Windows editors save UTF-8 with a byte-order mark; the file is still a BVH file."""
    motion = parse_bvh(b"\xef\xbb\xbf" + GOOD.encode(), "bom.bvh")
    assert motion.n_frames == 3


def test_utf16_is_refused_with_a_clear_error():
    expect_error(GOOD.encode("utf-16"), 1, "not a text file")


# --- property-based: random valid files, and random damage to them ------------------------------

ORDERS = ["".join(p) for p in itertools.permutations("XYZ")]
numbers = st.one_of(
    st.floats(-500, 500, allow_nan=False).map(lambda v: round(v, 4)),
    st.sampled_from([0.0, 90.0, -90.0, 180.0, -180.0, 1e-5, 360.0]),
)


@st.composite
def bvh_files(draw):
    """A random valid BVH text and what it must parse to: names, parents, channels, table."""
    n = draw(st.integers(1, 6))
    parents = [-1] + [draw(st.integers(0, j - 1)) for j in range(1, n)]
    names = [f"{draw(st.sampled_from(['j', 'Left', 'b.1', 'x-y', 'Neck_']))}{j}" for j in range(n)]
    channels = []
    for j in range(n):
        kind = draw(st.sampled_from(["rot", "pos", "six", "none"] if j else ["rot", "six"]))
        rot = [f"{a}rotation" for a in draw(st.sampled_from(ORDERS))]
        pos = [f"{a}position" for a in draw(st.sampled_from(ORDERS))]
        chans = {"rot": rot, "pos": pos, "six": draw(st.permutations(rot + pos)), "none": []}[kind]
        channels.append(list(chans))
    offsets = draw(st.lists(st.tuples(numbers, numbers, numbers), min_size=n, max_size=n))
    end_sites = {j: draw(st.tuples(numbers, numbers, numbers))
                 for j in range(n) if j not in parents and draw(st.booleans())}
    frames = draw(st.integers(1, 4))
    width = sum(len(c) for c in channels)
    table = np.array(draw(st.lists(numbers, min_size=frames * width, max_size=frames * width)),
                     dtype=float).reshape(frames, width)
    frame_time = draw(st.sampled_from(["0.033333", "0.0083333", "0.1", "1", "0.0123", "2e-2"]))
    sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
    indent = draw(st.sampled_from(["\t", "  ", ""]))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))

    out = ["HIERARCHY"]

    def joint(j, depth):
        pad = indent * depth
        out.append(f"{pad}{'ROOT' if j == 0 else 'JOINT'}{sep}{names[j]}")
        out.append(pad + "{")
        out.append(f"{pad}{indent}OFFSET{sep}" + sep.join(repr(v) for v in offsets[j]))
        out.append(f"{pad}{indent}CHANNELS{sep}{len(channels[j])}" + "".join(sep + c for c in channels[j]))
        for c in range(n):
            if parents[c] == j:
                joint(c, depth + 1)
        if j in end_sites:
            out.extend([f"{pad}{indent}End Site", f"{pad}{indent}{{",
                        f"{pad}{indent * 2}OFFSET{sep}" + sep.join(repr(v) for v in end_sites[j]),
                        f"{pad}{indent}}}"])
        out.append(pad + "}")

    joint(0, 0)  # depth first, so the file's joint order is file_order(), not 0..n-1
    out += ["MOTION", f"Frames:{sep}{frames}", f"Frame Time:{sep}{frame_time}"]
    out += [sep.join(repr(v) for v in row) for row in table]
    text = newline.join(out) + draw(st.sampled_from([newline, ""]))
    return text, names, parents, channels, offsets, end_sites, table, float(frame_time)


def file_order(names, parents):
    """Joint indices in the order a depth-first writer puts them in the file."""
    seen = []

    def visit(j):
        seen.append(j)
        for c in range(len(names)):
            if parents[c] == j:
                visit(c)

    visit(0)
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bvh_files())
def test_random_valid_files_parse_and_round_trip(case):
    text, names, parents, channels, offsets, end_sites, table, frame_time = case
    motion = parse_bvh(text, "random.bvh")
    order = file_order(names, parents)
    sk = motion.skeleton
    assert list(sk.names) == [names[j] for j in order]
    assert [order[p] if p >= 0 else -1 for p in sk.parents] == [parents[j] for j in order]
    assert [list(c) for c in sk.channels] == [channels[j] for j in order]
    assert np.array_equal(sk.offsets, np.array([offsets[j] for j in order], dtype=float))
    assert sorted(order[j] for j, _ in sk.end_sites) == sorted(end_sites)
    assert motion.n_frames == table.shape[0]
    assert motion.fps == pytest.approx(1 / frame_time, rel=1e-4)

    starts = np.cumsum([0] + [len(channels[j]) for j in order])  # data columns follow the file's order
    for row, j in enumerate(order):
        values = table[:, starts[row]:starts[row + 1]]
        chans = channels[j]
        rot = [k for k, c in enumerate(chans) if c.endswith("rotation")]
        expected = np.tile(np.eye(3), (table.shape[0], 1, 1))
        if rot:
            r = np.radians(values[:, rot])
            o = "".join(chans[k][0] for k in rot)
            expected = euler_matrix(r, o)
        assert np.abs(quat.to_matrix(motion.rotations[:, row]) - expected).max() < 1e-12
        pos = {c[0]: values[:, k] for k, c in enumerate(chans) if c.endswith("position")}
        expected_pos = np.stack([pos[a] for a in "XYZ"], -1) if pos else np.tile(offsets[j], (table.shape[0], 1))
        assert np.array_equal(motion.positions[:, row], expected_pos)

    again = parse_bvh(format_bvh(motion), "random-again.bvh")
    assert again.skeleton.names == sk.names and again.skeleton.channels == sk.channels
    assert np.array_equal(again.skeleton.parents, sk.parents)
    assert np.abs(again.skeleton.offsets - sk.offsets).max() <= 5e-7
    assert again.n_frames == motion.n_frames and again.fps == pytest.approx(motion.fps, rel=1e-7)
    sign = np.where(np.sum(motion.rotations * again.rotations, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    assert np.abs(motion.rotations - sign * again.rotations).max() < 1e-7
    assert np.abs(motion.positions - again.positions).max() <= 5e-7


GARBAGE = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "1e999", "1e-320", "abc", "--1", "1..2", "", "²", "١٢",
                     "0x10", "1,5", "{", "}", "MOTION", "ROOT", "JOINT", "End", "Site", "\x00", "é",
                     "Frames:", "\n", "\r", "1e", "+", "-", ".", "1_000", "0" * 400]),
    st.text(max_size=6),
)


@st.composite
def damaged_files(draw):
    text = draw(bvh_files())[0]
    how = draw(st.sampled_from(["delete token", "replace number", "truncate", "insert", "swap lines"]))
    tokens = list(re.finditer(r"\S+", text))
    if how == "delete token":
        t = draw(st.sampled_from(tokens))
        return (text[:t.start()] + text[t.end():]).encode()
    if how == "replace number":
        numeric = [t for t in tokens if re.fullmatch(r"[-+.\deE]+", t[0])]
        t = draw(st.sampled_from(numeric))
        return (text[:t.start()] + draw(GARBAGE) + text[t.end():]).encode()
    if how == "insert":
        at = draw(st.integers(0, len(text)))
        return (text[:at] + draw(GARBAGE) + text[at:]).encode()
    if how == "swap lines":
        lines = text.splitlines(keepends=True)
        a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[a], lines[b] = lines[b], lines[a]
        return "".join(lines).encode()
    data = text.encode()
    return data[:draw(st.integers(0, len(data)))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_files())
def test_damaged_files_parse_or_raise_bvh_error(data):
    try:
        motion = parse_bvh(data, "damaged.bvh")
    except BVHError as error:
        assert error.path == "damaged.bvh" and str(error).startswith("damaged.bvh")
        try:
            n_lines = len(data.decode("utf-8-sig").splitlines())
        except UnicodeDecodeError:
            n_lines = data.count(b"\n") + 1
        assert error.line is None or 1 <= error.line <= max(n_lines, 1), (error.line, n_lines)
    else:
        assert motion.n_frames >= 1 and np.isfinite(motion.fps) and motion.fps > 0
        assert np.all(np.isfinite(motion.rotations)) and np.all(np.isfinite(motion.positions))
        assert np.allclose(np.linalg.norm(motion.rotations, axis=-1), 1.0)
        parse_bvh(format_bvh(motion), "again.bvh")
