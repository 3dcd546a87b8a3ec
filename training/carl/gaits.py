"""The stretches of the dog's training clips that the imitation controller learns first: walk, trot
and canter, told apart by speed.

A stretch is a run of MANN's ``move`` action (``inference/mann/actions.py``) of at least
``MIN_SECONDS``; its gait is that of its median root speed (``GAITS``: the upper bound of each, m/s,
about the speeds Follow Path gives the dog's three gaits, 1, 1.8 and 3 m/s). The test split's clips
(``training/mann/data.TEST_CLIPS``) are never read.
"""

from dataclasses import replace

import numpy as np

from inference.mann.actions import MOVE, labels, segments_of, signals
from lab.dataset import clip_stem
from ..mann.data import TEST_CLIPS

GAITS = {"walk": 1.4, "trot": 2.4, "canter": 4.5}   # m/s: the fastest median speed of each gait
MIN_SECONDS = 2.0


def gait_of(speed):
    """The gait of a stretch whose median root speed is ``speed`` m/s, or None past the canter's."""
    return next((g for g, top in GAITS.items() if speed < top), None)


def stretches(data, gaits, units_per_metre=100.0):
    """[(motion, gait)]: the stretches of locomotion of ``gaits`` (names of ``GAITS``) in the clips of
    ``data`` (a MotionSet) outside the test split, each a Motion of its own named ``<clip>@<frame>``."""
    found = []
    for i, name in enumerate(data.names):
        if clip_stem(name) in TEST_CLIPS:
            continue
        motion = data.clip(i)
        speed = signals(motion)["speed"] / units_per_metre
        for a, b, action in segments_of(labels(motion)):
            if action != MOVE or b - a < MIN_SECONDS * motion.fps:
                continue
            gait = gait_of(float(np.median(speed[a:b])))
            if gait in gaits:
                found.append((replace(motion.frames(a, b), name=f"{clip_stem(name)}@{a}"), gait))
    return found

