"""Planted feet (inference/contacts.py) and the floor found from the feet, on real fills: the shipped
rtn-lafan1 filling gaps of LaFAN1's test subject, which it never saw."""

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from inference.anatomy import legs
from inference.bvh import parse_bvh
from inference.contacts import (ARC, GROUND, LIFT, LIFT_HIGH, MAX_SWING, REACH, fade_frames, held_contacts,
                                lifts, offsets, plant)
from inference.guard import ground
from inference.inbetween import fill_gaps
from inference.leg_ik import STRAIGHT, solve_leg
from lab.metrics import foot_skating, paw_ground
from inference.modelfile import MODELS, open_model
from inference.motion import Motion, Skeleton, forward_kinematics

FEET = ("LeftToe", "RightToe", "LeftFoot", "RightFoot")
N = 30   # frames a gap


@pytest.fixture(scope="module")
def model():
    return open_model(MODELS / "rtn-lafan1.onnx")


@pytest.fixture(scope="module")
def filled(lafan1_zip, model):
    """20 s of a test-subject clip with ten 30-frame gaps, each with its own context, filled by the model."""
    with zipfile.ZipFile(lafan1_zip) as z:
        motion = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1000, 1600)
    gaps = spaced_gaps(motion, N, model.past)
    fill = fill_gaps(model, motion, gaps)
    return motion, gaps, fill, plant(fill, gaps, model.layout.height)


def spaced_gaps(motion, n, past):
    """(start, end) key pairs of ``n``-frame gaps through ``motion``, each with ``past`` frames of its own
    context on either side."""
    return [(s, s + n + 1) for s in range(past, motion.n_frames - n - past - 1, n + 2 * past + 1)]


def feet_of(motion):
    return motion.global_transforms()[1][:, [motion.skeleton.index(f) for f in FEET]]


def toe_skating(motion, capture, gaps):
    """Mean skating of ``motion``'s two toes over ``gaps``, on the ``capture``'s ground (metrics.md)."""
    world = feet_of(motion)
    floor = paw_ground(feet_of(capture))
    return np.mean([foot_skating(world[s:e + 1, :2], floor[:2]) for s, e in gaps])


def test_planted_feet_skate_less_than_the_model_s_and_miss_the_capture_hardly_more(filled):
    motion, gaps, fill, planted = filled
    truth = feet_of(motion)
    floor = paw_ground(truth)   # the capture's ground for every version (metrics.md)

    def skating(m):
        world = feet_of(m)
        return np.mean([foot_skating(world[s:e + 1], floor).mean() for s, e in gaps])

    def error(m):
        made = np.concatenate([np.arange(s + 1, e) for s, e in gaps])
        return np.linalg.norm(m.global_transforms()[1][made] - motion.global_transforms()[1][made], axis=-1).mean()

    assert skating(planted) < 0.8 * skating(fill), (skating(planted), skating(fill), skating(motion))
    # lifting a travelling foot clear of the floor moves it off the model's path by a few centimetres
    assert error(planted) < 1.02 * error(fill), (error(planted), error(fill))


def test_a_foot_planted_on_a_key_stays_where_the_key_has_it(filled, model):
    """Every contact of an ankle that runs from a key into the gap in the fill (the foot low and slow
    there) and ends inside it holds the ankle on the key's spot, where the model let it creep, wherever
    the spot lies within ``STRAIGHT`` of the leg's length from the hip over the fade either side (where the
    body has moved on, the pin fades and the foot goes on with the leg, as the model's did, rather than
    snapping the knee straight)."""
    motion, gaps, fill, planted = filled
    given = np.ones(motion.n_frames, dtype=bool)
    for s, e in gaps:
        given[s + 1:e] = False
    world, after = feet_of(fill)[:, 2:], feet_of(planted)[:, 2:]
    sk = motion.skeleton
    hips = planted.global_transforms()[1][:, [sk.index("LeftUpLeg"), sk.index("RightUpLeg")]]
    reach = [np.linalg.norm(sk.offsets[sk.index(f"{side}Leg")]) + np.linalg.norm(sk.offsets[sk.index(f"{side}Foot")])
             for side in ("Left", "Right")]
    on = held_contacts(world, ground(world, given, slice(None), percentile=GROUND), ~given, 1, model.layout.height,
                       motion.fps)
    held, crept, runs = [], [], 0
    fade = fade_frames(motion.fps)
    for s, e in gaps:
        for k in range(2):
            run = s + np.argmin(on[s:, k]) if on[s, k] else s
            if 4 <= run - s < e - s:   # the key and at least three generated frames
                runs += 1
                level = [0, 2]
                near = np.linalg.norm(hips[s - fade:run + fade, k] - after[s, k], axis=-1) < STRAIGHT * reach[k]
                within = np.array([near[t:t + 2 * fade + 1].all() for t in range(run - s)])
                held.append(np.linalg.norm(after[s:run, k][within][:, level] - after[s, k, level], axis=-1))
                crept.append(np.linalg.norm(world[s:run, k][:, level] - world[s, k, level], axis=-1).max())
    assert runs >= 3, runs
    assert np.concatenate(held).max() < 0.01, held     # cm: wherever the leg reaches the key's spot, it is on it
    assert max(crept) > 1.0, crept                     # where the model's own foot crept away


def test_a_step_stays_near_where_it_began_and_a_travelling_foot_clears_the_floor(filled, model):
    """Contacts are cut into steps no longer than ``REACH`` of the body's height (the network's feet creep
    while they stand), and between steps a foot that travels rises at least ``LIFT`` of its way above its
    ground (at most ``LIFT_HIGH`` of the body's height, and no higher than an arc accelerating it by ``ARC``
    allows over the swing's frames), rather than sliding along the floor."""
    motion, gaps, fill, planted = filled
    height = model.layout.height
    made = np.zeros(motion.n_frames, dtype=bool)
    for s, e in gaps:
        made[s + 1:e] = True
    world, after = feet_of(fill)[:, 2:], feet_of(planted)[:, 2:]
    floor = ground(world, ~made, slice(None), percentile=GROUND)
    on = held_contacts(world, floor, made, 1, height, motion.fps)
    level = [0, 2]
    strays, lifted = [], []
    for k in range(2):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], (on[:, k] & made).astype(int), [0]])))
        for s, e in zip(edges[::2], edges[1::2]):
            if on[s - 1, k] or (e < motion.n_frames and on[e, k]):   # a step running on from a key
                continue
            strays.append(np.linalg.norm(world[s:e, k][:, level] - world[s, k, level], axis=-1).max())
        edges = np.flatnonzero(np.diff(np.concatenate([[0], (~on[:, k] & made).astype(int), [0]])))
        for s, e in zip(edges[::2], edges[1::2]):
            way = np.linalg.norm(after[e, k, level] - after[s - 1, k, level])
            if way > 0.1 * height:
                arc = ARC * height * ((e - s + 1) / motion.fps / np.pi) ** 2
                lifted.append((after[s:e, k, 1].max() - floor[k]) / min(LIFT * way, LIFT_HIGH * height, arc))
    assert len(strays) >= 5 and max(strays) <= REACH * height + 1e-9, strays
    assert len(lifted) >= 10 and min(lifted) > 0.95, lifted


def test_a_foot_off_the_floor_longer_than_a_swing_is_not_lifted(filled, model):
    """A run of generated frames off the ground longer than ``MAX_SWING`` is a foot gliding where no contact
    was found (a Motion VAE's walk: seconds at a time), not a step: an arc over it would float the foot.
    The captured feet of the clip, taken as one run off the ground of either length."""
    motion = filled[0]
    world = feet_of(motion)[:, 2:]
    longest = round(MAX_SWING * motion.fps)
    for frames, lifted in ((longest, True), (longest + 1, False)):
        path = world[:frames]
        arc = lifts(path, np.zeros(path.shape[:2], dtype=bool), np.ones(frames, dtype=bool), 1,
                    model.layout.height, motion.fps, longest)
        assert (arc.max() > 1.0) == lifted, (frames, arc.max())   # cm


def test_a_toe_landing_just_after_a_key_is_not_lifted_again():
    """A toe coming down at a key and landing a few frames after it (a walk left mid-stride for a stand) is the
    landing of the key's swing: an arc from the floor over those frames rose up to 5 cm above it and kicked the
    toe at twice the clips' acceleration at the join. A longer run off the floor after such a key is a step of
    its own, and lifted."""
    fps, height = 30, 165.0
    for run, lifted in ((7, False), (2 * fade_frames(fps) + 1, True)):
        frames = 3 + run + 5
        path = np.zeros((frames, 1, 3))
        path[:, 0, 0] = 5.0 * np.arange(frames)                   # travelling 5 cm a frame
        path[:3, 0, 1] = [10.0, 9.0, 8.0]                         # coming down at the key (frame 2)
        path[3:3 + run, 0, 1] = np.linspace(7.0, 0.5, run)
        contact = np.zeros((frames, 1), bool)
        contact[3 + run:] = True
        generated = np.ones(frames, bool)
        generated[:3] = generated[-1] = False
        clear = lifts(path, contact, generated, 1, height, fps, round(MAX_SWING * fps), sharpest=np.inf, floor=0.0)
        assert (clear[3:3 + run, 0].max() > 1.0) == lifted, (run, clear[3:3 + run, 0])


def test_toes_swing_clear_of_the_floor_as_the_capture_s_do(filled):
    """The network's toe scrapes along the floor under a raised ankle; lifted clear on its swings (no higher
    off its ground than its ankle is off its own), the toes skate hardly more than the capture's
    (unlifted, 1.8x), and far less than the model's."""
    motion, gaps, fill, planted = filled
    ours, capture, network = (toe_skating(m, motion, gaps) for m in (planted, motion, fill))
    assert ours < 1.5 * capture, (ours, capture)
    assert ours < 0.5 * network, (ours, network)


def test_a_toe_held_on_the_floor_pivots_its_foot_rather_than_sliding(lafan1_zip, model):
    """Floor work (LaFAN1's test subject falling and getting up, 2 s gaps): the network's feet turn and
    creep on the floor. A held toe whose ankle is not held moves the ankle's target onto the foot's
    length about the toe, so the foot pivots there; aimed at the toe alone, the foot slid it along with
    the ankle (2.1 times the capture's toe skating; 1.6 pivoted)."""
    with zipfile.ZipFile(lafan1_zip) as z:
        motion = parse_bvh(z.read("fallAndGetUp1_subject5.bvh"), "fallAndGetUp1_subject5").frames(0, 1200)
    gaps = spaced_gaps(motion, 60, model.past)
    fill = fill_gaps(model, motion, gaps)
    planted = plant(fill, gaps, model.layout.height)
    ours, capture, network = (toe_skating(m, motion, gaps) for m in (planted, motion, fill))
    assert ours < 1.85 * capture, (ours, capture)
    assert ours < 0.1 * network, (ours, network)


def turned_on_its_toe(lafan1_zip, lift, turn, creep, travel=0.0, frames=46):
    """A standing frame of the capture (obstacles1 frame 1484, both feet flat) held over ``frames``, the hips
    moving ``travel`` body heights a second forward (out and back), its left foot turned by leg IK about its
    toe, the heel raised up to ``lift`` degrees and swung round by up to ``turn`` (a sine over the frames),
    the toe creeping ``creep`` cm a frame; a gap from the first frame to the last, which holds the foot where
    its turn ends; and the left leg."""
    with zipfile.ZipFile(lafan1_zip) as z:
        clip = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1484, 1485)
    height = open_model(MODELS / "rtn-lafan1.onnx").layout.height
    leg = legs(clip.skeleton)[0]
    rotations, positions = np.repeat(clip.rotations, frames, 0), np.repeat(clip.positions, frames, 0)
    toe0, ankle0 = clip.global_transforms()[1][0, [leg.toe, leg.foot]]
    forward = (positions[0, 0] - toe0) * [1, 0, 1]
    t = np.arange(frames)
    positions[:, 0] += np.outer(np.minimum(t, frames - 1 - t) * travel * height / clip.fps,
                                forward / np.linalg.norm(forward))
    grot, gpos = forward_kinematics(rotations, positions, clip.skeleton.parents)
    a, b = (np.radians(x * np.sin(np.pi * t / (frames - 1))) for x in (lift, turn))
    way = ankle0 - toe0
    flat = np.hypot(way[0], way[2])
    raised = np.stack([way[0] * np.cos(a), way[1] + flat * np.sin(a), way[2] * np.cos(a)], axis=-1)
    swung = np.stack([np.cos(b) * raised[:, 0] + np.sin(b) * raised[:, 2], raised[:, 1],
                      np.cos(b) * raised[:, 2] - np.sin(b) * raised[:, 0]], axis=-1)
    toe = toe0 + creep * t[:, None] * [1.0, 0.0, 0.0]
    rows = slice(1, frames)
    rotations[rows] = solve_leg(rotations[rows], grot[rows], gpos[rows], clip.skeleton.parents, leg,
                                (toe + swung)[rows], toe[rows], 1)
    return replace(clip, rotations=rotations, positions=positions), [(0, frames - 1)], height, leg


def test_a_toe_creeping_on_the_floor_under_still_hips_goes_with_its_foot(lafan1_zip):
    """A foot turning and creeping along the floor under hips that stand still (the network's smear of a
    dancer's foot): held in steps of its own apart from its foot's, the toe moved between them along the floor
    while the foot's own lock held the heel (the rig suite's mixamo-dance skated 1.03x the capture's); going
    with its foot, toe and heel skate under a third of the network's (0.43 of it held apart, 0.24 with it).
    Under travelling hips (a push-off) the same toe stands on its own, as before."""
    for travel, most in ((0.0, 0.33), (0.3, 0.5)):
        motion, gaps, height, leg = turned_on_its_toe(lafan1_zip, lift=0, turn=30, creep=0.6, travel=travel)
        planted = plant(motion, gaps, height)
        floor = motion.global_transforms()[1][0, [leg.toe, leg.foot], 1]
        ours, network = (foot_skating(m.global_transforms()[1][:, [leg.toe, leg.foot]], floor).mean()
                         for m in (planted, motion))
        assert ours < most * network, (travel, ours, network)


def test_a_foot_hovering_still_above_the_floor_stands_on_it(lafan1_zip):
    """A network averages a standing foot's height, and its feet hover a few centimetres up where the capture
    stands. A standing frame's left foot lifted 8 cm off the floor and lowered to hover still 5 cm up through
    the middle of a gap (too high to be found standing before, where it stayed) settles onto its ground there,
    landing and lifting off where it stands: no slide."""
    with zipfile.ZipFile(lafan1_zip) as z:
        clip = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1484, 1485)
    height = open_model(MODELS / "rtn-lafan1.onnx").layout.height
    leg, frames = legs(clip.skeleton)[0], 46
    rotations, positions = np.repeat(clip.rotations, frames, 0), np.repeat(clip.positions, frames, 0)
    grot, gpos = forward_kinematics(rotations, positions, clip.skeleton.parents)
    ramp = np.clip(np.minimum(np.arange(frames), frames - 1 - np.arange(frames)) / 6, 0, 1)
    lift = np.where(ramp < 1, 8.0 * np.sin(np.pi / 2 * ramp), 5.0)     # cm: up to 8, hovering at 5
    lift[[6, 7, frames - 8, frames - 7]] = [7.0, 6.0, 6.0, 7.0]
    up = np.outer(lift, [0.0, 1.0, 0.0])
    rows = slice(1, frames - 1)
    rotations[rows] = solve_leg(rotations[rows], grot[rows], gpos[rows], clip.skeleton.parents, leg,
                                (gpos[:, leg.foot] + up)[rows], (gpos[:, leg.toe] + up)[rows], 1)
    motion = replace(clip, rotations=rotations, positions=positions)
    toe = plant(motion, [(0, frames - 1)], height).global_transforms()[1][:, leg.toe]
    middle = slice(frames // 2 - 5, frames // 2 + 6)
    assert np.abs(toe[middle, 1] - gpos[0, leg.toe, 1]).max() < 0.5, toe[:, 1] - gpos[0, leg.toe, 1]
    travel = np.linalg.norm(np.diff(toe[:, [0, 2]], axis=0), axis=-1)
    assert travel[middle].sum() < 0.1, travel


def test_a_toe_turning_in_place_on_the_floor_stays_there(lafan1_zip):
    """A pivot on the ball of the foot under still hips: the heel raised and swung a quarter turn round a toe
    that stays put. The toe stands still, so it stays where it stands (5.4 cm of travel over the turn, from
    the network's 4.5) rather than going with its foot (12 cm)."""
    motion, gaps, height, leg = turned_on_its_toe(lafan1_zip, lift=20, turn=90, creep=0.0)
    toe = plant(motion, gaps, height).global_transforms()[1][:, leg.toe]
    assert np.linalg.norm(np.diff(toe[:, [0, 2]], axis=0), axis=-1).sum() < 8.0


def test_only_the_generated_frames_change(filled):
    motion, gaps, fill, planted = filled
    made = np.zeros(motion.n_frames, dtype=bool)
    for s, e in gaps:
        made[s + 1:e] = True
    assert np.array_equal(planted.rotations[~made], fill.rotations[~made])
    assert np.array_equal(planted.positions, fill.positions)   # IK turns joints, moves none
    assert np.array_equal(fill.positions[~made], motion.positions[~made])
    assert not np.allclose(planted.rotations[made], fill.rotations[made])


def test_a_skeleton_without_feet_is_left_alone(filled, model):
    motion, gaps, fill, _ = filled
    sk = fill.skeleton
    names = [n.replace("Foot", "Paw").replace("Toe", "Claw") for n in sk.names]
    pawed = Motion(Skeleton(names, sk.parents, sk.offsets), fill.rotations, fill.positions, fill.fps)
    assert legs(sk) and not legs(pawed.skeleton)
    out = plant(pawed, gaps, model.layout.height)
    assert np.array_equal(out.rotations, fill.rotations) and np.array_equal(out.positions, fill.positions)


def test_a_motion_on_a_higher_floor_gets_the_same_fill_moved_with_it(filled, model):
    motion, gaps, fill, planted = filled
    raised = replace(motion, positions=motion.positions.copy())
    raised.positions[:, 0, 1] += 50.0   # half a metre
    higher = fill_gaps(model, raised, gaps)
    assert np.abs(higher.positions[:, 0, 1] - 50.0 - fill.positions[:, 0, 1]).max() < 1e-9
    assert np.abs(higher.rotations - fill.rotations).max() < 1e-9
    higher_planted = plant(higher, gaps, model.layout.height)
    assert np.abs(higher_planted.rotations - planted.rotations).max() < 1e-9


def test_a_lock_between_two_close_contacts_is_reached_without_a_jump():
    """A foot sliding on the ground through two contacts fewer than 2 fade frames apart: the first's fade-out
    must not cut the second's fade-in short, which moved a toe 22 cm in one frame in a 120 fps Decompress
    (rig suite cmu-120); from one lock to the next the held foot moves at most 1.5 times as fast as straight
    (19 cm over 8 frames), and leaves and reaches each lock at under half that pace rather than at its own
    path's (a smoothstep of the offset: 1.47 cm on the first frame, then none on the lock)."""
    frames = 50
    path = np.zeros((frames, 1, 3))
    path[:, 0, 0] = np.arange(frames)                       # 1 cm a frame
    contact = np.zeros((frames, 1), bool)
    contact[10:21] = contact[28:41] = True                  # 7 frames apart: closer than the fade on either side
    fade = fade_frames(30)
    assert 28 - 20 < 2 * (fade + 1)
    generated = np.ones(frames, bool)
    generated[[0, -1]] = False
    out = offsets(path, contact, generated, fade)[:, 0, 0]
    np.testing.assert_allclose(out[10:21], 15 - path[10:21, 0, 0])      # each contact at its mean position
    np.testing.assert_allclose(out[28:41], 34 - path[28:41, 0, 0])
    step = np.diff(path[20:29, 0, 0] + out[20:29])
    straight = (34 - 15) / 8
    assert np.abs(step).max() <= 1.5 * straight + 1e-9, step
    assert max(abs(step[0]), abs(step[-1])) < 0.5 * straight, step


@pytest.mark.parametrize("fps", [24, 60, 120])
def test_a_released_lock_fades_as_fast_in_time_at_any_frame_rate(fps):
    """The same slide at 30 fps and at ``fps``: a foot held for half a second while its own path slides
    on at 30 cm a second, then let go. The offset fades out at the same speed in cm a second."""
    def peak_speed(rate):
        frames = int(2 * rate)
        path = np.zeros((frames, 1, 3))
        path[:, 0, 0] = 30.0 * np.arange(frames) / rate
        contact = np.zeros((frames, 1), bool)
        contact[: int(0.5 * rate)] = True
        generated = np.ones(frames, bool)
        generated[[0, -1]] = False
        held = path + offsets(path, contact, generated, fade_frames(rate))
        return np.abs(np.diff(held[:, 0, 0])).max() * rate
    assert peak_speed(fps) == pytest.approx(peak_speed(30), rel=0.25)


def test_planting_hardly_adds_to_the_knees_acceleration(filled):
    """A lock the leg reaches only straight (the body has moved on) is eased back toward the hip
    (``STRAIGHT`` to ``TOP`` of the leg's length), a short swing's arc is no sharper than ``ARC``, and a nearly
    straight knee's bend is blurred over a landing's first frames (``LANDING``): at its full length such a lock
    snapped the knee straight and back within a few frames, an arc squeezed into the frames before a landing
    kicked it up and down, and a leg held exactly from the frame it landed snapped its knee there (the knees'
    largest acceleration in a gap, mean over the gaps, 1.50 times the unplanted fill's; 1.25 before the landing's
    blur, 1.20 with it)."""
    motion, gaps, fill, planted = filled
    knees = [motion.skeleton.index("LeftLeg"), motion.skeleton.index("RightLeg")]

    def largest(m):
        w = m.global_transforms()[1][:, knees]
        acceleration = np.linalg.norm(w[2:] - 2 * w[1:-1] + w[:-2], axis=-1)
        return np.mean([acceleration[s - 1:e].max() for s, e in gaps])

    assert largest(planted) < 1.22 * largest(fill), (largest(planted), largest(fill))
