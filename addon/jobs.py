"""Long operations without a frozen Blender: read on the main thread, think in a worker, write on the main.

An operator built on :class:`JobOperator` splits its work in three: ``prepare`` (main thread: reads
the scene into numpy, checks everything, raises :class:`BetwixtError` with what to do), ``compute``
(worker thread: numpy and the model only, never ``bpy``; reports progress and stops between steps
when cancelled) and ``finish`` (main thread: writes keys in bulk, all or nothing). From the user
interface it runs as a modal operator with a progress bar and Esc to cancel; in background mode or
when called from a script (``execute``) it runs the same three steps in one go, so the result and the
single undo step are the same either way.
"""

import threading
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
        self._job = Job(lambda progress, cancelled: self.compute(plan, progress, cancelled))
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        JobOperator.busy = True
        self._status(context, 0.0)
        return {"RUNNING_MODAL"}

    def _status(self, context, fraction):
        if context.workspace is not None:
            context.workspace.status_text_set(f"Betwixt: {self.verb} … {100 * fraction:.0f}%   (Esc to cancel)")

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
            job.cancel()
            self._end(context)
            self.report({"WARNING"}, f"Betwixt: {self.verb.lower()} cancelled; nothing was changed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        context.window_manager.progress_update(int(100 * job.fraction))
        self._status(context, job.fraction)
        if not job.done:
            return {"RUNNING_MODAL"}
        self._end(context)
        if isinstance(job.error, Cancelled):
            return {"CANCELLED"}
        if job.error is not None:
            self.report({"ERROR"}, message(job.error))   # the worker printed any traceback
            return {"CANCELLED"}
        return self._finish(context, self._plan, job.result)
