"""Long operations without a frozen Blender: read on the main thread, think in a worker, write on the main.

An operator built on :class:`JobOperator` splits its work in three: ``prepare`` (main thread: reads
the scene into numpy, checks everything, raises :class:`BetwixtError` with what to do), ``compute``
(worker thread: numpy and the model only, never ``bpy``; reports progress and stops between steps
when cancelled) and ``finish`` (main thread: writes keys in bulk, all or nothing). From the user
interface it runs as a modal operator with a progress bar and Esc to cancel; in background mode or
when called from a script (``execute``) it runs the same three steps in one go, so the result and the
single undo step are the same either way.

Writing that needs Blender to evaluate the scene frame by frame (keying a control rig's controls:
:func:`.controls.bake`) cannot leave the main thread. ``finish`` may then be a generator of *steps*: it
yields the share of its work done (0 to 1) between frames and returns its report. The modal operator
runs them in slices between timer events, so the progress bar moves and Esc closes the generator
between two frames, whose ``finally`` clauses put the scene back before anything is written.
"""

import inspect
import threading
import time
import traceback

import bpy

from ..inference.errors import BetwixtError
from .transitions import Cancelled


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


SLICE = 0.1   # seconds of main-thread steps between two looks at the user's events


def drained(steps):
    """The result of ``steps`` run to their end at once (background mode, scripts, tools)."""
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return end.value


def share(steps, done, parts):
    """``steps`` seen as part ``done`` of ``parts`` equal parts: their shares scaled; their result."""
    try:
        while True:
            try:
                fraction = next(steps)
            except StopIteration as end:
                return end.value
            yield (done + fraction) / parts
    finally:
        steps.close()


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
        return self.prepare(context)

    def _fail(self, error):
        if not isinstance(error, BetwixtError):
            traceback.print_exc()
        self.report({"ERROR"}, message(error))
        return {"CANCELLED"}

    def _finish(self, context, plan, result):
        try:
            text = self.finish(context, plan, result)
            if inspect.isgenerator(text):
                text = drained(text)
        except Exception as e:   # finish has put back whatever it had written
            return self._fail(e)
        self.report({"INFO"}, text)
        return {"FINISHED"}

    def execute(self, context):
        try:
            plan = self._prepare(context)
            result = self.compute(plan, lambda done, total: None, lambda: False)
        except Exception as e:
            return self._fail(e)
        return self._finish(context, plan, result)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            plan = self._prepare(context)
        except Exception as e:
            return self._fail(e)
        self._plan = plan
        self._steps = None
        self._job = Job(lambda progress, cancelled: self.compute(plan, progress, cancelled))
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        JobOperator.busy = True
        self._status(context, 0.0)
        return {"RUNNING_MODAL"}

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
        job = self._job
        if event.type == "ESC":
            if self._steps is not None:
                self._steps.close()
            job.cancel()
            self._end(context)
            self.report({"WARNING"}, f"Betwixt: {self.verb.lower()} cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":   # while keys are written the scene is the steps' alone
            return {"PASS_THROUGH"} if self._steps is None else {"RUNNING_MODAL"}
        if self._steps is not None:
            return self._advance(context)
        self._status(context, job.fraction)
        if not job.done:
            return {"RUNNING_MODAL"}
        if isinstance(job.error, Cancelled) or job.error is not None:
            self._end(context)
            if job.error is not None and not isinstance(job.error, Cancelled):
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
        """Run the finishing steps for one SLICE; the operator's end when they end."""
        until = time.monotonic() + SLICE
        try:
            while True:
                fraction = next(self._steps)
                if time.monotonic() > until:
                    break
        except StopIteration as end:
            self._end(context)
            self.report({"INFO"}, end.value)
            return {"FINISHED"}
        except Exception as e:   # the steps have put back whatever they had changed
            self._end(context)
            return self._fail(e)
        self._status(context, fraction, "Keying the controls")
        return {"RUNNING_MODAL"}
