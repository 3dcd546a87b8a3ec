"""How fast a transition model runs: the numbers behind ``python -m lab bench-speed``.

Timings use synthetic motion on the model's own skeleton (the network's cost does not depend on
the pose), through the whole runtime path: features, the ONNX rollout, blending and decoding.
"""

import time

import numpy as np

from inference import quat
from inference.edit import superres
from inference.motion import Motion
from inference.modelfile import open_model
from inference.rtn.runtime import WIDE_THREADS
from inference.transition import Gap


def synthetic_motion(skeleton, frames, fps, seed=0):
    """A smooth random motion: every joint turning slowly, the root walking forward."""
    rng = np.random.default_rng(seed)
    j = len(skeleton)
    angles = np.cumsum(rng.normal(scale=0.02, size=(frames, j, 3)), axis=0)
    angles -= np.linspace(0, 1, frames)[:, None, None] * angles[-1]
    rotations = quat.from_euler(0.3 * np.sin(angles), "ZYX")
    positions = np.repeat(skeleton.offsets[None], frames, axis=0)
    positions[:, 0, 0] += np.arange(frames) * 3.0
    return Motion(skeleton, rotations, positions, fps, name="synthetic")


def _best_ms(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times)), 1000 * float(np.min(times))


def measure(path, repeats=20, batch=64, variants=16, superres_minutes=10.0):
    """A dict of timings for the model file at ``path``."""
    model = open_model(path, kind="rtn", wide=1)   # one thread: see modelfile.session
    sk = model.skeleton
    motion = synthetic_motion(sk, 200, model.layout.fps)

    def gap(b, n=30):   # keys before and after it, as an animator's fill of a gap between keys
        s = 100 - n - 1
        frames = lambda a, at: np.repeat(a[None, at], b, 0)  # noqa: E731
        r, p = motion.rotations, motion.positions
        after = slice(101, 101 + model.past)
        return Gap(sk, frames(r, slice(s - 10, s + 1)), frames(p, slice(s - 10, s + 1)), frames(r, 100),
                   frames(p, 100), n, frames(r, after), frames(p, after))

    one, many = gap(1), gap(batch)
    median, best = _best_ms(lambda: model.fill(one), repeats)
    # the price of averaging views (mirror image, backwards: see RTNModel.fill): the gap seen once
    single_median, single_best = median, best
    if model.mirror is not None or model.backward:
        single = open_model(path, symmetric=False, both_ways=False)
        single_median, single_best = _best_ms(lambda: single.fill(one), repeats)
    batched, _ = _best_ms(lambda: model.fill(many), max(3, repeats // 4))
    k_ms, _ = _best_ms(lambda: model.variants(one, variants, variation=1.0), max(3, repeats // 4))
    long = synthetic_motion(sk, int(superres_minutes * 60 * model.layout.fps) + 1, model.layout.fps, seed=1)
    sr = {}
    for threads, decompress in (("1thread", model), (f"{WIDE_THREADS}threads_wide", open_model(path, kind="rtn"))):
        start = time.perf_counter()
        superres(decompress, long, int(round(model.layout.fps)))
        sr[threads] = time.perf_counter() - start
    return {
        "model": model.name,
        "transition_30_ms_batch1_1thread": {"median": median, "best": best},
        "transition_30_ms_batch1_1thread_one_view": {"median": single_median, "best": single_best},
        "frames_per_second_batched": batch * 30 / (batched / 1000),
        "batch": batch,
        f"variants_{variants}_ms": k_ms,
        # Decompress as Blender runs it, its rounds' large calls on WIDE_THREADS threads (see rtn/runtime.py)
        **{f"superres_{superres_minutes:g}min_1key_per_s_seconds_{threads}": v for threads, v in sr.items()},
    }
