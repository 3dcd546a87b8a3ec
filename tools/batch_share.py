"""How much of an RTN training step its batch takes (issue 47): milliseconds to make a batch on the CPU
(numpy, the main thread's work that ``--workers`` moves off it) beside the network's step (forward,
backward, AMSGrad) on the device, each timed alone over the same steps' batches, gaps of 30 frames.

    .venv/bin/python tools/batch_share.py --data ../shared/mocap/lafan1-27.zip --cache cache --batches 32,256
    python3 tools/batch_share.py --data cache/lafan1-27-…-v1.npz --device cuda --bf16 --batches 32,512

Prints one line a batch size: ms a batch, ms a step, and the batch's share of the two together.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.dataset import Selection, load_sources   # noqa: E402
from training.ahead import step_rngs   # noqa: E402
from training.family import family   # noqa: E402
from training.loop import Normaliser   # noqa: E402
from training.rtn.sampler import Transitions   # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--cache", default=None)
    parser.add_argument("--subjects", default="1,2,3,4")
    parser.add_argument("--batches", default="32,256")
    parser.add_argument("--steps", type=int, default=10, help="timed steps a batch size (after one to warm up)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    device = torch.device(args.device)
    rtn, chosen = family("rtn"), Selection(tuple(int(s) for s in args.subjects.split(",")))
    train = Transitions(load_sources([args.data], args.cache, None, chosen), "train", chosen)
    stats = rtn.statistics(train, argparse.Namespace(min_gap=30, max_gap=30), np.random.default_rng(0))
    for batch in (int(b) for b in args.batches.split(",")):
        run = argparse.Namespace(batch=batch, min_gap=30, max_gap=30, noise=0.5, loss="mse", blends=False,
                                 relative=False, lr=5e-4)
        net = rtn.network(rtn.config(train, run), stats).to(device)
        norm, optimiser = Normaliser(stats).to(device), rtn.optimiser(net, run)
        making, stepping = [], []
        for step in range(args.steps + 1):
            started = time.perf_counter()
            sample = rtn.sample(train, run, *step_rngs(0, 0, step))
            made = time.perf_counter()
            placed = rtn.placed(train, sample, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
                loss, _ = rtn.loss(net, norm, placed, run)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            if step:   # the first warms the device up
                making.append(made - started)
                stepping.append(time.perf_counter() - made)
        a, b = 1e3 * np.mean(making), 1e3 * np.mean(stepping)
        print(f"batch {batch} on {device}: {a:.1f} ms to make a batch, {b:.1f} ms a step of the network: "
              f"the batch {a / (a + b):.1%} of the two", flush=True)


if __name__ == "__main__":
    main()
