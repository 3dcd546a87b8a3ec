"""The lab: data sets, the benchmarks and their metrics, plots and speed tables (``python -m lab``).

Not shipped: Blender never runs any of it. It imports the runtime, ``inference``, absolutely, and
``training`` imports it (data sets, the benchmarks a model card quotes); ``inference`` never imports it.
"""
