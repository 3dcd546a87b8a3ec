"""The RTN runtime and its commands: fill, super-resolution, variants, and what they refuse."""

import json
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inference.bvh import read_bvh, write_bvh
from inference.errors import BetwixtError
from inference.edit import superres
from inference import inbetween
from inference.inbetween import context, fill_gaps, fill_rounds, gap_in, readable
from inference.modelfile import ModelError, open_model
from inference.motion import forward_kinematics
from inference.rtn.blends import BLEND, START_BLEND, end_blend, end_ramp, start_blend, start_ramp
from lab.dataset import read_motions
from commands import clip_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model(trained_rtn):
    return open_model(trained_rtn["model"])


@pytest.fixture(scope="module")
def clip(lafan1_zip, tmp_path_factory):
    """400 frames of a test-subject clip, as a BVH file and as a motion."""
    motion = clip_of(lafan1_zip, "obstacles1_subject5").frames(1000, 1400)
    path = tmp_path_factory.mktemp("clip") / "clip.bvh"
    write_bvh(motion, path)
    return path, read_bvh(path)


def same_rotation(a, b):
    return np.minimum(np.abs(a - b), np.abs(a + b)).max()


def test_fill_changes_only_the_gap_and_lands_on_the_target(model, clip):
    _, motion = clip
    out = fill_gaps(model, motion, [(100, 131)])
    changed = np.flatnonzero(np.abs(out.positions - motion.positions).max(axis=(1, 2)) > 1e-9)
    assert changed.min() >= 101 and changed.max() <= 130
    assert same_rotation(out.rotations[:101], motion.rotations[:101]) < 1e-12
    assert same_rotation(out.rotations[131:], motion.rotations[131:]) < 1e-12
    assert np.all(np.abs(np.linalg.norm(out.rotations, axis=-1) - 1) < 1e-9)
    # with the frame after the key known, the end blend runs the root into the key at its velocity
    # (the backward fill's start blend does too, but its end blend moves that frame by 1/30 of its miss),
    # and so does the spline through the keys that the root's ground path leans to (up to its curvature)
    into_key = 2 * motion.positions[131, 0] - motion.positions[132, 0]
    forwards = fill_gaps(open_model(model.path, both_ways=False), motion, [(100, 131)])
    np.testing.assert_allclose(forwards.positions[130, 0], into_key, atol=0.05)
    assert np.abs(out.positions[130, 0] - into_key).max() < 0.5
    # without it, the target blend alone rises to 1 on the key, so the last generated frame is
    # 30/31 of the way there
    gap = replace(gap_in(motion, 100, 131, model.past), after_rotations=None, after_positions=None)
    _, pos = model.fill(gap)
    _, raw_pos = model.fill(gap, blend=1)
    last_raw = np.abs(raw_pos[0, -1, 0] - motion.positions[131, 0]).max()
    last_blended = np.abs(pos[0, -1, 0] - motion.positions[131, 0]).max()
    assert last_blended < last_raw
    # by default over the last BLEND frames only: the 30 generated frames and the key are 31 steps,
    # and the first 31 - BLEND of them are the same as without it
    untouched = 31 - BLEND
    assert np.abs(pos[0, :untouched] - raw_pos[0, :untouched]).max() < 1e-9
    assert np.abs(pos[0, untouched:, 0] - raw_pos[0, untouched:, 0]).max(axis=-1).min() > 0
    _, whole_pos = model.fill(gap, blend=31)
    assert np.abs(whole_pos[0, 0, 0] - raw_pos[0, 0, 0]).max() > 0


def test_start_and_end_blends_carry_the_keys_velocities(model, clip):
    rng = np.random.default_rng(0)
    frames, past = rng.normal(size=(3, 12, 7)), rng.normal(size=(3, 10, 7))
    out = start_blend(frames, past, start_ramp(12, 4))
    np.testing.assert_allclose(out[:, 0], 2 * past[:, -1] - past[:, -2], atol=1e-12)
    np.testing.assert_array_equal(out[:, 4:], frames[:, 4:])
    assert np.all(np.diff(np.abs(out - frames)[:, :5].max(axis=-1), axis=1) < 0)   # a linear fade to none
    held = start_blend(frames, np.repeat(past[:, -1:], 10, axis=1), start_ramp(12, 4))       # a key at a clip's start
    np.testing.assert_allclose(held[:, 0], past[:, -1], atol=1e-12)
    key = frames[:, -1]
    after = key + 0.1 * rng.normal(size=key.shape)       # quaternion parts in the key's sign
    out = end_blend(frames, key, after, end_ramp(12))
    np.testing.assert_allclose(out[:, -2], 2 * key - after, atol=1e-12)
    np.testing.assert_array_equal(out[:, -1], key)
    assert np.all(np.diff(np.abs(out - frames)[:, :-1].max(axis=-1), axis=1) > 0)  # rising over the gap
    np.testing.assert_array_equal(start_blend(frames, past, start_ramp(12, 0)), frames)   # no blend at length 0
    # in a fill, the root's first frame goes on at the last key's velocity (with no frame after the
    # target, the end blend is off, and the target blend, over the last BLEND frames, does not reach it)
    _, motion = clip
    assert 30 > BLEND and START_BLEND > 1
    gap = replace(gap_in(motion, 100, 131, model.past), after_rotations=None, after_positions=None)
    _, pos = model.fill(gap)
    np.testing.assert_allclose(pos[0, 0, 0], 2 * motion.positions[100, 0] - motion.positions[99, 0], atol=1e-6)


def test_fill_is_invariant_to_where_the_character_stands(model, clip):
    """Moving and turning the whole clip about the up axis moves the result the same way."""
    from inference import quat
    _, motion = clip
    turn = quat.from_angle_axis(np.array(1.1), np.array([0.0, 1.0, 0.0]))
    moved = motion.positions.copy()
    moved[:, 0] = quat.rotate(turn, motion.positions[:, 0]) + np.array([300.0, 0.0, -120.0])
    rotations = motion.rotations.copy()
    rotations[:, 0] = quat.mul(turn, motion.rotations[:, 0])
    other = replace(motion, rotations=rotations, positions=moved)
    a = fill_gaps(model, motion, [(50, 80)])
    b = fill_gaps(model, other, [(50, 80)])
    expected = quat.rotate(turn, a.positions[51:80, 0]) + np.array([300.0, 0.0, -120.0])
    np.testing.assert_allclose(b.positions[51:80, 0], expected, atol=1e-3)
    assert same_rotation(b.rotations[51:80, 1:], a.rotations[51:80, 1:]) < 1e-4


def test_the_frame_after_the_target_is_read_when_there_is_one(model, clip):
    """The key's velocity, from the frame after it, shapes the way in; the clip's last key has none."""
    _, motion = clip
    gap = gap_in(motion, 100, 131, model.past)
    np.testing.assert_array_equal(gap.after_rotations[0], motion.rotations[132:132 + model.past])
    _, with_after = model.fill(gap)
    _, without = model.fill(replace(gap, after_rotations=None, after_positions=None))
    assert np.abs(with_after - without).max() > 1e-3
    last = motion.n_frames - 1
    assert gap_in(motion, last - 31, last, model.past).after is None
    assert np.isfinite(fill_gaps(model, motion, [(last - 31, last)]).positions).all()


def test_variants_differ_and_zero_variation_is_deterministic(model, clip):
    _, motion = clip
    gap = gap_in(motion, 200, 241, model.past)
    rot, pos = model.variants(gap, 4, variation=1.0, seed=3)
    assert rot.shape == (4, 1, 40, 22, 4)
    spread = np.abs(pos[:, 0, :, 0] - pos[:, 0, :, 0].mean(axis=0)).max()
    assert spread > 1e-3
    r0, p0 = model.variants(gap, 2, variation=0.0, seed=3)
    np.testing.assert_array_equal(p0[0], p0[1])


def test_superres_fills_every_gap_from_sparse_keys(model, clip):
    _, motion = clip
    out = superres(model, motion, 30)
    keys = list(range(0, motion.n_frames, 30)) + [motion.n_frames - 1]
    for k in keys:
        assert same_rotation(out.rotations[k], motion.rotations[k]) < 1e-12
    between = [f for f in range(motion.n_frames) if f not in keys]
    assert np.abs(out.positions[between] - motion.positions[between]).max() > 0
    # it reads the keys alone: the frames between them, which it generates, change nothing
    other = replace(motion, rotations=motion.rotations.copy(), positions=motion.positions.copy())
    other.rotations[between] = motion.rotations[0]
    other.positions[between] = motion.positions[0]
    again = superres(model, other, 30)
    np.testing.assert_array_equal(again.rotations, out.rotations)
    np.testing.assert_array_equal(again.positions, out.positions)


def test_requests_the_model_cannot_serve(model, clip, mocap):
    _, motion = clip
    with pytest.raises(ModelError, match="outside what model"):
        fill_gaps(model, motion, [(0, 300)])
    with pytest.raises(ModelError, match="no frame lies strictly between"):
        fill_gaps(model, motion, [(10, 11)])
    bad = motion.rotations.copy()
    bad[5, 3] = np.nan
    with pytest.raises(ModelError, match="NaN"):
        fill_gaps(model, replace(motion, rotations=bad), [(9, 40)])
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        from inference.bvh import parse_bvh
        bandai = parse_bvh(z.read(sorted(z.namelist())[0]), "bandai.bvh")
    with pytest.raises(ModelError, match="does not match model"):
        model.check_skeleton(bandai.skeleton)


def test_an_onnxruntime_that_will_not_load_says_what_to_do(trained_rtn):
    """As on a Mac older than 13 or Windows without the C++ runtime: one error, with that platform's fix."""
    from inference.modelfile import missing_runtime_hint
    code = ("import sys; sys.modules['onnxruntime'] = None\n"   # what a failed import leaves behind
            "from inference.modelfile import open_model, ModelError\n"
            f"try: open_model({str(trained_rtn['model'])!r})\n"
            "except ModelError as e: print(e)")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("onnxruntime could not be loaded")
    assert missing_runtime_hint(sys.platform) in done.stdout
    assert "macOS 13" in missing_runtime_hint("darwin") and "Visual C++" in missing_runtime_hint("win32")


def test_files_that_are_not_models(tmp_path, trained_rtn):
    text = tmp_path / "notes.onnx"
    text.write_text("not a model")
    with pytest.raises(ModelError, match="not an ONNX model file"):
        open_model(text)
    with pytest.raises(ModelError, match="no such model file"):
        open_model(tmp_path / "missing.onnx")
    import onnx
    proto = onnx.load(str(trained_rtn["model"]))
    del proto.metadata_props[:]
    onnx.save(proto, str(tmp_path / "bare.onnx"))
    with pytest.raises(ModelError, match="not a Betwixt model file"):
        open_model(tmp_path / "bare.onnx")
    assert issubclass(ModelError, BetwixtError)


def run(*args, package="inference"):
    return subprocess.run([sys.executable, "-m", package, *args], cwd=ROOT, capture_output=True, text=True)


def test_commands_write_bvh_or_nothing(model, clip, tmp_path):
    path, motion = clip
    m = str(model.path)
    result = run("fill", str(path), "--gap", "20:50", "-o", str(tmp_path / "fill.bvh"), "--model", m)
    assert result.returncode == 0, result.stderr
    filled = read_bvh(tmp_path / "fill.bvh")
    assert filled.n_frames == motion.n_frames
    assert np.abs(filled.positions[21:50, 0] - motion.positions[21:50, 0]).max() > 0

    result = run("superres", str(path), "--every", "30", "-o", str(tmp_path / "dense.bvh"), "--model", m)
    assert result.returncode == 0, result.stderr
    assert read_bvh(tmp_path / "dense.bvh").n_frames == motion.n_frames

    result = run("variants", str(path), "--gap", "20:50", "-k", "3", "-o", str(tmp_path / "var"), "--model", m)
    assert result.returncode == 0, result.stderr
    files = sorted((tmp_path / "var").glob("*.bvh"))
    assert [f.name for f in files] == [f"clip-variant0{i}.bvh" for i in (1, 2, 3)]
    a, b = read_bvh(files[0]), read_bvh(files[1])
    assert np.abs(a.positions[21:50, 0] - b.positions[21:50, 0]).max() > 1e-4

    result = run("fill", str(path), "--gap", "20:21", "-o", str(tmp_path / "none.bvh"), "--model", m)
    assert result.returncode == 2 and "'20:21'" in result.stderr and "a frame to fill between them" in result.stderr
    assert not (tmp_path / "none.bvh").exists()
    result = run("fill", str(path), "--gap", "20:50", "-o", str(tmp_path / "none.bvh"),
                 "--model", str(tmp_path / "missing.onnx"))
    assert result.returncode == 2 and "no such model file" in result.stderr
    assert not (tmp_path / "none.bvh").exists()


def test_bench_speed_prints_every_timing(model, tmp_path, capsys):
    from lab.cli import main

    assert main(["bench-speed", "--model", str(model.path), "--minutes", "0.5", "--json",
                 str(tmp_path / "speed.json")]) == 0
    timings = json.loads((tmp_path / "speed.json").read_text())
    assert timings["transition_30_ms_batch1_1thread"]["median"] > 0
    assert timings["transition_30_ms_batch1_1thread_one_view"]["median"] > 0
    assert timings["frames_per_second_batched"] > 0 and timings["variants_16_ms"] > 0
    assert timings["superres_0.5min_1key_per_s_seconds_1thread"] > 0
    assert timings["superres_0.5min_1key_per_s_seconds_2threads_wide"] > 0
    assert timings["torch_over_onnx"] > 0      # torch is installed with the test requirements
    assert "transition_30_ms_batch1_1thread: median" in capsys.readouterr().out


def test_a_call_of_many_gaps_runs_on_more_threads_with_the_same_frames(model, clip):
    """Decompress's rounds call the network with dozens of gaps at once: such a call runs in a session of
    WIDE_THREADS threads of its own (1.6-1.7x as fast on two cores), made when first needed; a single gap's
    call stays on the file's one thread. The frames are the same to the bit."""
    from inference.rtn.runtime import WIDE_ROWS, WIDE_THREADS
    motion = clip[1]
    wide, narrow = open_model(model.path, kind="rtn"), open_model(model.path, kind="rtn", wide=1)
    one = gap_in(motion, 100, 131, wide.past)
    assert WIDE_THREADS > 1 and wide._session(1) is wide.session
    wide.fill(one)
    assert wide._wide is None
    many = replace(one.rows([0] * WIDE_ROWS), past_positions=one.past_positions[[0] * WIDE_ROWS]
                   + np.arange(WIDE_ROWS)[:, None, None, None])   # each gap a centimetre along from the last
    filled = wide.fill(many)
    assert wide._wide is not None and wide._session(WIDE_ROWS) is wide._wide
    for a, b in zip(filled, narrow.fill(many)):
        np.testing.assert_array_equal(a, b)


def test_generated_signs_follow_the_callers_keys(model, clip):
    """q and -q are one rotation; the frames generated continue whichever sign the keys were given in."""
    _, motion = clip
    gap = gap_in(motion, 100, 131, model.past)
    flipped = replace(gap, past_rotations=-gap.past_rotations, target_rotations=-gap.target_rotations,
                      after_rotations=-gap.after_rotations)
    rot, pos = model.fill(gap)
    rot_f, pos_f = model.fill(flipped)
    np.testing.assert_allclose(pos_f, pos, atol=1e-9)
    np.testing.assert_allclose(rot_f, -rot, atol=1e-9)
    assert np.all(np.sum(rot[:, 0] * gap.past_rotations[:, -1], axis=-1) > 0)


def test_a_fill_is_averaged_with_its_mirror_images(model, clip, monkeypatch):
    """Keys mirrored left/right get the mirror image of the fill: each fill is the mean of the
    network's transition and the mirror image of its transition of the mirrored keys, which the
    network alone is not (it learned symmetry only approximately). Averaged whatever the two fills'
    disagreement: a few steps' test network may part ways with its mirror image past AGREEMENT, where
    the runtime keeps the first fill (test_fills_that_part_ways_are_not_averaged)."""
    from inference.mirror import mirror, reflect
    from inference.rtn import runtime

    monkeypatch.setattr(runtime, "AGREEMENT", (180.0, 181.0))   # no parting (at most 180) lessens it
    _, motion = clip
    image = mirror(motion, reflections=np.array(json.loads(model.metadata["betwixt.mirror"])["reflections"]))
    gap, mirrored_gap = gap_in(motion, 100, 131, model.past), gap_in(image, 100, 131, model.past)

    def asymmetry(filler):
        rot, pos = filler.fill(gap)
        back_rot, back_pos = reflect(*filler.fill(mirrored_gap), model.mirror)
        return max(1 - np.abs(np.sum(rot * back_rot, axis=-1)).min(), np.abs(pos - back_pos)[..., 0, :].max())

    assert asymmetry(model) < 1e-5
    assert asymmetry(open_model(model.path, symmetric=False)) > 1e-3


def test_a_fill_is_averaged_with_the_gap_filled_backwards(model, clip):
    """Where the network learned both directions and a past context's worth of frames follows the
    target, a gap is also filled from its far side, and the fill of the motion played backwards is
    the fill played backwards; with fewer frames after the target, it is filled forwards only."""
    _, motion = clip
    backwards = replace(motion, rotations=motion.rotations[::-1].copy(), positions=motion.positions[::-1].copy())
    last = motion.n_frames - 1
    gap, backward_gap = gap_in(motion, 100, 131, model.past), gap_in(backwards, last - 131, last - 100, model.past)
    forwards_only = open_model(model.path, both_ways=False)

    def asymmetry(filler):
        rot, pos = filler.fill(gap)
        back_rot, back_pos = (a[:, ::-1] for a in filler.fill(backward_gap))
        return max(1 - np.abs(np.sum(rot * back_rot, axis=-1)).min(), np.abs(pos - back_pos)[..., 0, :].max())

    assert model.backward and asymmetry(model) < 1e-5
    assert asymmetry(forwards_only) > 1e-3
    short = gap_in(motion, 100, 131, model.past, after=model.past - 2)
    assert short.after_rotations.shape[1] == model.past - 2
    for a, b in zip(model.fill(short), forwards_only.fill(short)):
        np.testing.assert_array_equal(a, b)


def test_gaps_are_filled_in_rounds_each_reading_only_frames_made_before_it(monkeypatch):
    """A chain of gaps is filled in order, a gap blind to what follows its key filled again reading the first
    pass; gaps apart (or in the same round) read none of each other's frames; a long chain is cut into blocks
    filled side by side, only each block's first gap starting from its key alone."""
    assert fill_rounds([(0, 10), (10, 20)], 10) == [[0], [1], [0]]
    assert fill_rounds([(0, 10), (10, 20), (20, 30)], 10, passes=1) == [[0], [1], [2]]
    assert fill_rounds([(0, 10), (13, 20)], 10) == [[0], [1], [0]]
    assert fill_rounds([(0, 10), (30, 40)], 10) == [[0, 1]]
    assert fill_rounds([(0, 10)], 10) == [[0]]
    chain = [(10 * i, 10 * i + 10) for i in range(40)]
    monkeypatch.setattr(inbetween, "BLOCK", 16)
    rounds = fill_rounds(chain, 10, long=20)
    # blocks 0-15, 16-31, 32-39, the last two each warming up on the two gaps before it
    assert rounds[:3] == [[0, 14, 30], [1, 15, 31], [2, 16, 32]] and len(rounds) == 18 + 15
    assert sorted(i for r in rounds[18:] for i in r) == sorted(set(range(40)) - {15, 31, 39})
    known = readable(chain, rounds, 401)
    assert context(known[0], *chain[14], 10, 10) == (1, 0)          # a warm-up's first gap: its key alone
    assert context(known[2], *chain[16], 10, 10) == (10, 0)         # a block's first reads its warm-up
    assert context(known[18], *chain[16], 10, 10) == (10, 10)       # again, between frames made on both sides


def test_decompress_with_a_second_pass_is_closer_to_the_capture(lafan1_zip):
    """The shipped model on the test subject, one key a second: the second pass lets each gap read how
    the motion goes on through its end key (its end blend, and the gap filled from both sides). The
    root's lean to the keys' spline, which also looks past the end key, is left out to see the pass."""
    model = open_model(ROOT / "inference" / "models" / "rtn-lafan1.onnx")
    model.key_spline = 0.0
    motion = clip_of(lafan1_zip, "obstacles1_subject5").frames(0, 1500)
    parents = motion.skeleton.parents
    _, truth = forward_kinematics(motion.rotations, motion.positions, parents)

    def error(passes):
        out = superres(model, motion, 30, passes=passes)
        return np.linalg.norm(forward_kinematics(out.rotations, out.positions, parents)[1] - truth, axis=-1).mean()

    one, two = error(1), error(2)
    assert two < 0.95 * one, (one, two)


def decompressed(lafan1_zip, monkeypatch, fps):
    """``error(block)``: obstacles1's first 50 s at ``fps`` Decompressed from a key a second by the shipped model,
    chains cut into blocks of ``block`` gaps, its world error to the capture; and ``calls``, the rows of each
    network call it made."""
    model = open_model(ROOT / "inference" / "models" / "rtn-human.onnx")
    motion = clip_of(lafan1_zip, "obstacles1_subject5").frames(0, 1501)
    motion = motion if fps == motion.fps else motion.resample(fps)
    parents = motion.skeleton.parents
    _, truth = forward_kinematics(motion.rotations, motion.positions, parents)
    calls = []
    fill = model.fill_parted   # what the edit pipeline calls: the fill and each gap's parting
    monkeypatch.setattr(model, "fill_parted", lambda gap, **kw: calls.append(gap.batch) or fill(gap, **kw))

    def error(block):
        monkeypatch.setattr(inbetween, "LONG", block)
        monkeypatch.setattr(inbetween, "BLOCK", block)
        calls.clear()
        out = superres(model, motion, fps)
        return np.linalg.norm(forward_kinematics(out.rotations, out.positions, parents)[1] - truth, axis=-1).mean()

    return error, calls


def test_a_long_decompress_filled_in_blocks_side_by_side_is_as_close_and_calls_the_network_less(lafan1_zip,
                                                                                              monkeypatch):
    """50 gaps a second long, filled in two blocks side by side (the second warming up on the two gaps before it):
    the network runs once a round for both (51 rounds, not 99; twice in four whose gaps read different lengths of
    context: the first block's last gaps read the warm-up's frames after them, the clip's first gap has no frame
    before it), and the motion is within 1 % of the one filled gap after gap."""
    error, calls = decompressed(lafan1_zip, monkeypatch, 30)
    in_order = error(1000)
    assert len(calls) == 99 and max(calls) == 1
    in_blocks = error(25)
    assert len(calls) == 27 + 24 + 4 and max(calls) == 2
    assert in_blocks < 1.01 * in_order, (in_order, in_blocks)


def test_a_long_decompress_at_another_frame_rate_fills_its_rounds_together_too(lafan1_zip, monkeypatch):
    """The same 50 gaps in a 24 fps file (a Blender scene's default; the model runs at 30): each gap is cut out at
    the model's rate, and a round's cuts still go to the network together, the motion within 1 % of the one
    filled gap after gap."""
    error, calls = decompressed(lafan1_zip, monkeypatch, 24)
    in_order = error(1000)
    assert len(calls) == 99 and max(calls) == 1
    in_blocks = error(25)
    assert len(calls) < 60 and max(calls) == 2
    assert in_blocks < 1.01 * in_order, (in_order, in_blocks)


def test_a_gap_from_the_clips_first_frame_with_keys_after_it(model, clip):
    """A key at the clip's start has no frame before it: filled backwards too, the gap holds it there,
    as filled forwards it does."""
    _, motion = clip
    out = fill_gaps(model, motion, [(0, 30)])
    assert np.isfinite(out.rotations).all() and np.abs(out.positions[1:30, 0] - motion.positions[1:30, 0]).max() > 0
    np.testing.assert_array_equal(out.rotations[30:], motion.rotations[30:])


def test_identical_keys_hold_still(lafan1_zip):
    """Holds: the shipped model, left to itself, lets a crouching pose held between two identical keys
    drift by a tenth of the body's height; a plain fill of a hold keeps the pose, also where the motion
    runs into the first key and goes on from the second. A key a degree off is no hold, and variants of
    a hold still vary."""
    model = open_model(ROOT / "inference" / "models" / "rtn-lafan1.onnx")
    clip = clip_of(lafan1_zip, "ground1_subject5")
    pose = replace(clip.frames(0, 120), rotations=np.repeat(clip.rotations[450:451], 120, axis=0),
                   positions=np.repeat(clip.positions[450:451], 120, axis=0))
    parents = pose.skeleton.parents

    def drift(motion):
        _, world = forward_kinematics(motion.rotations, motion.positions, parents)
        return np.linalg.norm(world[40:71] - world[40], axis=-1).max() / model.layout.height

    assert drift(fill_gaps(model, pose, [(40, 70)])) == 0.0
    assert drift(fill_gaps(model, pose, [(40, 70)], variation=1.0)) > 0.01
    # the clip running into the first key and on from the second: still a hold, as Blender's curves make it
    speed = np.linalg.norm(np.diff(clip.positions[:, 0], axis=0), axis=-1)
    at = int(np.argmax(speed[40:-80] > 2.0)) + 40       # the first frame walking at 2 cm a frame
    moving = clip.frames(at - 40, at + 80)
    held = replace(moving, rotations=np.concatenate([moving.rotations[:41], np.repeat(moving.rotations[40:41], 30, 0),
                                                     moving.rotations[41:90]]),
                   positions=np.concatenate([moving.positions[:41], np.repeat(moving.positions[40:41], 30, 0),
                                             moving.positions[41:90]]))
    assert np.linalg.norm(np.diff(held.positions[35:41, 0], axis=0), axis=-1).min() > 1.0     # it arrives moving
    assert drift(fill_gaps(model, held, [(40, 70)])) == 0.0
    from inference import quat
    turned = pose.rotations.copy()
    turned[70:, 5] = quat.mul(quat.from_euler(np.array([[0.0, 0.0, np.radians(1.0)]]), "ZYX")[0], turned[70:, 5])
    assert drift(fill_gaps(model, replace(pose, rotations=turned), [(40, 70)])) > 0.01


def test_fills_that_part_ways_are_not_averaged():
    """Two fills of a gap that differ by a half turn somewhere (one turned left, one right) have no
    meaningful mean: that gap keeps the first fill, while a gap whose fills agree gets their mean."""
    from inference import quat
    from inference.rtn.runtime import AGREEMENT, _average, _parting

    rng = np.random.default_rng(0)
    first = quat.normalize(rng.normal(size=(2, 5, 3, 4)))
    positions = rng.normal(size=(2, 5, 3, 3))
    turns = [AGREEMENT[0] / 2, 170.0]        # degrees about Y, on one joint of one frame
    other = first.copy()
    for g, degrees in enumerate(turns):
        half = np.radians(degrees) / 2
        other[g, 2, 1] = quat.mul(np.array([np.cos(half), 0.0, np.sin(half), 0.0]), first[g, 2, 1])
    rot, pos = _average(first, positions, other, positions + 1.0, 0, _parting(first, other))
    np.testing.assert_allclose(rot[0], quat.normalize(first[0] + other[0]), atol=1e-12)
    np.testing.assert_allclose(pos[0, :, 0], positions[0, :, 0] + 0.5)
    np.testing.assert_allclose(rot[1], first[1], atol=1e-12)
    np.testing.assert_allclose(pos[1], positions[1])


def test_variants_keep_their_spread_when_fills_are_averaged(model, clip):
    """Averaging two noisy draws would pull variants together; each keeps its own departure from the
    plain fill instead, put onto the averaged fill, which it becomes as the noise goes to zero."""
    _, motion = clip
    gap = gap_in(motion, 100, 141, model.past)
    spread = lambda rot: np.abs(rot - rot.mean(axis=0)).mean()                            # noqa: E731
    averaged, _ = model.variants(gap, 8, seed=1)
    single, _ = open_model(model.path, symmetric=False).variants(gap, 8, seed=1)
    assert spread(single) > 1e-4
    np.testing.assert_allclose(spread(averaged), spread(single), rtol=0.05)
    faint, _ = model.variants(gap, 2, variation=1e-6, seed=1)
    np.testing.assert_allclose(faint[0], model.fill(gap)[0], atol=1e-5)


def test_the_guard_names_where_a_fill_moves_too_fast_or_goes_through_the_floor(clip):
    """The capture itself raises nothing; the same motion with a foot pushed through the floor and a
    hand thrown across the room on generated frames is reported there, in the caller's frames."""
    from inference.guard import check, summary

    _, motion = clip
    parents, height = motion.skeleton.parents, 160.0
    gaps = [(100, 131), (200, 231)]
    assert check(motion, gaps, height) == []
    names = list(motion.skeleton.names)
    spoiled = replace(motion, positions=motion.positions.copy())
    _, world = forward_kinematics(motion.rotations, motion.positions, parents)
    floor = world[:, [names.index("LeftToe"), names.index("RightToe")], 1].min()
    spoiled.positions[110:113, 0, 1] -= world[110:113, names.index("LeftToe"), 1] - floor + 10.0   # 10 below
    spoiled.positions[215, names.index("LeftHand")] += [300.0, 0.0, 0.0]
    found = check(spoiled, gaps, height)
    assert {(f.what, f.first, f.last) for f in found if f.joint == "LeftToe"} == {("floor", 110, 112)}
    fast = [f for f in found if f.what == "fast" and f.joint == "LeftHand"]
    assert [(f.first, f.last) for f in fast] == [(214, 215)] and fast[0].value > 1.5
    line = summary(found, height, frame=lambda f: f + 1)
    assert "LeftHand" in line and "at frames 215-216" in line and "below the floor at frames 111-113" in line


@pytest.fixture(scope="module")
def falling(lafan1_zip):
    """LaFAN1's fallAndGetUp1 of the test subject, whole: 5,000 frames the shipped models never trained on."""
    return clip_of(lafan1_zip, "fallAndGetUp1_subject5")


def test_the_gaps_whose_views_part_are_the_ones_to_look_at(falling):
    """The shipped model fills a gap as it is, mirrored and backwards, and the gaps whose fills part most err
    most: over fallAndGetUp1's 59-frame gaps every 70 frames (71 gaps), the tenth that part most err 1.27x the
    median gap's, 6 of the 7 more than it (measured). Where they part by more than guard.UNSURE degrees (on
    some joint, some frame: 4 gaps, one by 131 degrees, three by 60-62), the runtime names them. fill_parted
    gives fill's frames and the partings; a model of one view has none."""
    from inference.guard import UNSURE, unsure, unsure_summary
    from inference.modelfile import MODELS
    from inference.transition import stacked

    model = open_model(MODELS / "rtn-human.onnx")
    n = 60
    starts = list(range(10, falling.n_frames - n - 11, n + 10))
    gaps = stacked([gap_in(falling, s, s + n, model.past, model.past) for s in starts])
    rotations, positions, parting = model.fill_parted(gaps)
    np.testing.assert_array_equal(rotations, model.fill(gaps)[0])
    parents = falling.skeleton.parents
    _, world = forward_kinematics(rotations, positions, parents)
    truth = np.stack([forward_kinematics(falling.rotations[s + 1:s + n], falling.positions[s + 1:s + n],
                                         parents)[1] for s in starts])
    error = np.linalg.norm(world - truth, axis=-1).mean(axis=(1, 2))
    most = np.argsort(-parting)[:len(starts) // 10]
    assert np.mean(error[most] > np.median(error)) >= 0.7, (error[most], np.median(error))
    assert error[most].mean() > 1.15 * np.median(error), (error[most].mean(), np.median(error))
    flagged = parting > UNSURE
    assert 1 <= flagged.sum() <= 0.1 * len(starts), flagged.sum()
    one_view = open_model(MODELS / "rtn-human.onnx", symmetric=False, both_ways=False)
    assert not one_view.fill_parted(gaps)[2].any()
    found = unsure({i: float(p) for i, p in enumerate(parting)}, [(s, s + n) for s in starts])
    assert [a for a, _, _ in found] == [starts[i] for i in np.flatnonzero(flagged)]
    assert f"unsure of frames {found[0][0] + 1}-{found[0][0] + n - 1}," in unsure_summary(found)


def test_the_command_line_names_a_gap_the_model_was_unsure_of(falling, tmp_path):
    """``fill`` with the shipped model on the gap whose views part most warns where to look, and not on a plain
    one."""
    path = tmp_path / "fall.bvh"
    write_bvh(falling, path)
    for gap, unsure in (("3370:3430", True), ("1060:1120", False)):
        result = run("fill", str(path), "--gap", gap, "-o", str(tmp_path / "filled.bvh"))
        assert result.returncode == 0, result.stderr
        assert ("warning: the model was unsure of frames 3371-3429" in result.stderr) == unsure, result.stderr


def test_the_command_line_warns_where_to_look(model, clip, tmp_path):
    path, motion = clip
    result = run("superres", str(path), "--every", "10", "-o", str(tmp_path / "dense.bvh"), "--model", str(model.path),
                 "--no-contacts")
    assert result.returncode == 0, result.stderr
    # the test model is four steps old: its motion is poor (toes through the floor inside the gaps, which
    # planting feet would hold up), and the warning says where
    assert "warning: look at" in result.stderr


def test_a_plain_fill_keeps_the_momentum_of_the_keys(mocap, lafan1_zip, monkeypatch):
    """On a walk the shipped model never saw (Bandai-1's, brought onto LaFAN1's skeleton) the network's
    own ground path leaves the momentum the keys carry (it slows, even turns back, at the start of a
    2 s gap); taking most of the root's path from the spline through the keys' velocities errs far
    less. Decompress, whose keys are surrounded by generated frames, leans instead to the spline through
    the keys alone (their tangents from the keys either side), which keeps the root nearer too."""
    from lab.dataset import subject_of
    from inference.retarget import Retargeting, natural_pose

    model = open_model(ROOT / "inference" / "models" / "rtn-lafan1.onnx")
    lafan = [m for m in read_motions(lafan1_zip) if subject_of(m.name) in (1, 2, 3, 4)]
    bandai = read_motions(mocap / "bandai1.zip")
    onto = Retargeting.build(bandai[0].skeleton, lafan[0].skeleton, natural_pose(bandai), natural_pose(lafan))
    walk = onto(next(m for m in bandai if "walk_normal" in m.name))

    def root_error():
        errors = []
        for a in range(20, walk.n_frames - 80, 23):
            out = fill_gaps(model, walk, [(a, a + 60)])
            errors.append(np.linalg.norm(out.positions[a + 1:a + 60, 0] - walk.positions[a + 1:a + 60, 0], axis=-1).mean())
        return float(np.mean(errors))

    ours = root_error()
    monkeypatch.setattr(model, "spline", 0.0)
    assert ours < 0.5 * root_error()
    monkeypatch.setattr(model, "spline", 1.0)
    network = fill_gaps(model, walk, [(0, 60), (60, 120)])
    monkeypatch.setattr(model, "spline", 0.0)
    np.testing.assert_array_equal(network.positions, fill_gaps(model, walk, [(0, 60), (60, 120)]).positions)

    def decompress_error():
        return np.linalg.norm(superres(model, walk, 30).positions[:, 0] - walk.positions[:, 0], axis=-1).mean()

    leaned = decompress_error()
    monkeypatch.setattr(model, "key_spline", 0.0)
    assert leaned < 0.9 * decompress_error()
