"""The simulated dog: a MuJoCo model (MJCF) built from a skeleton mapped to the dog's joints.

Every joint is a body; each bone from it (to a child joint or an End Site) is a capsule, its radius
the joint's in ``RADII``, its mass its volume at ``DENSITY`` (MuJoCo measures masses and inertias from
the geoms). The root is free; every other joint is a ball joint whose zero is the skeleton's natural
pose (its mean local rotation over the data), limited to the largest turn the data makes from there
plus ``LIMIT_MARGIN``, and driven by three PD position actuators on its rotation vector (MuJoCo's
length of a ball joint along a gear axis), kd = kp / 10 as in CARL, kp in proportion to the mass the
joint carries. Bodies collide with the floor, never with one another. The model is Z up in metres;
the BVH is Y up in its units, turned by ``TO_Z_UP`` and scaled on the way in (``reference.py``).

Each paw stands on a sole (``SOLE``): a thin capsule across the paw, level with the bottom of its
round end where the paw stands, as wide as a dog's paw. A round end alone touches the floor at one
point, under its centre however the paw turns, so the floor can push the paw but never twist it: the
dog, whose left and right paws the capture sets a few centimetres apart, could only catch a sideways
tip by stepping. On a sole, turning the paw about its length moves where the floor pushes across it.
Which way is across and which down, in the paw's own frame, is measured on the data (``soles``).
"""

from dataclasses import dataclass

import numpy as np

from .. import quat
from ..anatomy import PAWS, leg_joints
from ..motion import forward_kinematics
from ..errors import BetwixtError

RADII = {"Hips": 0.06, "Spine": 0.08, "Spine1": 0.08, "Neck": 0.045, "Head": 0.045,
         "LeftShoulder": 0.04, "RightShoulder": 0.04, "LeftArm": 0.035, "RightArm": 0.035,
         "LeftForeArm": 0.025, "RightForeArm": 0.025, "LeftHand": 0.031, "RightHand": 0.031,
         "LeftUpLeg": 0.045, "RightUpLeg": 0.045, "LeftLeg": 0.03, "RightLeg": 0.03,
         "LeftFoot": 0.02, "RightFoot": 0.02, "Tail": 0.02, "Tail1": 0.015}
# metres; the front paws' End Sites stand about 1.1 cm higher than the back paws' in the dog's walks,
# trots and canters (``reference.grounds``), so the front paws' capsules are as much thicker and all
# four stand on the floor
DENSITY = 1000.0        # kg/m^3: a body about as dense as water
KP_PER_KG = 100.0       # Nm/rad of a joint's stiffness per kg of the bodies it carries ...
LEG_LOAD = 0.25         # ... a leg's joints carrying at least this share of the whole body, standing on it
KP_MIN = 20.0           # Nm/rad: the tail's tip still holds its pose
DAMPING = 0.1           # kd = kp * DAMPING (CARL's kd = kp / 10)
TORQUE_SPAN = 1.0       # rad: an actuator's torque is at most kp times this
ARMATURE = 0.02         # kg m^2 on every rotational degree of freedom: thin bones spinning about their axes stay stable
LIMIT_MARGIN = np.radians(15.0)
SOLE = {"LeftHand": 0.07, "RightHand": 0.07, "LeftFoot": 0.06, "RightFoot": 0.06}   # m: each sole's width
SOLE_RADIUS = 0.01      # m: the sole's rounded edge
STANCE_SHARE = 0.3      # the share of frames taken for a paw's stance: those it hangs lowest under the hips on
TIMESTEP = 1.0 / 480.0  # s: physics rate 480 Hz
# the bodies that end an episode when they touch the floor (CARL: torso, head, thighs)
TERMINAL = ("Hips", "Spine", "Spine1", "Neck", "Head", "LeftShoulder", "RightShoulder", "LeftUpLeg", "RightUpLeg")
TO_Z_UP = quat.from_angle_axis(np.pi / 2, np.array([1.0, 0.0, 0.0]))   # BVH's Y up onto MuJoCo's Z up
SITE = "Site"


def mujoco():
    """The ``mujoco`` module, or a BetwixtError saying how to get it."""
    try:
        import mujoco as module
    except ImportError as e:
        raise BetwixtError(f"the physics models need MuJoCo, which cannot be loaded here ({e}): Betwixt's extension "
                           "carries it for Linux x64, Windows x64 and macOS on Apple silicon; from a terminal, "
                           "pip install mujoco (see requirements-dev.txt)") from None
    return module


@dataclass(frozen=True, eq=False)
class Body:
    """A skeleton's simulated body: its MJCF and what maps the skeleton's motion onto the model."""

    skeleton: object        # inference.motion.Skeleton, joints named as the dog's
    natural: np.ndarray     # (J, 4) each joint's local rotation where its ball joint reads zero
    limits: np.ndarray      # (J,) radians each ball joint may turn from there (the root's unused)
    scale: float            # metres per skeleton unit
    masses: np.ndarray      # (J,) kg of each joint's capsules
    kp: np.ndarray          # (J,) Nm/rad (the root's 0: it is free)
    soles: np.ndarray       # (4, 2, 3) each paw's down and across in its joint's frame, PAWS order
    xml: str

    @property
    def paws(self):
        """The joint index of each paw's joint, in ``PAWS`` order (their End Sites touch the floor)."""
        return np.array([self.skeleton.index(p) for p in PAWS])

    def model(self):
        """The compiled ``mujoco.MjModel``."""
        return mujoco().MjModel.from_xml_string(self.xml)


def capsule_volume(radius, length):
    return np.pi * radius ** 2 * length + 4.0 / 3.0 * np.pi * radius ** 3


def bones(skeleton, scale):
    """Per joint, the ends (in its own frame, metres) of the bones hanging from it: [(name, end (3,))]."""
    sites = {int(j): np.asarray(o, dtype=np.float64) for j, o in skeleton.end_sites}
    out = [[] for _ in skeleton.names]
    for j in range(1, len(skeleton)):
        out[skeleton.parents[j]].append((skeleton.names[j], skeleton.offsets[j] * scale))
    for j, offset in sites.items():
        out[j].append((skeleton.names[j] + SITE, offset * scale))
    return [[(n, e) for n, e in ends if np.linalg.norm(e) > 1e-6] for ends in out]


def measure(rotations):
    """The natural pose (J, 4) (each joint's mean local rotation) and the ball joints' limits (J,) in
    radians (the largest turn from there plus LIMIT_MARGIN) of local rotations ``rotations`` (F, J, 4)."""
    rotations = np.asarray(rotations, dtype=np.float64)
    natural = quat.mean(rotations, axis=0)
    turn = quat.mul(quat.inv(natural)[None], rotations)
    angle = 2.0 * np.arccos(np.clip(np.abs(turn[..., 0]), 0.0, 1.0))
    return natural, np.minimum(angle.max(axis=0) + LIMIT_MARGIN, np.radians(179.0))


def _dog_joints(skeleton):
    """Refuse a skeleton without the dog's joints, or with others."""
    missing = [n for n in RADII if n not in skeleton.names]
    if missing or len(skeleton) != len(RADII):
        raise BetwixtError(f"a simulated dog needs the dog's {len(RADII)} joints; this skeleton "
                           f"{'lacks ' + ', '.join(missing) if missing else 'has others'}")


def soles(skeleton, rotations):
    """(4, 2, 3): for each paw of PAWS, the unit vectors down and across the dog (its hips' left to
    right, square to down) in the paw joint's own frame, averaged over the frames of local rotations
    ``rotations`` (F, J, 4) where the paw's End Site hangs lowest under the hips (``STANCE_SHARE`` of
    them: it stands). The skeleton is Y up, its hips' Z across the dog, as the dog's BVH is."""
    _dog_joints(skeleton)
    rotations = np.asarray(rotations, dtype=np.float64)
    offsets = np.broadcast_to(skeleton.offsets, rotations.shape[:-1] + (3,))
    grot, gpos = forward_kinematics(rotations, offsets, skeleton.parents)
    sites = {int(j): np.asarray(o, dtype=np.float64) for j, o in skeleton.end_sites}
    out = []
    for paw in PAWS:
        j = skeleton.index(paw)
        height = (gpos[:, j] + quat.rotate(grot[:, j], sites[j]) - gpos[:, 0])[:, 1]
        stands = height <= np.quantile(height, STANCE_SHARE)
        to_paw = quat.inv(grot[stands, j])
        down = quat.rotate(to_paw, np.array([0.0, -1.0, 0.0])).mean(axis=0)
        across = quat.rotate(to_paw, quat.rotate(grot[stands, 0], np.array([0.0, 0.0, 1.0]))).mean(axis=0)
        down /= np.linalg.norm(down)
        across -= down * (across @ down)
        out.append([down, across / np.linalg.norm(across)])
    return np.array(out)


def dog_body(skeleton, rotations, scale=0.01):
    """The body of ``skeleton`` (the dog's joint names, End Sites under the paws), its joints' zero
    and limits and its paws' soles measured on ``rotations`` (F, J, 4), the local rotations of the
    data it will track; ``scale`` is metres per skeleton unit (the dog's BVH is in centimetres)."""
    return build(skeleton, *measure(rotations), scale, soles(skeleton, rotations))


def build(skeleton, natural, limits, scale, paw_soles):
    """The body of ``skeleton`` with its ball joints' zero ``natural`` (J, 4) and ``limits`` (J,), its
    paws' soles along ``paw_soles`` (4, 2, 3) (:func:`soles`)."""
    _dog_joints(skeleton)
    natural, limits = np.asarray(natural, dtype=np.float64), np.asarray(limits, dtype=np.float64)
    ends = bones(skeleton, scale)
    radius = np.array([RADII[n] for n in skeleton.names])
    masses = np.array([sum(DENSITY * capsule_volume(radius[j], np.linalg.norm(e)) for _, e in ends[j])
                       for j in range(len(skeleton))])
    carried = masses.copy()
    for j in range(len(skeleton) - 1, 0, -1):    # children after parents: sum the subtrees upwards
        carried[skeleton.parents[j]] += carried[j]
    leg = np.isin(np.arange(len(skeleton)), leg_joints(skeleton))
    carried = np.where(leg, np.maximum(carried, LEG_LOAD * masses.sum()), carried)
    kp = np.maximum(KP_PER_KG * carried, KP_MIN)
    kp[0] = 0.0
    paw_soles = np.asarray(paw_soles, dtype=np.float64)
    xml = _mjcf(skeleton, natural, limits, scale, ends, radius, kp, dict(zip(PAWS, paw_soles)))
    return Body(skeleton, natural, limits, float(scale), masses, kp, paw_soles, xml)


def _sole(skeleton, scale, paw, down, across):
    """The two ends (3,) each of ``paw``'s sole in its joint's frame: centred under its End Site, its
    lowest edge level with the bottom of the paw's round end where the paw stands."""
    j = skeleton.index(paw)
    site = dict((int(k), np.asarray(o, dtype=np.float64)) for k, o in skeleton.end_sites)[j] * scale
    centre = site + (RADII[paw] - SOLE_RADIUS) * down
    half = SOLE[paw] / 2.0 - SOLE_RADIUS
    return centre - half * across, centre + half * across


def _mjcf(skeleton, natural, limits, scale, ends, radius, kp, paw_soles):
    """The MJCF document of the body (see the module's docstring)."""
    def f(v):
        return " ".join(f"{x:.6g}" for x in np.ravel(v))

    def body(j, depth):
        pad = "  " * depth
        name = skeleton.names[j]
        head = (f'{pad}<body name="{name}" pos="0 0 1">\n{pad}  <freejoint name="{name}"/>\n' if j == 0 else
                f'{pad}<body name="{name}" pos="{f(skeleton.offsets[j] * scale)}" quat="{f(natural[j])}">\n'
                f'{pad}  <joint name="{name}" type="ball" range="0 {np.degrees(limits[j]):.3f}"/>\n')
        geoms = "".join(f'{pad}  <geom name="{name}/{end}" type="capsule" size="{radius[j]:.4g}" '
                        f'fromto="0 0 0 {f(e)}"/>\n' for end, e in ends[j])
        sites = "".join(f'{pad}  <site name="{end}" pos="{f(e)}"/>\n' for end, e in ends[j] if end.endswith(SITE))
        if name in paw_soles:   # massless: the paw's weight is its capsule's
            a, b = _sole(skeleton, scale, name, *paw_soles[name])
            geoms += (f'{pad}  <geom name="{name}/sole" type="capsule" size="{SOLE_RADIUS:.4g}" fromto="{f(a)} {f(b)}" '
                      f'density="0"/>\n')
        children = "".join(body(c, depth + 1) for c in skeleton.children(j))
        return head + geoms + sites + children + f"{pad}</body>\n"

    actuators = "".join(
        f'    <position name="{skeleton.names[j]}/{a}" joint="{skeleton.names[j]}" gear="{g}" kp="{kp[j]:.6g}" '
        f'kv="{kp[j] * DAMPING:.6g}" forcelimited="true" forcerange="{-kp[j] * TORQUE_SPAN:.6g} {kp[j] * TORQUE_SPAN:.6g}"/>\n'
        for j in range(1, len(skeleton)) for a, g in zip("xyz", ("1 0 0", "0 1 0", "0 0 1")))
    return (f'<mujoco model="dog">\n'
            f'  <compiler angle="degree" inertiafromgeom="true"/>\n'
            f'  <option timestep="{TIMESTEP:.8g}" integrator="implicitfast"/>\n'
            f'  <default>\n'
            f'    <joint armature="{ARMATURE}" limited="true"/>\n'
            f'    <geom density="{DENSITY}" contype="1" conaffinity="0" condim="3" friction="1 0.005 0.0001"/>\n'
            f'  </default>\n'
            f'  <worldbody>\n'
            f'    <geom name="floor" type="plane" size="0 0 1" contype="1" conaffinity="1"/>\n'
            f'{body(0, 2)}'
            f'  </worldbody>\n'
            f'  <actuator>\n{actuators}  </actuator>\n'
            f'</mujoco>\n')
