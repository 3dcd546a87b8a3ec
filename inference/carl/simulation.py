"""One simulated body in MuJoCo: set its state, drive its joints toward target rotations, read it back.

The policy runs at ``POLICY_RATE``; each of its steps drives the physics steps between (480 Hz / 30 Hz
= 16) toward PD targets that move from where the step starts to where it ends, linearly, one physics
step at a time. A target is a ball joint's rotation from its natural pose as a rotation vector (the
three position actuators' controls). With kd = kp / 10 a light limb follows its target like a lag of
kd / kp = 0.1 s, three policy steps: a target held for a whole policy step at the frame it ends on
runs ahead of the motion by half a frame's turn, and a front leg's joints, turning at up to 20-40 rad/s,
miss their reference by tens of degrees; ramped, they follow it within a few.
"""

import numpy as np

from .body import DAMPING, TERMINAL, mujoco
from .. import quat
from ..anatomy import PAWS

POLICY_RATE = 30.0   # Hz
ACTION_SCALE = 0.3   # rad: the PD targets' offset from the reference's per unit of the policy's action
TORSO = "Spine"      # the joint whose body a push on the dog's torso shoves: the middle of its back
HOLD_GAINS = (150.0, 15.0)   # Nm/rad and Nm s/rad of the torque that holds the root's tilt (Simulation.hold)
COURSE_GAINS = (1000.0, 300.0)   # N/m and N s/m of the force that holds it to the reference's place on the ground
COURSE_FORCE = 4.0   # N of that force at most per Nm of the hold's torque (80 Nm: 320 N, 3/4 of the dog's weight)


def rotation_vectors(q):
    """(..., 3) axis times angle of unit quaternions ``q`` (..., 4), the angle in [0, pi]."""
    q = np.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    return np.where(s > 1e-12, v * (angle / np.maximum(s, 1e-12)), 2.0 * v)


class Simulation:
    """The body's model and one state of it; ``substeps`` physics steps per policy step."""

    def __init__(self, body, model=None):
        self.mj = mujoco()
        self.body = body
        self.model = model if model is not None else body.model()
        self.data = self.mj.MjData(self.model)
        m, names = self.model, body.skeleton.names
        self.bodies = np.array([m.body(n).id for n in names])
        joints = [m.joint(n).id for n in names[1:]]
        self.ball = np.array([m.jnt_qposadr[j] for j in joints])     # (J-1,) each ball joint's 4 in qpos
        self.dofs = np.array([m.jnt_dofadr[j] for j in joints])      # (J-1,) its 3 in qvel
        self.paw_sites = np.array([m.site(p + "Site").id for p in PAWS])
        terminal = {m.body(n).id for n in TERMINAL}
        self.terminal = np.array([m.geom_bodyid[g] in terminal for g in range(m.ngeom)])
        paws = set(m.site_bodyid[self.paw_sites].tolist())
        self.paw_geoms = np.array([m.geom_bodyid[g] in paws for g in range(m.ngeom)])
        self.floor = m.geom("floor").id
        self.substeps = int(round(1.0 / (POLICY_RATE * m.opt.timestep)))
        self.blew_up = 0   # MuJoCo's count of blow-ups when the state was last set

    def set_state(self, qpos, qvel):
        """Put the body at ``qpos`` (nq,) moving at ``qvel`` (nv,), unpushed, and bring everything derived up
        to date."""
        d = self.data
        d.qpos[:], d.qvel[:] = qpos, qvel
        d.qacc_warmstart[:] = d.xfrc_applied[:] = 0.0   # and no push pending
        self.blew_up = self._blow_ups()   # counted from here: a state MuJoCo cannot integrate too
        self.mj.mj_forward(self.model, d)

    def targets(self, qpos, qvel=None):
        """(J-1, 3) the PD targets that bring the ball joints to ``qpos`` (nq,) moving at ``qvel`` (nv,):
        the pose led by kd / kp times the velocity, which the actuators' damping (of the joint's whole
        velocity, not its error) holds back. Without ``qvel``, the targets that hold the pose."""
        pose = rotation_vectors(qpos[self.ball[:, None] + np.arange(4)])
        return pose if qvel is None else pose + DAMPING * qvel[self.dofs[:, None] + np.arange(3)]

    def step(self, targets, start=None):
        """One policy step: the ball joints driven toward ``targets`` (J-1, 3) for ``substeps`` physics
        steps, the targets ramped from ``start`` (J-1, 3), where given, to ``targets`` one physics step at
        a time (a joint whose target turns past pi in the step, a rotation vector wrapping round, jumps),
        and any :meth:`push` of a part applied through it."""
        end = np.ravel(targets)
        if start is None:
            self.data.ctrl[:] = end
            for _ in range(self.substeps):
                self.mj.mj_step(self.model, self.data)
        else:
            start = np.ravel(start).copy()
            wrapped = np.repeat(np.linalg.norm((end - start).reshape(-1, 3), axis=1) > np.pi, 3)
            start[wrapped] = end[wrapped]
            for i in range(1, self.substeps + 1):
                a = i / self.substeps
                self.data.ctrl[:] = start + a * (end - start)
                self.mj.mj_step(self.model, self.data)
        self.data.xfrc_applied[:] = 0.0   # a push, and a hold, last one step

    def push(self, velocity, part=None):
        """Shove the body in the next policy step: its centre of mass's speed changes by ``velocity`` (2 or 3,)
        m/s. ``part`` (a joint name): by a force on that joint's body alone, the whole mass times ``velocity``
        over the step, so that the dog turns as it is moved (a push on the head swings it round) and its
        joints' servos meet the push as it comes; None: every part's speed changes alike, now."""
        change = np.zeros(3)
        change[:len(velocity)] = velocity
        if part is None:
            self.data.qvel[:3] += change
        else:
            mass = self.mj.mj_getTotalmass(self.model)
            self.data.xfrc_applied[self.model.body(part).id, :3] = mass * change * POLICY_RATE

    def hold(self, qpos, most, qvel=None, place=True):
        """Through the next policy step, a torque on the root that turns its roll and pitch toward those of
        ``qpos`` (nq,), PD on the tilt between them, at most ``most`` Nm (0: no hold). Given the reference's
        velocity ``qvel`` (nv,), the root also keeps to the reference's course: its heading by as much torque
        again and, with ``place``, its place on the ground by a force of at most ``COURSE_FORCE`` N per Nm of
        ``most``, PD on where it is and how it moves (without, they are the policy's to keep). A hand that keeps
        the dog from tipping over and wandering: a curriculum's virtual assistance (Yu, Turk and Liu 2018) in
        training, a residual force (Yuan and Kitani 2020) where a Physics Pass asks for one."""
        d, root = self.data, self.bodies[0]
        if not most:
            d.xfrc_applied[root, 3:] = 0.0
            return
        mine = d.qpos[3:7]
        tilt = rotation_vectors(quat.mul(qpos[3:7], quat.inv(mine)))
        spin = quat.rotate(mine, d.qvel[3:6])    # a free joint's angular velocity is in its body's frame
        kp, kd = HOLD_GAINS
        torque = kp * tilt - kd * spin
        turn = np.clip(torque[2], -most, most) if qvel is not None else 0.0
        torque[2] = 0.0
        norm = np.linalg.norm(torque)
        d.xfrc_applied[root, 3:] = torque * min(1.0, most / norm) if norm > 0 else 0.0
        d.xfrc_applied[root, 5] = turn
        if qvel is not None and place:
            kp, kd = COURSE_GAINS
            pull = kp * (qpos[:2] - d.qpos[:2]) + kd * (qvel[:2] - d.qvel[:2])
            norm = np.linalg.norm(pull)
            cap = COURSE_FORCE * most
            d.xfrc_applied[root, :2] += pull * min(1.0, cap / norm) if norm > 0 else 0.0   # beside any push there

    def _blow_ups(self):
        """How many times MuJoCo has found positions, velocities or accelerations not finite or huge in this
        data (it then resets the state to the model's default pose and goes on)."""
        w = self.mj.mjtWarning
        return sum(int(self.data.warning[k].number) for k in (w.mjWARN_BADQPOS, w.mjWARN_BADQVEL, w.mjWARN_BADQACC))

    def fallen(self):
        """Whether the torso, head or a thigh (``body.TERMINAL``) touches the floor, or the simulation blew up
        since the state was set (MuJoCo put the body back in its default pose: nothing to learn from)."""
        if self._blow_ups() > self.blew_up:
            return True
        geoms, _ = self._on_the_floor()
        return bool(np.any(self.terminal[geoms]))

    def sunk(self):
        """How deep (m) the paws' geoms (their round ends and soles) reach into the floor, 0 where none does."""
        geoms, dist = self._on_the_floor()
        paws = self.paw_geoms[geoms]
        return float(max(0.0, -dist[paws].min())) if paws.any() else 0.0

    def _on_the_floor(self):
        """``(geoms, dist)``: the geoms touching the floor now and each contact's distance (negative: into it)."""
        d = self.data
        pairs = d.contact.geom[:d.ncon]
        floor = pairs == self.floor
        touching = floor.any(axis=1)
        return np.where(floor[:, 0], pairs[:, 1], pairs[:, 0])[touching], d.contact.dist[:d.ncon][touching]

    def paws(self):
        """(4, 3) the paws' End Sites, world, in PAWS order."""
        return self.data.site_xpos[self.paw_sites].copy()

    def pose(self):
        """World positions (J, 3), rotations (J, 4), linear and angular velocities (J, 3) of the joints."""
        d, b = self.data, self.bodies
        ang, lin = d.cvel[b, :3], d.cvel[b, 3:]
        arm = d.xpos[b] - d.subtree_com[self.model.body_rootid[b]]
        return d.xpos[b].copy(), d.xquat[b].copy(), lin + np.cross(ang, arm), ang.copy()

    def com(self):
        """(3,) the whole body's centre of mass."""
        return self.data.subtree_com[self.bodies[0]].copy()
