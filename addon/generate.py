"""Fill Gaps and Decompress: the model over the action's gaps, keyed back (see :mod:`.jobs` for the
three steps, :mod:`.plan` and :mod:`.writing` for reading and writing)."""

import bpy

from ..inference import anatomy, edit, guard
from ..inference.motion import AXES
from . import options
from .jobs import JobOperator
from .plan import all_gaps, read_plan_steps, resolve, selected_gaps
from .writing import planted, unfollowed_limbs, write_plan


class _Generate(JobOperator):
    step: options.STEP
    breakdown: options.BREAKDOWN
    blend: options.BLEND
    variation: options.variation(0.0, "How far the motion may stray from the most likely one (0: always the same)")
    seed: options.seed("Which variation (with Variation above 0)")
    plant_feet: options.PLANT_FEET

    serves = "fill"   # what the model must serve (see preferences.model_for)

    def read(self, context, keys_from, kind=None):
        """Steps (:mod:`.steps`) that return the plan, with this operator's options copied in: the worker
        thread never touches ``self``."""
        plan = yield from read_plan_steps(context, keys_from, self.serves, kind)
        plan.options = {"variation": self.variation, "seed": self.seed, "blend": self.blend or None}
        plan.plant = self.plant_feet
        plan.parting = {}   # filled by compute (edit.fill) on the worker thread, read by finish
        return plan

    def compute(self, plan, progress, cancelled):
        return planted(plan, edit.fill(plan.model, plan.motion, plan.first, plan.gaps, plan.fps, progress,
                                       cancelled, plan.momentum, parting=plan.parting, around=plan.around,
                                       **plan.options))

    def finish(self, context, plan, result):
        obj, channels = resolve(plan)
        keyed = yield from write_plan(plan, channels, result, plan.gaps, self.step, self.breakdown)
        place = plan.model.layout
        height = place.height
        findings = guard.check(result, [(a - plan.first, b - plan.first) for a, b in plan.gaps], height,
                               AXES[place.up])
        if findings:
            self.report({"WARNING"}, "Betwixt: " + guard.summary(findings, height, lambda f: f + plan.first))
        doubtful = guard.unsure(plan.parting, plan.gaps)
        if doubtful:
            self.report({"WARNING"}, "Betwixt: " + guard.unsure_summary(doubtful))
        limbs = unfollowed_limbs(plan)
        if limbs:
            self.report({"WARNING"}, f"Betwixt: no control of the control map moves {', '.join(limbs)}, which keep "
                        "their keys' motion; add the limb's controls to the Control Map in the Betwixt panel")
        missing = plan.drive.missing() if plan.drive is not None else []
        if missing:
            shown = ", ".join(f"{bone} by {100 * cm:.0f} cm on frame {f}" for bone, f, cm in
                              sorted(set(missing), key=lambda m: -m[2])[:3])
            self.report({"WARNING"}, f"Betwixt: the rig's deform bones end off the generated motion ({shown}): "
                        "keys on bones the control map does not key (tweaks, foot roll) move them, or the map "
                        "misses a control; check the Control Map in the Betwixt panel")
        unplanted = plan.plant and not anatomy.legs(plan.model.skeleton)
        return (f"Betwixt: filled {len(plan.gaps)} gap{'s' * (len(plan.gaps) != 1)} ({keyed} frames keyed) "
                f"with model {plan.model.name}" + ("; feet not planted: the model's joints have no legs" * unplanted))


class BETWIXT_OT_fill_gaps(_Generate, bpy.types.Operator):
    """Fill every gap between consecutive selected keys of the active armature with the model's motion"""

    bl_idname = "betwixt.fill_gaps"
    bl_label = "Fill Gaps"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Filling gaps"

    def prepare(self, context):
        return self.read(context, selected_gaps)


class BETWIXT_OT_decompress(_Generate, bpy.types.Operator):
    """Treat the action's keys as sparse and fill every gap between them in order, each from the motion
    generated before it"""

    bl_idname = "betwixt.decompress"
    bl_label = "Decompress"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Decompressing"

    def prepare(self, context):
        return self.read(context, all_gaps)
