"""The Motion VAE's control, with a tiny model trained by our own training command (the fixtures of
test_mvae.py): the floor step that keeps a walk's feet on the floor, variants that reach a key, and bad
requests refused with one clear error."""

import re
from dataclasses import replace

import numpy as np
import pytest

from inference.bvh import read_bvh
from inference.cli import main
from inference.inbetween import gap_in
from inference.modelfile import ModelError
from inference.motion import forward_kinematics
from inference.mvae import control
from inference.mvae.floor import SUNK
from inference.mvae.features import fields, poses, root_path, size
from tests.test_mvae import clip, model, run  # noqa: F401  (fixtures: a subject 5 clip, the tiny model)


def lowest_feet(model, motion, frame, frames, k, grounded):
    """(2, K, frames) the lowest foot's height by the orientations and by the positions, as the floor step
    measures them, in each of K roll-outs of ``frames`` frames from ``frame`` of ``motion`` (seeded), and the
    roll-outs' raw poses (K, frames, D)."""
    start = poses(motion.frames(frame - 1, frame + 1), model.pair)[0]
    rng = np.random.default_rng(0)
    raw = model._rollout(np.repeat(start, k, axis=0), frames,
                         lambda t: rng.standard_normal((k, model.latent), dtype=np.float32), grounded)
    return np.stack([np.stack(model.legs.lowest_each(r)) for r in raw], axis=1), raw


def test_the_floor_step_stands_every_pose_on_the_floor(model, clip):  # noqa: F811
    """Each generated pose is moved up or down before it is fed back, so that its lowest foot by its own
    positions, which the motion's bones aim at (test_aim.py), stands on the model's floor: not under it,
    nor floating above it, unless a foot SUNK under it by its orientations or a joint at its least height
    holds the pose up."""
    motion = read_bvh(clip)
    sunk, _ = lowest_feet(model, motion, 100, 60, 4, grounded=False)
    assert (sunk.min(axis=0) < model.floor - 1.0).mean() > 0.5   # the tiny model sinks without it
    (by_orientations, by_positions), raw = lowest_feet(model, motion, 100, 60, 4, grounded=True)
    assert by_positions.min() > model.floor - 1e-3       # cm: float32 poses
    assert by_orientations.min() > model.floor - SUNK - 1e-3
    # not floating either: every pose as low as the first of the three to touch lets it be
    lowest = np.maximum.reduce([model.floor - by_positions, model.floor - SUNK - by_orientations,
                                (model.least - raw[..., model.legs.heights]).max(axis=-1)])
    assert np.abs(lowest).max() < 1e-3
    assert (by_positions < model.floor + 0.5).mean() > 0.5   # most often the feet the user sees
    walks = model.walk(motion, 100, 60, k=4, seed=0)
    np.testing.assert_allclose(walks[0].rotations[:101], motion.rotations[:101], atol=1e-12)


def test_the_root_steps_by_the_foot_on_the_floor(model, clip):  # noqa: F811
    """The floor step moves the root by what keeps the standing feet where they stood: where a foot joint
    stands fully, the standing joints' mean move in the world, each weighted by how much it stands, is
    nil (the root's own step, integrated, cancels their move in the root frame), whatever step the network
    gave the root."""
    start = poses(read_bvh(clip).frames(99, 101), model.pair)[0].astype(np.float32)
    rng = np.random.default_rng(0)
    raw = model._rollout(np.repeat(start, 4, axis=0), 40,
                         lambda t: rng.standard_normal((4, model.latent), dtype=np.float32))
    legs = model.legs
    for walk in raw:
        origins, turned = root_path(walk, np.zeros(3), 0.0, model.fps)
        feet = walk[:, legs.positions].reshape(len(walk), -1, 3)[:, legs.feet]
        cos, sin = np.cos(turned[1:])[:, None], np.sin(turned[1:])[:, None]
        world = np.stack([feet[..., 0] * cos + feet[..., 2] * sin, -feet[..., 0] * sin + feet[..., 2] * cos], -1)
        world += origins[:, None, [0, 2]]
        stands = legs.stands(walk, model.floor)[1:]                   # (T - 1, K) of each pose after the first
        moved = np.diff(world, axis=0)                                # (T - 1, K, 2)
        kept = (stands[..., None] * moved).sum(axis=1) / stands.sum(axis=1)[:, None]   # the standing feet's mean
        full = stands.max(axis=1) == 1
        assert full.mean() > 0.5
        np.testing.assert_allclose(kept[full], 0.0, atol=1e-2)       # cm: float32 poses
    assert np.linalg.norm(moved, axis=-1).max() > 1.0                 # while the body moves


def test_a_body_lying_down_is_lifted_by_whichever_joint_is_under_the_floor(model, clip):  # noqa: F811
    """Not the feet alone: a pose whose hand the network put under the floor (a body lying down, on its
    hands) is raised by the hand's depth, every joint alike; one with nothing under it is left as it is."""
    start = poses(read_bvh(clip).frames(99, 101), model.pair)[0].astype(np.float32)
    model.legs.ground(start, model.floor)                        # standing on the model's floor
    heights = model.legs.heights
    hand = model.skeleton.index(next(n for n in model.skeleton.names if "hand" in n.lower()))
    lying = np.repeat(start, 2, axis=0)
    lying[1, heights.start + 3 * hand] = model.floor - 7.0   # the hand 7 cm under the floor
    before = lying.copy()
    model.legs.ground(lying, model.floor)
    raised = lying[:, heights] - before[:, heights]
    np.testing.assert_allclose(raised, [[0.0], [7.0]] * np.ones(raised.shape[1]), atol=1e-3)
    np.testing.assert_array_equal(np.delete(lying, heights, axis=1), np.delete(before, heights, axis=1))


def test_no_joint_goes_lower_than_the_training_data_put_it(model, clip):  # noqa: F811
    """The hips, inside the body, never touched the floor in the capture, so a walk lying down should not
    rest on them: each joint is held at the least height the training data gave it (``model.least``), a
    pose with one joint under its own raised by that joint's depth, every joint alike; and no joint of a
    walk's generated poses is lower than its least."""
    least = model.least
    assert least.shape == (len(model.skeleton),) and (least >= model.floor).all()
    assert least[0] > model.floor + 1.0      # the hips (LaFAN1's training subjects: 2.8 cm)
    start = poses(read_bvh(clip).frames(99, 101), model.pair)[0].astype(np.float32)
    heights = model.legs.heights
    model.legs.ground(start, model.floor, least)                 # standing on the floor
    head = model.skeleton.index("Head")
    higher = least.copy()
    higher[head] = start[0, heights][head] + 5.0               # a head that may not be lower than 5 cm above it
    raised = start.copy()
    model.legs.ground(raised, model.floor, higher)
    np.testing.assert_allclose(raised[:, heights] - start[:, heights], 5.0, atol=1e-3)
    np.testing.assert_array_equal(np.delete(raised, heights, axis=1), np.delete(start, heights, axis=1))
    rng = np.random.default_rng(0)
    raw = model._rollout(np.repeat(start, 4, axis=0), 60, lambda t: rng.standard_normal((4, model.latent),
                                                                                        dtype=np.float32))
    assert (raw[..., heights] >= least - 1e-3).all()


def test_a_walk_stands_on_the_floor_under_the_start(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    positions = motion.positions.copy()
    positions[:, 0, 1] += 50.0             # the armature raised half a metre
    raised = model.walk(replace(motion, positions=positions), 100, 30, k=2, seed=1)
    walks = model.walk(motion, 100, 30, k=2, seed=1)
    for a, b in zip(raised, walks):
        np.testing.assert_allclose(a.positions[101:, 0], b.positions[101:, 0] + [0, 50, 0], atol=1e-6)
        np.testing.assert_allclose(a.rotations, b.rotations, atol=1e-9)


def two_gaps(motion, past):
    """Gaps of 30 frames after frames 100 and 300 of ``motion`` as one batch of two."""
    one, two = gap_in(motion, 100, 131, past), gap_in(motion, 300, 331, past)
    return replace(one, **{name: np.concatenate([getattr(one, name), getattr(two, name)]) for name in
                           ("past_rotations", "past_positions", "target_rotations", "target_positions",
                            "after_rotations", "after_positions")})


def test_variants_have_the_rtns_shapes_are_seeded_and_differ(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    gap = two_gaps(motion, model.past)
    rot, pos = model.variants(gap, 3, seed=2)
    assert rot.shape == (3, 2, 30, 22, 4) and pos.shape == (3, 2, 30, 22, 3)
    assert np.isfinite(rot).all() and np.isfinite(pos).all()
    np.testing.assert_allclose(np.linalg.norm(rot, axis=-1), 1.0, atol=1e-9)
    # the joints other than the hips keep the last key's local translations
    np.testing.assert_array_equal(pos[:, 0, :, 1:], np.broadcast_to(motion.positions[100, 1:], pos[:, 0, :, 1:].shape))
    again = model.variants(gap, 3, seed=2)
    np.testing.assert_array_equal(rot, again[0])
    np.testing.assert_array_equal(pos, again[1])
    assert np.abs(model.variants(gap, 3, seed=3)[0] - rot).max() > 1e-3
    for i, j in ((0, 1), (0, 2), (1, 2)):   # each unlike the others, in both gaps
        assert (np.abs(rot[i] - rot[j]).max(axis=(1, 2, 3)) > 1e-3).all()
    from inference.mvae.control import candidates
    draws = np.random.default_rng(2).standard_normal((2 * candidates(3), 31, model.latent))
    np.testing.assert_array_equal(model.variants(gap, 3, noise=draws)[0], rot)   # noise: the seed's draws


def test_variants_end_on_the_key(model, clip):  # noqa: F811
    from inference.mvae.control import onto_key

    motion = read_bvh(clip)
    gap = gap_in(motion, 100, 131, model.past)
    key = motion.global_transforms()[1][131]

    def miss(rot, pos):   # (k,) the last in-between frame's mean joint distance to the key
        return np.linalg.norm(forward_kinematics(rot[:, 0, -1], pos[:, 0, -1], motion.skeleton.parents)[1] - key,
                              axis=-1).mean(axis=-1)

    blended, raw = model.variants(gap, 4, seed=0), model.variants(gap, 4, seed=0, blend=1)   # 1: the key alone
    assert (miss(*blended) < 0.5 * miss(*raw)).all(), (miss(*blended), miss(*raw))
    # the blend's last frame, the key's own, is the key exactly
    walk = model.walk(motion, 100, 31, k=2, seed=0)
    rot, hips = onto_key(np.stack([w.rotations[101:] for w in walk]), np.stack([w.positions[101:, 0] for w in walk]),
                         motion.rotations[131], motion.positions[131, 0], blend=10)
    assert np.abs(np.abs(np.sum(rot[:, -1] * motion.rotations[131], axis=-1)) - 1).max() < 1e-12
    np.testing.assert_allclose(hips[:, -1], np.broadcast_to(motion.positions[131, 0], (2, 3)), atol=1e-12)
    np.testing.assert_allclose(rot[:, :20], np.stack([w.rotations[101:121] for w in walk]), atol=1e-12)  # untouched


def test_variants_command_writes_k_files(run, clip, tmp_path):  # noqa: F811
    out = tmp_path / "variants"
    assert main(["variants", str(clip), "--gap", "100:131", "-k", "3", "-o", str(out), "--model",
                 str(run["model"])]) == 0
    files = sorted(out.glob("*.bvh"))
    assert [f.name for f in files] == [f"obstacles1_subject5-variant0{i}.bvh" for i in (1, 2, 3)]
    source = read_bvh(clip).global_transforms()[1]
    written = [read_bvh(f).global_transforms()[1] for f in files]
    for w in written:
        assert len(w) == len(source)
        np.testing.assert_allclose(w[:101], source[:101], atol=1e-3)
        np.testing.assert_allclose(w[131:], source[131:], atol=1e-3)
    assert np.abs(written[0][101:131] - written[1][101:131]).max() > 1.0   # cm


@pytest.mark.parametrize("k, words", [(0, "0 variants (k): give 1 to 64"), (-2, "-2 variants (k): give 1 to 64"),
                                      (65, "65 variants (k): give 1 to 64")])
def test_a_bad_number_of_variants_is_refused(model, clip, k, words):  # noqa: F811
    with pytest.raises(ModelError, match=re.escape(words)):
        model.variants(gap_in(read_bvh(clip), 100, 131, model.past), k)


def test_nan_around_the_gap_is_refused_and_the_motion_kept(model, clip):  # noqa: F811
    motion = read_bvh(clip)
    rotations = motion.rotations.copy()
    rotations[131, 17] = np.nan
    broken = replace(motion, rotations=rotations)
    with pytest.raises(ModelError, match="the key after the gap: joint 'LeftHand' is not a number"):
        model.variants(gap_in(broken, 100, 131, model.past), 2)
    assert np.isnan(broken.rotations[131, 17]).all() and np.array_equal(broken.rotations[:131], motion.rotations[:131])


def test_the_command_refuses_bad_gaps_in_one_line_and_writes_nothing(run, clip, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "variants"
    for gap, k, words in (("100:99999", "3", "the keys 100:99999 are not two frames of its 5391"),
                          ("100:131", "0", "argument -k: 0: give 1 to 64")):
        assert main(["variants", str(clip), "--gap", gap, "-k", k, "-o", str(out), "--model", str(run["model"])]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
    assert not out.exists()


def test_following_paths_from_a_start_or_standing(model, clip, monkeypatch):  # noqa: F811
    from lab.metrics import path_deviation
    from inference.mann.path import Path
    from inference.mvae import runtime
    from inference.mvae.features import root_of

    motion = read_bvh(clip)
    line = Path(np.array([0.0, 3.0]), np.array([[0.0, 0.0], [100.0, 0.0]]), source="line")   # +X, 1 m in 3 s
    bend = Path(np.array([0.0, 1.0, 2.0]), np.array([[50.0, 20.0], [50.0, 50.0], [80.0, 50.0]]), source="bend")
    calls = []
    out = model.follow([line, bend], (motion, 100), progress=lambda done, total: calls.append((done, total)))
    assert [o.n_frames for o in out] == [91, 61] and all(o.fps == 30.0 for o in out)
    assert calls == [(i, 18) for i in range(1, 19)]     # every COMMIT frames of the longest path
    for o, path in zip(out, (line, bend)):
        assert np.isfinite(o.rotations).all() and o.skeleton.same_hierarchy(motion.skeleton)
        origin, theta = root_of(o.global_transforms()[1], model.pair)
        np.testing.assert_allclose(origin[0, [0, 2]], path.points[0], atol=1e-6)     # placed at the start ...
        along = np.diff(path.points[:2], axis=0)[0]
        assert abs(np.angle(np.exp(1j * (theta[0] - np.arctan2(*along))))) < 1e-6   # ... facing along the path
    # the first frame is the start's pose
    dot = np.abs(np.sum(out[0].rotations[0, 1:] * motion.rotations[100, 1:], axis=-1))
    np.testing.assert_allclose(dot, 1.0, atol=1e-6)
    again = model.follow([line, bend], (motion, 100))
    np.testing.assert_array_equal(again[0].rotations, out[0].rotations)   # deterministic

    def kept(followers):   # the root's mean distance to the line and its end's to the line's end
        monkeypatch.setattr(runtime, "FOLLOWERS", followers)
        o = model.follow([line])[0]
        origin, theta = root_of(o.global_transforms()[1], model.pair)
        return path_deviation(o, line.points, (origin[:, [0, 2]], theta))[0], np.linalg.norm(origin[-1, [0, 2]] -
                                                                                                line.points[-1])
    chosen, alone = kept(64), kept(1)   # measured: 0.18 / 1.6 cm against 0.33 / 5.7 cm
    assert chosen[0] < alone[0] and chosen[1] < alone[1], (chosen, alone)


def test_a_path_is_followed_by_refining_the_plan_chosen_before():
    """The roll-outs a path is chosen from, after the first choice: the plan chosen COMMIT frames before,
    moved on by as many frames, as it stands (so no choice is worse than going on with it), REFINED - 1
    nudges of it, and fresh draws from the prior."""
    shape = (2, control.FOLLOWERS, control.HORIZON, 32)
    first = control.drawn(np.random.default_rng(1), None, shape)
    np.testing.assert_array_equal(first, np.random.default_rng(1).standard_normal(shape, dtype=np.float32))
    plan = first[:, 7]
    z = control.drawn(np.random.default_rng(2), plan, shape)
    kept, refined = control.HORIZON - control.COMMIT, control.REFINED
    np.testing.assert_array_equal(z[:, 0, :kept], plan[:, control.COMMIT:])
    nudged = z[:, 1:refined, :kept] - plan[:, None, control.COMMIT:]
    assert abs(nudged.std() - control.NUDGE) < 0.02 and abs(nudged.mean()) < 0.02
    for fresh in (z[:, refined:], z[:, :refined, kept:]):   # the others, and the frames the plan newly reaches
        assert abs(fresh.std() - 1) < 0.03 and abs(fresh.mean()) < 0.03


def standing(roots, height):
    """Roll-outs (C, T, D) of one joint, the hips, whose root steps are ``roots`` (C, T, 3), the hips at
    the middle of the control's UPRIGHT band of ``height`` (a walk's)."""
    rolled = np.zeros(roots.shape[:-1] + (size(1),))
    rolled[..., :3] = roots
    rolled[..., fields(1)["positions"][0] + 1] = np.mean(control.UPRIGHT) * height
    return rolled


def test_a_roll_out_that_faces_away_from_the_path_on_the_way_scores_worse():
    """Two roll-outs along a straight path, the same root positions, both facing along it at the end: the
    one that turned sideways on the way (a sidestep) is the further from the path by the facing it kept."""
    fps, frames, height = 30, control.HORIZON, 170.0
    ahead = np.zeros((frames, 3))
    ahead[:, 1] = 100.0                                  # forward at 1 m/s
    aside = np.zeros((frames, 3))
    aside[0] = [0.0, 100.0, np.pi / 2 * fps]             # a step forward, turning a quarter
    aside[1:, 0] = -100.0                                # then sideways in its own frame: forward on the path
    aside[-1, 2] = -np.pi / 2 * fps                      # and facing along it again at the last
    rolled = standing(np.stack([ahead, aside]), height)
    origins, turned = root_path(rolled, np.zeros(3), 0.0, fps)
    np.testing.assert_allclose(origins[0], origins[1], atol=1e-9)
    assert turned[0, -1] == turned[1, -1] == 0.0
    path = origins[0][:, [0, 2]]
    score = control.along(rolled, (np.zeros(3), 0.0), path, np.arange(frames), np.zeros(frames), fps, height)
    assert score[0] == pytest.approx(0.0, abs=1e-9)
    assert score[1] == pytest.approx(control.FACING * height * np.pi / 2 * (frames - 1) / frames)


def test_a_roll_out_off_the_path_scores_worse_than_one_behind_its_timing_on_it():
    """Along a straight path at 1 m/s: a roll-out a second behind the path's timing but on the path is
    judged by how far behind it is alone; one level with the timing but as far to the side, by that
    distance to the timed positions and again to the path itself, so that a character behind its time is
    not drawn across a curve to catch up."""
    fps, frames, height = 30, control.HORIZON, 170.0
    line = np.stack([np.zeros(2 * frames), np.arange(2 * frames) * 100.0 / fps], axis=-1)   # (x, z): 1 m/s on z
    timed = np.arange(frames, 2 * frames)                   # where the timing has got to: a second on
    behind = np.zeros((frames, 3))
    behind[:, 1] = 100.0                                    # on the path, a second (1 m) behind
    beside = np.zeros((frames, 3))
    beside[0, 0] = -100.0 * fps                             # a metre to the side in the first frame...
    beside[0, 1] = 100.0 * fps                              # ... and level with the timing, then on with it
    beside[1:, 1] = 100.0
    rolled = standing(np.stack([behind, beside]), height)
    score = control.along(rolled, (np.zeros(3), 0.0), line, timed, np.zeros(frames), fps, height)
    distance = np.linalg.norm(root_path(rolled, np.zeros(3), 0.0, fps)[0][..., [0, 2]] - line[timed], axis=-1)
    assert distance.mean(axis=-1) == pytest.approx([96.67, 100.0], abs=0.01)
    assert score[0] == pytest.approx(distance[0].mean()) and score[1] == pytest.approx(2 * distance[1].mean())


def test_a_roll_out_that_hops_or_crouches_along_a_path_scores_worse():
    """Three roll-outs on a path, level with its timing: the hips of a walk, the hips 30 cm higher (a hop)
    for a third of the frames, and as much lower (a crouch): each hop or crouch scores by how far the hips
    go outside the control's UPRIGHT band, a mean over the frames."""
    fps, frames, height = 30, control.HORIZON, 170.0
    line = np.stack([np.zeros(frames + 1), np.arange(frames + 1) * 100.0 / fps], axis=-1)
    roots = np.zeros((3, frames, 3))
    roots[..., 1] = 100.0
    rolled = standing(roots, height)
    hips = fields(1)["positions"][0] + 1
    rolled[1, :10, hips] = control.UPRIGHT[1] * height + 30.0
    rolled[2, :10, hips] = control.UPRIGHT[0] * height - 30.0
    score = control.along(rolled, (np.zeros(3), 0.0), line, np.arange(1, frames + 1), np.zeros(frames), fps, height)
    assert score[0] == pytest.approx(0.0, abs=1e-9)
    assert score[1] == pytest.approx(30.0 * 10 / frames) and score[2] == pytest.approx(30.0 * 10 / frames)


def test_a_roll_out_whose_feet_float_scores_worse():
    """Two roll-outs level with a path's timing, one whose lowest foot stands 12 cm above the floor for a
    third of the frames (held up by a foot its orientations put deep under the floor): it scores FLOATING
    times that a frame, a mean over the frames; a foot under the floor (the floor step allows it) scores
    nothing."""
    fps, frames, height = 30, control.HORIZON, 170.0
    line = np.stack([np.zeros(frames + 1), np.arange(frames + 1) * 100.0 / fps], axis=-1)
    roots = np.zeros((2, frames, 3))
    roots[..., 1] = 100.0
    rolled = standing(roots, height)
    lowest = np.full((2, frames), -1.0)
    lowest[1, :10] = 12.0
    score = control.along(rolled, (np.zeros(3), 0.0), line, np.arange(1, frames + 1), np.zeros(frames), fps, height,
                          lowest=lowest)
    assert score[0] == pytest.approx(0.0, abs=1e-9)
    assert score[1] == pytest.approx(control.FLOATING * 12.0 * 10 / frames)


def test_a_roll_out_whose_standing_feet_skid_scores_worse(model):  # noqa: F811
    """The standing feet's speed over the ground (:meth:`~inference.mvae.floor.Legs.skid`): a foot joint counts
    as much as it stands, its horizontal velocity alone; two roll-outs level with a path's timing, one whose
    standing feet skid at 30 cm a second for a third of its frames, score SKID times that apart. At a star's
    corners the chosen roll-outs turned on their standing feet (bench-mvae's star walk: 1.36 cm a frame of
    slide where the feet touch; scored, 0.86)."""
    legs = model.legs
    pose = np.zeros((3, size(len(model.skeleton))), np.float32)
    heights, velocities = legs.heights, legs.velocities.start + 3 * legs.feet   # the feet on the floor (0)
    pose[1, velocities] = 30.0                                  # every foot, standing, sliding along x
    pose[2, velocities + 1] = 30.0                              # moving up only: no skid
    pose[2, heights.start + 3 * legs.feet] = model.floor + 50.0  # and off the floor
    skid = legs.skid(pose, model.floor)
    assert skid[0] == 0.0 and skid[1] == pytest.approx(30.0) and skid[2] == 0.0
    fps, frames, height = 30, control.HORIZON, 170.0
    line = np.stack([np.zeros(frames + 1), np.arange(frames + 1) * 100.0 / fps], axis=-1)
    roots = np.zeros((2, frames, 3))
    roots[..., 1] = 100.0
    skids = np.zeros((2, frames))
    skids[1, :10] = 30.0
    score = control.along(standing(roots, height), (np.zeros(3), 0.0), line, np.arange(1, frames + 1),
                          np.zeros(frames), fps, height, skid=skids)
    assert score[1] - score[0] == pytest.approx(control.SKID * 30.0 * 10 / frames)


def test_follow_path_command_takes_a_motion_vae(run, clip, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "path.csv"
    path.write_text("time,x,y\n0,0,0\n2,0.6,0\n")
    out = tmp_path / "followed.bvh"
    assert main(["follow-path", str(path), "-o", str(out), "--model", str(run["model"]), "--start",
                 f"{clip}:100"]) == 0
    followed = read_bvh(out)
    assert followed.n_frames == 61 and followed.fps == 30.0
    assert main(["follow-path", str(path), "-o", str(tmp_path / "tau.bvh"), "--model", str(run["model"]),
                 "--tau", "0.2"]) == 2
    assert "a 'mvae' model where a 'mann' model is needed" in capsys.readouterr().err
    assert not (tmp_path / "tau.bvh").exists()
