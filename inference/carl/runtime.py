"""CARL's tracking policy at run time: a motion of the dog's skeleton tracked by the simulated dog.

The model file holds the policy's mean action (observation -> action, onnxruntime) and, in its metadata,
the body it was trained on (``betwixt.body``: natural pose, joint limits, scale, soles), so the runtime
builds the same dog (:func:`.body.build`). Tracking runs the motion's frames at ``POLICY_RATE``: each
step the policy reads the body and the reference two frames ahead (:mod:`.observation`) and offsets the
PD targets that follow the reference (``ACTION_SCALE`` radians per unit), as training did. A push
shoves a part of the dog, or all of it, at a frame; an assist holds its root's tilt, heading and place near the
reference's with a capped torque and force (a residual force: the dog stays up and on the reference's course,
its legs' contacts still the physics'). Where the dog falls (its torso, head or a thigh on the
floor where the reference's are not: a dog that lies down as its reference does has not fallen) the
frame is noted and the body set back on the reference there, so that one fall does not spoil the rest
of the motion.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import BetwixtError
from ..mann.features import bones_of, leg_length
from ..modelfile import Model, ModelError, Placement
from .body import build
from .observation import AHEAD, observe, size
from .reference import contacts, motion_of, paw_radius, states
from .simulation import ACTION_SCALE, POLICY_RATE, Simulation

SUNK = 0.01   # m: a paw this far into the floor is under it (MuJoCo's soft contacts let one in a little)
SHOVED = 1.0  # s after a push that an assist leaves the dog's place to it, then holds it from where it got to


@dataclass(frozen=True, eq=False)
class Tracked:
    """A motion tracked in simulation, frame by frame at POLICY_RATE, beside its reference (the motion's
    :class:`.reference.Reference`; frame 0 is the reference's own state, where the simulation starts)."""

    reference: object
    source: object          # the motion tracked, at POLICY_RATE
    positions: np.ndarray   # (F, J, 3) the simulated joints' world positions, metres, Z up
    qpos: np.ndarray        # (F, nq) the simulated states
    paws: np.ndarray        # (F, 4, 3) the simulated paws' End Sites
    contacts: np.ndarray    # (F, 4) bool: the simulated paws on the floor
    falls: tuple            # the frames on which the dog fell (and was set back on the reference)
    lying: np.ndarray       # (F,) bool: the reference's own torso, head or a thigh on the floor
    sunk: np.ndarray        # (F,) m: how deep the simulated paws reach into the floor
    sunk_reference: np.ndarray   # (F,) m: the reference's, posed in the simulator

    def joint_error(self):
        """(F,) each frame's mean distance (m) between the simulated joints and the reference's, both from
        their root (CARL's tracking error, root aligned)."""
        mine = self.positions - self.positions[:, :1]
        theirs = self.reference.positions - self.reference.positions[:, :1]
        return np.linalg.norm(mine - theirs, axis=-1).mean(axis=1)


class CARLModel(Model):
    """A CARL tracking policy file, checked and ready (opened by :func:`..modelfile.open_model`)."""

    TITLE = "Physics (CARL)"
    SERVES = ("physics",)

    def __init__(self, file, session):
        super().__init__(file, session)
        try:
            body = file.json("betwixt.body")
            self.body = build(file.skeleton, np.asarray(body["natural"]), np.asarray(body["limits"]),
                              float(body["scale"]), np.asarray(body["soles"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ModelError(f"{file.path}: incomplete model metadata (betwixt.body: {e}); export it again") from None
        expected = size(len(file.skeleton))
        if session.get_inputs()[0].shape[-1] != expected:
            raise ModelError(f"{file.path}: its policy reads {session.get_inputs()[0].shape[-1]} numbers, and a "
                             f"dog of {len(file.skeleton)} joints is seen as {expected}; export it again")
        try:
            self.model = self.body.model()
        except BetwixtError as e:   # no MuJoCo here: the model is offered, the panel says why it cannot run
            raise ModelError(f"{file.path}: {e}") from None
        self.radius = paw_radius(self.body)
        # where a rig is calibrated against the skeleton (as for MANN, whose dog this is)
        self.layout = Placement(trajectory=0, up=1, height=leg_length(self.skeleton, bones_of(self.skeleton)),
                                fps=file.fps)

    def motion(self, tracked):
        """The simulated dog of ``tracked`` as a motion of the skeleton it tracked (POLICY_RATE, its units and
        up axis): what a Physics Pass keys."""
        return motion_of(self.body, self.model, tracked.qpos, tracked.reference.lift, tracked.source)

    def act(self, observation):
        """The policy's mean action (3 (J-1),) for one ``observation`` (size(J),)."""
        return self.session.run(["action"], {"observation": observation[None]})[0][0]

    def track(self, motion, pushes=None, progress=None, assist=0.0):
        """``motion`` (the model's skeleton, any frame rate) tracked in simulation: a :class:`Tracked`.
        ``pushes``: {frame: ((vx, vy), part)}, changes of the dog's horizontal speed (m/s) through a push on
        ``part`` (a joint's name; None: the whole dog) in the step from a frame of POLICY_RATE to the next
        (:meth:`.simulation.Simulation.push`); ``progress(done, total)`` after each frame; ``assist``: at most so
        many Nm on the root that keep its roll and pitch, as many its heading, and ``COURSE_FORCE`` N for each its
        place near the reference's (:meth:`.simulation.Simulation.hold`), 0: none; after a push the place is left
        to it for ``SHOVED`` seconds, then held where the dog got to, the reference's course moved by the push."""
        self.check_skeleton(motion.skeleton)
        source = motion.resample(POLICY_RATE)
        ref = states(self.body, self.model, source)
        n, last = len(ref), len(ref) - 1
        if n < 2:
            raise ModelError(f"{motion.name}: {n} frame at {POLICY_RATE:g} fps; a Physics Pass needs two or more")
        sim = Simulation(self.body, self.model)
        lying, sunk, sunk_reference = np.zeros(n, bool), np.zeros(n), np.zeros(n)
        for t in range(n):
            sim.set_state(ref.qpos[t], ref.qvel[t])
            lying[t], sunk_reference[t] = sim.fallen(), sim.sunk()
        sim.set_state(ref.qpos[0], ref.qvel[0])
        shapes = (ref.positions.shape[1:], (self.model.nq,), (4, 3))
        positions, qpos, paws = (np.empty((n,) + shape) for shape in shapes)
        falls = []
        pushes = pushes or {}
        moved, shoved = np.zeros(2), -1   # where a push put the dog off its reference's place; until when
        for t in range(n):
            pose = sim.pose()
            positions[t], qpos[t], paws[t], sunk[t] = pose[0], sim.data.qpos, sim.paws(), sim.sunk()
            if t == last:
                break
            if t in pushes:   # the policy feels it from the next frame on
                sim.push(*pushes[t])
                shoved = t + int(round(SHOVED * POLICY_RATE))
            if t == shoved:   # the push's course from here on
                moved = sim.data.qpos[:2] - ref.qpos[t, :2]
            ahead = [min(t + a, last) for a in AHEAD]
            action = ACTION_SCALE * self.act(observe(pose, (ref.positions[ahead], ref.rotations[ahead])))
            offset = action.reshape(-1, 3)
            course = ref.qpos[t + 1].copy()
            course[:2] += moved
            sim.hold(course, assist, ref.qvel[t + 1], place=t >= shoved)
            sim.step(sim.targets(ref.qpos[t + 1], ref.qvel[t + 1]) + offset,
                     start=sim.targets(ref.qpos[t], ref.qvel[t]) + offset)
            if sim.fallen() and not lying[t + 1]:
                falls.append(t + 1)
                sim.set_state(ref.qpos[t + 1], ref.qvel[t + 1])
                moved[:] = 0.0
            if progress:
                progress(t + 1, last)
        return Tracked(ref, source, positions, qpos, paws, contacts(paws, self.radius), tuple(falls), lying, sunk,
                       sunk_reference)
