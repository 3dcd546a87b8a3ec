"""A control rig as animators key it: Blender's bundled Rigify generates a rig from its human metarig,
LaFAN1's test subject is keyed onto its controls, and Fill Gaps must move the deform bones Blender
evaluates (``DEF-``, driven by constraints, FK and IK chains) through keys on the controls alone.

The shipped ``rtn-human`` fills, so that the deform bones' error against the capture can be held against
Blender's own Bézier on the same control keys.
"""

import os
import sys
import zipfile
from pathlib import Path

import bpy
import numpy as np
import pytest

from conftest import once
from inference.bvh import parse_bvh

ROOT = Path(__file__).resolve().parents[1]
FRAMES = 120                 # clip frames keyed onto the rig, scene frames 1..120
GAP = (40, 70)               # the keys around the 1 s hole
LIMBS = ("thigh_parent", "upper_arm_parent")


@pytest.fixture(scope="module")
def betwixt(tmp_path_factory, lafan1_zip):
    import addon_utils   # Blender's own module, importable once bpy is
    folder = tmp_path_factory.mktemp("addons")
    os.symlink(ROOT, folder / "betwixt")
    sys.path.insert(0, str(folder))
    assert addon_utils.enable("betwixt", default_set=True) is not None
    assert addon_utils.enable("rigify", default_set=True) is not None
    from betwixt.addon import controls, evaluated, mapping, pose_io, writing
    yield {"controls": controls, "evaluated": evaluated, "mapping": mapping, "pose_io": pose_io, "writing": writing}
    addon_utils.disable("betwixt", default_set=True)
    addon_utils.disable("rigify", default_set=True)
    sys.path.remove(str(folder))


def generated(metarig, tmp_path_factory):
    """A new 30 fps scene holding the rig Rigify generates from its ``metarig`` ("human", "wolf"), active:
    generated once per test run (some 5 s each) and opened afresh from its file for each caller."""
    def build(folder):
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.context.scene.render.fps = 30
        getattr(bpy.ops.object, f"armature_{metarig}_metarig_add")()
        bpy.ops.pose.rigify_generate()
        bpy.data.objects.remove(bpy.data.objects["metarig"])
        bpy.ops.wm.save_as_mainfile(filepath=str(folder / "rig.blend"))

    bpy.ops.wm.open_mainfile(filepath=str(once(tmp_path_factory, f"rigify-{metarig}", build) / "rig.blend"))
    return bpy.context.active_object


@pytest.fixture(scope="module")
def keyed_rigs(betwixt, lafan1_zip, tmp_path_factory):
    """{IK_FK: a .blend of a generated Rigify rig with 120 frames of capture keyed on its controls}, its limbs
    in IK (0, as Rigify generates them) or in FK (1)."""
    with zipfile.ZipFile(lafan1_zip) as z:
        motion = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5").frames(1000, 1000 + FRAMES)
    from betwixt.addon.preferences import model_for
    out = {}
    for ik_fk in (0.0, 1.0):
        rig = generated("human", tmp_path_factory)
        for limb in LIMBS:
            for side in "LR":
                rig.pose.bones[f"{limb}.{side}"]["IK_FK"] = ik_fk
        for entry in betwixt["controls"].detect(rig):
            pb = rig.pose.bones[entry.control]
            for frame in (0, FRAMES + 1):
                pb.keyframe_insert("location", frame=frame)
                pb.keyframe_insert(betwixt["pose_io"].channel_path(pb.rotation_mode), frame=frame)
        betwixt["writing"].key_motion(rig, model_for(bpy.context, rig, "fill"), motion, 1)
        out[ik_fk] = tmp_path_factory.mktemp("rigify") / "rigify.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(out[ik_fk]))
    return out


@pytest.fixture(params=[0.0, 1.0], ids=["IK limbs", "FK limbs"])
def keyed_rig(keyed_rigs, request):
    return keyed_rigs[request.param]


def load(path):
    bpy.ops.wm.open_mainfile(filepath=str(path))
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    return rig


def deform_heads(betwixt, rig, frames):
    bones = [rig.data.bones.find(n) for n in betwixt["mapping"].rigify.HUMAN.deform.values()]
    return betwixt["evaluated"].pose_matrices(rig, frames, bones)[..., :3, 3]


def cut(betwixt, rig, a, b):
    """Delete every key strictly between frames a and b and select the keys on a and b."""
    for fc in betwixt["pose_io"].Channels(rig).curves().values():
        points = fc.keyframe_points
        co = np.empty(2 * len(points))
        points.foreach_get("co", co)
        kept = co.reshape(-1, 2)[(co[0::2] <= a) | (co[0::2] >= b)]
        points.clear()
        points.add(len(kept))
        points.foreach_set("co", kept.reshape(-1))
        points.foreach_set("select_control_point", np.isin(kept[:, 0], (a, b)))
        fc.update()


def keyed_bones(betwixt, rig, a, b):
    """The bones holding keys strictly inside (a, b)."""
    out = set()
    for (path, _), fc in betwixt["pose_io"].Channels(rig).curves().items():
        co = np.empty(2 * len(fc.keyframe_points))
        fc.keyframe_points.foreach_get("co", co)
        if np.any((co[0::2] > a) & (co[0::2] < b)):
            out.add(path.split('"')[1])
    return out


def test_detect_reads_the_deform_bones_and_finds_the_controls(betwixt, keyed_rig):
    rig = load(keyed_rig)
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    mapped = {item.joint: item.bone for item in rig.data.betwixt_joints}
    assert len(mapped) == 22 and all(bone.startswith("DEF-") for bone in mapped.values())
    assert len(rig.data.betwixt_controls) == len(betwixt["controls"].detect(rig)) > 20   # stored, editable
    entries = {e.control: e for e in betwixt["controls"].detect(rig)}
    assert entries["torso"].joint == "Hips" and entries["foot_ik.L"].when == "IK"
    assert entries["thigh_fk.R"].joint == "RightUpLeg" and entries["thigh_fk.R"].when == "FK"


def test_a_model_of_another_skeleton_reads_and_keys_the_same_bones(betwixt, keyed_rigs, mocap):
    """A human model on CMU's skeleton (a spine of LowerBack, Spine, Spine1; LeftToeBase) finds on a Rigify rig
    the deform bones and the controls LaFAN1's finds, joint for joint: the chest control drives its Spine1."""
    from betwixt.addon import rigify
    from betwixt.inference.bvh import read_bvh

    rig = load(keyed_rigs[0.0])
    cmu = read_bvh(mocap / "cmu-01_01.bvh").skeleton
    found = betwixt["mapping"].detected(rig, cmu)
    assert len(found) == 22 and found["LowerBack"] == "DEF-spine.001" and found["Spine1"] == "DEF-spine.003"
    assert found["LeftToeBase"] == "DEF-toe.L" and "LHipJoint" not in found and "Neck1" not in found
    assert sorted(found.values()) == sorted(rigify.HUMAN.deform.values())
    entries = {e.control: e.joint for e in betwixt["controls"].on_skeleton(rig, betwixt["controls"].detect(rig), cmu)}
    assert entries["chest"] == "Spine1" and entries["toe_fk.L"] == "LeftToeBase" and entries["torso"] == "Hips"
    assert set(entries.values()) <= set(found)


def test_a_model_of_another_skeleton_stands_on_the_rig_s_own_legs(betwixt, keyed_rigs):
    """``rtn-cmu``'s skeleton hangs its legs from ``LHipJoint`` and ``RHipJoint``, joints the rig lacks, some 10
    cm below its hips: on the rig's bone lengths (where feet are planted, ``Retargeting.on_rig``), every mapped
    joint stands where the rig's bone does, the thighs too (hung from the model's hip joints, the rig's feet
    floated 7 cm above the floor in the rig suite)."""
    from betwixt.addon import plan
    from betwixt.addon.preferences import model_for
    from betwixt.inference.motion import Motion, forward_kinematics

    rig = load(keyed_rigs[0.0])
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.rtn_file = str(ROOT / "inference" / "models" / "rtn-cmu.onnx")
    try:
        model = model_for(bpy.context, rig, "fill")
        bones, retarget, _ = plan.read_retarget(rig, model)
        pose = plan.in_motion(rig, bones, sorted(retarget.mapping.values()))
    finally:
        prefs.rtn_file = ""
    assert model.name == "rtn-cmu" and "LHipJoint" not in [model.skeleton.names[j] for j in retarget.mapping]
    rotations, positions = retarget.to_model(pose)
    motion = retarget.on_rig(Motion(model.skeleton, rotations, positions, 30.0))
    ours = forward_kinematics(motion.rotations, motion.positions, model.skeleton.parents)[1]
    theirs = retarget.heads(pose)
    hips = model.skeleton.index("Hips")
    height = np.ptp(np.stack([head[0] for head in theirs.values()]), axis=0).max()   # the body's size, model units
    for j, head in theirs.items():
        off = np.linalg.norm((ours[:, j] - ours[:, hips]) - (head - theirs[hips]), axis=-1).max()
        assert off < 0.015 * height, (model.skeleton.names[j], off / height)   # 0.9 % at most (4.3 % hung from its hip joints)


def test_the_capture_keyed_on_the_controls_puts_the_deform_bones_on_it(betwixt, keyed_rig):
    rig = load(keyed_rig)
    keyed = keyed_bones(betwixt, rig, 0, FRAMES + 1)
    assert keyed and not any(b.startswith(("DEF-", "ORG-", "MCH-")) for b in keyed)
    heads = deform_heads(betwixt, rig, np.arange(1, FRAMES + 1))
    hips = heads[:, 0]
    assert np.ptp(hips[:, 1]) > 0.5                                  # the capture's walk carries the hips
    feet = heads[:, [list(betwixt["mapping"].rigify.HUMAN.deform).index(f"{s}Foot") for s in ("Left", "Right")]]
    assert 0.0 < np.min(feet[..., 2]) < 0.12                        # ankles on the floor, not under it


def test_fill_gaps_keys_the_controls_and_beats_bezier_on_the_deform_bones(betwixt, keyed_rig):
    rig = load(keyed_rig)
    ik_fk = rig.pose.bones["thigh_parent.L"]["IK_FK"]
    truth = deform_heads(betwixt, rig, np.arange(GAP[0] + 1, GAP[1]))
    outside = deform_heads(betwixt, rig, np.arange(1, GAP[0] + 1))
    cut(betwixt, rig, *GAP)
    bezier = deform_heads(betwixt, rig, np.arange(GAP[0] + 1, GAP[1]))
    before = betwixt["pose_io"].Channels(rig).curves()
    before_keys = {k: np.array([p.co[:] for p in fc.keyframe_points]) for k, fc in before.items()}
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    filled = deform_heads(betwixt, rig, np.arange(GAP[0] + 1, GAP[1]))
    keyed = keyed_bones(betwixt, rig, *GAP)
    assert not any(b.startswith(("DEF-", "ORG-", "MCH-")) for b in keyed)
    if ik_fk == 0.0:
        assert {"torso", "foot_ik.L", "hand_ik.R"} <= keyed and not keyed & {"thigh_fk.L", "forearm_fk.R"}
    else:
        assert {"torso", "thigh_fk.L", "forearm_fk.R"} <= keyed and not keyed & {"foot_ik.L", "hand_ik.R"}
    ours = np.linalg.norm(filled - truth, axis=-1).mean()
    theirs = np.linalg.norm(bezier - truth, axis=-1).mean()
    assert ours < 0.9 * theirs, (ours, theirs)
    for key, fc in betwixt["pose_io"].Channels(rig).curves().items():   # keys outside the gap as they were
        co = np.array([p.co[:] for p in fc.keyframe_points])
        if key in before_keys:
            old = before_keys[key]
            keep = (old[:, 0] <= GAP[0]) | (old[:, 0] >= GAP[1])
            assert np.array_equal(co[(co[:, 0] <= GAP[0]) | (co[:, 0] >= GAP[1])], old[keep])
    assert np.abs(deform_heads(betwixt, rig, np.arange(1, GAP[0] + 1)) - outside).max() < 1e-4


def test_a_half_second_gap_on_the_controls_reads_its_probes_frames_and_beats_bezier(betwixt, keyed_rig):
    """Fill Gaps' lean toward the keys' own spline (inference/keyspline.py) on a control rig: the frames around
    the window are evaluated with it, as one take, and the fill still keys the controls, nearer the capture."""
    from betwixt.addon import plan as reading
    from betwixt.inference import edit
    rig = load(keyed_rig)
    a, b = 60, 75
    truth = deform_heads(betwixt, rig, np.arange(a + 1, b))
    cut(betwixt, rig, a, b)
    bezier = deform_heads(betwixt, rig, np.arange(a + 1, b))
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    near, far = edit.surround(plan.model, plan.gaps, plan.fps)
    assert plan.around[1] == near and plan.around[0].n_frames == far - near + 1
    window = slice(plan.first - near, plan.first - near + plan.motion.n_frames)
    assert np.array_equal(plan.around[0].positions[window], plan.motion.positions)
    assert np.allclose(np.abs(np.sum(plan.around[0].rotations[window] * plan.motion.rotations, -1)), 1.0)
    assert len(plan.turns[1].angles) == plan.motion.n_frames
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    keyed = keyed_bones(betwixt, rig, a, b)
    assert "torso" in keyed and not any(n.startswith(("DEF-", "ORG-", "MCH-")) for n in keyed)
    filled = deform_heads(betwixt, rig, np.arange(a + 1, b))
    ours, theirs = (np.linalg.norm(x - truth, axis=-1).mean() for x in (filled, bezier))
    assert ours < 0.9 * theirs, (ours, theirs)


def test_a_bad_key_beside_a_half_second_gap_leaves_its_fill_without_probes(betwixt, keyed_rigs):
    """A key that is not a number some frames before the window (where the probes would be cut) is not the fill's
    business: the gap is filled from the window alone, as it was before the frames around were read."""
    from betwixt.addon import plan as reading
    rig = load(keyed_rigs[0.0])
    cut(betwixt, rig, 60, 75)
    curve = betwixt["pose_io"].Channels(rig).find('pose.bones["torso"].location', 0)
    point = next(p for p in curve.keyframe_points if p.co[0] == 48)   # the window starts on 50
    point.co[1] = float("nan")
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    assert plan.around is None and np.isfinite(plan.motion.rotations).all()
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    assert np.isfinite(deform_heads(betwixt, rig, np.arange(61, 75))).all()


def test_the_rig_s_own_motion_written_back_onto_its_controls_puts_the_deform_bones_where_they_were(betwixt,
                                                                                                    keyed_rig):
    """Rigify's deform chains stretch and shrink as they bend (a leg by a centimetre): written on its rest lengths,
    the motion the rig showed put its feet and knees some 0.8 cm off on average; on the lengths read frame by frame
    (``plan.read_lengths``), within 0.4 cm."""
    from betwixt.addon import plan as reading
    from betwixt.addon.preferences import model_for
    from betwixt.addon.steps import drained
    rig = load(keyed_rig)
    a, b = GAP
    frames = np.arange(1, FRAMES + 1)
    truth = deform_heads(betwixt, rig, np.arange(a + 1, b))
    model = model_for(bpy.context, rig, "fill")
    deform, retarget, _ = reading.read_retarget(rig, model)
    shown = reading.plan_over(betwixt["pose_io"].Channels(rig), model, deform, retarget, None, [], 30, frames).motion
    cut(betwixt, rig, a, b)
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    rows = np.arange(plan.first, plan.first + plan.motion.n_frames) - 1
    motion = shown.frames(int(rows[0]), int(rows[-1]) + 1)
    drained(betwixt["writing"].write_plan(plan, betwixt["pose_io"].Channels(rig), motion, plan.gaps, 1, False))
    written = deform_heads(betwixt, rig, np.arange(a + 1, b))
    assert np.linalg.norm(written - truth, axis=-1).mean() < 0.004                   # m


def test_a_rig_whose_deform_bones_no_control_drives_is_refused_and_left_alone(betwixt, keyed_rig):
    rig = load(keyed_rig)
    cut(betwixt, rig, *GAP)
    item = rig.data.betwixt_controls.add()   # a control map of one control that the rig does not have
    item.control, item.joint = "no such control", "Hips"
    before = {k: np.array([p.co[:] for p in fc.keyframe_points]) for k, fc in
              betwixt["pose_io"].Channels(rig).curves().items()}
    with pytest.raises(RuntimeError, match="no control of its control map drives them"):
        bpy.ops.betwixt.fill_gaps()
    after = {k: np.array([p.co[:] for p in fc.keyframe_points]) for k, fc in
             betwixt["pose_io"].Channels(rig).curves().items()}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)


def test_a_control_map_missing_a_limb_is_named_and_the_rest_is_filled(betwixt, keyed_rig, capfd):
    rig = load(keyed_rig)
    controls = betwixt["controls"]
    controls.store(rig.data, [e for e in controls.detect(rig) if not e.control.endswith("arm_fk.L")
                              and e.control not in ("hand_fk.L", "hand_ik.L", "upper_arm_ik.L")])
    cut(betwixt, rig, *GAP)
    capfd.readouterr()
    assert bpy.ops.betwixt.fill_gaps() == {"FINISHED"}
    warned = [line for line in capfd.readouterr().out.splitlines() if line.startswith("Warning")]
    assert any("LeftHand (DEF-hand.L)" in line for line in warned), warned
    assert not any("RightHand" in line for line in warned)
    assert "torso" in keyed_bones(betwixt, rig, *GAP)


def test_follow_path_keys_the_controls_and_the_deform_hips_walk_the_model_s_path(betwixt, keyed_rigs):
    """The Motion VAE walks the generated rig along a curve: the keys go on its controls, and Blender's
    evaluation of the deform hips is the model's walk (scaled to the rig) within a few centimetres."""
    from betwixt.addon import locomotion
    from inference.motion import forward_kinematics
    from test_addon_locomotion import bezier, follow_with
    rig = load(keyed_rigs[0.0])
    a, b = 20, 80
    curve = bezier([(0.0, 0.0, 0.0), (1.5, 0.8, 0.0), (3.0, 0.0, 0.0)], "AUTO")
    follow_with(rig, curve)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = a, b
    route = locomotion.read_route(bpy.context, a, b)
    assert route.keys.drive is not None and route.keys.model.name.startswith("mvae")
    assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True) == {"FINISHED"}
    keyed = keyed_bones(betwixt, rig, a - 1, b + 1)
    assert "torso" in keyed and not any(n.startswith(("DEF-", "ORG-", "MCH-")) for n in keyed)
    want = locomotion.follow(route)
    hips = forward_kinematics(want.rotations, want.positions, want.skeleton.parents)[1][1:-1, 0]
    C = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    track = deform_heads(betwixt, rig, np.arange(a, b + 1))[:, 0]
    assert np.linalg.norm(track - hips @ C.T * route.keys.retarget.scale, axis=-1).max() < 0.03   # metres
    assert np.linalg.norm(track[-1, :2] - track[0, :2]) > 1.5


def test_continue_keys_the_controls_of_each_continuation(betwixt, keyed_rigs):
    rig = load(keyed_rigs[0.0])
    bpy.context.scene.frame_set(60)
    assert bpy.ops.betwixt.continue_motion(count=1, frames=20) == {"FINISHED"}
    made = [a for a in bpy.data.actions if a.name.endswith("continuation 1")]
    assert len(made) == 1
    channels = betwixt["pose_io"].Channels(rig, action=made[0],
                                          slot=betwixt["pose_io"].Channels(rig).slot_in(made[0]))
    keyed = {path.split('"')[1] for (path, _), fc in channels.curves().items()
             if any(60 < k.co[0] < 81 for k in fc.keyframe_points)}
    assert {"torso", "foot_ik.L"} <= keyed and not any(n.startswith(("DEF-", "ORG-", "MCH-")) for n in keyed)


def test_esc_while_the_rig_is_read_or_its_controls_baked_leaves_the_scene_as_it_was(betwixt, keyed_rigs):
    """Reading a control rig and keying its controls run on the main thread as steps (addon/steps.py) so
    that Esc can stop them between frames: closed half-way, the reading leaves the current frame where it
    was, and the bake, its constraints and Empties in the scene, leaves nothing of them and no key changed."""
    from betwixt.addon import controls, plan as reading, steps, writing
    from betwixt.inference import edit
    rig = load(keyed_rigs[0.0])
    cut(betwixt, rig, *GAP)
    bpy.context.scene.frame_set(7)
    before = {k: np.array([p.co[:] for p in fc.keyframe_points]) for k, fc in
              betwixt["pose_io"].Channels(rig).curves().items()}
    objects, actions = set(bpy.data.objects.keys()), set(bpy.data.actions.keys())
    reads = reading.read_plan_steps(bpy.context, reading.selected_gaps)
    assert 0 < next(reads) < next(reads) < 1                       # the rig read frame by frame, and stopped
    reads.close()
    assert bpy.context.scene.frame_current == 7
    plan = reading.read_plan(bpy.context, reading.selected_gaps)
    result = edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps)
    writes = writing.write_plan(plan, betwixt["pose_io"].Channels(rig), result, plan.gaps, 1, False)
    shares = [next(writes) for _ in range(6)]
    assert shares == sorted(shares) and 0 < shares[-1] < 1        # progress, part of the way
    baking = [c for pb in rig.pose.bones for c in pb.constraints if c.name == controls.BAKE]
    assert len(baking) > 10 and set(bpy.data.objects.keys()) > objects   # mid-bake
    writes.close()
    assert not [c for pb in rig.pose.bones for c in pb.constraints if c.name == controls.BAKE]
    assert set(bpy.data.objects.keys()) == objects and set(bpy.data.actions.keys()) == actions
    assert bpy.context.scene.frame_current == 7
    after = {k: np.array([p.co[:] for p in fc.keyframe_points]) for k, fc in
             betwixt["pose_io"].Channels(rig).curves().items()}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)
    assert steps.drained(writing.write_plan(plan, betwixt["pose_io"].Channels(rig), result, plan.gaps, 1, False))
    assert "torso" in keyed_bones(betwixt, rig, *GAP)             # run to its end, the same steps key


@pytest.mark.slow
def test_a_rigify_wolf_reads_as_the_dog_and_follow_path_keys_its_controls(betwixt, tmp_path_factory):
    """A four-legged control rig: Rigify's wolf, generated, plays the dog's skeleton (its deform bones, the
    tail left to the model's average pose), its controls (torso, paw IK, heels, poles) are detected, and the
    dog's Follow Path walks it through keys on those controls alone."""
    from test_addon_locomotion import bezier, follow_with
    rig = generated("wolf", tmp_path_factory)
    assert bpy.ops.betwixt.detect_mapping() == {"FINISHED"}
    mapped = {item.joint: item.bone for item in rig.data.betwixt_joints if item.bone}
    assert len(mapped) == 19 and "Tail" not in mapped and all(b.startswith("DEF-") for b in mapped.values())
    assert {"torso", "front_foot_ik.L", "foot_heel_ik.R", "thigh_ik_target.L"} <= \
        {e.control for e in betwixt["controls"].detect(rig)}
    a, b = 1, 60
    curve = bezier([(0.0, 0.0, 0.0), (1.0, 0.5, 0.0), (2.0, 0.0, 0.0)], "AUTO")
    follow_with(rig, curve)
    assert bpy.ops.betwixt.follow_path(frame_start=a, frame_end=b, gait="WALK") == {"FINISHED"}
    keyed = keyed_bones(betwixt, rig, a - 1, b + 1)
    assert {"torso", "foot_ik.L", "front_foot_ik.R"} <= keyed
    assert not any(n.startswith(("DEF-", "ORG-", "MCH-")) for n in keyed)
    hips = betwixt["evaluated"].pose_matrices(rig, np.arange(a, b + 1), [rig.data.bones.find(mapped["Hips"])])
    assert np.linalg.norm(hips[-1, 0, :2, 3] - hips[0, 0, :2, 3]) > 1.0   # metres along the path
    assert 0.6 < hips[:, 0, 2, 3].min() and hips[:, 0, 2, 3].max() < 0.9   # about its rest height, 0.79 m


def dog_on_the_wolf(betwixt, dog_zip, clip_name, frames, tmp_path_factory):
    """``(rig, model, clip)``: Rigify's wolf generated in a 60 fps scene, the first ``frames`` of the dog's clip
    ``clip_name`` keyed onto its controls (each control keyed before and after, so that every one has a curve)."""
    from betwixt.addon.preferences import model_for
    rig = generated("wolf", tmp_path_factory)
    bpy.context.scene.render.fps = 60
    with zipfile.ZipFile(dog_zip) as z:
        name = next(n for n in z.namelist() if n.endswith(f"{clip_name}.bvh"))
        clip = parse_bvh(z.read(name), name).frames(0, frames)
    model = model_for(bpy.context, rig, "fill")
    for entry in betwixt["controls"].detect(rig):
        pb = rig.pose.bones[entry.control]
        for frame in (0, clip.n_frames + 1):
            pb.keyframe_insert("location", frame=frame)
            pb.keyframe_insert(betwixt["pose_io"].channel_path(pb.rotation_mode), frame=frame)
    betwixt["writing"].key_motion(rig, model, clip, 1)
    return rig, model, clip


def test_a_physics_pass_on_the_wolf_keys_its_controls(betwixt, dog_zip, carl_policy, tmp_path_factory):
    """The Physics Pass on a four-legged control rig: the dog's motion keyed onto Rigify's wolf through its
    controls, tracked in simulation by a tiny policy, kept as a variant keyed on the same controls alone."""
    from betwixt.addon.variants import variants_of
    rig, _, _ = dog_on_the_wolf(betwixt, dog_zip, "D1_010_KAN01_003", 90, tmp_path_factory)
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.carl_file = str(carl_policy["model"])
    try:
        assert bpy.ops.betwixt.physics_pass(frame_start=20, frame_end=70) == {"FINISHED"}
    finally:
        prefs.carl_file = ""
    original = rig.animation_data.action
    [variant] = variants_of(original.name)
    rig.animation_data.action = variant
    keyed = keyed_bones(betwixt, rig, 19, 71)
    rig.animation_data.action = original
    assert "torso" in keyed and not any(n.startswith(("DEF-", "ORG-", "MCH-")) for n in keyed), keyed


@pytest.mark.slow
def test_a_dog_keyed_onto_the_wolf_reads_back_as_itself(betwixt, dog_zip, tmp_path_factory):
    """The dog's motion keyed onto Rigify's wolf through its controls reads back as that motion: the wolf's
    chest (spine.008, which carries its shoulders) plays the dog's Spine1, which carries the dog's, and
    each control's deform bone is keyed with its head where the model's joint is, not where the rig's
    unmapped bones between two mapped ones (the spine's tweaked middle, the neck's middle bone) would put
    it. With the chest read from spine.007 and heads placed along the chain, the joints came back 1.6 cm
    off on average and the head 4.3 cm."""
    from betwixt.addon import plan as reading
    from inference.motion import forward_kinematics
    rig, model, clip = dog_on_the_wolf(betwixt, dog_zip, "D1_008_KAN01_002", 120, tmp_path_factory)
    read, retarget, detected = reading.read_retarget(rig, model)
    plan = reading.plan_over(betwixt["pose_io"].Channels(rig), model, read, retarget, detected, [(1, 2)], 60,
                             np.arange(1, clip.n_frames + 1))
    sk = model.skeleton
    mapped = sorted(retarget.mapping)
    assert read.names[retarget.mapping[sk.index("Spine1")]] == "DEF-spine.008"
    got = forward_kinematics(plan.motion.rotations, plan.motion.positions, sk.parents)[1]
    keyed = forward_kinematics(clip.rotations, plan.motion.positions, sk.parents)[1]   # the clip on the read lengths
    apart = np.linalg.norm(got - keyed, axis=-1)[:, mapped].mean(axis=0)          # cm, the dog's units
    assert apart.mean() < 0.5 and apart.max() < 1.5, dict(zip([sk.names[j] for j in mapped], apart.round(2)))
