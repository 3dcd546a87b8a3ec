"""Transitions in Blender (addon/library.py) with the real ``bpy`` and the shipped rtn-human: three short
actions of one armature, cut from LaFAN1's test clip and imported by Blender's BVH importer; every ordered
pair's variants each in an action of its own, keyed from the source's leave pose to the target's enter
pose (pose markers, where chosen), on a plain rig and on the controls of a generated Rigify rig; undo, Esc, a
failed write and bad input leave the file as it was; the panel's box; the FBX export holds a take per
transition."""

import zipfile
from dataclasses import replace
from types import SimpleNamespace

import bpy
import numpy as np
import pytest

from inference.bvh import parse_bvh, write_bvh
from test_addon import betwixt_addon  # noqa: F401  (the repository enabled as the add-on)
from test_addon_rigify import generated

# flat stretches of obstacles1_subject5 (as tests/test_library.py), 40 frames each
STRETCHES = {"walk": 4320, "slow": 1470, "start": 120}
FRAMES = 40


@pytest.fixture(scope="module")
def files(lafan1_zip, tmp_path_factory):
    with zipfile.ZipFile(lafan1_zip) as z:
        capture = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5")
    folder = tmp_path_factory.mktemp("clips")
    for name, start in STRETCHES.items():
        write_bvh(replace(capture.frames(start, start + FRAMES), name=name), folder / f"{name}.bvh")
    return [folder / f"{name}.bvh" for name in STRETCHES]


@pytest.fixture
def rig(betwixt_addon, files):  # noqa: F811
    """One armature with the three clips as its actions (each import's armature removed but the first), all
    ticked for Transitions, the first assigned."""
    bpy.ops.wm.read_homefile(use_empty=True)
    objects = []
    for path in files:
        assert bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=True) == {"FINISHED"}
        objects.append(bpy.context.active_object)
        objects[-1].animation_data.action.name = path.stem
    obj = objects[0]
    for other in objects[1:]:
        bpy.data.objects.remove(other)
    for name in STRETCHES:
        bpy.data.actions[name].betwixt_pick = True
        bpy.data.actions[name].use_fake_user = True
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    return obj


def made(obj):
    from betwixt.addon.library import transitions_of
    return transitions_of(obj)


def local_pose(obj, action, frame):
    """Every pose bone's matrix_basis (bones, 4, 4) under ``action`` on ``frame``."""
    from betwixt.addon.library import play
    play(obj, action)
    bpy.context.scene.frame_set(frame)
    return np.array([np.array(pb.matrix_basis) for pb in obj.pose.bones])


def transitions(**options):
    return bpy.ops.betwixt.transitions("EXEC_DEFAULT", True, **{"length": 20, "count": 2, **options})


def test_every_pair_gets_k_actions_from_the_leave_pose_to_the_enter_pose_and_undo_removes_them(rig):
    from betwixt.addon.library import slot_of
    from betwixt.addon.pose_io import Channels
    before = set(bpy.data.actions.keys())
    bpy.ops.ed.undo_push(message="before")
    assert transitions() == {"FINISHED"}
    assert rig.animation_data.action.name == "walk"                # the armature keeps its action
    actions = made(rig)
    names = sorted(f"{s} -> {t} {i}" for s in STRETCHES for t in STRETCHES if s != t for i in (1, 2))
    assert sorted(a.name for a in actions) == names
    assert set(bpy.data.actions.keys()) == before | set(names)
    for action in actions:
        source, target = bpy.data.actions[action["betwixt_source"]], bpy.data.actions[action["betwixt_target"]]
        first, last = (int(f) for f in action.frame_range)
        assert last - first == 21                                   # the leave frame, 20 frames, the enter frame
        curves = Channels(rig, action=action, slot=slot_of(action, rig)).curves().values()
        values = np.concatenate([[k.co[1] for k in fc.keyframe_points] for fc in curves])
        assert len(curves) and np.isfinite(values).all()
        start = local_pose(rig, action, first)
        np.testing.assert_allclose(start, local_pose(rig, source, first), atol=2e-3)   # the source's leave pose
        end = local_pose(rig, action, last)
        entered = local_pose(rig, target, action["betwixt_enter"])
        np.testing.assert_allclose(end[1:, :3, :3], entered[1:, :3, :3], atol=2e-3)   # the target's, placed
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert set(bpy.data.actions.keys()) == before


def test_preview_a_new_library_in_place_of_the_old_and_discard(rig):
    before = set(bpy.data.actions.keys())
    assert transitions(count=1) == {"FINISHED"}
    assert bpy.ops.betwixt.preview_transition(action="walk -> slow 1") == {"FINISHED"}
    assert rig.animation_data.action.name == "walk -> slow 1"
    assert transitions(count=1, seed=1) == {"FINISHED"}             # replaces the library it was previewing
    assert rig.animation_data.action.name == "walk"
    assert sorted(a.name for a in made(rig)) == sorted(f"{s} -> {t} 1" for s in STRETCHES for t in STRETCHES
                                                       if s != t)
    assert bpy.ops.betwixt.preview_transition(action="slow -> start 1") == {"FINISHED"}
    assert bpy.ops.betwixt.discard_transitions() == {"FINISHED"}
    assert set(bpy.data.actions.keys()) == before and rig.animation_data.action.name == "walk"


def test_esc_a_failed_write_and_bad_input_change_nothing(rig, monkeypatch):
    from betwixt.addon import library
    from betwixt.addon.library import BETWIXT_OT_transitions as op
    from betwixt.addon.library import slot_of
    from betwixt.addon.pose_io import Channels
    from betwixt.inference.edit import Cancelled
    before = set(bpy.data.actions.keys())
    options = SimpleNamespace(length=20, count=2, leave="AUTO", enter="AUTO", variation=1.0, seed=0,
                              plant_feet=True)
    plan = op.prepare(options, bpy.context)
    with pytest.raises(Cancelled):
        op.compute(options, plan, lambda done, total: None, lambda: True)
    calls = []
    with pytest.raises(Cancelled):                                 # Esc half way
        op.compute(options, plan, lambda done, total: calls.append(done), lambda: len(calls) >= 3)
    assert calls == [1, 2, 3]
    assert set(bpy.data.actions.keys()) == before and rig.animation_data.action.name == "walk"
    written = []

    def failing(*args, **kwargs):   # the fifth action's keys fail: the four before go too
        written.append(1)
        if len(written) == 5:
            raise RuntimeError("disk full")
        return write_bone_keys(*args, **kwargs)
    write_bone_keys = library.write_bone_keys
    monkeypatch.setattr(library, "write_bone_keys", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        transitions()
    monkeypatch.undo()
    assert set(bpy.data.actions.keys()) == before and rig.animation_data.action.name == "walk"
    with pytest.raises(RuntimeError, match="length must be 1 to"):
        transitions(length=0)
    bpy.data.actions["slow"].betwixt_pick = bpy.data.actions["start"].betwixt_pick = False
    with pytest.raises(RuntimeError, match="at least two actions"):
        transitions()
    still = bpy.data.actions["walk"].copy()
    still.name, still.betwixt_pick = "still", True
    for fc in Channels(rig, action=still, slot=slot_of(still, rig)).curves().values():
        for point in list(fc.keyframe_points)[1:][::-1]:
            fc.keyframe_points.remove(point, fast=True)
    with pytest.raises(RuntimeError, match="'still' has fewer than two keys"):
        transitions()
    assert set(bpy.data.actions.keys()) == before | {"still"} and rig.animation_data.action.name == "walk"


def test_markers_say_where_each_action_is_left_and_entered(rig):
    for i, name in enumerate(STRETCHES):
        bpy.data.actions[name].pose_markers.new("leave").frame = 30 + i
        bpy.data.actions[name].pose_markers.new("enter").frame = 5 + i
    assert transitions(leave="MARKER", enter="MARKER", count=1) == {"FINISHED"}
    for action in made(rig):
        assert int(action.frame_range[0]) == 30 + list(STRETCHES).index(action["betwixt_source"])
        assert action["betwixt_enter"] == 5 + list(STRETCHES).index(action["betwixt_target"])
    bpy.data.actions["slow"].pose_markers.remove(bpy.data.actions["slow"].pose_markers["enter"])
    with pytest.raises(RuntimeError, match="'slow' has no pose marker named 'enter'"):
        transitions(enter="MARKER")


def test_fbx_export_holds_a_take_per_transition(rig, tmp_path):
    assert transitions(count=1) == {"FINISHED"}
    names = {a.name for a in made(rig)}
    path = tmp_path / "library.fbx"
    tracks = [(t.name, t.mute) for t in rig.animation_data.nla_tracks]            # the library's, muted
    assert bpy.ops.betwixt.export_transitions(filepath=str(path)) == {"FINISHED"}
    assert rig.animation_data.action.name == "walk"
    assert [(t.name, t.mute) for t in rig.animation_data.nla_tracks] == tracks
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.ops.import_scene.fbx(filepath=str(path)) == {"FINISHED"}
    takes = {a.name.split("|")[-1] for a in bpy.data.actions}
    assert takes == names, sorted(a.name for a in bpy.data.actions)


@pytest.fixture
def rigify_rig(betwixt_addon, lafan1_zip, tmp_path_factory):  # noqa: F811
    """A rig Rigify generated from its human metarig, with two of the stretches keyed on its controls as two
    actions (as tests/test_addon_rigify.py keys the capture), both ticked, the first assigned."""
    import addon_utils
    from betwixt.addon import controls, pose_io, writing
    from betwixt.addon.library import play
    from betwixt.addon.preferences import model_for
    assert addon_utils.enable("rigify", default_set=True) is not None
    with zipfile.ZipFile(lafan1_zip) as z:
        capture = parse_bvh(z.read("obstacles1_subject5.bvh"), "obstacles1_subject5")
    rig = generated("human", tmp_path_factory)
    model = model_for(bpy.context, rig, "fill")
    for name in ("walk", "slow"):
        action = bpy.data.actions.new(name)
        action.use_fake_user = action.betwixt_pick = True
        play(rig, action)
        for entry in controls.detect(rig):
            pb = rig.pose.bones[entry.control]
            for frame in (0, FRAMES + 1):
                pb.keyframe_insert("location", frame=frame)
                pb.keyframe_insert(pose_io.channel_path(pb.rotation_mode), frame=frame)
        writing.key_motion(rig, model, capture.frames(STRETCHES[name], STRETCHES[name] + FRAMES), 1)
    play(rig, bpy.data.actions["walk"])
    yield rig
    addon_utils.disable("rigify", default_set=True)


def test_a_control_rig_gets_its_transitions_on_its_controls(rigify_rig):
    from betwixt.addon import evaluated, mapping
    from betwixt.addon.library import play, slot_of
    from betwixt.addon.pose_io import Channels
    rig = rigify_rig
    assert transitions(length=10, count=1) == {"FINISHED"}
    actions = made(rig)
    assert sorted(a.name for a in actions) == ["slow -> walk 1", "walk -> slow 1"]
    bones = [rig.data.bones.find(n) for n in mapping.rigify.HUMAN.deform.values()]

    def heads(action, frame):
        play(rig, action)
        return evaluated.pose_matrices(rig, np.array([frame]), bones)[0, :, :3, 3]

    def shape(points):   # the distances between every two deform heads: where the body stands left out
        return np.linalg.norm(points[:, None] - points[None], axis=-1)
    for action in actions:
        keyed = {path.split('"')[1] for path, _ in Channels(rig, action=action, slot=slot_of(action, rig)).curves()}
        assert keyed and not any(b.startswith(("DEF-", "ORG-", "MCH-")) for b in keyed)
        first, last = (int(f) for f in action.frame_range)
        source, target = bpy.data.actions[action["betwixt_source"]], bpy.data.actions[action["betwixt_target"]]
        assert np.abs(heads(action, first) - heads(source, first)).max() < 0.03
        entered = heads(target, action["betwixt_enter"])
        assert np.abs(shape(heads(action, last)) - shape(entered)).max() < 0.03


class Layout:
    """A stand-in for a panel's layout that checks what is drawn: every property and operator option named
    exists, every operator and list is registered. ``values``: each operator option as the panel set it."""

    def __init__(self, drawn):
        self.drawn = drawn
        self.values = {}

    def box(self):
        return self

    row = column = lambda self, **kw: self   # noqa: E731

    def prop(self, data, name, **kw):
        assert name in data.bl_rna.properties, name
        self.drawn.append(kw.get("text") or name)

    def operator(self, idname, **kw):
        rna = getattr(getattr(bpy.ops, idname.split(".")[0]), idname.split(".")[1]).get_rna_type()
        self.drawn.append(idname)
        drawn = self

        class Options:
            def __setattr__(self, name, value):
                assert name in rna.properties, (idname, name)
                drawn.drawn.append(f"{idname}.{name}")
                drawn.values[f"{idname}.{name}"] = value
        return Options()

    def template_list(self, listtype, *args, **kw):
        assert hasattr(bpy.types, listtype)
        self.drawn.append(listtype)


def test_the_panel_box_lists_the_actions_the_options_and_the_library(rig):
    from betwixt.addon.panels import _draw_transitions
    settings = bpy.context.scene.betwixt
    drawn = []
    _draw_transitions(Layout(drawn), bpy.context, rig, settings)
    assert drawn == ["show_transitions"]                             # folded
    settings.show_transitions = True
    assert transitions(count=1) == {"FINISHED"}
    _draw_transitions(Layout(drawn), bpy.context, rig, settings)
    assert sorted(d for d in drawn if d in STRETCHES) == sorted(STRETCHES)   # a tick box an action, no transition
    assert "betwixt.transitions.count" in drawn and "BETWIXT_UL_transitions" in drawn
    assert "betwixt.discard_transitions" in drawn and "betwixt.export_transitions" in drawn
    assert "betwixt.show_contact_sheet" in drawn


def test_the_library_is_laid_out_in_the_nla_and_its_flags_listed(rig):
    """A muted NLA track a pair, its variants one after another; each action carries its report's flags (the
    measures past its clips' own), which the panel's list names; the contact sheet an image in the file;
    Discard takes the tracks and the sheet away with them."""
    from betwixt.addon.library import FLAGS, SHEET, SPACING, TRACK
    assert transitions(count=2) == {"FINISHED"}
    tracks = [t for t in rig.animation_data.nla_tracks if t.name.startswith(TRACK)]
    pairs = sorted(f"{s} -> {t}" for s in STRETCHES for t in STRETCHES if s != t)
    assert sorted(t.name.removeprefix(TRACK) for t in tracks) == pairs
    for track in tracks:
        assert track.mute
        strips = list(track.strips)
        assert [s.action.name for s in strips] == [f"{track.name.removeprefix(TRACK)} {i}" for i in (1, 2)]
        assert strips[1].frame_start == strips[0].frame_end + SPACING
    assert rig.animation_data.action.name == "walk"                # the armature plays its own action still
    flags = [a[FLAGS] for a in made(rig)]
    assert all(isinstance(f, str) for f in flags)
    sheet = bpy.data.images[f"{SHEET}{rig.name}"]                  # the contact sheet: a cell a take, packed
    assert sheet.packed_file is not None and sheet.size[0] > sheet.size[1] > 100
    pixels = np.array(sheet.pixels[:]).reshape(sheet.size[1], sheet.size[0], 4)
    assert 0.01 < (pixels[..., :3] < 0.99).any(axis=-1).mean() < 0.5
    with pytest.raises(RuntimeError, match="window of its own"):    # headless: no window to open it in
        bpy.ops.betwixt.show_contact_sheet()
    assert transitions(count=1) == {"FINISHED"}                     # a new library replaces the old one's tracks
    assert len([t for t in rig.animation_data.nla_tracks if t.name.startswith(TRACK)]) == len(pairs)
    assert all(len(t.strips) == 1 for t in rig.animation_data.nla_tracks if t.name.startswith(TRACK))
    assert bpy.ops.betwixt.discard_transitions() == {"FINISHED"}
    assert not [t for t in rig.animation_data.nla_tracks if t.name.startswith(TRACK)]
    assert f"{SHEET}{rig.name}" not in bpy.data.images


def test_a_scene_at_24_fps_gets_its_transitions_on_its_own_frames(rig):
    """A scene at another rate than the model's: each action read at the model's rate, the transition made
    there and written back on the scene's frames, the length asked for in scene frames and the ends within half
    a scene frame of the source's leave pose and the target's enter pose."""
    from betwixt.addon.library import slot_of
    from betwixt.addon.pose_io import Channels
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = 24, 1.0
    assert transitions(length=16, count=1) == {"FINISHED"}
    actions = made(rig)
    assert len(actions) == 6
    for action in actions:
        first, last = (int(f) for f in action.frame_range)
        assert last - first == 17
        curves = Channels(rig, action=action, slot=slot_of(action, rig)).curves().values()
        assert np.isfinite(np.concatenate([[k.co[1] for k in fc.keyframe_points] for fc in curves])).all()
        source = bpy.data.actions[action["betwixt_source"]]
        start, leave = local_pose(rig, action, first), local_pose(rig, source, first)
        # within half a scene frame of the source's own motion there, either way (up to three degrees)
        step = np.maximum(*(np.abs(local_pose(rig, source, first + d)[:, :3, :3] - leave[:, :3, :3]) for d in (-1, 1)))
        assert (np.abs(start[:, :3, :3] - leave[:, :3, :3]) <= 0.5 * step + 1e-3).all()
    with pytest.raises(RuntimeError, match="1 to"):
        transitions(length=200)
    # longer than rtn-human's 60 model frames (48 here): made by rtn-lafan1, which fills 120
    assert transitions(length=72, count=1) == {"FINISHED"}
    assert {int(a.frame_range[1] - a.frame_range[0]) for a in made(rig)} == {73}
