"""Option types of the training commands beyond ``inference.cli``'s ``whole`` and ``number``: lists given
as comma-separated text (``--speeds 0.8,1,1.25``, ``--hidden 512,256``), each item checked where the
command line is parsed, so that a bad one ends in one line and exit code 2 before any run folder is made.

A list keeps its text: the run's record and the model card show it as typed, and the code that reads it
splits it as before.
"""

import argparse
import math


def listed(item, most=math.inf, why=""):
    """An argparse type: comma-separated items, each parsed by ``item`` (an argparse type such as
    ``number(...)``), at most ``most`` of them (``why``); the text itself is returned."""
    def parse(text):
        items = text.split(",")
        if len(items) > most:
            raise argparse.ArgumentTypeError(f"{text}: {len(items):,} of them; give at most {most:,} ({why})")
        for value in items:
            try:
                item(value.strip())
            except argparse.ArgumentTypeError as e:
                raise argparse.ArgumentTypeError(f"{text}: {e}") from None
        return text
    return parse


def one_of(choices):
    """An argparse type: comma-separated names, each one of ``choices``; the text itself is returned."""
    def parse(text):
        unknown = [name for name in text.split(",") if name not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"{text}: no {unknown[0]!r}; give some of {','.join(choices)}")
        return text
    return parse
