"""BVH files to and from :class:`~.motion.Motion`.

Written by hand because no maintained numpy-only BVH library exists that runs inside Blender's
Python, keeps End Sites and per-joint channel layouts, and reports errors by line. Blender's own
importer builds scene objects, so it serves as the independent cross-check in the tests instead.

The hierarchy is small and parsed token by token with line numbers; the motion block is the bulk, read
by numpy's C text reader (each line one whole frame), with a slower pass only to explain a failure.
"""

import io
import warnings
from pathlib import Path

import numpy as np

from . import quat
from .errors import BVHError
from .motion import AXES, Motion, Skeleton

_CHANNELS = {f"{a}{kind}".lower(): f"{a}{kind}" for a in AXES for kind in ("position", "rotation")}


def read_bvh(path):
    """Read a BVH file from disk."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise BVHError(path, f"cannot read the file ({e.strerror or e}); check the path and permissions") from None
    return parse_bvh(data, path)


def parse_bvh(data, source="<bvh>"):
    """Parse the bytes (or text) of a BVH file; ``source`` names it in errors."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")   # -sig: Windows editors may start UTF-8 with a byte-order mark
        except UnicodeDecodeError as e:
            raise BVHError(source, "is not a text file, so not a BVH file",
                           data[:e.start].count(b"\n") + 1) from None
    lines = data.splitlines()
    tokens = _Tokens(lines, source)
    skeleton, columns, n_channels = _parse_hierarchy(tokens)
    n_frames, frame_time, first_data_line = _parse_motion_header(tokens)
    values = _parse_values(lines, first_data_line, n_frames, n_channels, source)
    return _to_motion(skeleton, columns, values, frame_time, source)


def hierarchy(data, source="<bvh>"):
    """The :class:`~.motion.Skeleton` of a BVH file's bytes, from its HIERARCHY section alone: what a data
    set's files are grouped by without reading their motion."""
    if isinstance(data, bytes):
        cut = data.find(b"MOTION")   # the motion, the bulk of the file, is neither decoded nor split
        data = (data if cut < 0 else data[:cut]).decode("utf-8-sig", errors="replace")
    head = data.split("MOTION")[0]
    return _parse_hierarchy(_Tokens(head.splitlines() + ["MOTION"], source))[0]


class _Tokens:
    """Whitespace-separated header tokens with the (1-based) line each came from."""

    def __init__(self, lines, source):
        self.source = source
        self.items = []
        self.last_line = 0
        for number, line in enumerate(lines, 1):
            words = line.split()
            if words and words[0].upper() == "MOTION":
                self.items.append(("MOTION", number))
                self.motion_line = number
                break
            self.items.extend((w, number) for w in words)
        else:
            self.motion_line = None
        self.lines = lines
        self.pos = 0

    def peek(self):
        if self.pos < len(self.items):
            return self.items[self.pos]
        return None, len(self.lines)

    def take(self, what):
        word, line = self.peek()
        if word is None:
            raise BVHError(self.source, f"the file ends where {what} was expected; it is truncated", line)
        self.pos += 1
        return word, line

    def expect(self, literal):
        word, line = self.take(repr(literal))
        if word.upper() != literal.upper():
            raise BVHError(self.source, f"expected {literal!r} but found {word!r}", line)
        return line

    def number(self, what):
        word, line = self.take(what)
        try:
            value = float(word)
        except ValueError:
            raise BVHError(self.source, f"{what} must be a number, not {word!r}", line) from None
        if not np.isfinite(value):
            raise BVHError(self.source, f"{what} is {word}; it must be a finite number", line)
        return value

    def rest_of_line(self, line):
        words = []
        while self.pos < len(self.items) and self.items[self.pos][1] == line and self.items[self.pos][0] != "{":
            words.append(self.items[self.pos][0])
            self.pos += 1
        return " ".join(words)


def _parse_hierarchy(tokens):
    word, line = tokens.peek()
    if word is None or word.upper() != "HIERARCHY":
        raise BVHError(tokens.source, "does not start with HIERARCHY, so it is not a BVH file", line if word else None)
    tokens.take("HIERARCHY")
    names, parents, offsets, channels, end_sites, columns = [], [], [], [], [], []
    n_channels = 0
    stack = []
    root_seen = False

    while True:
        word, line = tokens.take("ROOT, JOINT, End Site, '}' or MOTION")
        key = word.upper()
        if key in ("ROOT", "JOINT"):
            if (key == "ROOT") != (not stack):
                msg = "a second ROOT is not supported" if root_seen and key == "ROOT" else \
                      f"{word} is not allowed here"
                raise BVHError(tokens.source, msg, line)
            root_seen = True
            name = tokens.rest_of_line(line)
            if not name:
                raise BVHError(tokens.source, f"{word} has no name", line)
            if name in names:
                raise BVHError(tokens.source, f"joint {name!r} is declared twice", line)
            tokens.expect("{")
            tokens.expect("OFFSET")
            offset = [tokens.number(f"joint {name!r} OFFSET") for _ in range(3)]
            tokens.expect("CHANNELS")
            chans = _parse_channels(tokens, name)
            names.append(name)
            parents.append(stack[-1] if stack else -1)
            offsets.append(offset)
            channels.append(tuple(chans))
            columns.append(np.arange(n_channels, n_channels + len(chans)))
            n_channels += len(chans)
            stack.append(len(names) - 1)
        elif key == "END":
            tokens.expect("Site")
            if not stack:
                raise BVHError(tokens.source, "End Site outside any joint", line)
            tokens.expect("{")
            tokens.expect("OFFSET")
            offset = [tokens.number(f"End Site of {names[stack[-1]]!r} OFFSET") for _ in range(3)]
            tokens.expect("}")
            end_sites.append((stack[-1], np.array(offset)))
        elif key == "}":
            if not stack:
                raise BVHError(tokens.source, "a '}' closes nothing", line)
            stack.pop()
        elif key == "MOTION":
            if stack:
                raise BVHError(tokens.source, f"MOTION comes before joint {names[stack[-1]]!r} is closed "
                               "with '}'; the hierarchy is truncated", line)
            if not names:
                raise BVHError(tokens.source, "the hierarchy has no ROOT joint", line)
            break
        else:
            raise BVHError(tokens.source, f"unexpected {word!r} in the hierarchy", line)

    skeleton = Skeleton(names, parents, offsets, channels=tuple(channels), end_sites=tuple(end_sites))
    return skeleton, columns, n_channels


def _parse_channels(tokens, joint):
    count_word, line = tokens.take(f"the channel count of joint {joint!r}")
    if not count_word.isdecimal():   # not isdigit(): int() refuses "²"
        raise BVHError(tokens.source, f"joint {joint!r}: the channel count must be a whole number, "
                       f"not {count_word!r}", line)
    chans = []
    for _ in range(int(count_word)):
        word, wline = tokens.take(f"a channel name of joint {joint!r}")
        if wline != line or word.lower() not in _CHANNELS:
            found = "nothing more on that line" if wline != line else repr(word)
            raise BVHError(tokens.source, f"joint {joint!r} declares {count_word} channels but channel "
                           f"{len(chans) + 1} is {found}; channels are X/Y/Z position or rotation", line)
        chans.append(_CHANNELS[word.lower()])
    extra = tokens.peek()
    if extra[0] is not None and extra[1] == line:
        raise BVHError(tokens.source, f"joint {joint!r} declares {count_word} channels but lists more "
                       f"(found {extra[0]!r})", line)
    for kind in ("position", "rotation"):
        axes = [c[0] for c in chans if c.endswith(kind)]
        if len(axes) not in (0, 3) or len(set(axes)) != len(axes):
            raise BVHError(tokens.source, f"joint {joint!r} has {kind} channels {'/'.join(axes)}; "
                           f"it needs none or all three of X, Y and Z", line)
    return chans


def _parse_motion_header(tokens):
    if tokens.motion_line is None:
        raise BVHError(tokens.source, "has no MOTION section; the file is truncated")
    lines = tokens.lines
    number = tokens.motion_line
    found = {}
    for key in ("frames:", "frame time:"):
        number += 1
        while number <= len(lines) and not lines[number - 1].strip():
            number += 1
        text = " ".join(lines[number - 1].split()) if number <= len(lines) else ""   # "Frame\tTime:"
        if not text.lower().startswith(key):
            label = "Frames: N" if key == "frames:" else "Frame Time: SECONDS"
            raise BVHError(tokens.source, f"expected '{label}' after MOTION, found {text[:40]!r}",
                           min(number, len(lines)))
        found[key] = (text[len(key):].strip(), number)
    frames_text, line = found["frames:"]
    if not frames_text.isdecimal():
        raise BVHError(tokens.source, f"the frame count must be a whole number, not {frames_text!r}", line)
    n_frames = int(frames_text)
    if n_frames == 0:
        raise BVHError(tokens.source, "the motion is empty (Frames: 0); there is nothing to read", line)
    time_text, line = found["frame time:"]
    try:
        frame_time = float(time_text)
    except ValueError:
        raise BVHError(tokens.source, f"the frame time must be a number of seconds, not {time_text!r}", line) from None
    if not (np.isfinite(frame_time) and frame_time > 0 and np.isfinite(1.0 / frame_time)):
        raise BVHError(tokens.source, f"the frame time must be a positive number of seconds with a finite "
                       f"frame rate, not {time_text}", line)
    return n_frames, frame_time, number + 1


def _parse_values(lines, first, n_frames, n_channels, source):
    # numpy's reader refuses a line whose count differs from the first's, so a short line and a long one
    # cannot shift values between frames unnoticed; blank lines it skips
    values = None
    if n_channels:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)   # "input contained no data": refused below
                values = np.loadtxt(io.StringIO("\n".join(lines[first - 1:])), dtype=np.float64, comments=None,
                                    ndmin=2)
        except ValueError:
            pass
        if values is not None and values.shape != (n_frames, n_channels):
            values = None
    elif not any(line.strip() for line in lines[first - 1:]):   # without channels every frame line is blank
        values = np.zeros((n_frames, 0))
    if values is None:
        _explain_bad_block(lines, first, n_frames, n_channels, source)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        _explain_bad_block(lines, first, n_frames, n_channels, source, bad_value=(row, col))
    return values


def _explain_bad_block(lines, first, n_frames, n_channels, source, bad_value=None):
    """Find the first offending line of the motion block and raise with it (the slow path)."""
    frame = 0
    for number in range(first, len(lines) + 1):
        words = lines[number - 1].split()
        if not words:
            continue
        if frame == n_frames:
            raise BVHError(source, f"more motion data than the {n_frames} frames the header declares; "
                           "fix 'Frames:' or remove the extra lines", number)
        if len(words) != n_channels:
            raise BVHError(source, f"frame {frame} has {len(words)} values but the hierarchy declares "
                           f"{n_channels} channels", number)
        for col, word in enumerate(words):
            try:
                ok = np.isfinite(float(word))
            except ValueError:
                raise BVHError(source, f"frame {frame}, channel {col}: {word!r} is not a number", number) from None
            if not ok:
                raise BVHError(source, f"frame {frame}, channel {col} is {word}; every value must be finite",
                               number)
        frame += 1
    raise BVHError(source, f"the file ends after {frame} of the {n_frames} frames its header declares; "
                   "it is truncated", len(lines))


def _to_motion(skeleton, columns, values, frame_time, source):
    n_frames = values.shape[0]
    n_joints = len(skeleton)
    rotations = np.zeros((n_frames, n_joints, 4))
    rotations[..., 0] = 1.0
    positions = np.broadcast_to(skeleton.offsets, (n_frames, n_joints, 3)).copy()
    for j, (chans, cols) in enumerate(zip(skeleton.channels, columns)):
        pos = {c[0]: col for c, col in zip(chans, cols) if c.endswith("position")}
        rot = [(c[0], col) for c, col in zip(chans, cols) if c.endswith("rotation")]
        if pos:
            positions[:, j] = values[:, [pos[a] for a in AXES]]
        if rot:
            order = "".join(a for a, _ in rot)
            angles = np.radians(values[:, [col for _, col in rot]])
            rotations[:, j] = quat.from_euler(angles, order)
    fps = 1.0 / frame_time
    if abs(fps - round(fps)) < 1e-4 * fps:
        fps = float(round(fps))
    name = Path(str(source).split(":")[-1]).stem   # "archive.zip:member.bvh" names the member
    return Motion(skeleton, quat.unroll(rotations), positions, fps, up="Y", name=name)


def format_bvh(motion, precision=6):
    """The text of a BVH file for ``motion``, in its skeleton's channel layout."""
    sk = motion.skeleton
    out = ["HIERARCHY"]
    ends = {}
    for j, offset in sk.end_sites:
        ends.setdefault(j, []).append(offset)

    def fmt(v):
        return " ".join(f"{x:.{precision}f}" for x in v)

    def joint(j, depth):
        pad = "\t" * depth
        out.append(f"{pad}{'ROOT' if sk.parents[j] < 0 else 'JOINT'} {sk.names[j]}")
        out.append(pad + "{")
        out.append(f"{pad}\tOFFSET {fmt(sk.offsets[j])}")
        out.append(f"{pad}\tCHANNELS {len(sk.channels[j])} {' '.join(sk.channels[j])}".rstrip())
        for c in sk.children(j):
            joint(c, depth + 1)
        for offset in ends.get(j, []):
            out.extend([f"{pad}\tEnd Site", f"{pad}\t{{", f"{pad}\t\tOFFSET {fmt(offset)}", f"{pad}\t}}"])
        out.append(pad + "}")

    joint(0, 0)
    out += ["MOTION", f"Frames: {motion.n_frames}", f"Frame Time: {1.0 / motion.fps:.8f}"]

    columns = []
    for j, chans in enumerate(sk.channels):
        rot_order = "".join(c[0] for c in chans if c.endswith("rotation"))
        euler = np.degrees(quat.to_euler(motion.rotations[:, j], rot_order)) if rot_order else None
        for c in chans:
            if c.endswith("position"):
                columns.append(motion.positions[:, j, AXES.index(c[0])])
            else:
                columns.append(euler[:, rot_order.index(c[0])])
    table = np.stack(columns, axis=1) if columns else np.zeros((motion.n_frames, 0))
    row = " ".join([f"%.{precision}f"] * table.shape[1])
    out.extend(row % tuple(r) for r in table.tolist())
    return "\n".join(out) + "\n"


def write_bvh(motion, path, precision=6):
    """Write ``motion`` as a BVH file; the file is written whole or not at all."""
    path = Path(path)
    text = format_bvh(motion, precision)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text)
    tmp.replace(path)
