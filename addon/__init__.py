"""Blender side of Betwixt: operators, panels, preferences, bone mapping and key I/O.

Imports ``bpy`` and ``..inference``; never torch. The operators arrive with the Blender extension
issue; until then the extension registers nothing, so installing it changes nothing in a scene.
"""


def register():
    pass


def unregister():
    pass
