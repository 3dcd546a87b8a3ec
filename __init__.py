from .addon import register, unregister  # noqa: F401  (Blender looks for these here)
