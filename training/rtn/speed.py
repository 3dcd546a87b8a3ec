"""The torch-eager side of ``python -m lab bench-speed``: the same network, same shapes.

The runtime never imports torch; the lab imports :func:`eager_ms` where torch is installed, and
``python -m training speed`` prints it alone.
Weights are random: the cost of a forward pass does not depend on their values.
"""

import json
import time

import numpy as np
import torch

from inference.cli import whole
from ..onnx_tools import metadata_of
from .family import network_of


def eager_ms(model_path, repeats=20, n=30):
    meta = metadata_of(model_path)
    torch.set_num_threads(1)
    units = json.loads(meta["betwixt.normalisation"])
    model = network_of(json.loads(meta["betwixt.config"]), np.array(units["frame_mean"]),
                       np.array(units["frame_std"])).eval()
    cf = model.config
    past, target = torch.randn(1, cf.past, cf.pose_dim), torch.randn(1, cf.target_dim)
    times = []
    with torch.no_grad():
        model(past, target, n)
        for _ in range(repeats):
            start = time.perf_counter()
            model(past, target, n)
            times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def add_arguments(parser):
    parser.add_argument("--model", required=True, help="ONNX model whose network to time")
    parser.add_argument("--repeats", type=whole(1, 10_000, "timed runs, of which the median is given"), default=20)


def run(args):
    print(json.dumps({"torch_eager_transition_30_ms_batch1_1thread": eager_ms(args.model, args.repeats)}))
