"""Training batches made ahead of the step that uses them (``--workers``), in background processes.

The RTN's batches are gathered and turned into features on the CPU (numpy: windows, canonical frames,
forward kinematics); made on the main thread, the GPU waits for each. Here ``torch.utils.data``'s
DataLoader makes them in ``--workers`` processes while the network steps, handing each over in shared
memory, pinned for the copy to a GPU (processes, not threads: the sampler is many small numpy calls that
hold the GIL, which the main thread needs to launch the network's kernels). A step's batch is drawn
from generators seeded by (seed, rank, step) alone (:func:`step_rngs`), so that workers may make them in
any order and a resumed run draws the batches an uninterrupted one would. A family whose data lives on the device (MANN, the Motion VAE) makes its
batches in process whatever ``--workers`` says (``Family.ahead``).
"""

import os

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


def step_rngs(seed, rank, step):
    """``(rng, step_rng)`` of optimiser step ``step``: this process's draws, and the draws every process
    shares (the RTN's gap length: one per step across torchrun's processes)."""
    return np.random.default_rng([seed, rank, step]), np.random.default_rng([seed, step])


class Steps(IterableDataset):
    """The CPU batches of steps ``first`` to ``last - 1``: worker ``k`` of ``N`` makes steps ``first + k``,
    ``first + k + N``, ..., which the DataLoader, taking from its workers in turn, hands over in order."""

    def __init__(self, family, train, args, rank, first, last):
        super().__init__()
        self.family, self.train, self.args = family, train, args
        self.rank, self.first, self.last = rank, first, last

    def __iter__(self):
        worker = get_worker_info()
        k, n = (worker.id, worker.num_workers) if worker else (0, 1)
        for step in range(self.first + k, self.last, n):
            yield self.family.sample(self.train, self.args, *step_rngs(self.args.seed, self.rank, step))


def default_workers(device):
    """``--workers`` when not given: none on the CPU, where the network's step takes the cores and a batch
    is a hundredth of it (docs/experiments.md); beside a GPU, up to 4 of the cores the main process leaves."""
    return 0 if device.type == "cpu" else max(0, min(4, (os.cpu_count() or 1) - 1))


def batches(family, train, args, rank, first, device):
    """The batches of steps ``first`` to ``args.steps - 1`` on ``device``, in order: made ahead in
    ``args.workers`` processes where the family makes them off the device, else each when asked for."""
    workers = (default_workers(device) if args.workers is None else args.workers) if family.ahead else 0
    if not workers:
        for step in range(first, args.steps):
            yield family.batch(train, args, *step_rngs(args.seed, rank, step), device)
        return
    loader = DataLoader(Steps(family, train, args, rank, first, args.steps), batch_size=None, num_workers=workers,
                        pin_memory=device.type == "cuda", prefetch_factor=2,
                        generator=torch.Generator())   # its workers' seeds drawn apart from the network's draws
    for sampled in loader:
        yield family.placed(train, sampled, device)

