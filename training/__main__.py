"""``python -m training``: fit a model on a BVH data set, or export a checkpoint to ONNX."""

import argparse
import sys

from inference.errors import BetwixtError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    from . import train_rtn
    rtn = commands.add_parser("rtn", help="train a Recurrent Transition Network")
    train_rtn.add_arguments(rtn)
    rtn.set_defaults(run=train_rtn.train)

    from . import export
    exp = commands.add_parser("export", help="write a checkpoint as one ONNX model file")
    export.add_arguments(exp)
    exp.set_defaults(run=export.run)

    from . import speed
    sp = commands.add_parser("speed", help="time the network in torch eager (for inference bench-speed)")
    speed.add_arguments(sp)
    sp.set_defaults(run=speed.run)

    args = parser.parse_args(argv)
    try:
        args.run(args)
    except BetwixtError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


sys.exit(main())
