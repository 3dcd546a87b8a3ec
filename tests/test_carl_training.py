"""CARL's imitation task and trainer on real dog clips in real MuJoCo: the reward, early termination,
pushes and randomisation measured on the simulated body, and a few PPO roll-outs that save and resume."""

import argparse
import json
from functools import partial

import numpy as np
import pytest
import torch

from conftest import DOG_TEST_CLIP as TEST_CLIP
from lab.dataset import load_motion_set
from inference.carl.simulation import COURSE_FORCE, COURSE_GAINS, HOLD_GAINS, POLICY_RATE, TORSO
from training.carl import reward as rewards
from training.carl.env import MASS, Tracking
from training.carl.gaits import GAITS, stretches
from training.carl.policy import LOG_STD, Policy, Value
from training.carl.ppo import KL_FACTOR, Roller, Settings, advantages, update
from training.carl.train import register
from training.carl.workers import Here, Processes, environments, make


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def clips(dog_small_zip, cache):
    return stretches(load_motion_set(dog_small_zip, cache), tuple(GAITS))


@pytest.fixture(scope="module")
def env(clips):
    from inference.carl.body import dog_body

    body = dog_body(clips[0][0].skeleton, np.concatenate([m.rotations for m, _ in clips]))
    return Tracking(body, clips, np.random.default_rng(0), pushes=False, randomise=False)


def test_every_gait_is_found_and_the_test_split_is_never_read(clips):
    assert {g for _, g in clips} == set(GAITS)
    assert not any(m.name.startswith(TEST_CLIP) for m, _ in clips)


def test_the_reference_itself_earns_the_whole_reward_and_a_turned_joint_less(env):
    env.reset(clip=1, frame=10)
    value, terms = rewards.reward(env.errors())
    assert value == pytest.approx(1.0, abs=1e-9) and all(t == pytest.approx(1.0) for t in terms.values())
    qpos, qvel = env.sim.data.qpos.copy(), env.sim.data.qvel.copy()
    earned = []
    for angle in (0.2, 0.5):
        turned = qpos.copy()
        a = env.sim.ball[13]                                   # a back leg's knee
        turned[a:a + 4] = [np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)]
        env.sim.set_state(turned, qvel)
        earned.append(rewards.reward(env.errors()))
    (small, small_terms), (large, _) = earned
    assert 1.0 > small > large
    assert small_terms["pose"] < 1.0 and small_terms["velocity"] == pytest.approx(1.0)


def test_the_joint_error_is_nought_on_the_reference_and_grows_as_the_body_departs(env):
    from training.carl.evaluate import joint_error

    env.reset(clip=0, frame=10)
    assert joint_error(env) < 1e-5
    qpos = env.sim.data.qpos.copy()
    qpos[:2] += 0.5                                            # root aligned: moving the whole dog costs nothing
    env.sim.set_state(qpos, env.sim.data.qvel)
    assert joint_error(env) < 1e-5
    a = env.sim.ball[13]
    qpos[a:a + 4] = [np.cos(0.25), 0.0, 0.0, np.sin(0.25)]     # a back leg's knee turned
    env.sim.set_state(qpos, env.sim.data.qvel)
    assert 0.001 < joint_error(env) < 0.05


def test_a_dog_whose_torso_meets_the_floor_ends_its_episode_unrewarded(env):
    env.reset(clip=0, frame=5)
    assert not env.sim.fallen()
    qpos = env.sim.data.qpos.copy()
    qpos[2] = 0.04
    env.sim.set_state(qpos, np.zeros(env.sim.model.nv))
    _, value, fell, cut, _ = env.step(np.zeros(env.action_size))
    assert fell and not cut and value == 0.0


def test_an_episode_is_cut_not_ended_at_its_clips_end(env):
    ref = env.references[-1]
    env.reset(clip=len(env.references) - 1, frame=len(ref) - 5)
    ends = [env.step(np.zeros(env.action_size))[2:4] for _ in range(2)]   # (fell, cut) each
    assert ends == [(False, False), (False, True)]                        # the last frame the policy can look ahead from


def test_a_push_shoves_the_torso_for_a_step_and_bodies_are_randomised(env):
    env.reset(clip=0, frame=5)
    env.push()
    force = env.sim.data.xfrc_applied
    pushed = np.flatnonzero(force.any(axis=1))
    assert pushed.tolist() == [env.sim.model.body(TORSO).id] and force[pushed[0], 2:].max() == 0.0
    change = np.linalg.norm(force[pushed[0], :2]) / env.sim.mj.mj_getTotalmass(env.sim.model) / POLICY_RATE
    assert 0.1 <= change <= 0.5                                 # m/s over the step
    env.step(np.zeros(env.action_size))
    assert not force.any()
    env.randomise = True
    try:
        masses = []
        for _ in range(3):
            env.reset()
            masses.append(env.sim.model.body_mass.copy())
        ratio = masses[0][1:] / env.base[0][1:]
        assert np.all(np.abs(ratio - 1) <= MASS) and not np.allclose(masses[0], masses[1])
        assert 0.6 <= env.sim.model.geom_friction[0, 0] <= 1.2
    finally:
        env.randomise = False
        env.reset()


def test_the_assisting_torque_keeps_a_tipping_dog_up_and_leaves_its_heading_to_the_policy(env):
    starts = [(c, f) for c in range(len(env.references)) for f in range(0, len(env.references[c]) - 40, 20)]

    def zero_action(assist):
        env.assist, steps = assist, []
        for clip, frame in starts:
            env.reset(clip, frame)
            for n in range(1, 91):
                _, _, fell, cut, _ = env.step(np.zeros(env.action_size))
                if fell or cut:
                    break
            steps.append(n)
        return np.mean(steps)

    try:
        alone, held = zero_action(0.0), zero_action(80.0)
        assert held > 1.3 * alone
        env.reset(clip=0, frame=5)
        qpos = env.sim.data.qpos.copy()
        turn = 0.3
        qpos[3:7] = [np.cos(turn / 2), 0.0, 0.0, np.sin(turn / 2)]   # the root turned about the vertical alone
        env.sim.set_state(qpos, np.zeros(env.sim.model.nv))
        reference = env.references[0].qpos[6].copy()
        reference[3:7] = [1.0, 0.0, 0.0, 0.0]
        env.sim.hold(reference, env.assist)
        assert np.allclose(env.sim.data.xfrc_applied[env.sim.bodies[0], 3:], 0.0)
        # a Physics Pass's Assist keeps to the reference's course too: its heading, and its place on the ground
        still, root = np.zeros(env.sim.model.nv), env.sim.bodies[0]
        reference[:2] = qpos[:2] + [0.1, 0.0]
        env.sim.hold(reference, env.assist, still)
        held = env.sim.data.xfrc_applied[root]
        assert np.allclose(held[3:5], 0.0, atol=1e-9) and held[5] == pytest.approx(-HOLD_GAINS[0] * turn)
        assert held[:3] == pytest.approx([COURSE_GAINS[0] * 0.1, 0.0, 0.0])
        env.sim.set_state(qpos, still)
        env.sim.hold(reference, 20.0, still)                                      # each within its cap
        assert env.sim.data.xfrc_applied[root, 5] == pytest.approx(-20.0)
        assert env.sim.data.xfrc_applied[root, 0] == pytest.approx(COURSE_FORCE * 20.0)
        reference[:2] = qpos[:2]
        qpos[3:7] = [np.cos(turn / 2), np.sin(turn / 2), 0.0, 0.0]   # rolled
        env.sim.set_state(qpos, np.zeros(env.sim.model.nv))
        env.sim.hold(reference, env.assist)
        torque = env.sim.data.xfrc_applied[env.sim.bodies[0], 3:]
        assert torque[0] == pytest.approx(-min(80.0, HOLD_GAINS[0] * turn)) and abs(torque[2]) < 1e-12
    finally:
        env.assist = 0.0
        env.reset()
    env.sim.hold(reference, env.assist)
    assert not env.sim.data.xfrc_applied.any()


def test_the_assistance_is_taken_away_as_the_dogs_stay_up():
    from training.carl.train import ANNEAL, ASSIST_FLOOR, anneal

    assert anneal(50.0, {"falls": 2, "episodes": 20}) == pytest.approx(50.0 * ANNEAL)
    assert anneal(50.0, {"falls": 12, "episodes": 20}) == 50.0
    assert anneal(50.0, {"falls": 0, "episodes": 0}) == pytest.approx(50.0 * ANNEAL)  # none finished: none fell
    assert anneal(ASSIST_FLOOR, {"falls": 0, "episodes": 5}) == 0.0
    assert anneal(0.0, {"falls": 0, "episodes": 5}) == 0.0


def train(argv):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True), argv)
    args = parser.parse_args(argv)
    return args.run(args)


def test_a_few_ppo_roll_outs_save_and_resume_where_they_stopped(dog_small_zip, cache, tmp_path):
    from training import checkpoint

    out = tmp_path / "carl"
    argv = ["carl", "--data", str(dog_small_zip), "--cache", str(cache), "--out", str(out), "--samples", "48",
            "--epochs", "1", "--minibatch", "16", "--hidden", "32,32", "--evaluate-every", "2"]
    path = train(argv + ["--iterations", "2"])
    first = checkpoint.load(path)
    assert first["step"] == 2 and first["history"]["samples"] == 96
    assert (out / "reward.png").stat().st_size > 0
    rows = json.loads((out / "history.json").read_text())["train"]
    assert [s for s, _ in rows] == [1, 2] and all(0.0 <= r["reward"] <= 1.0 for _, r in rows)
    assert not any(TEST_CLIP in c for c in first["meta"]["clips"])
    [(at, scores)] = first["history"]["validation"]       # the mean action, every second roll-out
    assert at == 2 and 0 < scores["tracked_s"] <= 5.0 and 0 <= scores["falls"] <= 1 and 0 < scores["reward"] < 1
    assert 0 < scores["joint_error_cm"] < 30

    again = checkpoint.load(train(argv + ["--iterations", "2"]))          # nothing left to do: the same step
    assert again["step"] == 2 and len(again["history"]["runs"]) == 2
    assert all(torch.equal(first["policy"][k], again["policy"][k]) for k in first["policy"])

    on = checkpoint.load(train(argv + ["--iterations", "3", "--processes", "2"]))   # its dogs in two workers
    assert on["step"] == 3 and on["history"]["samples"] == 144
    assert not all(torch.equal(first["policy"][k], on["policy"][k]) for k in first["policy"])
    assert on["config"]["assist"] == 0.0 and all(r["assist"] == 0.0 for _, r in on["history"]["train"])


def test_an_assisted_run_records_each_roll_outs_torque_and_resumes_at_its_level(dog_small_zip, cache, tmp_path):
    from training import checkpoint

    argv = ["carl", "--data", str(dog_small_zip), "--cache", str(cache), "--out", str(tmp_path / "carl"),
            "--samples", "48", "--epochs", "1", "--minibatch", "16", "--hidden", "32,32", "--evaluate-every", "100",
            "--assist", "60"]
    first = checkpoint.load(train(argv + ["--iterations", "2"]))
    levels = [r["assist"] for _, r in first["history"]["train"]]
    assert first["config"]["assist"] == 60.0 and levels[0] == 60.0 and levels[1] <= 60.0
    level = first["history"]["assist"]
    again = checkpoint.load(train(argv[:-1] + ["0", "--iterations", "3"]))   # a resumed run keeps its own level
    assert again["history"]["train"][2][1]["assist"] == level > 0


def test_a_run_also_tracks_manns_dog_along_winding_paths_drawn_alike_on_resuming(dog_small_zip, cache, tmp_path):
    from training import checkpoint

    argv = ["carl", "--data", str(dog_small_zip), "--cache", str(cache), "--out", str(tmp_path / "carl"),
            "--samples", "48", "--epochs", "1", "--minibatch", "16", "--hidden", "32,32", "--evaluate-every", "100",
            "--paths", "1", "--path-seconds", "3"]
    first = checkpoint.load(train(argv + ["--iterations", "1"]))
    paths = [c for c in first["meta"]["clips"] if c.startswith("mann-")]
    assert first["meta"]["paths_by"] == "mann-dog" and len(paths) >= 2
    assert set(paths) <= {"mann-walk-0", "mann-trot-0", "mann-canter-0"}
    again = checkpoint.load(train(argv[:-4] + ["--iterations", "2"]))   # the paths from the run's own record
    assert again["meta"]["clips"] == first["meta"]["clips"] and again["config"]["paths"] == 1


def test_winding_paths_keep_their_speed_and_turn_no_faster_than_a_dog_on_the_move():
    from inference.mann.path import GAITS as SPEEDS
    from training.carl.gaits import TURNS, winding

    path = winding(SPEEDS["trot"], 10.0, np.random.default_rng(3), 100.0)
    step = np.diff(path.points, axis=0)
    assert np.allclose(np.linalg.norm(step, axis=1) * 30.0, 180.0) and path.duration == pytest.approx(10.0)
    heading = np.unwrap(np.arctan2(step[:, 1], step[:, 0]))
    turn = np.abs(np.diff(heading)) * 30.0
    assert turn.max() <= TURNS[1] + 1e-9 and np.ptp(heading) > 0.5


def test_a_bad_option_is_refused_before_the_run_folder_is_made(dog_small_zip, tmp_path):
    out = tmp_path / "carl"
    for bad in (["--samples", "0"], ["--minutes", "-1"], ["--lr", "nan"], ["--gamma", "1"]):
        with pytest.raises(SystemExit) as stop:
            train(["carl", "--data", str(dog_small_zip), "--out", str(out), *bad])
        assert stop.value.code == 2 and not out.exists()


def test_the_mcp_policy_multiplies_its_primitives_by_the_gates_weights():
    torch.manual_seed(0)
    policy = Policy(obs=10, state=4, act=3, hidden=[8], primitives=2)
    with torch.no_grad():
        policy.heads.weight.normal_()
        obs = torch.randn(5, 10)
        mean, std = policy(obs)
        heads = policy.heads(policy.body(policy.norm(obs)[:, :4])).view(5, 2, 2, 3)
        mu, sigma = heads[:, :, 0], heads[:, :, 1].clamp(*LOG_STD).exp()
        w = policy.weights(obs)[..., None]
        precision = (w / sigma ** 2).sum(1)
    assert torch.allclose(std, precision.rsqrt(), rtol=1e-5)
    assert torch.allclose(mean, (w * mu / sigma ** 2).sum(1) / precision, rtol=1e-4, atol=1e-6)


def test_advantages_start_afresh_after_an_episodes_end_and_go_on_in_a_cut_ones_value():
    batch = {"rew": np.ones(4, np.float32), "val": np.zeros(4, np.float32),
             "next_val": np.array([0.0, 0.0, 5.0, 0.0], np.float32), "end": np.array([False, True, False, True])}
    assert np.allclose(advantages(batch, gamma=0.5, lam=1.0), [1.5, 1.0, 4.0, 1.0])


def test_targets_led_by_the_reference_velocity_track_its_motion_closer_than_its_pose_alone(env):
    sim = env.sim
    errors = {False: [], True: []}
    for led in errors:
        for clip in range(len(env.references)):
            ref = env.references[clip]
            for start in range(0, len(ref) - 8, 15):
                sim.set_state(ref.qpos[start], ref.qvel[start])
                for t in range(start + 1, start + 5):
                    sim.step(sim.targets(ref.qpos[t], ref.qvel[t] if led else None))
                errors[led].append(rewards.errors({"qpos": sim.data.qpos, "qvel": sim.data.qvel, "com": np.zeros(3),
                                                   "contacts": np.zeros(4, bool)},
                                                  {"qpos": ref.qpos[t], "qvel": ref.qvel[t], "com": np.zeros(3),
                                                   "contacts": np.zeros(4, bool)}, sim.ball)["pose"])
    assert np.median(errors[True]) < 0.8 * np.median(errors[False]), (np.median(errors[True]), np.median(errors[False]))


def test_targets_ramped_through_the_step_track_a_front_leg_within_a_few_degrees_where_held_ones_miss_it(env):
    """kd = kp / 10 makes a light limb lag its target by 0.1 s: a target held a whole policy step at the
    frame it ends on runs ahead of a swinging front leg; ramped from frame to frame it follows it."""
    sim = env.sim
    fore = [env.sim.body.skeleton.index(n) for n in ("LeftForeArm", "RightForeArm", "LeftHand", "RightHand")]
    errors = {False: [], True: []}
    for ramped in errors:
        for clip in range(len(env.references)):
            ref = env.references[clip]
            for start in range(0, len(ref) - 10, 12):
                sim.set_state(ref.qpos[start], ref.qvel[start])
                for t in range(start + 1, start + 7):
                    sim.step(sim.targets(ref.qpos[t], ref.qvel[t]),
                             start=sim.targets(ref.qpos[t - 1], ref.qvel[t - 1]) if ramped else None)
                    angles = rewards.angles(rewards.rotations(sim.data.qpos, sim.ball), rewards.rotations(ref.qpos[t], sim.ball))
                    errors[ramped].append(np.degrees(angles[fore]))
    held, ramped = np.mean(errors[False]), np.mean(errors[True])
    assert ramped < 6.0 and held > 2 * ramped, (held, ramped)


def test_a_stretch_that_leaves_the_flat_floor_is_left_out(clips):
    from dataclasses import replace

    from inference.carl.body import dog_body

    motion, gait = clips[0]
    stairs = motion.positions.copy()
    half = motion.n_frames // 2
    stairs[half:, 0, 1] -= np.linspace(0.0, 40.0, motion.n_frames - half)   # down 40 cm over its second half
    down = replace(motion, positions=stairs, name="stairs")
    body = dog_body(motion.skeleton, np.concatenate([m.rotations for m, _ in clips]))
    env = Tracking(body, [(motion, gait), (down, gait)], np.random.default_rng(0), pushes=False, randomise=False)
    assert env.dropped == ["stairs"] and [r.name for r in env.references] == [motion.name]


def test_environments_side_by_side_each_end_their_run_of_a_roll_out_in_its_value(env):
    torch.manual_seed(0)
    policy = Policy(env.observation_size, env.state_size, env.action_size, [16])
    value = Value(env.observation_size, [16], policy.norm)
    twins = [env, env.twin(np.random.default_rng(1)), env.twin(np.random.default_rng(2))]
    roller = Roller(Here(twins), np.random.default_rng(0))
    batch, stats = roller.collect(policy, value, 30)
    assert len(batch["obs"]) == 30 and batch["mu"].shape == batch["act"].shape == (30, env.action_size)
    last = [9, 19, 29]
    assert batch["end"][last].all()                            # each environment's run of 10 ends ...
    with torch.no_grad():                                      # ... in the value of where it stopped
        tails = value(torch.as_tensor(np.stack(roller.obs))).numpy()
    standing = batch["rew"][last] > 0                          # (a fall's is 0)
    assert standing.any() and np.allclose(batch["next_val"][last][standing], tails[standing], atol=1e-5)
    assert not np.allclose(batch["obs"][0], batch["obs"][10])  # each its own episode
    assert twins[1].sim is not env.sim and twins[1].references is env.references


def test_environments_in_worker_processes_roll_out_to_the_bit_what_they_roll_out_here(env, clips):
    torch.manual_seed(0)
    policy = Policy(env.observation_size, env.state_size, env.action_size, [16])
    value = Value(env.observation_size, [16], policy.norm)
    rolled = []
    for processes, like in ((1, None), (2, None), (1, env)):   # here, in workers, twins of one built here
        envs = environments(env.sim.body, clips, 0, 0, 3, processes, like=like)
        assert isinstance(envs, Here if processes == 1 else Processes) and len(envs) == 3
        try:
            roller = Roller(envs, np.random.default_rng(0))
            rolled.append([roller.collect(policy, value, 60) for _ in range(2)])
        finally:
            envs.close()
    for other in rolled[1:]:
        for (here, stats_here), (there, stats_there) in zip(rolled[0], other):
            assert all(np.array_equal(here[k], there[k]) for k in here) and stats_here == stats_there
    assert not np.array_equal(rolled[0][0][0]["obs"], rolled[0][1][0]["obs"])   # the second roll-out goes on


def test_a_worker_process_that_fails_is_one_error_in_the_run(env, clips):
    envs = Processes(partial(make, env.sim.body, [], 0, 0), 2, 2)   # no stretch to start an episode on
    try:
        with pytest.raises(RuntimeError, match="a CARL worker process failed: ValueError"):
            envs.reset()
    finally:
        envs.close()
    assert not any(worker.is_alive() for worker in envs.workers)
    envs = Processes(partial(make, env.sim.body, clips, 0, 0), 2, 2)
    try:
        envs.workers[1].kill()                                       # one gone is one error too
        envs.workers[1].join()
        with pytest.raises(RuntimeError, match=r"a CARL worker process failed: process \d+ ended"):
            envs.reset()
    finally:
        envs.close()


def test_the_policys_learning_rate_follows_its_steps_kl_divergence():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n, size, acts = 64, 10, 3
    policy = Policy(size, 4, acts, [16], primitives=2)
    obs = torch.as_tensor(rng.standard_normal((n, size)), dtype=torch.float32)
    with torch.no_grad():
        mu, sigma = policy(obs)
    act = mu + sigma * torch.as_tensor(rng.standard_normal((n, acts)), dtype=torch.float32)
    batch = {"obs": obs.numpy(), "act": act.numpy(), "mu": mu.numpy(), "sigma": sigma.numpy(),
             "logp": torch.distributions.Normal(mu, sigma).log_prob(act).sum(-1).numpy(),
             "val": np.zeros(n, np.float32), "rew": rng.random(n).astype(np.float32),
             "next_val": np.zeros(n, np.float32), "end": np.ones(n, bool)}
    rates = {}
    for kl in (1e-9, 10.0, 0.0):
        p = Policy(size, 4, acts, [16], primitives=2)
        p.load_state_dict(policy.state_dict())
        v = Value(size, [16], p.norm)
        optimiser = torch.optim.Adam([{"params": p.parameters(), "lr": 1e-4}, {"params": v.net.parameters(), "lr": 1e-3}])
        stats = update(p, v, optimiser, batch, Settings(samples=n, epochs=2, minibatch=16, kl=kl), rng)
        rates[kl] = optimiser.param_groups[0]["lr"]                 # the next update's
        assert stats["lr"] == 1e-4 and stats["kl"] > 1e-6           # this one's, and how far it moved the policy
    assert rates[1e-9] == pytest.approx(1e-4 / KL_FACTOR) and rates[10.0] == pytest.approx(1e-4 * KL_FACTOR)
    assert rates[0.0] == 1e-4


@pytest.fixture(scope="module")
def policy_file(carl_policy):
    """The tiny policy's checkpoint (loaded) and model file."""
    from training import checkpoint

    return checkpoint.load(carl_policy["checkpoint"]), carl_policy["model"]


def test_a_run_from_another_runs_weights_starts_on_them_at_its_gaits(policy_file, dog_small_zip, cache, tmp_path,
                                                                     monkeypatch):
    import training.carl.train as carl
    from training import checkpoint

    source, _ = policy_file
    path = tmp_path / "walks" / "checkpoint.pt"
    path.parent.mkdir()
    checkpoint.save(source, path)
    first = []

    def watched(policy, *rest):
        first.append({k: v.clone() for k, v in policy.state_dict().items()})
        return update(policy, *rest)

    monkeypatch.setattr(carl, "update", watched)
    argv = ["carl", "--data", str(dog_small_zip), "--cache", str(cache), "--out", str(tmp_path / "on"), "--samples",
            "48", "--epochs", "1", "--minibatch", "16", "--hidden", "32,32", "--evaluate-every", "100",
            "--gaits", "walk", "--init", str(path), "--iterations", "1"]
    state = checkpoint.load(train(argv))
    assert all(torch.equal(first[0][k], source["policy"][k]) for k in source["policy"])   # norm statistics too
    assert state["step"] == 1 and state["history"]["samples"] == 48 and len(state["history"]["train"]) == 1
    assert state["config"]["gaits"] == ["walk"] and set(state["meta"]["gaits"]) == {"walk"}
    assert state["optimiser"]["state"][0]["step"] == 3              # afresh: one update's three minibatches
    [run] = state["history"]["runs"]
    assert run["init"] == {"checkpoint": str(path), "step": 2, "samples": 96, "runs": source["history"]["runs"]}


def test_a_run_is_not_started_from_weights_it_cannot_take(policy_file, dog_small_zip, cache, tmp_path):
    from inference.errors import DataError
    from training import checkpoint

    source, _ = policy_file
    files = {"rtn.pt": {**source, "family": "rtn"},
             "wide.pt": {**source, "config": {**source["config"], "hidden": [64]}},
             "blind.pt": {**source, "policy": {**source["policy"], "norm.mean": torch.zeros(7)}}}
    for name, state in files.items():
        checkpoint.save(state, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a checkpoint\n")
    argv = ["carl", "--data", str(dog_small_zip), "--cache", str(cache), "--hidden", "32,32"]
    out = tmp_path / "run"
    for name, message in (("notes.txt", "not a training checkpoint; give a RUN/checkpoint.pt"),
                          ("rtn.pt", "a checkpoint of a rtn run; --init needs a carl checkpoint"),
                          ("wide.pt", "a policy of --hidden 64 --primitives 8, this run's of --hidden 32,32"),
                          ("blind.pt", "a policy that reads 7 observation values, this run's dog gives 694")):
        with pytest.raises(DataError) as refused:
            train(argv + ["--out", str(out), "--init", str(tmp_path / name)])
        assert str(refused.value).startswith(f"{tmp_path / name}: {message}") and not out.exists()
    out.mkdir()   # the same command again resumes the run it started, whatever --init names now
    checkpoint.save(source, out / "checkpoint.pt")
    state = checkpoint.load(train(argv + ["--out", str(out), "--init", str(tmp_path / "wide.pt"), "--samples", "48",
                                          "--epochs", "1", "--minibatch", "16", "--evaluate-every", "100",
                                          "--iterations", "3"]))
    assert state["step"] == 3 and "init" not in state["history"]["runs"][-1]


def test_an_exported_policy_acts_as_its_checkpoints_mean_action_on_the_body_it_trained_on(policy_file):
    from inference.carl.body import build
    from inference.modelfile import open_model
    from inference.motion import Skeleton
    from training.carl.export import policy_of
    from training.mann.data import TEST_CLIPS

    state, path = policy_file
    model = open_model(path)
    assert model.file.kind == "carl" and model.SERVES == ("physics",)
    saved = state["body"]
    body = build(Skeleton.from_json(saved["skeleton"]), saved["natural"].numpy(), saved["limits"].numpy(),
                 saved["scale"], saved["soles"].numpy())
    assert model.body.xml == body.xml
    observations = np.random.default_rng(1).standard_normal((3, model.session.get_inputs()[0].shape[-1]))
    with torch.no_grad():
        theirs = policy_of(state)(torch.as_tensor(observations, dtype=torch.float32)).numpy()
    ours = np.stack([model.act(o.astype(np.float32)) for o in observations])
    assert np.abs(ours - theirs).max() < 1e-4 and np.abs(theirs).max() > 0
    assert model.file.json("betwixt.test_clips") == list(TEST_CLIPS)
    card = path.with_suffix(".md").read_text()
    assert "D1_008_KAN01_002" in card and "2 roll-outs" in card


def test_a_carl_checkpoint_exports_in_float32_alone(policy_file, tmp_path):
    from inference.errors import DataError
    from training.export import export

    state, path = policy_file
    from training import checkpoint
    saved = tmp_path / "checkpoint.pt"
    checkpoint.save(state, saved)
    with pytest.raises(DataError, match="float32 alone"):
        export(saved, tmp_path / "small.onnx", weights="int8")
    assert not (tmp_path / "small.onnx").exists()


def test_a_tracked_clip_starts_on_its_reference_notes_its_falls_and_tracks_on(policy_file, dog_small_zip, cache):
    from inference.carl.runtime import SHOVED
    from inference.modelfile import open_model

    data = load_motion_set(dog_small_zip, cache)
    motion = data.clip(data.names.index(TEST_CLIP))
    motion = motion.frames(0, int(3 * motion.fps))
    model = open_model(policy_file[1])
    calm = model.track(motion)
    frames = len(calm.reference)
    assert frames == pytest.approx(3 * POLICY_RATE, abs=1) and calm.positions.shape == (frames, 21, 3)
    error = calm.joint_error()
    assert error[0] < 1e-6 and 0 < error[1:].mean() < 0.3
    assert all(1 <= f < frames and not calm.lying[f] for f in calm.falls) and (calm.sunk >= 0).all()
    shoved = model.track(motion, pushes={10: (np.array([4.0, 0.0]), TORSO)})

    def speed(tracked):
        return np.diff(tracked.positions[:, 0, :2], axis=0) * POLICY_RATE

    assert np.all(np.abs(speed(shoved)[:10] - speed(calm)[:10]) < 1e-9)
    assert np.linalg.norm(speed(shoved)[10] - speed(calm)[10]) > 1.0
    assert len(shoved.falls) >= 1 and np.isfinite(shoved.positions).all()
    held = model.track(motion, assist=80.0)                          # a hand on the hips: it keeps closer
    assert len(held.falls) <= len(calm.falls) and held.joint_error().mean() < 0.5 * error.mean()
    # a push under the hand: the dog goes where it is shoved, and the hand holds it to the course from there
    # (measured: 0.46 m off the unpushed dog's place at most, 0.27 m from SHOVED on)
    pushed = model.track(motion, pushes={10: (np.array([2.0, 0.0]), TORSO)}, assist=80.0)
    apart = np.linalg.norm(pushed.positions[:, 0, :2] - held.positions[:, 0, :2], axis=-1)
    after = 10 + int(SHOVED * POLICY_RATE)
    assert apart[:11].max() < 1e-9 and apart[12:after].max() > 0.3 and apart[after:].min() > 0.1

    keyed = model.motion(calm)                       # the simulated dog as keys of its own skeleton
    assert keyed.n_frames == frames and keyed.fps == POLICY_RATE and keyed.skeleton is calm.source.skeleton
    _, world = keyed.global_transforms()
    _, source = calm.source.global_transforms()
    assert np.abs(world[0] - source[0]).max() < 1e-6             # frame 0: the reference's own state
    moved = np.abs(world - source).max(axis=(1, 2))
    assert moved[1:].max() > 1.0


def test_a_reference_brought_back_from_its_simulator_states_is_the_motion_it_was_made_from(env, clips):
    from inference.carl.reference import motion_of, states

    motion = clips[1][0].resample(POLICY_RATE)
    ref = states(env.sim.body, env.sim.model, motion)
    back = motion_of(env.sim.body, env.sim.model, ref.qpos, ref.lift, motion)
    assert ref.lift != 0.0
    assert np.allclose(back.positions, motion.positions, atol=1e-9)
    assert np.allclose(np.abs(np.sum(back.rotations * motion.rotations, axis=-1)), 1.0, atol=1e-9)


def test_bench_carl_measures_the_test_split_from_the_command_line(policy_file, dog_small_zip, cache, tmp_path):
    from lab.cli import main

    out = tmp_path / "carl.json"
    main(["bench-carl", "--data", str(dog_small_zip), "--cache", str(cache), "--model", str(policy_file[1]),
          "--clips", "1", "--seconds", "3", "--json", str(out)])
    results = json.loads(out.read_text())
    assert results["assist"] == 0.0                                  # the policy alone, unless asked
    [row] = results["clips"]
    assert row["clip"] == TEST_CLIP and row["seconds"] == pytest.approx(1.0 + 3.0, abs=0.1)   # bench-mann's cut
    assert 0 < results["joint_error_cm"] < 30 and results["falls_per_minute"] >= 0
    assert set(results["pushes"]) == {"0.3", "0.5", "0.8"}
    assert results["gaits"] and all(0 <= g["iou"] <= 1 and g["capture_slide_cm"] >= 0
                                    for g in results["gaits"].values())
    assert results["seconds_per_10s"] > 0 and 0 < results["file_mb"] < 10
    shapes = ("circle", "square", "star")
    assert set(results["paths"]) == {f"{s} {g}" for s in shapes for g in ("walk", "trot", "canter")}
    lasted = {name: r["seconds"] for name, r in results["paths"].items()}
    assert all(lasted[f"{s} walk"] == pytest.approx(3.0, abs=0.1) for s in shapes)   # the paths cut to 3 s
    assert all(3.0 < lasted[f"{s} canter"] < 6.0 for s in shapes)                   # slowed where a dog can go
    assert all(0 < r["joint_error_cm"] < 30 for r in results["paths"].values())


def test_a_paw_pressed_into_the_floor_is_measured_as_deep_as_it_went(env):
    env.reset(clip=0, frame=10)
    sim = env.sim
    qpos, qvel = sim.data.qpos.copy(), sim.data.qvel.copy()
    before = sim.sunk()
    qpos[2] -= 0.03
    sim.set_state(qpos, qvel)
    assert sim.sunk() == pytest.approx(before + 0.03, abs=0.003) and before < 0.02
    qpos[2] += 0.5
    sim.set_state(qpos, qvel)
    assert sim.sunk() == 0.0
    env.reset()
