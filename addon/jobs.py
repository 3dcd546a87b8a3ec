"""Long operations without a frozen Blender: read on the main thread, think in a worker, write on the main.

An operator built on :class:`JobOperator` splits its work in three: ``prepare`` (main thread: reads
the scene into numpy, checks everything, raises :class:`BetwixtError` with what to do), ``compute``
(worker thread: numpy and the model only, never ``bpy``; reports progress and stops between steps
when cancelled) and ``finish`` (main thread: writes keys in bulk, all or nothing). From the user
interface it runs as a modal operator with a progress bar and Esc to cancel; in background mode or
when called from a script (``execute``) it runs the same three steps in one go, so the result and the
single undo step are the same either way.

Reading a control rig as Blender evaluates it and writing keys cannot leave the main thread, and on a
long action each takes seconds. ``prepare`` and ``finish`` may then be generators of *steps*
(:mod:`.steps`): they yield the share of their work done between frames or curves and return the plan,
or the report. The modal operator runs them in slices between timer events, so the progress bar moves
and Esc closes the generator between two steps, whose clauses put the scene back as it was.
"""

import functools
import inspect
import math
import threading
import time
import traceback

import bpy

from ..inference.edit import Cancelled
from ..inference.errors import BetwixtError
from .steps import drained


class Job:
    """``work(progress, cancelled)`` in a daemon thread; its result or error when done."""

    def __init__(self, work):
        self.fraction = 0.0
        self.result = None
        self.error = None
        self.done = False
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work):
        try:
            self.result = work(self.progress, self._cancel.is_set)
        except Cancelled:
            self.error = Cancelled()
        except BetwixtError as e:
            self.error = e
        except Exception as e:  # a bug: keep the traceback for the console, a line for the status bar
            traceback.print_exc()
            self.error = e
        finally:
            self.done = True

    def progress(self, done, total):
        self.fraction = done / max(total, 1)

    def cancel(self):
        self._cancel.set()


def not_numbers(operator):
    """Refuse an option that is NaN: Blender holds a number set from Python to its option's limits (an
    infinity too), but lets NaN through, of which the model would make a broken motion."""
    for prop in operator.properties.bl_rna.properties:
        if prop.type == "FLOAT" and not prop.is_array and not math.isfinite(getattr(operator, prop.identifier)):
            raise BetwixtError(f"{prop.name} is {getattr(operator, prop.identifier)}, not a number; give "
                               f"{prop.hard_min:g} to {prop.hard_max:g}")


def refusing(execute):
    """An operator's ``execute`` that, where it raises a BetwixtError (the checks' one line of what to do), ends in
    that error's report, the operator cancelled. (Blender reads an operator's ``execute`` for two arguments.)"""
    @functools.wraps(execute)
    def checked(self, context):
        try:
            return execute(self, context)
        except BetwixtError as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
    return checked


SLICE = 0.1   # seconds of main-thread steps between two looks at the user's events


def message(error):
    if isinstance(error, BetwixtError):
        return str(error)
    return f"Betwixt failed unexpectedly ({type(error).__name__}: {error}); the action is unchanged. " \
           "Please report this with the console output"


class JobOperator:
    """Mixin for operators with ``prepare``/``compute``/``finish`` (see the module's docstring)."""

    busy = False   # one job at a time across Betwixt
    verb = "Working"

    def prepare(self, context):
        raise NotImplementedError

    def compute(self, plan, progress, cancelled):
        raise NotImplementedError

    def finish(self, context, plan, result):
        raise NotImplementedError

    def _prepare(self, context):
        if JobOperator.busy:
            raise BetwixtError("another Betwixt job is running; wait for it or press Esc to cancel it")
        not_numbers(self)
        return self.prepare(context)

    def _fail(self, error):
        if not isinstance(error, BetwixtError):
            traceback.print_exc()
        self.report({"ERROR"}, message(error))
        return {"CANCELLED"}

    def execute(self, context):
        try:
            plan = _run(self._prepare(context))
            result = self.compute(plan, lambda done, total: None, lambda: False)
            text = _run(self.finish(context, plan, result))
        except Exception as e:   # the steps have put back whatever they had changed
            return self._fail(e)
        self.report({"INFO"}, text)
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            plan = self._prepare(context)
        except Exception as e:
            return self._fail(e)
        self._job = None
        if inspect.isgenerator(plan):
            self._steps, self._reading = plan, True
        else:
            self._compute(plan)
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        JobOperator.busy = True
        self._status(context, 0.0)
        return {"RUNNING_MODAL"}

    def _compute(self, plan):
        """The worker's turn, once the plan is read."""
        self._plan, self._steps, self._reading = plan, None, False
        self._job = Job(lambda progress, cancelled: self.compute(plan, progress, cancelled))

    def _status(self, context, fraction, verb=None):
        context.window_manager.progress_update(int(100 * fraction))
        if context.workspace is not None:
            context.workspace.status_text_set(f"Betwixt: {verb or self.verb} … {100 * fraction:.0f}%   "
                                              "(Esc to cancel)")

    def _end(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        JobOperator.busy = False

    def modal(self, context, event):
        if event.type == "ESC":
            if self._steps is not None:
                self._steps.close()
            if self._job is not None:
                self._job.cancel()
            self._end(context)
            self.report({"WARNING"}, f"Betwixt: {self.verb.lower()} cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":   # while steps read or write, the scene is theirs alone
            return {"PASS_THROUGH"} if self._steps is None else {"RUNNING_MODAL"}
        if self._steps is not None:
            return self._advance(context)
        job = self._job
        self._status(context, job.fraction)
        if not job.done:
            return {"RUNNING_MODAL"}
        if job.error is not None:
            self._end(context)
            if not isinstance(job.error, Cancelled):
                self.report({"ERROR"}, message(job.error))   # the worker printed any traceback
            return {"CANCELLED"}
        try:
            text = self.finish(context, self._plan, job.result)
        except Exception as e:
            self._end(context)
            return self._fail(e)
        if not inspect.isgenerator(text):
            self._end(context)
            self.report({"INFO"}, text)
            return {"FINISHED"}
        self._steps = text
        return self._advance(context)

    def _advance(self, context):
        """Run the reading or writing steps for one SLICE; then the worker, or the end, when they end."""
        until = time.monotonic() + SLICE
        try:
            while True:
                fraction = next(self._steps)
                if time.monotonic() > until:
                    break
        except StopIteration as end:
            if self._reading:
                self._compute(end.value)
                return {"RUNNING_MODAL"}
            self._end(context)
            self.report({"INFO"}, end.value)
            return {"FINISHED"}
        except Exception as e:   # the steps have put back whatever they had changed
            self._end(context)
            return self._fail(e)
        self._status(context, fraction, "Reading the keys" if self._reading else "Writing keys")
        return {"RUNNING_MODAL"}


def _run(work):
    """``work``'s result: steps run to their end, or a value as it is."""
    return drained(work) if inspect.isgenerator(work) else work
