"""Operator options that several operators, and the panel's settings that hand them on, share: declared once
here so that their names, limits and help read the same wherever they appear."""

import bpy

STEP = bpy.props.IntProperty(name="Key Every", description="Key every frame (1) or every Nth frame of each gap",
                             default=1, min=1, soft_max=10)
BREAKDOWN = bpy.props.BoolProperty(name="As Breakdowns", description="Mark the generated keys as Breakdown keys "
                                   "rather than Keyframes", default=False)
BLEND = bpy.props.IntProperty(name="Target Blend", description="Frames over which the motion is pulled onto the "
                              "next key (the whole gap when it is shorter; 0: the model's own, 10 frames for a human "
                              "model, the whole gap for the dog's)", default=0, min=0, soft_max=60)
PLANT_FEET = bpy.props.BoolProperty(name="Plant Feet", description="Hold feet that touch the ground where they "
                                    "stand (foot IK after the model)", default=True)
ASSIST = bpy.props.FloatProperty(name="Assist", description="A hidden hand on the simulated dog's hips: at most "
                                 "this torque (Nm), and four times as many N, keep their tilt, heading and place near "
                                 "the motion's, so that the dog stays up and on course; 0 leaves it all to the "
                                 "physics", default=80.0, min=0.0, soft_max=200.0, max=1000.0)   # experiments.md
FRAMES = bpy.props.IntProperty(name="Frames", description="How many frames each continuation keys after the "
                               "current frame", default=60, min=1, soft_max=600, max=3600)

SOURCE = bpy.props.EnumProperty(
    name="Source", description="Where the variants' variety comes from",
    items=[("NOISE", "Noise (RTN)", "The in-betweening model's noise input, drawn anew for each variant"),
           ("MVAE", "Motion VAE", "The Motion VAE's latent space: transitions sampled toward the key (needs a "
            "Motion VAE model that makes variants)")])


MOST_VARIATION = 10.0   # as the command line's --variation: 1 is the noise the model was trained with


def variation(default, description="How different the variants are"):
    return bpy.props.FloatProperty(name="Variation", description=description, default=default, min=0.0,
                                   soft_max=2.0, max=MOST_VARIATION)


def seed(description):
    return bpy.props.IntProperty(name="Seed", description=description, default=0, min=0)


def count(name, description, least):
    return bpy.props.IntProperty(name=name, description=description, default=4, min=least, max=16)


def frame_start(what):
    return bpy.props.IntProperty(name="Start", description=f"First frame to {what} (the scene's start by default)",
                                 options={"SKIP_SAVE"})


def frame_end(what):
    return bpy.props.IntProperty(name="End", description=f"Last frame to {what} (the scene's end by default)",
                                 options={"SKIP_SAVE"})


def scene_range(operator, context):
    """An operator's ``frame_start`` and ``frame_end`` (:func:`frame_start`, :func:`frame_end`), the scene's
    where the caller left them unset."""
    for prop, default in (("frame_start", context.scene.frame_start), ("frame_end", context.scene.frame_end)):
        if not operator.properties.is_property_set(prop):
            setattr(operator, prop, default)
