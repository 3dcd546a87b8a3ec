"""CARL's simulated dog in real MuJoCo: the model built from the dog's skeleton agrees with our forward
kinematics, carries CARL's PD gains, and holds a captured pose; its parts refuse what they cannot use."""

import sys
import zipfile

import numpy as np
import pytest

from conftest import _need
from inference import quat
from inference.anatomy import PAWS
from inference.bvh import parse_bvh
from inference.carl.body import DAMPING, TERMINAL, dog_body, mujoco
from inference.carl.reference import grounds, paw_radius, states
from inference.carl.simulation import Simulation
from inference.errors import BetwixtError
from inference.motion import Skeleton

WALK = "D1_001_KAN01_001"


@pytest.fixture(scope="module")
def walk(mocap):
    with zipfile.ZipFile(_need(mocap / "dog-mann.zip")) as z:
        member = next(n for n in z.namelist() if n.endswith(WALK + ".bvh"))
        return parse_bvh(z.read(member), member).frames(0, 900).resample(30)


@pytest.fixture(scope="module")
def sim(walk):
    return Simulation(dog_body(walk.skeleton, walk.rotations))


@pytest.fixture(scope="module")
def reference(sim, walk):
    return states(sim.body, sim.model, walk)


def test_the_model_puts_every_joint_and_paw_where_our_forward_kinematics_does(sim, reference):
    mj, model, d = sim.mj, sim.model, sim.data
    worst_position, worst_angle = 0.0, 0.0
    for t in range(0, len(reference), 7):
        d.qpos[:] = reference.qpos[t]
        mj.mj_kinematics(model, d)
        worst_position = max(worst_position, np.abs(d.xpos[sim.bodies] - reference.positions[t]).max(),
                             np.abs(d.site_xpos[sim.paw_sites] - reference.paws[t]).max())
        dot = np.abs(np.sum(d.xquat[sim.bodies] * reference.rotations[t], axis=-1))
        worst_angle = max(worst_angle, float(2 * np.arccos(np.clip(dot, 0, 1)).max()))
    assert worst_position < 1e-3, worst_position    # metres
    assert worst_angle < 1e-3, worst_angle          # radians


def test_the_dog_has_66_degrees_of_freedom_ball_joints_within_limits_and_kd_a_tenth_of_kp(sim, reference):
    model = sim.model
    assert model.nv == 66 and model.nu == 60
    kp, kd = model.actuator_gainprm[:, 0], -model.actuator_biasprm[:, 2]
    assert np.all(kp > 0) and np.allclose(kd, DAMPING * kp)
    assert np.allclose(-model.actuator_biasprm[:, 1], kp)
    angles = 2 * np.arccos(np.clip(np.abs(reference.qpos[:, sim.ball]), 0, 1))   # each ball joint's turn, w first
    assert np.all(angles <= model.jnt_range[1:, 1] + 1e-9)
    mass = model.body_subtreemass[sim.bodies[0]]
    assert 20 < mass < 80, mass                     # kg: a dog's, from the capsules' volumes
    assert np.isclose(mass, sim.body.masses.sum())


def test_the_reference_stands_on_the_floor_and_velocities_are_differences(sim, reference):
    standing = grounds(reference.paws, reference.fps) - paw_radius(sim.body)   # (4,) each paw's height off the floor
    assert np.mean(standing) == pytest.approx(0.0, abs=1e-9)
    assert np.abs(standing).max() < 0.01, standing        # front and back paws alike: none floats or sinks a cm
    assert reference.contacts.mean() > 0.5                           # a walk stands on most paws most of the time
    root = reference.qpos[:, :3]
    central = (root[2:] - root[:-2]) * reference.fps / 2
    assert np.allclose(reference.qvel[1:-1, :3], central, atol=1e-9)


def test_pd_targets_of_a_standing_frame_hold_the_joints_there(sim, reference):
    t = int(np.argmax(reference.contacts.all(axis=1)))      # a frame on all four paws
    sim.set_state(reference.qpos[t], np.zeros(sim.model.nv))
    targets = sim.targets(reference.qpos[t])
    for _ in range(10):
        sim.step(targets)
    turned = quat.mul(quat.inv(reference.qpos[t, sim.ball[:, None] + np.arange(4)]),
                      sim.data.qpos[sim.ball[:, None] + np.arange(4)])
    error = 2 * np.arccos(np.clip(np.abs(turned[:, 0]), 0, 1))
    assert np.degrees(error).max() < 5, np.degrees(error).round(1)
    assert sim.data.qpos[2] > 0.8 * reference.qpos[t, 2]   # a third of a second later it still stands
    assert not sim.fallen()


def test_a_dog_held_still_on_its_paws_soles_stays_up_where_round_paws_tip_it_over(sim, walk, reference):
    """The capture sets left and right paws a few centimetres apart; on round paws, which the floor
    touches at one point each, the body held on a standing frame's PD targets tips over sideways."""
    import dataclasses
    import re

    body = sim.body
    up = np.array([0.0, 0.0, 1.0])
    frames = np.nonzero(reference.contacts.all(axis=1))[0][::10]          # on all four paws
    outcome = {}
    for name, each in (("soles", body), ("round", dataclasses.replace(
            body, xml=re.sub(r'\s*<geom name="\w+/sole"[^>]*/>', "", body.xml)))):
        held = Simulation(each)
        ref = states(each, held.model, walk)
        fell, tilt = 0, []
        for t in frames:
            held.set_state(ref.qpos[t], np.zeros(held.model.nv))
            targets = held.targets(ref.qpos[t])
            for _ in range(30):                                          # a second
                held.step(targets)
                if held.fallen():
                    break
            fell += held.fallen()
            tilted = quat.rotate(held.data.xquat[held.bodies[0]], up) @ quat.rotate(ref.rotations[t, 0], up)
            tilt.append(np.degrees(np.arccos(np.clip(tilted, -1, 1))))
        outcome[name] = fell, np.median(tilt)
        if name == "soles":
            axes = [held.data.geom_xmat[held.model.geom(f"{p}/sole").id].reshape(3, 3)[:, 2] for p in PAWS]
    assert len(frames) >= 20 and outcome["round"][0] >= 5, outcome   # round paws: a quarter and more tip over
    assert outcome["soles"][0] <= outcome["round"][0] / 3 and outcome["soles"][1] < 8, outcome   # degrees
    assert all(abs(a[2]) < 0.5 for a in axes)                         # the soles lie across, not upright


def test_the_torso_on_the_floor_is_a_fall(sim, reference):
    qpos = reference.qpos[0].copy()
    sim.set_state(qpos, np.zeros(sim.model.nv))
    assert not sim.fallen()
    qpos[2] = 0.03                                           # the hips down on the floor
    sim.set_state(qpos, np.zeros(sim.model.nv))
    touching = {sim.model.geom_bodyid[g] for pair in sim.data.contact.geom[:sim.data.ncon] for g in pair}
    assert sim.fallen() and touching & {sim.model.body(n).id for n in TERMINAL}


def test_a_push_changes_the_dogs_speed_by_as_much_wherever_it_lands_and_a_part_turns_it(sim, reference):
    """Off the floor (1 m up, where only the push differs between two steps from one state) the centre of mass
    speeds up by the push, whether the whole dog or a part is pushed; a part turns the dog about its centre of
    mass, the whole dog does not; the push lasts its step, and setting a state drops one not yet stepped."""
    mj, model, data = sim.mj, sim.model, sim.data
    aloft = reference.qpos[20].copy()
    aloft[2] += 1.0

    def stepped(velocity, part):
        sim.set_state(aloft, reference.qvel[20])
        sim.push(velocity, part)
        sim.step(sim.targets(reference.qpos[21], reference.qvel[21]))
        mj.mj_forward(model, data)   # velocities derived from the state the step ends on
        mj.mj_subtreeVel(model, data)
        return data.subtree_linvel[1].copy(), data.subtree_angmom[1].copy()

    calm = stepped(np.zeros(2), None)
    for part in (None, "Spine", "Head", "LeftForeArm"):
        speed, spin = (a - b for a, b in zip(stepped(np.array([0.0, 0.5]), part), calm))
        np.testing.assert_allclose(speed, [0.0, 0.5, 0.0], atol=0.01)
        assert (np.linalg.norm(spin) > 0.3) == (part is not None), (part, spin)   # kg m^2/s about the centre
    assert not data.xfrc_applied.any()
    sim.push(np.array([0.0, 0.5]), "Head")
    again = stepped(np.zeros(2), None)
    assert all(np.array_equal(a, b) for a, b in zip(again, calm))


def test_a_simulation_that_blows_up_is_a_fall(sim, reference, tmp_path, monkeypatch):
    """Accelerations past what MuJoCo can integrate make it put the body back in its default pose and go on
    (its warning, "Nan, Inf or huge value in QACC"): the episode ends there, as a fall, not as motion to learn from."""
    monkeypatch.chdir(tmp_path)   # MuJoCo writes its warning to MUJOCO_LOG.TXT here, not into the repository
    qpos = reference.qpos[0].copy()
    sim.set_state(qpos, np.zeros(sim.model.nv))
    sim.step(sim.targets(qpos))
    assert not sim.fallen()
    qvel = np.zeros(sim.model.nv)
    qvel[6:] = 1e8                                           # every joint spun past any body's speed
    sim.set_state(qpos, qvel)
    sim.step(sim.targets(qpos))
    assert sim.fallen()
    sim.set_state(qpos, np.zeros(sim.model.nv))              # a new start is judged afresh
    assert not sim.fallen()


def test_the_observation_is_blind_to_where_the_dog_stands_and_faces(sim, reference):
    from inference.carl.observation import AHEAD, observe

    t = 20
    sim.set_state(reference.qpos[t], reference.qvel[t])
    pose = sim.pose()
    ahead = (reference.positions[[t + a for a in AHEAD]], reference.rotations[[t + a for a in AHEAD]])
    turn = quat.from_angle_axis(1.1, np.array([0.0, 0.0, 1.0]))
    shift = np.array([2.0, -3.0, 0.0])
    moved = (quat.rotate(turn, pose[0]) + shift, quat.mul(turn, pose[1]), quat.rotate(turn, pose[2]),
             quat.rotate(turn, pose[3]))
    there = (quat.rotate(turn, ahead[0]) + shift, quat.mul(turn, ahead[1]))
    seen = observe(pose, ahead)
    assert seen.shape == (1 + 15 * 21 + 9 * 21 * len(AHEAD),)
    assert np.allclose(observe(moved, there), seen, atol=1e-5)
    lifted = (pose[0] + [0.0, 0.0, 0.1],) + pose[1:]
    assert observe(lifted, ahead)[0] == pytest.approx(seen[0] + 0.1)   # but not to its height


def test_a_skeleton_without_the_dogs_joints_is_refused():
    human = Skeleton(("Hips", "Spine"), [-1, 0], np.zeros((2, 3)))
    with pytest.raises(BetwixtError, match="dog's 21 joints"):
        dog_body(human, np.tile([1.0, 0, 0, 0], (3, 2, 1)))


def test_without_mujoco_the_physics_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)      # as if it were not installed
    with pytest.raises(BetwixtError, match="pip install mujoco"):
        mujoco()
