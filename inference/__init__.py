"""Betwixt's runtime: the motion core, rigging, the model runtimes and the edit pipeline.

numpy (and onnxruntime for models) only, with relative imports, so the same package runs inside
Blender's bundled Python as ``betwixt.inference`` and on the command line as ``python -m inference``.
"""
