"""Bone mapping detection for the naming schemes rigs come with, and the pose maths it feeds.

Detection is pure Python on names and parent indices, so every scheme is written out here as the
hierarchy such a rig has; the LaFAN1 skeleton (the model's) is read from the shared capture.
"""

import zipfile

import numpy as np
import pytest

from test_addon import betwixt_addon  # noqa: F401  (the add-on package, registered once)


def hierarchy(pairs):
    names = [n for n, _ in pairs]
    return names, [names.index(p) if p else -1 for _, p in pairs]


def chain(prefix, items, parent):
    out = []
    for name in items:
        out.append((prefix + name, parent))
        parent = prefix + name
    return out


def limbs(fmt, arm_parent, leg_parent, arm, leg):
    """Both sides' arms and legs, ``fmt(part, side)`` naming each bone."""
    out = []
    for side in "LR":
        out += [(fmt(p, side), fmt(arm[i - 1], side) if i else arm_parent) for i, p in enumerate(arm)]
        out += [(fmt(p, side), fmt(leg[i - 1], side) if i else leg_parent) for i, p in enumerate(leg)]
    return out


LAFAN = ["Hips", "LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToe", "RightUpLeg", "RightLeg", "RightFoot", "RightToe",
         "Spine", "Spine1", "Spine2", "Neck", "Head", "LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand",
         "RightShoulder", "RightArm", "RightForeArm", "RightHand"]
LAFAN_PARENTS = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 12, 11, 14, 15, 16, 11, 18, 19, 20]


def side_word(part, side):
    return ("Left" if side == "L" else "Right") + part


def expect(spine, neck, head, hips, limb):
    """{LaFAN1 joint: bone} from a rig's spine names (3: Spine, Spine1, Spine2; 2: Spine, Spine2), …"""
    out = {"Hips": hips, "Neck": neck, "Head": head}
    out.update(dict(zip(["Spine", "Spine1", "Spine2"] if len(spine) == 3 else ["Spine", "Spine2"], spine)))
    for side, word in (("L", "Left"), ("R", "Right")):
        for joint, part in (("UpLeg", "thigh"), ("Leg", "shin"), ("Foot", "foot"), ("Toe", "toe"),
                            ("Shoulder", "shoulder"), ("Arm", "upperarm"), ("ForeArm", "forearm"), ("Hand", "hand")):
            out[word + joint] = limb(part, side)
    return out


MIXAMO_ARM = ["Shoulder", "Arm", "ForeArm", "Hand", "HandIndex1"]
MIXAMO_LEG = ["UpLeg", "Leg", "Foot", "ToeBase", "Toe_End"]


def mixamo():
    ns = "mixamorig:"
    pairs = [(ns + "Hips", None)] + chain(ns, ["Spine", "Spine1", "Spine2", "Neck", "Head", "HeadTop_End"], ns + "Hips")
    pairs += limbs(lambda p, s: ns + side_word(p, s), ns + "Spine2", ns + "Hips", MIXAMO_ARM, MIXAMO_LEG)
    parts = {"thigh": "UpLeg", "shin": "Leg", "foot": "Foot", "toe": "ToeBase", "shoulder": "Shoulder",
             "upperarm": "Arm", "forearm": "ForeArm", "hand": "Hand"}
    return pairs, expect([ns + "Spine", ns + "Spine1", ns + "Spine2"], ns + "Neck", ns + "Head", ns + "Hips",
                         lambda part, side: ns + side_word(parts[part], side))


def rigify():
    spine = ["DEF-spine"] + [f"DEF-spine.{i:03d}" for i in range(1, 7)]
    pairs = [(spine[0], None)] + [(spine[i], spine[i - 1]) for i in range(1, 7)]
    for s in "LR":
        pairs += [(f"DEF-pelvis.{s}", "DEF-spine"), (f"DEF-thigh.{s}", "DEF-spine"),
                  (f"DEF-thigh.{s}.001", f"DEF-thigh.{s}"), (f"DEF-shin.{s}", f"DEF-thigh.{s}.001"),
                  (f"DEF-shin.{s}.001", f"DEF-shin.{s}"), (f"DEF-foot.{s}", f"DEF-shin.{s}.001"),
                  (f"DEF-toe.{s}", f"DEF-foot.{s}"), (f"DEF-breast.{s}", "DEF-spine.003"),
                  (f"DEF-shoulder.{s}", "DEF-spine.003"), (f"DEF-upper_arm.{s}", f"DEF-shoulder.{s}"),
                  (f"DEF-upper_arm.{s}.001", f"DEF-upper_arm.{s}"), (f"DEF-forearm.{s}", f"DEF-upper_arm.{s}.001"),
                  (f"DEF-forearm.{s}.001", f"DEF-forearm.{s}"), (f"DEF-hand.{s}", f"DEF-forearm.{s}.001")]
    parts = {"thigh": "thigh", "shin": "shin", "foot": "foot", "toe": "toe", "shoulder": "shoulder",
             "upperarm": "upper_arm", "forearm": "forearm", "hand": "hand"}
    return pairs, expect(spine[1:4], spine[4], spine[6], spine[0], lambda part, s: f"DEF-{parts[part]}.{s}")


def unreal():
    pairs = [("root", None), ("pelvis", "root")] + chain("", ["spine_01", "spine_02", "spine_03", "neck_01", "head"],
                                                          "pelvis")
    for s in "lr":
        pairs += chain("", [f"clavicle_{s}", f"upperarm_{s}", f"lowerarm_{s}", f"hand_{s}"], "spine_03")
        pairs += [(f"upperarm_twist_01_{s}", f"upperarm_{s}")]
        pairs += chain("", [f"thigh_{s}", f"calf_{s}", f"foot_{s}", f"ball_{s}"], "pelvis")
    parts = {"thigh": "thigh", "shin": "calf", "foot": "foot", "toe": "ball", "shoulder": "clavicle",
             "upperarm": "upperarm", "forearm": "lowerarm", "hand": "hand"}
    return pairs, expect(["spine_01", "spine_02", "spine_03"], "neck_01", "head", "pelvis",
                         lambda part, s: f"{parts[part]}_{s.lower()}")


def metarig():
    """Blender's own naming: .L/.R and a two-bone spine (no Spine1 to map)."""
    pairs = [("hips", None)] + chain("", ["spine", "chest", "neck", "head"], "hips")
    for s in "LR":
        pairs += chain("", [f"shoulder.{s}", f"upper_arm.{s}", f"forearm.{s}", f"hand.{s}"], "chest")
        pairs += chain("", [f"thigh.{s}", f"shin.{s}", f"foot.{s}", f"toe.{s}"], "hips")
    parts = {"thigh": "thigh", "shin": "shin", "foot": "foot", "toe": "toe", "shoulder": "shoulder",
             "upperarm": "upper_arm", "forearm": "forearm", "hand": "hand"}
    return pairs, expect(["spine", "chest"], "neck", "head", "hips", lambda part, s: f"{parts[part]}.{s}")


def unity():
    """Left/Right words, Unity humanoid part names, an UpperChest."""
    pairs = [("Hips", None)] + chain("", ["Spine", "Chest", "UpperChest", "Neck", "Head"], "Hips")
    arm, leg = ["Shoulder", "UpperArm", "LowerArm", "Hand"], ["UpperLeg", "LowerLeg", "Foot", "Toes"]
    pairs += limbs(lambda p, s: ("Left_" if s == "L" else "Right_") + p, "UpperChest", "Hips", arm, leg)
    parts = {"thigh": "UpperLeg", "shin": "LowerLeg", "foot": "Foot", "toe": "Toes", "shoulder": "Shoulder",
             "upperarm": "UpperArm", "forearm": "LowerArm", "hand": "Hand"}
    return pairs, expect(["Spine", "Chest", "UpperChest"], "Neck", "Head", "Hips",
                         lambda part, s: ("Left_" if s == "L" else "Right_") + parts[part])


def bandai():
    pairs = [("joint_Root", None), ("Hips", "joint_Root")] + chain("", ["Spine", "Chest", "Neck", "Head"], "Hips")
    arm, leg = ["Shoulder", "UpperArm", "LowerArm", "Hand"], ["UpperLeg", "LowerLeg", "Foot", "Toes"]
    pairs += limbs(lambda p, s: f"{p}_{s}", "Chest", "Hips", arm, leg)
    parts = {"thigh": "UpperLeg", "shin": "LowerLeg", "foot": "Foot", "toe": "Toes", "shoulder": "Shoulder",
             "upperarm": "UpperArm", "forearm": "LowerArm", "hand": "Hand"}
    return pairs, expect(["Spine", "Chest"], "Neck", "Head", "Hips", lambda part, s: f"{parts[part]}_{s}")


def cmu():
    """CMU's BVH names: a LowerBack, a two-bone neck, and LHipJoint/LThumb capitals that are no body part."""
    pairs = [("Hips", None)] + chain("", ["LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head"], "Hips")
    for s, w in (("L", "Left"), ("R", "Right")):
        pairs += chain("", [f"{s}HipJoint", f"{w}UpLeg", f"{w}Leg", f"{w}Foot", f"{w}ToeBase"], "Hips")
        pairs += chain("", [f"{w}Shoulder", f"{w}Arm", f"{w}ForeArm", f"{w}Hand", f"{s}Thumb"], "Spine1")
    parts = {"thigh": "UpLeg", "shin": "Leg", "foot": "Foot", "toe": "ToeBase", "shoulder": "Shoulder",
             "upperarm": "Arm", "forearm": "ForeArm", "hand": "Hand"}
    return pairs, expect(["LowerBack", "Spine", "Spine1"], "Neck", "Head", "Hips",
                         lambda part, s: side_word(parts[part], s))


def biovision():
    """Biovision's BVH names: a Collar before the Shoulder, which is the upper arm; Hip, Knee, Ankle."""
    pairs = [("Hips", None)] + chain("", ["Chest", "Neck", "Head"], "Hips")
    for w in ("Left", "Right"):
        pairs += chain("", [f"{w}Collar", f"{w}Shoulder", f"{w}Elbow", f"{w}Wrist"], "Chest")
        pairs += chain("", [f"{w}Hip", f"{w}Knee", f"{w}Ankle"], "Hips")
    parts = {"thigh": "Hip", "shin": "Knee", "foot": "Ankle", "shoulder": "Collar", "upperarm": "Shoulder",
             "forearm": "Elbow", "hand": "Wrist"}
    expected = expect([], "Neck", "Head", "Hips", lambda part, s: side_word(parts[part], s) if part in parts else None)
    return pairs, {**{j: b for j, b in expected.items() if b is not None}, "Spine2": "Chest"}   # the bone below the neck


@pytest.mark.parametrize("scheme", [mixamo, rigify, unreal, metarig, unity, bandai, cmu, biovision])
def test_detect_maps_common_naming_schemes(betwixt_addon, scheme):
    from betwixt.inference.mapping import detect
    pairs, expected = scheme()
    names, parents = hierarchy(pairs)
    assert detect(LAFAN, LAFAN_PARENTS, names, parents) == expected


def test_detect_on_the_model_s_own_skeleton_and_on_strangers(betwixt_addon):
    from betwixt.inference.mapping import detect
    assert detect(LAFAN, LAFAN_PARENTS, LAFAN, LAFAN_PARENTS) == {n: n for n in LAFAN}
    assert detect(LAFAN, LAFAN_PARENTS, ["Bone", "Bone.001", "Bone.002"], [-1, 0, 1]) == {}


def test_side_markers_and_parts(betwixt_addon):
    from betwixt.inference.mapping import describe, unsided
    assert unsided("LeftUpLeg") == ("L", "UpLeg")
    assert unsided("mixamorig:RightArm") == ("R", "mixamorig:Arm")
    assert unsided("DEF-upper_arm.L.001") == ("L", "DEF-upper_arm..001")
    assert unsided("thigh_r") == ("R", "thigh_")
    assert unsided("Spine2") == ("", "Spine2")
    assert describe("Bip01 L Thigh")[:3] == ("L", "thigh", -1)
    assert describe("DEF-spine.003")[:3] == ("", "spine", 3)
    assert describe("LeftHandIndex1")[1] is None


@pytest.fixture(scope="module")
def lafan(lafan1_zip):
    from betwixt.inference.bvh import parse_bvh
    with zipfile.ZipFile(lafan1_zip) as z:
        return parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5")


def test_a_rig_with_one_spine_bone_has_the_size_of_its_legs_and_arms(betwixt_addon, lafan):
    """LaFAN1's skeleton with Spine1 and Spine2 merged into Spine (the rig suite's one-spine case), in
    metres: Detect maps the one spine bone to the model's chest (Spine2, the neck's and shoulders'
    parent), whose head is at the waist on this rig. Its three bones to the neck and shoulders are far
    longer than the model's; the rig is still the model's size (0.01), not 1.165 times it, which made
    the hips' path too short for the legs and planted feet slide."""
    from betwixt.addon.retarget import rig_retargeting
    from betwixt.addon.rig import Rig
    from betwixt.inference.motion import forward_kinematics
    sk = lafan.skeleton
    _, heads = forward_kinematics(np.tile([1.0, 0.0, 0.0, 0.0], (len(sk), 1)), sk.offsets, sk.parents)
    gone = [sk.index("Spine1"), sk.index("Spine2")]
    kept = [j for j in range(len(sk)) if j not in gone]
    parents = [p if p not in gone else sk.index("Spine") for p in sk.parents[kept]]
    rest = np.tile(np.eye(4), (len(kept), 1, 1))
    rest[:, :3, 3] = heads[kept] * 0.01
    rig = Rig(tuple(sk.names[j] for j in kept), [kept.index(p) if p >= 0 else -1 for p in parents], rest,
              np.zeros(len(kept), bool), ("QUATERNION",) * len(kept))
    mapping = {j: kept.index(j) for j in kept if j != sk.index("Spine")} | {gone[1]: kept.index(sk.index("Spine"))}
    assert abs(rig_retargeting(sk, rig, mapping, np.eye(4)).scale - 0.01) < 1e-12


def test_bandai_clip_maps_onto_the_lafan1_skeleton(betwixt_addon, mocap, lafan):
    """The real files: Bandai's hierarchy as parsed from its BVH."""
    from betwixt.inference.mapping import detect
    from betwixt.inference.bvh import parse_bvh
    with zipfile.ZipFile(mocap / "bandai1.zip") as z:
        sk = parse_bvh(z.read(sorted(z.namelist())[0]), "bandai").skeleton
    model = lafan.skeleton
    found = detect(model.names, model.parents, sk.names, sk.parents)
    _, expected = bandai()
    assert found == expected
    assert "Spine1" not in found and "joint_Root" not in found.values()


def test_euler_and_matrix_conversions_match_blender(betwixt_addon):
    """Blender's Euler orders and matrices, against mathutils, over random rotations."""
    from mathutils import Euler, Quaternion
    from betwixt.addon.rig import EULER_ORDERS, euler_to_quat, matrix_to_quat, quat_to_euler, unwrap_euler
    from betwixt.inference import quat
    rng = np.random.default_rng(1)
    angles = rng.uniform(-3, 3, (20, 3))
    for order in EULER_ORDERS:
        ours = euler_to_quat(angles, order)
        theirs = np.array([tuple(Euler(a, order).to_quaternion()) for a in angles])
        assert np.minimum(np.abs(ours - theirs), np.abs(ours + theirs)).max() < 1e-6
        back = euler_to_quat(quat_to_euler(ours, order), order)
        assert np.minimum(np.abs(back - ours), np.abs(back + ours)).max() < 1e-9
        # unwrapping keeps the rotation and moves by less than a turn from the frame before
        wrapped = unwrap_euler(quat_to_euler(ours, order)[:, None], order, angles[:1])[:, 0]
        same = euler_to_quat(wrapped, order)
        assert np.minimum(np.abs(same - ours), np.abs(same + ours)).max() < 1e-9
    q = quat.normalize(rng.standard_normal((50, 4)))
    r = matrix_to_quat(quat.to_matrix(q))
    assert np.minimum(np.abs(r - q), np.abs(r + q)).max() < 1e-12
    r = matrix_to_quat(np.array([np.array(Quaternion(v).to_matrix()) for v in q]))   # float32 in mathutils
    assert np.minimum(np.abs(r - q), np.abs(r + q)).max() < 1e-6


def test_affine_inverse_inverts_turned_scaled_sheared_and_moved_matrices(betwixt_addon):
    from betwixt.addon.rig import affine_inverse
    rng = np.random.default_rng(4)
    m = np.zeros((50, 4, 4))
    m[:, :3, :3] = rng.normal(0, 1, (50, 3, 3)) + 2 * np.eye(3)
    m[:, :3, 3] = rng.normal(0, 5, (50, 3))
    m[:, 3, 3] = 1.0
    np.testing.assert_allclose(affine_inverse(m) @ m, np.broadcast_to(np.eye(4), m.shape), atol=1e-9)
    np.testing.assert_allclose(affine_inverse(m[7]), np.linalg.inv(m[7]), atol=1e-9)


@pytest.mark.parametrize("at_once", [None, 1], ids=["together", "in parts"])
def test_rotation_channels_of_many_gaps_at_once_continue_from_each_gap_s_key(betwixt_addon, monkeypatch, at_once):
    """All gaps and bones converted together, or in parts of the gaps (a long Decompress's), give what each gap
    alone gives, from its own first key."""
    from types import SimpleNamespace
    from betwixt.addon import writing
    from betwixt.addon.writing import rotation_channels
    if at_once is not None:
        monkeypatch.setattr(writing, "GAPS_AT_ONCE", at_once)
    from betwixt.addon.rig import channels_to_quat, quat_to_channels, quat_to_euler
    from betwixt.inference import quat
    rng = np.random.default_rng(3)
    modes = ("QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE", "XYZ")
    first, starts, counts = 5, [10, 40, 52], np.array([29, 3, 0])
    frames = 60
    # smooth random motion per bone, keyed as each mode keys it (Euler angles a few turns in)
    q = quat.unroll(quat.normalize(np.cumsum(rng.normal(0, 0.2, (frames, len(modes), 4)), axis=0) + [3, 0, 0, 0]))
    raw = {}
    for b, mode in enumerate(modes):
        start = quat_to_euler(q[:1, b], mode)[0] + 4 * np.pi if mode not in ("QUATERNION", "AXIS_ANGLE") \
            else np.r_[0.0, 0.0, 1.0, 0.0] if mode == "AXIS_ANGLE" else -q[0, b]
        raw[b] = quat_to_channels(q[:, b], mode, start)
    plan = SimpleNamespace(first=first, raw=raw, rig=SimpleNamespace(rotation_modes=modes))
    rows = np.concatenate([np.arange(a + 1, a + 1 + n) - first for a, n in zip(starts, counts)])
    generated = quat.normalize(q[rows] + rng.normal(0, 0.05, (len(rows), len(modes), 4)))
    bones = [4, 0, 1, 2, 3]
    out = rotation_channels(plan, generated, bones, starts, counts)
    done = 0
    for a, n in zip(starts, counts):
        for k, b in enumerate(bones):
            alone = quat_to_channels(generated[done:done + n, b], modes[b], raw[b][a - first])
            np.testing.assert_allclose(out[b][done:done + n], alone, atol=1e-12)
            back = channels_to_quat(out[b][done:done + n], modes[b])
            assert np.all(np.minimum(np.abs(back - generated[done:done + n, b]),
                                     np.abs(back + generated[done:done + n, b])) < 1e-9)
            if n and modes[b] not in ("QUATERNION", "AXIS_ANGLE"):   # no jump from the key's angles
                assert np.abs(out[b][done] - raw[b][a - first]).max() < 1.0
        done += n


def test_rest_pose_alignment_and_its_twist(betwixt_addon, lafan):
    """A rig whose rest pose is a natural pose of the model's skeleton, with arbitrary bone frames.

    From rest positions alone every bone points right but may keep a constant twist about itself;
    given that natural pose as the model's reference, the frames come out exact, twist included.
    """
    from betwixt.addon.retarget import AXIS_CHANGE, rig_retargeting, to_rig
    from betwixt.addon.rig import Rig
    from betwixt.inference import quat
    from betwixt.inference.motion import forward_kinematics
    sk, pose = lafan.skeleton, lafan.rotations[1000]    # a natural pose: the rig's rest
    rng = np.random.default_rng(7)
    grot, heads = forward_kinematics(pose, sk.offsets, sk.parents)
    c = AXIS_CHANGE[1]
    twist = quat.to_matrix(quat.normalize(rng.standard_normal((len(sk), 4))))   # bone frames anywhere
    rest = np.tile(np.eye(4), (len(sk), 1, 1))
    rest[:, :3, :3] = c @ quat.to_matrix(grot) @ twist
    rest[:, :3, 3] = heads @ c.T * 0.01
    rig = Rig(tuple(f"b{j}" for j in range(len(sk))), sk.parents, rest, np.zeros(len(sk), bool),
              ("QUATERNION",) * len(sk))
    mapping = {j: j for j in range(len(sk))}
    exact = rig_retargeting(sk, rig, mapping, np.eye(4), reference=pose)
    np.testing.assert_allclose(exact.offsets, np.swapaxes(twist, -1, -2), atol=1e-9)
    assert abs(exact.scale - 0.01) < 1e-12
    guessed = rig_retargeting(sk, rig, mapping, np.eye(4))
    # directions: each bone's offset to its child is carried the same way by both
    for j in range(1, len(sk)):
        p = sk.parents[j]
        d = sk.offsets[j]
        np.testing.assert_allclose(exact.offsets[p] @ d, guessed.offsets[p] @ d, atol=1e-6 * np.linalg.norm(d))
    twisted = np.degrees(np.arccos(np.clip((np.trace(np.swapaxes(exact.offsets, -1, -2) @ guessed.offsets,
                                                     axis1=-2, axis2=-1) - 1) / 2, -1, 1)))
    assert twisted.max() > 10.0     # without the reference some bones keep a twist about themselves
    # and a pose written to the rig reads back as the same pose
    frames = np.stack([pose, quat.normalize(pose + 0.1 * rng.standard_normal(pose.shape))])
    positions = np.repeat(sk.offsets[None], 2, 0)
    n = (2, len(sk))
    loc, rot, _ = to_rig(exact, frames, positions, np.zeros(n + (3,)), np.tile([1.0, 0, 0, 0], n + (1,)),
                         np.ones(n + (3,)))
    r, p = exact.to_model(rig.pose(loc, rot, np.ones(n + (3,))))
    assert np.minimum(np.abs(r - frames), np.abs(r + frames)).max() < 1e-9
    np.testing.assert_allclose(p, positions, atol=1e-9)
