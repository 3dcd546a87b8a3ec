"""CARL's environments stepped here or in worker processes.

A roll-out spends most of its time in MuJoCo, a policy step of physics for each environment, and the
environments are independent between the policy's passes. With ``processes`` above one, each worker process
holds a share of them and steps its share under the actions that the main process's one batched pass of the
policy chose; the main process keeps the policy, its noise and the book-keeping. Every environment draws from
a generator of its own (:func:`make`), so a roll-out is the same to the bit whatever the number of processes.
"""

import multiprocessing
import signal
import traceback
from functools import partial

import numpy as np

from .env import Tracking


def make(body, clips, seed, step, indices, pushes=True, randomise=True, like=None):
    """The environments ``indices`` of a run (Tracking of ``clips`` on ``body``), environment i drawing from a
    generator seeded with (seed, step, i): the first built (or a twin of ``like``, a Tracking of the same task
    already built here), the others its twins (sharing its references)."""
    first, *rest = indices
    rng = np.random.default_rng([seed, step, first])
    env = Tracking(body, clips, rng, pushes=pushes, randomise=randomise) if like is None else like.twin(rng)
    env.pushes, env.randomise = pushes, randomise
    return [env] + [env.twin(np.random.default_rng([seed, step, i])) for i in rest]


def advance(envs, actions):
    """Each of ``envs`` stepped under its row of ``actions``: per environment (observation, reward, fell, cut,
    terms, next), ``next`` the observation its next step starts from (a new episode's after a fall or a cut)."""
    out = []
    for env, action in zip(envs, actions):
        obs, reward, fell, cut, terms = env.step(action)
        out.append((obs, reward, fell, cut, terms, env.reset() if fell or cut else obs))
    return out


class Here:
    """The environments in this process, stepped one after another."""

    def __init__(self, envs):
        self.envs = list(envs)

    def __len__(self):
        return len(self.envs)

    def reset(self):
        return [env.reset() for env in self.envs]

    def step(self, actions):
        return advance(self.envs, actions)

    def set(self, **values):
        for env in self.envs:
            for name, value in values.items():
                setattr(env, name, value)

    def close(self):
        pass


class Processes:
    """``count`` environments made by ``build(indices)`` (a picklable :func:`make` with all but ``indices``
    given) in ``processes`` worker processes, as evenly shared as they go; the same calls as :class:`Here`."""

    def __init__(self, build, count, processes):
        context = multiprocessing.get_context("spawn")   # no fork of a process that holds torch's threads
        self.shares = np.array_split(np.arange(count), processes)
        self.pipes, self.workers = [], []
        for share in self.shares:
            here, there = context.Pipe()
            worker = context.Process(target=_serve, args=(there, build, share.tolist()), daemon=True)
            worker.start()
            there.close()
            self.pipes.append(here)
            self.workers.append(worker)

    def __len__(self):
        return sum(len(s) for s in self.shares)

    def _ask(self, messages):
        """Each worker's answer to its message, every answer read before the first failure is raised."""
        for pipe, message in zip(self.pipes, messages):
            try:
                pipe.send(message)
            except ConnectionError:   # a worker gone: reading its answer below finds the pipe closed
                pass
        answers = []
        for pipe, worker in zip(self.pipes, self.workers):
            try:
                answers.append(pipe.recv())
            except (EOFError, ConnectionError):
                answers.append(("error", f"process {worker.pid} ended (exit code {worker.exitcode}); run with "
                                         "--processes 1 to see why"))
        failed = [value for kind, value in answers if kind == "error"]
        if failed:
            raise RuntimeError(f"a CARL worker process failed: {failed[0].strip().splitlines()[-1]}\n{failed[0]}")
        return [value for _, value in answers]

    def reset(self):
        return [obs for part in self._ask([("reset", (), {})] * len(self.pipes)) for obs in part]

    def step(self, actions):
        parts = self._ask([("step", (actions[share],), {}) for share in self.shares])
        return [row for part in parts for row in part]

    def set(self, **values):
        self._ask([("set", (), values)] * len(self.pipes))

    def close(self):
        for pipe in self.pipes:
            pipe.close()   # a worker ends when its pipe does
        for worker in self.workers:
            worker.join(timeout=10)


def _serve(pipe, build, indices):
    """A worker process: build its environments, then answer the main process's requests until its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl+C and kill are the main process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        here, failed = Here(build(indices)), None
    except Exception:
        here, failed = None, traceback.format_exc()
    while True:
        try:
            verb, args, values = pipe.recv()
        except EOFError:
            return
        if failed is None:
            try:
                pipe.send(("ok", getattr(here, verb)(*args, **values)))
                continue
            except Exception:
                failed = traceback.format_exc()
        pipe.send(("error", failed))


def environments(body, clips, seed, step, count, processes, pushes=True, randomise=True, like=None):
    """The run's ``count`` environments (:func:`make`), in this process (twins of ``like`` where given, its
    references not computed again) or in ``processes`` workers (each computing its own)."""
    build = partial(make, body, clips, seed, step, pushes=pushes, randomise=randomise)
    if processes <= 1:
        return Here(build(list(range(count)), like=like))
    return Processes(build, count, min(processes, count))
