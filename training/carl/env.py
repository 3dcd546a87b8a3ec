"""The imitation task: one simulated dog tracking reference clips, an episode at a time.

An episode starts on a random frame of a random clip, the body put in the reference's state there
(reference state initialisation; the gait drawn first, then a clip by its length, so that the few
trots and canters are not drowned by the walks). Each policy step the policy's action moves the PD
targets off those that track the reference from its frame to the next (``Simulation.targets``: the
pose led against the damping, ramped through the step; ``ACTION_SCALE`` radians per unit of action),
the body is simulated to that frame and rewarded for matching it (:mod:`.reward`). The episode ends when the
torso, head or a thigh touches the floor (early termination, no further reward), and is cut (not
ended: its value goes on) at the clip's end or after ``MAX_SECONDS``. The dog is pushed on the torso
every 2-4 s, its speed changed through the step, and each episode's body masses and floor friction are
drawn anew (``MASS``, ``FRICTION``), so that the policy does not lean on one body or one floor.
A stretch whose reference leaves the flat floor (a paw more than ``BELOW`` under it, or a body that
ends an episode touching it: a dog on stairs or a ramp, or sniffing the floor) is left out
(``Tracking.dropped``): the floor is flat, and the body could not follow it without a fall.

Training may hold the dog up while it learns (``Tracking.assist``): a torque on its root against the
roll and pitch by which it leans off the reference's, a curriculum's virtual assistance (Yu, Turk and
Liu 2018) that the trainer takes away as the policy learns to balance (``train.anneal``). A dog
following its reference falls by tipping sideways on paws a few centimetres apart (docs/experiments.md,
"CARL: the plateau"), so without it nearly every episode ends within a second and little is learned of
the rest of the motion.
"""

import copy

import numpy as np

from inference.carl.observation import AHEAD, observe, size, state_size
from inference.carl.reference import contacts, paw_radius, states
from inference.carl.simulation import ACTION_SCALE, POLICY_RATE, TORSO, Simulation
from . import reward as rewards

MAX_SECONDS = 10.0
PUSH_EVERY = (2.0, 4.0)    # s between pushes
PUSH_SPEED = (0.1, 0.5)    # m/s: the change of the dog's horizontal speed, a push on its torso
MASS = 0.15                # each body's mass (and inertia) scaled within 1 +- this
FRICTION = (0.6, 1.2)      # the floor's sliding friction
BELOW = 0.02               # m: a reference's paw this far under the floor leaves it


class Tracking:
    """The task over ``clips``, [(Motion, gait)] at any frame rate, for ``body`` (inference.carl.body.Body)."""

    def __init__(self, body, clips, rng, pushes=True, randomise=True):
        self.sim = Simulation(body)
        self.rng, self.pushes, self.randomise = rng, pushes, randomise
        self.assist = 0.0   # Nm: the most torque that holds the root up (Simulation.hold); 0, as the policy is used
        model = self.sim.model
        self.references, self.gaits, self.dropped = [], [], []
        for motion, gait in clips:
            ref = states(body, model, motion.resample(POLICY_RATE))
            if len(ref) <= max(AHEAD) + 2:    # too short to look ahead from its first frame
                continue
            if not self._on_the_floor(ref):
                self.dropped.append(ref.name)
                continue
            self.references.append(ref)
            self.gaits.append(gait)
        self.scratch = self.sim.mj.MjData(model)   # the reference posed on this episode's body, for its centre of mass
        self.radius = paw_radius(body)
        self.base = (model.body_mass.copy(), model.body_inertia.copy(), model.geom_friction.copy())
        self.observation_size = size(len(body.skeleton))
        self.state_size = state_size(len(body.skeleton))
        self.action_size = 3 * (len(body.skeleton) - 1)

    def twin(self, rng):
        """Another episode of the same task (its own simulated body and floor, drawn by ``rng``), sharing
        this one's references."""
        other = copy.copy(self)
        other.sim = Simulation(self.sim.body)
        other.rng = rng
        other.scratch = other.sim.mj.MjData(other.sim.model)
        return other

    def _on_the_floor(self, ref):
        """Whether reference ``ref`` keeps its paws on or over the floor and every body that ends an
        episode off it."""
        if ref.paws[..., 2].min() < -BELOW:
            return False
        sim = self.sim
        for qpos in ref.qpos:
            sim.set_state(qpos, np.zeros(sim.model.nv))
            if sim.fallen():
                return False
        return True

    def _com(self, qpos):
        """(3,) the centre of mass of the body posed at ``qpos`` (nq,), with this episode's masses."""
        mj, d = self.sim.mj, self.scratch
        d.qpos[:] = qpos
        mj.mj_kinematics(self.sim.model, d)
        mj.mj_comPos(self.sim.model, d)
        return d.subtree_com[self.sim.bodies[0]].copy()

    def reset(self, clip=None, frame=None):
        """Start an episode (on a random clip and frame, unless given); the first observation."""
        rng = self.rng
        if clip is None:
            gait = rng.choice(sorted(set(self.gaits)))
            mine = [i for i, g in enumerate(self.gaits) if g == gait]
            lengths = np.array([len(self.references[i]) for i in mine], dtype=np.float64)
            clip = mine[rng.choice(len(mine), p=lengths / lengths.sum())]
        ref = self.references[clip]
        self.clip = clip
        self.t = int(rng.integers(0, len(ref) - max(AHEAD) - 1)) if frame is None else frame
        self.steps = 0
        self.next_push = self._push_delay()
        self._randomise()
        self.sim.set_state(ref.qpos[self.t], ref.qvel[self.t])
        return self.observe()

    def _push_delay(self):
        return int(self.rng.uniform(*PUSH_EVERY) * POLICY_RATE)

    def _randomise(self):
        mass, inertia, friction = self.base
        model = self.sim.model
        if not self.randomise:
            model.body_mass[:], model.body_inertia[:], model.geom_friction[:] = mass, inertia, friction
            return
        scale = self.rng.uniform(1.0 - MASS, 1.0 + MASS, len(mass))
        model.body_mass[:] = mass * scale
        model.body_inertia[:] = inertia * scale[:, None]
        model.geom_friction[:] = friction
        model.geom_friction[:, 0] = self.rng.uniform(*FRICTION)

    def observe(self):
        ref = self.references[self.clip]
        at = [self.t + a for a in AHEAD]
        return observe(self.sim.pose(), (ref.positions[at], ref.rotations[at]))

    def step(self, action):
        """Simulate one policy step under ``action`` (3 (J-1),); (observation, reward, fell, cut, terms)."""
        ref = self.references[self.clip]
        sim = self.sim
        if self.pushes:
            self.next_push -= 1
            if self.next_push <= 0:
                self.push()
                self.next_push = self._push_delay()
        offset = ACTION_SCALE * np.reshape(action, (-1, 3))
        sim.hold(ref.qpos[self.t + 1], self.assist)
        sim.step(sim.targets(ref.qpos[self.t + 1], ref.qvel[self.t + 1]) + offset,
                 start=sim.targets(ref.qpos[self.t], ref.qvel[self.t]) + offset)
        self.t += 1
        self.steps += 1
        fell = sim.fallen()
        value, terms = rewards.reward(self.errors())
        cut = self.t + max(AHEAD) >= len(ref) - 1 or self.steps >= MAX_SECONDS * POLICY_RATE
        return self.observe(), (0.0 if fell else value), fell, cut and not fell, terms

    def errors(self):
        """The reward terms' errors of the body against the reference frame it is at."""
        ref, sim = self.references[self.clip], self.sim
        t = self.t
        mine = {"qpos": sim.data.qpos, "qvel": sim.data.qvel, "com": sim.com(),
                "contacts": contacts(sim.paws(), self.radius)}
        theirs = {"qpos": ref.qpos[t], "qvel": ref.qvel[t], "com": self._com(ref.qpos[t]), "contacts": ref.contacts[t]}
        return rewards.errors(mine, theirs, sim.ball)

    def push(self):
        """Push the torso in the next step, by a random change of speed in a random direction."""
        angle = self.rng.uniform(0.0, 2.0 * np.pi)
        self.sim.push(self.rng.uniform(*PUSH_SPEED) * np.array([np.cos(angle), np.sin(angle)]), TORSO)
