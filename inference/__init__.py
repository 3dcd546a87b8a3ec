"""Betwixt's motion core, data sets, benchmark and model runtime.

numpy (and onnxruntime for models) only, with relative imports, so the same package runs inside
Blender's bundled Python as ``betwixt.inference`` and on the command line as ``python -m inference``.
"""
