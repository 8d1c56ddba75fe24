"""Inputs that never crash: every command of the ``fattree`` CLI under hypothesis.

The property, for any argument list and request file: ``main()`` returns (or argparse exits)
with a non-zero code and exactly one ``fattree CMD: error: ...`` line, the last on stderr, or
it succeeds; never a traceback, never an exception out of ``main``.

``main()`` runs in this process (fast). The commands' real work (elaborating Verilog, cocotb,
Yosys, sby, bitstreams, experiments) is replaced by a stand-in that raises :class:`Accepted`:
reaching it means every check of the input passed. A timer does the same for anything that
still runs after a few seconds. The parsing and checking before the work is the real code.

Budget: hypothesis is derandomized (the same examples every run, CI reproducible) with small
``max_examples``; the whole module runs in well under a minute on one core.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import signal
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fattree.designs import DESIGNS
from fattree.scripts import main as cli

#: Reproducible, bounded: the same examples in every run (no example database either); as many
#: as tests/conftest.py's hypothesis profile says (more with --run-slow).
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: Seconds a command may run before it counts as having accepted its input.
PATIENCE = 1.5


class Accepted(BaseException):
    """The command got past its input checks to real work (a BaseException: ``main`` must
    not catch it as one of its errors)."""


def _accepted(*_args, **_kwargs):
    raise Accepted


def _on_timer(_signum, frame):
    # Not from inside hypothesis' own callbacks (its gc hook would swallow it): a moment later.
    if frame is not None and "hypothesis" in frame.f_code.co_filename:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        return
    raise Accepted


@contextlib.contextmanager
def _stand_in_progress(*_args, **_kwargs):
    # Experiments report their first step as they start work.
    yield _accepted


@pytest.fixture
def no_work(monkeypatch, tmp_path):
    """The heavy work of every command replaced by :func:`_accepted`; cwd a fresh folder so
    nothing lands in the work tree."""
    from fattree import toolchain
    from fattree.scripts import build, export, prove, sim, synth, verilog, wave

    monkeypatch.chdir(tmp_path)
    parser = cli.make_parser()  # built once: most of what a call of main() costs
    monkeypatch.setattr(cli, "make_parser", lambda: parser)
    monkeypatch.setattr(verilog, "elaborate_verilog", _accepted)
    monkeypatch.setattr(export, "elaborate_verilog", _accepted)
    monkeypatch.setattr(sim, "run_bench", _accepted)
    monkeypatch.setattr(toolchain, "require", _accepted)
    monkeypatch.setattr(synth, "synthesise", _accepted)
    monkeypatch.setattr(prove, "prove", _accepted)
    # The self-test core is built for real (its options are checked there); not the bitstream
    # nor the simulation.
    from fattree.boards import selftest

    monkeypatch.setattr(build, "build_bitstream", _accepted)
    monkeypatch.setattr(selftest, "simulate_status", _accepted)
    monkeypatch.setattr(wave, "trace", _accepted)
    # Every command module's own progress display (experiments, and commands added later).
    for module in cli.SUBCOMMANDS:
        if hasattr(module, "progress_display"):
            monkeypatch.setattr(module, "progress_display", _stand_in_progress)
    return tmp_path


def run_cli(argv: list[str], stdin: bytes | None = None) -> tuple[object, str, str]:
    """``main(argv)`` in this process: (exit code or "accepted", stdout, stderr). Any other
    exception out of ``main`` fails the test with the argument list that raised it."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""))  # '-' reads this, never the terminal
    old_handler = signal.signal(signal.SIGALRM, _on_timer)
    signal.setitimer(signal.ITIMER_REAL, PATIENCE)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
            except Accepted:
                code = "accepted"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def check_outcome(argv, code, err, *, accept=True) -> None:
    """Success, accepted, or a non-zero exit with one error line, the last on stderr."""
    assert "Traceback" not in err, err
    if code == "accepted":
        assert accept, f"{argv} was accepted"
        return
    if code in (0, None):
        assert accept, f"{argv} exited 0"
        assert not re.search(r"^fattree .*: error: ", err, re.M), err
        return
    assert isinstance(code, int) and code != 0, code
    # argparse reports stray words from the top parser ("fattree: error: unrecognized ...").
    command = argv[0] if argv else ""
    pattern = re.compile(rf"^fattree( {re.escape(command)}( \S+)?)?: error: \S")
    lines = err.splitlines()
    errors = [line for line in lines if pattern.match(line)]
    assert len(errors) == 1, f"{argv}: stderr {err!r}"
    assert lines[-1] == errors[0], f"{argv}: the error is not the last line: {err!r}"


def rejected(argv, stdin=None) -> str:
    """Run ``argv``, which must be refused; the one error line."""
    code, _out, err = run_cli(argv, stdin)
    check_outcome(argv, code, err, accept=False)
    return err.splitlines()[-1]


# -- values ------------------------------------------------------------------------------------

# Text as a shell can pass it: no NUL (exec cannot), anything else.
arg_text = st.text(
    alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=30
)
huge = st.integers(min_value=-(10**30), max_value=10**30) | st.sampled_from(
    [2**64, -(2**63), 2**31 - 1]
)
numbers = st.one_of(
    st.integers(-5, 70).map(str),
    huge.map(str),
    huge.map(hex),
    st.sampled_from(["nan", "inf", "-inf", "1e309", "-0", "0.5", "1_000", "0b101", "0o7", "+3"]),
    st.just("9" * 5000),  # past Python's int() digit limit
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
paths = st.sampled_from(
    ["/", ".", "/nonexistent/dir/x", "/proc/self", "no-such-file.csv", "/dev/null", "x.svg"]
)
values = st.one_of(numbers, arg_text, paths, st.just(""), st.just("-"))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


PARSERS = _subparsers(cli.make_parser())


def _leaves(prefix: tuple[str, ...], parser) -> list[tuple[tuple[str, ...], object]]:
    """Every parser that takes options, by its words: ``("verilog",)``, ``("experiment",
    "patterns")``; commands added later (and their own sub-commands) are found the same way."""
    subs = _subparsers(parser)
    own = [(prefix, parser)] if not subs or prefix == ("experiment",) else []
    return own + [leaf for name, sub in subs.items() for leaf in _leaves((*prefix, name), sub)]


LEAVES = dict(leaf for name, p in PARSERS.items() for leaf in _leaves((name,), p))

# What each command needs to get to its options: a design it takes, required options.
BASE = {
    ("verilog",): ["selector"],
    ("sim",): ["selector"],
    ("synth",): ["selector"],
    ("prove",): ["circuit-router"],
    ("build",): ["selector"],
    ("monitor",): ["--port", "/nonexistent/tty"],
    ("export",): ["selector", "--fusesoc", "out"],
    ("draw",): ["selector"],
    ("wave",): ["circuit-tree-paper-reject"],
    ("schedule",): ["--random-permutation", "-l", "2", "-w", "2"],
}

#: Options not fuzzed: a Dask scheduler's address is a network address (this machine talks
#: to loopback only).
NOT_FUZZED = {"--scheduler"}


def _base(words: tuple[str, ...], parser) -> list[str]:
    if words in BASE:
        return list(BASE[words])
    # A command added later: a valid value for each positional and required option.
    base = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings and action.nargs != "?":
            if action.choices:
                base.append(sorted(action.choices)[0])
            elif action.dest in ("design", "designs"):
                base.append("selector")
            elif action.dest == "experiment":
                base.append("patterns")
            else:
                base.append("out")
        elif action.option_strings and action.required:
            base += [action.option_strings[0], "out"]
    return base


def _options(parser) -> list[tuple[str, bool]]:
    """(option, takes a value) of every option but --help."""
    return [
        (action.option_strings[-1], action.nargs != 0)
        for action in parser._actions
        if action.option_strings
        and not isinstance(action, argparse._HelpAction)
        and action.option_strings[-1] not in NOT_FUZZED
    ]


COMMAND_OPTIONS = [
    (words, option, takes)
    for words, parser in LEAVES.items()
    if words[0] != "experiment"
    for option, takes in _options(parser)
]
EXPERIMENTS = _subparsers(PARSERS["experiment"])
EXPERIMENT_OPTIONS = [
    (name, option, takes)
    for name, parser in EXPERIMENTS.items()
    for option, takes in _options(parser)
]


def test_every_command_and_experiment_is_fuzzed():
    # New commands are picked up from the parser; these must all be there.
    for command in ("verilog", "sim", "synth", "prove", "build", "monitor", "experiment"):
        assert command in PARSERS
    for command in ("schedule", "export", "draw", "wave"):
        assert command in PARSERS
    assert {w[0] for w, _o, _t in COMMAND_OPTIONS} == set(PARSERS) - {"experiment"}
    assert len(EXPERIMENTS) >= 10 and {n for n, _o, _t in EXPERIMENT_OPTIONS} == set(EXPERIMENTS)


# -- every option of every command ---------------------------------------------------------------


@FUZZ
@given(
    choice=st.sampled_from(COMMAND_OPTIONS),
    value=values,
    extra=st.lists(st.tuples(st.sampled_from(COMMAND_OPTIONS), values), max_size=2),
)
@example(choice=(("schedule",), "--levels", True), value="1000000000", extra=[])
@example(choice=(("schedule",), "--w", True), value=str(10**30), extra=[])
@example(choice=(("build",), "--simulate", True), value="-1", extra=[])
@example(choice=(("synth",), "--freq", True), value="nan", extra=[])
@example(choice=(("monitor",), "--baud", True), value="-5", extra=[])
@example(choice=(("monitor",), "--timeout", True), value="nan", extra=[])
def test_command_options(no_work, choice, value, extra):
    words, option, takes = choice
    argv = [*words] + _base(words, LEAVES[words]) + ([option, value] if takes else [option])
    # More options of the same command, junk or not.
    for (other, opt, opt_takes), v in extra:
        if other == words:
            argv += [opt, v] if opt_takes else [opt]
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


@FUZZ
@given(choice=st.sampled_from(EXPERIMENT_OPTIONS), value=values)
@example(choice=("hypercube-routing", "--dims", True), value="1..1000000000000")
@example(choice=("load-latency", "--leaves", True), value="-8")
@example(choice=("topology-cost", "--data", True), value=".")  # found: IsADirectoryError
@example(choice=("dehon-faults", "--trials", True), value="0")  # found: ZeroDivisionError
@example(choice=("hypercube-routing", "--trials", True), value="-1")  # found: ZeroDivisionError
@example(choice=("dehon-open-probability", "--cycles", True), value="0")  # found: the same
def test_experiment_options(no_work, choice, value):
    name, option, takes = choice
    argv = ["experiment", name] + ([option, value] if takes else [option])
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


@FUZZ
@given(
    design=st.sampled_from(["selector", "circuit-tree-paper", "scheduler", "leiserson-tree"]),
    board=st.sampled_from(["icebreaker", "ulx3s-85f", "icestick"]),
    option=st.sampled_from(
        ["--pattern", "--inject-cycles", "--requests", "--seed", "--clock-mhz", "--simulate"]
    ),
    value=values,
    simulate=st.booleans(),
)
@example(
    design="circuit-tree-paper",
    board="icebreaker",
    option="--inject-cycles",
    value="-1",
    simulate=True,
)
@example(design="scheduler", board="icebreaker", option="--requests", value="0", simulate=False)
@example(design="selector", board="icebreaker", option="--pattern", value="random", simulate=True)
def test_build_self_test_options(no_work, design, board, option, value, simulate):
    # The self-test core is built for real: its options are checked there, per design.
    argv = ["build", design, "--board", board, option, value]
    if simulate and option != "--simulate":
        argv += ["--simulate", "100"]
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


@FUZZ
@given(
    command=st.sampled_from(sorted(PARSERS)),
    words=st.lists(st.one_of(values, st.sampled_from(["--json", "-p", "--", "-h"])), max_size=4),
)
@example(command="build", words=["0", "\x0c"])  # found: argparse echoed the form feed raw
@example(command="schedule", words=["no\nsuch.csv"])  # found: the file name broke the line
def test_names_and_positionals(no_work, command, words):
    # Design, board, family, experiment and diagram names, and stray words, anywhere.
    if "-h" in words:
        return  # --help prints and exits 0: tested in test_cli.py
    argv = [command] + words
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


@FUZZ
@given(name=arg_text.filter(lambda s: s not in DESIGNS and not s.startswith("-") and s))
@example(name="Selector")
@example(name="selector ")
def test_unknown_design_names(no_work, name):
    for command in ("verilog", "synth", "draw", "export", "sim", "build"):
        argv = [command, name] + (["--fusesoc", "out"] if command == "export" else [])
        line = rejected(argv)
        assert "design" in line


@FUZZ
@given(board=arg_text.filter(lambda s: s and not s.startswith("-")))
def test_unknown_boards_and_families(no_work, board):
    from fattree.boards.platforms import BOARDS, discovered_boards
    from fattree.synthesis import FAMILIES

    if board not in BOARDS and board not in discovered_boards():
        assert "board" in rejected(["build", "selector", "--board", board])
    if board not in FAMILIES:
        assert "family" in rejected(["synth", "selector", "--family", board])


# -- --param NAME=VALUE ------------------------------------------------------------------------

DESIGN_PARAMS = [(d.name, p) for d in DESIGNS.values() for p in d.params]


def _bad_value(param) -> st.SearchStrategy[str]:
    """Text that ``param`` must refuse."""
    if param.choices:
        taken = set(param.choices) | {alias for alias, _ in param.aliases}
        return arg_text.filter(lambda s: s not in taken and s)
    below = st.integers(max_value=param.lo - 1)
    above = st.integers(min_value=param.hi + 1) if param.hi is not None else st.nothing()
    out_of_range = st.one_of(below, above, st.sampled_from([-(10**30), 10**30]))
    out_of_range = out_of_range.filter(lambda v: v < param.lo or (param.hi and v > param.hi))

    def not_an_int(s: str) -> bool:
        try:
            int(s, 0)
        except ValueError:
            return bool(s)
        return False

    return st.one_of(
        out_of_range.map(str),
        out_of_range.map(hex),
        st.sampled_from(["1.5", "nan", "1e3", "eight", "0x", "--", "9" * 5000]),
        arg_text.filter(not_an_int),
    )


@FUZZ
@given(data=st.data(), choice=st.sampled_from(DESIGN_PARAMS))
@example(data=None, choice=("selector", DESIGNS["selector"].params[0]))
def test_bad_param_values_are_refused(no_work, data, choice):
    design, param = choice
    value = "0" if data is None else data.draw(_bad_value(param))
    for command in ("verilog", "draw", "synth"):
        line = rejected([command, design, "--param", f"{param.name}={value}"])
        # A value with a line break is not NAME=VALUE at all.
        assert f"parameter {param.name}" in line or "--param wants NAME=VALUE" in line


@FUZZ
@given(choice=st.sampled_from(DESIGN_PARAMS), first=arg_text, second=arg_text)
def test_a_repeated_param_is_refused(no_work, choice, first, second):
    # The same NAME twice is a mistake whatever the values (the last would silently win).
    design, param = choice
    items = ["--param", f"{param.name}={first}", "-p", f"{param.name}={second}"]
    for command in ("verilog", "draw", "sim"):
        assert f"--param {param.name} given twice" in rejected([command, design, *items])


@FUZZ
@given(
    design=st.sampled_from(sorted(DESIGNS)),
    item=st.one_of(arg_text.filter(lambda s: "=" not in s), st.from_regex(r"\A\w{0,8}=.{0,8}\Z")),
)
@example(design="selector", item="width")
@example(design="selector", item="=8")
@example(design="selector", item="WIDTH=8")
def test_bad_param_items_are_refused(no_work, design, item):
    name = item.partition("=")[0]
    known = {p.name for p in DESIGNS[design].params}
    if "=" in item and name in known:
        return  # a real parameter: its values are fuzzed above
    line = rejected(["verilog", design, "--param", item])
    assert "--param" in line or "parameter" in line


@FUZZ
@given(data=st.data())
def test_draw_takes_any_in_range_params(no_work, data):
    # In-range table values reach the component and the drawing code for real: they either
    # draw or give one line (e.g. a root capacity outside n^(2/3)..n), never a traceback.
    design = data.draw(st.sampled_from(sorted(DESIGNS)))
    items = []
    for p in DESIGNS[design].params:
        if p.choices:
            value = data.draw(st.sampled_from(p.choices))
        else:
            # Small points, so the drawing is quick; seeds anywhere.
            hi = p.hi if p.name in ("retry", "mode") else min(p.hi or 2**70, 64)
            if p.name == "seed":
                hi = p.hi or 2**70
            value = data.draw(st.integers(p.lo, max(p.lo, hi)))
        items += ["--param", f"{p.name}={value}"]
    argv = ["draw", design, "-o", "out.svg"] + items
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


@FUZZ
@given(
    design=st.sampled_from(
        ["circuit-router", "network-interface", "circuit-tree-paper", "scheduler"]
    ),
    item=st.one_of(st.from_regex(r"\A\w{1,8}=.{0,12}\Z"), arg_text),
)
@example(design="circuit-tree-paper", item="leaves=-4")
@example(design="circuit-tree-paper", item="leaves=4096")
@example(design="scheduler", item="w=3")
def test_prove_params(no_work, design, item):
    argv = ["prove", design, "--param", item]
    code, _out, err = run_cli(argv)
    check_outcome(argv, code, err)


# -- request files of fattree schedule -------------------------------------------------------------

node = st.one_of(st.integers(-3, 10), huge)
field = st.one_of(node.map(str), arg_text, st.sampled_from(["", " 1", "1 ", "0x1", "²", "١"]))
csv_line = st.one_of(
    st.tuples(field, field).map(",".join),
    st.lists(field, max_size=4).map(",".join),
    st.sampled_from(["src,dst", "# comment", "", "  ", '"1,2', "1,2,", ",", "1;2"]),
)
csv_text = st.lists(csv_line, max_size=12).map("\n".join)
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), node, st.floats(), arg_text, st.just(10**5000 // 10**4990)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
json_request = st.one_of(
    st.tuples(node, node).map(list),
    st.fixed_dictionaries({"src": node, "dst": node}),
    json_value,
)
json_text = st.one_of(
    st.lists(json_request, max_size=8).map(json.dumps),
    json_value.map(json.dumps),
    st.lists(json_request, max_size=4).map(lambda r: json.dumps(r)[:-1]),  # cut short
)
file_bytes = st.one_of(
    csv_text.map(lambda t: t.encode()),
    json_text.map(lambda t: t.encode()),
    csv_text.map(lambda t: t.encode("utf-16")),
    csv_text.map(lambda t: t.encode("latin-1", "replace")),
    st.binary(max_size=64),
    st.sampled_from(
        [
            b"",
            b"\xef\xbb\xbf0,1\n1,0\n",  # a BOM
            b"0,1\n0,1\n",  # duplicate line
            b"0,1\r\n1,0\r\n",
            b"[" * 5000,
            b"[[" + b"9" * 5000 + b", 1]]",
            b"[[1e400, 1]]",
            b"[[NaN, 1]]",
            b"0,1\x00\n",
        ]
    ),
)


@FUZZ
@given(
    content=file_bytes,
    suffix=st.sampled_from([".csv", ".json", ".txt", ""]),
    fmt=st.sampled_from(["auto", "csv", "json"]),
    flags=st.lists(st.sampled_from(["--rounds", "--json", "-a", "--failure-mode"]), max_size=2),
)
@example(content=b"[" * 5000, suffix=".json", fmt="auto", flags=[])
@example(content=b"\xff\xfe\x00", suffix=".csv", fmt="auto", flags=[])
@example(content=b"[[" + b"9" * 5000 + b", 1]]", suffix=".json", fmt="auto", flags=[])
def test_schedule_request_files(no_work, content, suffix, fmt, flags):
    path = no_work / f"requests{suffix}"
    path.write_bytes(content)
    argv = ["schedule", str(path), "-l", "2", "-w", "2", "--format", fmt]
    for flag in flags:
        argv += {"-a": ["-a", "optimal"], "--failure-mode": ["--failure-mode", "release"]}.get(
            flag, [flag]
        )
    code, out, err = run_cli(argv)
    check_outcome(argv, code, err)
    if code == 0:
        assert out.strip(), "a schedule that succeeds prints it"


@FUZZ
@given(content=file_bytes)
@example(content=b"[" * 5000)
@example(content=b"\xff\xfe\x00")
def test_schedule_stdin(no_work, content):
    argv = ["schedule", "-", "-l", "2", "-w", "2"]
    code, _out, err = run_cli(argv, stdin=content)
    check_outcome(argv, code, err)


def test_schedule_request_file_errors_name_the_file_and_line(no_work):
    # Not only no traceback: the line says where.
    (no_work / "deep.json").write_text("[" * 5000)
    assert "deep.json" in rejected(["schedule", "deep.json"])
    (no_work / "big.json").write_text("[[0, 1],\n [" + "9" * 5000 + ", 1]]")
    assert "big.json line 2" in rejected(["schedule", "big.json", "-l", "2", "-w", "2"])
    assert "<stdin>" in rejected(["schedule", "-"], stdin=b"\xff\xfe0,1")
    assert "not a text file" in rejected(["schedule", "-"], stdin=b"\xff\xfe0,1")
    (no_work / "dup.csv").write_text("0,1\n0,1\n")
    assert "dup.csv line 2" in rejected(["schedule", "dup.csv", "-l", "2", "-w", "2"])
    for path in ("/", "missing.csv", "/nonexistent/x.json"):
        assert path in rejected(["schedule", path])


@pytest.mark.parametrize("levels, w", [("1000000000", "64"), ("100000000000", "2"), ("21", "2")])
def test_schedule_refuses_huge_trees_at_once(no_work, levels, w):
    # w**levels itself would take minutes (and the timer cannot stop it: it is one C call).
    line = rejected(["schedule", "--random-permutation", "-l", levels, "-w", w])
    assert f"FT({levels}, {w}) has more than 1048576 nodes" in line


# Accepted parameters and stubbed-out commands build components nobody elaborates
# (see tests/conftest.py).
pytestmark = pytest.mark.usefixtures("built_but_unused")
