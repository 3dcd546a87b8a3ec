"""Physics Pass with the real ``bpy`` and MuJoCo: a clip of the dog capture's test split imported by Blender's own
BVH importer (in metres), tracked by a tiny CARL policy of our own training command, kept as a variant.

The policy has trained for two roll-outs: these tests check mechanics (which keys, what is left alone, the
variant, the report of falls, failures), not the quality of the physics (``python -m lab bench-carl`` measures
that).
"""

import bpy
import numpy as np
import pytest

from test_addon import betwixt_addon, same_keys, snapshot  # noqa: F401
from test_addon_library import Layout
from test_addon_locomotion import distance_to, dog, follow_with, heads, hips_track, import_dog, poly, scene  # noqa: F401

RANGE = (51, 110)   # one second of the clip's 300 frames (60 fps): keys before and after it stay


@pytest.fixture
def physics(scene, carl_policy):  # noqa: F811
    """The scene, with the tiny policy chosen as the physics model."""
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.carl_file = str(carl_policy["model"])
    yield scene
    prefs.carl_file = ""


def test_a_physics_pass_keeps_the_simulated_dog_as_a_variant_over_the_range(physics, dog):  # noqa: F811
    from betwixt.addon.variants import VARIANT_GAP, variants_of

    obj = import_dog(dog)
    original = obj.animation_data.action
    before = snapshot(obj)
    physics.frame_start, physics.frame_end = RANGE
    assert bpy.ops.betwixt.physics_pass("EXEC_DEFAULT", True) == {"FINISHED"}
    obj = bpy.data.objects[obj.name]
    [variant] = variants_of(original.name)
    assert obj.animation_data.action == original and list(variant[VARIANT_GAP]) == [RANGE[0] - 1, RANGE[1] + 1]
    assert same_keys(snapshot(obj), before)

    a, b = RANGE
    inside = np.arange(a, b + 1)
    outside = np.r_[np.arange(1, a - 1), np.arange(b + 2, 300)]
    keyed = heads(obj, np.r_[outside, inside])
    assert bpy.ops.betwixt.preview_variant(action=variant.name) == {"FINISHED"}
    simulated = heads(obj, np.r_[outside, inside])
    apart = np.linalg.norm(simulated - keyed, axis=-1).max(axis=1)
    assert apart[:len(outside)].max() < 1e-4                     # metres: the keys outside the range as they were
    assert apart[len(outside)] < 0.01                             # the range's first frame: the keys' own pose
    assert apart[len(outside) + 5:].max() > 0.01                  # then the simulated dog's own motion
    assert np.all(np.linalg.norm(simulated[len(outside):, 0] - keyed[len(outside):, 0], axis=-1) < 0.5)
    # eased back onto the keys after the range: the joints step no further onto frame b + 1 than the keys there
    join, keys_there = heads(obj, [b - 1, b, b + 1, b + 2]), keyed[[np.flatnonzero(outside == b + 2)[0]]]
    steps = np.linalg.norm(np.diff(join, axis=0), axis=-1).max(axis=1)
    assert np.abs(join[-1] - keys_there[0]).max() < 1e-4 and steps[1] < 2.0 * steps[2] + 0.01, steps


def test_without_a_physics_model_the_pass_says_where_to_get_one_and_changes_nothing(scene, dog):  # noqa: F811
    obj = import_dog(dog)
    before = snapshot(obj)
    scene.frame_start, scene.frame_end = RANGE
    with pytest.raises(RuntimeError, match="no Physics .CARL. model.*Model Folder"):
        bpy.ops.betwixt.physics_pass("EXEC_DEFAULT", True)
    assert same_keys(snapshot(obj), before)
    assert len(bpy.data.actions) == 1


def test_a_push_changes_the_dogs_course_from_its_frame_on_and_not_before(physics, dog):  # noqa: F811
    from betwixt.addon.variants import variants_of

    obj = import_dog(dog)
    original = obj.animation_data.action
    physics.frame_start, physics.frame_end = RANGE
    tracks = []
    for push, part in ((False, "Spine"), (True, "Spine"), (True, "WHOLE")):   # the torso by default
        assert bpy.ops.betwixt.physics_pass("EXEC_DEFAULT", True, push=push, push_frame=71, push_direction=90.0,
                                            push_speed=2.0, push_part=part) == {"FINISHED"}
        obj = bpy.data.objects[obj.name]
        [variant] = variants_of(original.name)                 # the second pass's variant replaces the first's
        assert bpy.ops.betwixt.preview_variant(action=variant.name) == {"FINISHED"}
        tracks.append(heads(obj, np.arange(RANGE[0], RANGE[1] + 1))[:, 0])
        assert bpy.ops.betwixt.preview_variant(action=original.name) == {"FINISHED"}
    calm, *pushed = tracks
    for track in pushed:
        apart = np.linalg.norm(track - calm, axis=-1)
        assert apart[:71 - RANGE[0]].max() < 1e-4
        assert track[71 - RANGE[0] + 6, 1] - calm[71 - RANGE[0] + 6, 1] > 0.05   # metres toward +Y, 0.1 s on
    assert np.abs(pushed[0] - pushed[1]).max() > 0.01   # a shove on the torso is not one on every part alike
    with pytest.raises(RuntimeError, match="outside frames 51-109"):
        bpy.ops.betwixt.physics_pass("EXEC_DEFAULT", True, push=True, push_frame=200)


def test_the_pass_reports_progress_a_frame_at_a_time_stops_on_esc_and_undoes_in_one_step(physics, dog):  # noqa: F811
    from betwixt.addon import physics as physics_pass
    from betwixt.addon.variants import variants_of
    from betwixt.inference.edit import Cancelled

    obj = import_dog(dog)
    route = physics_pass.read_pass(bpy.context, *RANGE)
    seen = []
    result = physics_pass.tracked(route, lambda done, total: seen.append((done, total)))
    assert result.motion.n_frames == RANGE[1] - RANGE[0] + 4        # the range, a frame before it and two after
    total = seen[0][1]
    assert [d for d, _ in seen] == list(range(1, total + 1)) and total == 29   # 60 frames at 60 fps: 30 at 30
    calls = []
    with pytest.raises(Cancelled):
        physics_pass.tracked(route, lambda done, total: calls.append(done), lambda: len(calls) >= 10)
    assert len(calls) == 10
    held = physics_pass.tracked(physics_pass.read_pass(bpy.context, *RANGE, assist=80.0))
    assert route.assist == 0.0 and not np.allclose(held.motion.rotations, result.motion.rotations)

    physics.frame_start, physics.frame_end = RANGE
    name, action = obj.name, obj.animation_data.action.name
    bpy.ops.ed.undo_push(message="before")
    assert bpy.ops.betwixt.physics_pass("EXEC_DEFAULT", True) == {"FINISHED"}
    assert len(variants_of(action)) == 1
    bpy.ops.ed.undo()
    assert not variants_of(action) and bpy.data.objects[name].animation_data.action.name == action


def test_follow_path_with_physics_keys_the_simulated_dog_along_the_curve(physics, dog):  # noqa: F811
    """MANN's dog along a line at a walk, tracked by the simulated dog before keying: the hips keep to the line,
    and the keys are not the kinematic Follow Path's; without a physics model it is one error, nothing keyed."""
    obj = import_dog(dog)
    line = [(0.0, 0.0, 0.0), (2.0, 0.5, 0.0)]
    follow_with(obj, poly(line))
    frames = np.arange(1, 121)                                  # 2 s of the clip's 60 fps
    tracks = []
    for simulated in (False, True):
        assert bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True, frame_start=1, frame_end=120, gait="WALK",
                                           physics=simulated) == {"FINISHED"}
        tracks.append(hips_track(bpy.data.objects[obj.name], frames))
    kinematic, simulated = tracks
    assert distance_to(simulated, np.array(line)).mean() < 0.15    # metres
    assert np.abs(simulated - kinematic).max() > 0.01
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    prefs.carl_file = ""
    with pytest.raises(RuntimeError, match="no Physics .CARL. model"):
        bpy.ops.betwixt.follow_path("EXEC_DEFAULT", True, frame_start=1, frame_end=120, physics=True)


def test_the_panel_offers_physics_on_follow_path_where_the_rig_has_a_physics_model(scene, dog, carl_policy):  # noqa: F811
    """Follow Path's Physics is drawn beside its speed, and handed on, only where the rig has a physics model;
    the Physics Pass is greyed out where it has none."""
    from betwixt.addon.panels import _draw_paths
    obj = import_dog(dog)
    settings = bpy.context.scene.betwixt
    settings.path_physics = True
    prefs = bpy.context.preferences.addons["betwixt"].preferences
    for model in ("", str(carl_policy["model"])):
        prefs.carl_file = model
        drawn = []
        layout = Layout(drawn)
        _draw_paths(layout, bpy.context, obj, settings)
        assert ("path_physics" in drawn) == bool(model)
        assert layout.values["betwixt.follow_path.physics"] == bool(model)
        assert layout.enabled == bool(model)    # the Physics Pass's row
        assert "betwixt.physics_pass" in drawn
    prefs.carl_file = ""
    settings.path_physics = False
