"""``python -m training``: fit a model family on a BVH data set, export a checkpoint to ONNX, or
convert a checkpoint or model file of an earlier Betwixt; label the dog data's actions for MANN."""

import sys

from inference.cli import Parser
from inference.cli import writable
from inference.errors import BetwixtError
from . import export, loop
from .carl import train as carl
from .family import FAMILIES, family
from .mann import labels
from .rtn import speed


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = Parser(prog="python -m training", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in FAMILIES:
        chosen = family(name)
        sub = commands.add_parser(name, help=f"train a {name} model ({chosen.title.split(' (')[0]})")
        loop.add_arguments(sub, chosen)
        sub.set_defaults(run=lambda args, chosen=chosen: loop.train(chosen, args, argv))

    carl.register(commands, argv)

    exp = commands.add_parser("export", help="write a checkpoint as one ONNX model file and its model card")
    export.add_arguments(exp)
    exp.set_defaults(run=export.run)

    conv = commands.add_parser("convert", help="bring a checkpoint or model file of an earlier Betwixt to this version")
    export.add_convert_arguments(conv)
    conv.set_defaults(run=export.run_convert)

    sp = commands.add_parser("speed", help="time an RTN in torch eager (what lab bench-speed compares)")
    speed.add_arguments(sp)
    sp.set_defaults(run=speed.run)

    lab = commands.add_parser("labels", help="derive MANN's six actions from a dog data set: PNG timelines per clip")
    labels.add_arguments(lab)
    lab.set_defaults(run=labels.run)

    args = parser.parse_args(argv)
    try:
        for name, kind in (("out", "folder"), ("output", "file")):   # refused before any work, as inference's
            if getattr(args, name, None) is not None:
                writable(getattr(args, name), kind)
        args.run(args)
    except BetwixtError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":   # tests call main() in-process
    sys.exit(main())
