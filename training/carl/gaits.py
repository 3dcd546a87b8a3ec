"""What the imitation controller learns to track: the stretches of the dog's training clips at a walk, a trot
and a canter, told apart by speed, and MANN's dog following winding paths at each gait (:func:`mann_paths`),
the motion a physics-based Follow Path hands it.

A stretch is a run of MANN's ``move`` action (``inference/mann/actions.py``) of at least
``MIN_SECONDS``; its gait is that of its median root speed (``GAITS``: the upper bound of each, m/s,
about the speeds Follow Path gives the dog's three gaits, 1, 1.8 and 3 m/s). The test split's clips
(``training/mann/data.TEST_CLIPS``) are never read.
"""

from dataclasses import replace

import numpy as np

from inference.mann.actions import MOVE, labels, segments_of, signals
from inference.mann.path import GAITS as PATH_SPEEDS, Path
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


TURNS = (2.0, 0.8)   # s a turn lasts, and the fastest (rad/s) a winding path turns: a dog's turns while it moves on


def winding(speed, seconds, rng, units_per_metre):
    """A :class:`~inference.mann.path.Path` of ``seconds`` at ``speed`` (m/s) from the origin, turning at a
    rate drawn anew every TURNS[0] seconds within +-TURNS[1] rad/s, a point a frame at 30 fps."""
    t = np.arange(int(seconds * 30) + 1) / 30.0
    rates = rng.uniform(-TURNS[1], TURNS[1], int(np.ceil(seconds / TURNS[0])) + 1)[(t / TURNS[0]).astype(int)]
    heading = rng.uniform(0.0, 2.0 * np.pi) + np.concatenate([[0.0], np.cumsum(rates[:-1] / 30.0)])
    steps = speed * units_per_metre / 30.0 * np.stack([np.cos(heading), np.sin(heading)], axis=-1)
    return Path(t, np.concatenate([[[0.0, 0.0]], np.cumsum(steps[:-1], axis=0)]), source="winding")


def mann_paths(mann, gaits, count, seconds, seed):
    """[(motion, gait)]: ``mann`` (a MANNModel of the dog) following ``count`` winding paths of ``seconds`` at each of
    ``gaits``, drawn from ``seed``, each named ``mann-<gait>-<i>`` (the first second, MANN's standing start,
    left out)."""
    rng = np.random.default_rng(seed)
    made = [(gait, i, winding(PATH_SPEEDS[gait], seconds + 1.0, rng, mann.units_per_metre))
            for gait in gaits for i in range(count)]
    motions = mann.follow([path for _, _, path in made])
    return [(replace(m.frames(int(m.fps), None), name=f"mann-{gait}-{i}"), gait)
            for (gait, i, _), m in zip(made, motions)]
