"""A training checkpoint → one self-contained ONNX model file that the runtime can trust.

Everything the runtime needs to use the network travels in the file's metadata: the skeleton, the
feature layout and normalisation, frame rate, context length, supported gap lengths, and where the
weights came from (training files, licence, commit), so anyone can check that no test file was used.
"""

import json
import subprocess
from pathlib import Path

import torch

from inference.runtime import KIND_RTN, MAX_GAP, METADATA_VERSION
from .rtn import RTN, RTNConfig, export_onnx


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def metadata(state):
    """The model file's metadata, as strings, from a checkpoint's contents."""
    meta = state["meta"]
    config = RTNConfig(**state["config"])
    return {
        "betwixt.kind": KIND_RTN,
        "betwixt.version": str(METADATA_VERSION),
        "betwixt.skeleton": json.dumps(meta["skeleton"]),
        "betwixt.layout": json.dumps(meta["layout"]),
        "betwixt.normalisation": json.dumps({k: v.tolist() for k, v in state["stats"].items()
                                             if k != "world_std"}),
        "betwixt.fps": str(meta["layout"]["fps"]),
        "betwixt.past": str(config.past),
        "betwixt.gaps": json.dumps({"min": 1, "max": MAX_GAP, "trained": [int(meta["args"]["min_gap"]),
                                                                         int(meta["args"]["max_gap"])]}),
        "betwixt.data": json.dumps({"source": Path(meta["data"]).name, "files": meta["data_files"],
                                    "subjects": meta["subjects"]}),
        "betwixt.licence": meta["licence"],
        "betwixt.training": json.dumps({"steps": state["step"], "commit": _commit(),
                                        "args": meta["args"]}),
    }


def export(checkpoint, output, int8=False):
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    model = RTN(RTNConfig(**state["config"]))
    model.load_state_dict(state["model"])
    model.eval()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    export_onnx(model, output, metadata(state), int8=int8)
    return output


def add_arguments(parser):
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True, help="the .onnx file to write")
    parser.add_argument("--int8", action="store_true", help="8-bit weights (smaller, faster, a little less exact)")


def run(args):
    path = export(args.checkpoint, args.output, args.int8)
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MiB)")
