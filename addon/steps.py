"""Main-thread steps: work that must run where Blender's data is (reading the scene as it evaluates, writing
keys) written as a generator that yields the share of it done (0 to 1) and returns its result, so that the
modal operator (:mod:`.jobs`) runs it in slices between the user's events, its progress shown and Esc able
to close it between two steps, whose ``finally`` and ``except BaseException`` clauses put the scene back.
"""


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
