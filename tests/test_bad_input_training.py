"""Bad options of ``python -m training``, per family (rtn, mann, mvae, carl) and for export and speed: exit code 2,
one line on stderr naming the option with its limit and why, and no run folder made (issue 46).

The command runs in-process (``training.__main__.main``): a bad option ends at the parse (SystemExit 2), one that
only another option makes bad (``--min-gap`` above ``--max-gap``) before any data is read.
"""

import pytest

from test_bad_input_cli import files, human  # noqa: F401 (a fixture)
from training.__main__ import main

SPEEDS = "argument --speeds: {}: give 0.1 to 10 (playback speeds: at 0 a clip never moves, at 10 a walk is a sprint)"
COMMON = [   # the loop's own, for every family
    ("--speeds", "0", SPEEDS.format("0: 0")),
    ("--speeds", "1,nan", SPEEDS.format("1,nan: nan")),
    ("--speeds", ",".join(["1"] * 9), "argument --speeds: 1,1,1,1,1,1,1,1,1: 9 of them; give at most 8 (each speed is "
                                      "one more copy of the clips in memory)"),
    ("--subjects", "1,two", "argument --subjects: 1,two: 'two' is not a whole number"),
    ("--subjects", "-1", "argument --subjects: -1: -1: give 0 or more (subjects are numbered from 0)"),
]
CASES = {
    "rtn": [
        ("--min-gap", "0", "argument --min-gap: 0: give 1 to 1,000 (frames a training transition fills"),
        ("--max-gap", "nan", "argument --max-gap: 'nan' is not a whole number"),
        ("--max-gap", "1001", "argument --max-gap: 1,001: give 1 to 1,000"),
        ("--reverse", "1.5", "argument --reverse: 1.5: give 0 to 1 (a probability)"),
        ("--reverse", "nan", "argument --reverse: nan: give 0 to 1"),
        ("--noise", "-1", "argument --noise: -1: give 0 to 10 (the runtime's --variation stops there too)"),
        ("--noise", "inf", "argument --noise: inf: give 0 to 10"),
        ("--proportions", "1", "argument --proportions: 1: give 0 to 0.5 (bones scaled by 1 ± this; at 1 a bone "
                               "may shrink to nothing)"),
        ("--proportions", "nan", "argument --proportions: nan: give 0 to 0.5"),
        ("--shares", "nan", "argument --shares: nan: nan: give 0 to 1e+06 (a data set's weight; 0 leaves it out)"),
    ],
    "mann": [
        ("--experts", "0", "argument --experts: 0: give 1 to 64 (each is a copy of the motion network's weights)"),
        ("--experts", "1000", "argument --experts: 1,000: give 1 to 64"),
        ("--hidden", "4097", "argument --hidden: 4,097: give 1 to 4,096 (a layer's width)"),
        ("--dropout", "1", "argument --dropout: 1: give 0 to 0.95 (a share of the inputs; at 1 nothing reaches"),
        ("--dropout", "nan", "argument --dropout: nan: give 0 to 0.95"),
        ("--weight-decay", "-1", "argument --weight-decay: -1: give 0 to 1"),
        ("--restart-epochs", "-1", "argument --restart-epochs: -1: give 0 to 1e+06 (epochs of the first cycle; "
                                   "0 keeps the rate constant)"),
        ("--restart-mult", "0.5", "argument --restart-mult: 0.5: give 1 to 100 (each cycle at least as long as the "
                                  "last, or the cycles end before the run does)"),
        ("--units-per-metre", "0", "argument --units-per-metre: 0: give 0.01 to 10000 (the data's length unit"),
        ("--units-per-metre", "nan", "argument --units-per-metre: nan: give 0.01 to 10000"),
    ],
    "mvae": [
        ("--latent", "0", "argument --latent: 0: give 1 to 1,024 (each is a number the runtime draws a step)"),
        ("--latent", "100000", "argument --latent: 100,000: give 1 to 1,024"),
        ("--experts", "0", "argument --experts: 0: give 1 to 64 (each is a copy of the decoder's weights)"),
        ("--hidden", "0", "argument --hidden: 0: give 1 to 4,096 (a layer's width)"),
        ("--beta", "nan", "argument --beta: nan: give 0 to 1000 (the KL term's weight"),
        ("--beta", "-1", "argument --beta: -1: give 0 to 1000"),
        ("--rollout", "0", "argument --rollout: 0: give 1 to 1,000 (steps of a roll-out, each held for the backward"),
        ("--supervised", "-1", "argument --supervised: -1: give 0 or more (optimiser steps)"),
        ("--ramp", "nan", "argument --ramp: 'nan' is not a whole number"),
        ("--skate", "inf", "argument --skate: inf: give 0 to 1000 (the skating term's weight)"),
    ],
    "carl": [
        ("--hidden", "512,0", "argument --hidden: 512,0: 0: give 1 to 8,192 (a layer's width)"),
        ("--hidden", "512,wide", "argument --hidden: 512,wide: 'wide' is not a whole number"),
        ("--hidden", ",".join(["8"] * 9), "argument --hidden: 8,8,8,8,8,8,8,8,8: 9 of them; give at most 8 (hidden "
                                          "layers)"),
        ("--gaits", "walk,gallop", "argument --gaits: walk,gallop: no 'gallop'; give some of walk,trot,canter"),
        ("--envs", "0", "argument --envs: 0: give 1 to 1,024 (environments)"),
        ("--kl", "nan", "argument --kl: nan: give 0 to 1 (a KL divergence)"),
        ("--spread", "0", "argument --spread: 0: give 0.001 to 2 (a standard deviation)"),
    ],
}
PARAMS = [(name, *case) for name, cases in CASES.items() for case in cases + (COMMON if name != "carl" else [])]


def refused(capsys, folder, argv):
    """``main(argv)`` ends with code 2 and one line on stderr, and ``folder`` is as it was; the line."""
    before = files(folder)
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert files(folder) == before, "something was written"
    return err.splitlines()[0]


@pytest.mark.parametrize("command, option, value, words", PARAMS,
                         ids=[f"{c}{o}={v[:12]}" for c, o, v, _ in PARAMS])
def test_a_training_option_out_of_bounds_is_refused_before_the_run_folder(human, tmp_path, capsys, command, option,
                                                                        value, words):
    line = refused(capsys, tmp_path, [command, "--data", human, "--out", tmp_path / "run", option, value])
    assert line.startswith(f"error: python -m training {command}: {words}"), line
    assert line.endswith(" (see --help)")


def test_a_shortest_gap_above_the_longest_is_refused_before_the_data_is_read(human, tmp_path, capsys):
    line = refused(capsys, tmp_path, ["rtn", "--data", human, "--out", tmp_path / "run", "--min-gap", "30",
                                      "--max-gap", "20"])
    assert line == ("error: --min-gap 30 is longer than --max-gap 20: give a --min-gap of at most 20, or a longer "
                    "--max-gap")


@pytest.mark.parametrize("argv, words", [
    (["export", "run/checkpoint.pt", "-o", "m.onnx", "--max-gap", "0"],
     "export: argument --max-gap: 0: give 1 or more (frames; at most the longest its network reaches)"),
    (["export", "run/checkpoint.pt", "-o", "m.onnx", "--max-gap", "nan"],
     "export: argument --max-gap: 'nan' is not a whole number"),
    (["speed", "--model", "m.onnx", "--repeats", "0"],
     "speed: argument --repeats: 0: give 1 to 10,000 (timed runs, of which the median is given)"),
], ids=["export --max-gap 0", "export --max-gap nan", "speed --repeats 0"])
def test_export_and_speed_refuse_a_bad_number(tmp_path, capsys, argv, words):
    line = refused(capsys, tmp_path, argv)
    assert line.startswith(f"error: python -m training {words}"), line


def test_an_output_that_cannot_be_written_or_a_file_that_is_not_there_is_one_line(human, tmp_path, capsys):
    """A run folder or model file under a file, and a file to convert that is missing or not what it says, are
    refused in one line before any work (they were tracebacks)."""
    (tmp_path / "afile").write_text("")
    (tmp_path / "junk.pt").write_text("junk")
    (tmp_path / "junk.onnx").write_text("junk")
    under = tmp_path / "afile"
    for argv, words in (
            (["rtn", "--data", human, "--out", under / "run"], f"{under / 'run'}: {under} is a file, not a folder"),
            (["labels", "--data", human, "--out", under / "l"], f"{under / 'l'}: {under} is a file, not a folder"),
            (["export", tmp_path / "run.pt", "-o", under / "m.onnx"], f"{under} is a file, not a folder"),
            (["convert", tmp_path / "none.pt", "-o", tmp_path / "m.pt"], "none.pt: no such file; give the checkpoint"),
            (["convert", tmp_path / "junk.pt", "-o", tmp_path / "m.pt"], "junk.pt: not a checkpoint of an earlier"),
            (["convert", tmp_path / "junk.onnx", "-o", tmp_path / "m.onnx"], "junk.onnx: not an ONNX model file")):
        line = refused(capsys, tmp_path, argv)
        assert line.startswith(f"error: {tmp_path}") and words in line, (argv, line)


def test_the_limits_themselves_pass(human, tmp_path):
    """The neighbours of the refused values parse: each limit is inside its range, and a list keeps its text."""
    from inference.cli import Parser
    from training import loop
    from training.family import family

    parser = Parser(prog="python -m training rtn")
    loop.add_arguments(parser, family("rtn"))
    args = parser.parse_args(["--data", str(human), "--out", str(tmp_path / "run"), "--min-gap", "1", "--max-gap",
                              "1000", "--reverse", "1", "--noise", "0", "--proportions", "0.5", "--speeds",
                              "0.1,1,10", "--subjects", "0,5", "--shares", "0,1"])
    assert (args.min_gap, args.max_gap, args.reverse, args.proportions) == (1, 1000, 1.0, 0.5)
    assert (args.speeds, args.subjects, args.shares) == ("0.1,1,10", "0,5", "0,1")
