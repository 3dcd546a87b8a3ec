"""CARL (Luo, Soeseno, Chen, Chen 2020): a simulated four-legged body that imitates motion capture.

``body.py`` builds the MuJoCo model of a skeleton mapped to the dog's joints; ``reference.py`` turns
a motion into the simulator's states (positions, velocities, paw contacts) that the body tracks.
MuJoCo is imported lazily (:func:`body.mujoco`), so the rest of Betwixt works without it.
"""
